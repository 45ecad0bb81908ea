package launcher_test

import (
	"fmt"

	"github.com/frontier-llm/frontier/launcher"
)

// A trial's knob values become vLLM flags in the plan's order.
func ExampleVLLMFlags() {
	flags, err := launcher.VLLMFlags(nil, []launcher.Setting{
		{Name: "max_num_seqs", Value: int64(128)},
		{Name: "gpu_memory_utilization", Value: 0.92},
		{Name: "enable_chunked_prefill", Value: false},
		{Name: "enable_prefix_caching", Value: true},
		{Name: "quantization", Value: "none"},
		{Name: "kv_cache_dtype", Value: "fp8"},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(flags)
	// Output:
	// [--max-num-seqs 128 --gpu-memory-utilization 0.92 --no-enable-chunked-prefill --enable-prefix-caching --kv-cache-dtype fp8]
}

// vLLM's own message says why it did not start, and how long max_model_len could be.
func ExampleClassifyVLLMLog() {
	c := launcher.ClassifyVLLMLog(`(EngineCore_DP0 pid=7) ERROR 12-19 10:00:01 [core.py:708] ValueError: To serve at least one request with the models's max seq len (131072), (16.00 GiB KV cache is needed, which is larger than the available KV cache memory (4.50 GiB). Based on the available memory, the estimated maximum model length is 36864. Try increasing gpu_memory_utilization or decreasing max_model_len when initializing the engine.
RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}`)
	fmt.Println(c.Class, c.EstimatedMaxModelLen)
	// Output:
	// kv_cache_too_small 36864
}
