package launcher

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The messages below are vLLM's own, as its sources print them (v0.10 to v0.13); see the
// reference on vLLM's startup failures. Each case is the tail of a log.
func TestClassifyVLLMLog(t *testing.T) {
	t.Parallel()
	const kvMsg = "ValueError: To serve at least one request with the models's max seq len (131072), (16.00 GiB KV cache is needed, which is larger than the available KV cache memory (4.50 GiB). Based on the available memory, the estimated maximum model length is 36864. Try increasing gpu_memory_utilization or decreasing max_model_len when initializing the engine."
	const weightsMsg = "Failed to load model - not enough GPU memory. Try lowering --gpu-memory-utilization to free memory for weights, increasing --tensor-parallel-size, or using --quantization. See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more tips. (original error: CUDA out of memory. Tried to allocate 1.75 GiB. GPU 0 has a total capacity of 22.05 GiB of which 1.02 GiB is free.)"
	tests := []struct {
		name string
		log  string
		want Classification
	}{
		{
			name: "KV cache too small, with the estimated length",
			log: "(EngineCore_DP0 pid=1) INFO 12-19 10:00:00 [gpu_worker.py:298] Available KV cache memory: 4.50 GiB\n" +
				"(EngineCore_DP0 pid=1) ERROR 12-19 10:00:01 [core.py:708] " + kvMsg + "\n" +
				"RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}\n",
			want: Classification{Class: FailKVCacheTooSmall, Message: kvMsg, EstimatedMaxModelLen: 36864},
		},
		{
			name: "KV cache too small, V0 wording",
			log:  "ValueError: The model's max seq len (29000) is larger than the maximum number of tokens that can be stored in KV cache (23648). Try increasing gpu_memory_utilization or decreasing max_model_len when initializing the engine.\n",
			want: Classification{Class: FailKVCacheTooSmall, EstimatedMaxModelLen: 23648,
				Message: "ValueError: The model's max seq len (29000) is larger than the maximum number of tokens that can be stored in KV cache (23648). Try increasing gpu_memory_utilization or decreasing max_model_len when initializing the engine."},
		},
		{
			name: "no memory for the cache blocks at all",
			log:  "ValueError: No available memory for the cache blocks. Try increasing gpu_memory_utilization when initializing the engine. See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details.\n",
			want: Classification{Class: FailKVCacheTooSmall, Message: "ValueError: No available memory for the cache blocks. Try increasing gpu_memory_utilization when initializing the engine. See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."},
		},
		{
			name: "weights do not fit",
			log:  "(EngineCore_DP0 pid=7) ERROR 12-19 10:00:01 [gpu_model_runner.py:3715] " + weightsMsg + "\nRuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}\n",
			want: Classification{Class: FailWeightsOOM, Message: weightsMsg},
		},
		{
			name: "bare CUDA OOM while the weights load",
			log:  "INFO Starting to load model meta-llama/Llama-3.1-70B...\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 224.00 MiB. GPU 0 has a total capacity of 22.05 GiB of which 187.75 MiB is free.\n",
			want: Classification{Class: FailWeightsOOM, Message: "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 224.00 MiB. GPU 0 has a total capacity of 22.05 GiB of which 187.75 MiB is free."},
		},
		{
			name: "CUDA OOM after loading",
			log:  "INFO Model loading took 14.99 GiB memory and 5.1 seconds\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n",
			want: Classification{Class: FailOOM, Message: "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."},
		},
		{
			name: "sampler warmup OOM",
			log:  "RuntimeError: CUDA out of memory occurred when warming up sampler with 1024 dummy requests. Please try lowering max_num_seqs or gpu_memory_utilization when initializing the engine.\n",
			want: Classification{Class: FailOOM, Message: "RuntimeError: CUDA out of memory occurred when warming up sampler with 1024 dummy requests. Please try lowering max_num_seqs or gpu_memory_utilization when initializing the engine."},
		},
		{
			name: "GPU memory held by another process",
			log:  "ValueError: Free memory on device cuda:0 (10.2/79.1 GiB) on startup is less than desired GPU memory utilization (0.9, 71.19 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.\n",
			want: Classification{Class: FailGPUBusy, Message: "ValueError: Free memory on device cuda:0 (10.2/79.1 GiB) on startup is less than desired GPU memory utilization (0.9, 71.19 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes."},
		},
		{
			name: "quantisation not supported on the GPU",
			log:  "ValueError: The quantization method fp8 is not supported for the current GPU. Minimum capability: 89. Current capability: 80.\n",
			want: Classification{Class: FailUnsupported, Message: "ValueError: The quantization method fp8 is not supported for the current GPU. Minimum capability: 89. Current capability: 80."},
		},
		{
			name: "quantisation that needs a quantised checkpoint",
			log:  "ValueError: Cannot find the config file for awq\n",
			want: Classification{Class: FailUnsupported, Message: "ValueError: Cannot find the config file for awq"},
		},
		{
			name: "partial prefills in V1",
			log:  "NotImplementedError: Concurrent Partial Prefill is not supported. We recommend to remove Concurrent Partial Prefill from your config.\n",
			want: Classification{Class: FailUnsupported, Message: "NotImplementedError: Concurrent Partial Prefill is not supported. We recommend to remove Concurrent Partial Prefill from your config."},
		},
		{
			name: "invalid combination of flags",
			log:  "ValueError: max_num_batched_tokens (2048) is smaller than max_model_len (8192). This effectively limits the maximum sequence length to max_num_batched_tokens and makes vLLM reject longer sequences. Please increase max_num_batched_tokens or decrease max_model_len.\n",
			want: Classification{Class: FailInvalidArgs, Message: "ValueError: max_num_batched_tokens (2048) is smaller than max_model_len (8192). This effectively limits the maximum sequence length to max_num_batched_tokens and makes vLLM reject longer sequences. Please increase max_num_batched_tokens or decrease max_model_len."},
		},
		{
			name: "argparse",
			log:  "usage: vllm serve [model_tag] [options]\nvllm serve: error: argument --kv-cache-dtype: invalid choice: 'fp4' (choose from auto, bfloat16, fp8)\n",
			want: Classification{Class: FailInvalidArgs, Message: "vllm serve: error: argument --kv-cache-dtype: invalid choice: 'fp4' (choose from auto, bfloat16, fp8)"},
		},
		{
			name: "port taken",
			log:  "ERROR:    [Errno 98] error while attempting to bind on address ('127.0.0.1', 8000): address already in use\n",
			want: Classification{Class: FailPortTaken, Message: "ERROR:    [Errno 98] error while attempting to bind on address ('127.0.0.1', 8000): address already in use"},
		},
		{
			name: "crash keeps the root cause over the wrapper",
			log:  "Traceback (most recent call last):\n  File \"x.py\", line 1\nRuntimeError: NCCL error: unhandled system error\nRuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}\n",
			want: Classification{Class: FailCrash, Message: "RuntimeError: NCCL error: unhandled system error"},
		},
		{
			name: "crash with no exception keeps the last line",
			log:  "INFO loading\nSegmentation fault (core dumped)\n\n",
			want: Classification{Class: FailCrash, Message: "Segmentation fault (core dumped)"},
		},
		{
			name: "a wrapper's failure is unknown, with its last lines cleaned of prefixes",
			log: "2025-01-07T10:00:00.123456789Z stdout F starting vllm in the container\n" +
				"2025-01-07T10:00:00.200Z stderr F /entrypoint.sh: line 4: /opt/venv/bin/python3: No such file or directory\n" +
				"\x1b[31m[pod/vllm-0/vllm] entrypoint exited with status 127\x1b[0m\n",
			want: Classification{Class: FailUnknown, Message: "starting vllm in the container / " +
				"/entrypoint.sh: line 4: /opt/venv/bin/python3: No such file or directory / entrypoint exited with status 127"},
		},
		{
			name: "an empty log is unknown with no message",
			log:  "\n",
			want: Classification{Class: FailUnknown},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, ClassifyVLLMLog(tc.log)); diff != "" {
				t.Errorf("ClassifyVLLMLog (-want +got):\n%s", diff)
			}
		})
	}
}

func FuzzClassifyVLLMLog(f *testing.F) {
	f.Add("ValueError: ... the estimated maximum model length is 4096. Try")
	f.Add("(EngineCore_DP0 pid=1) ERROR 12-19 10:00:01 [core.py:1] x\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, log string) {
		c := ClassifyVLLMLog(log)
		if c.Class == "" {
			t.Errorf("no class for %q", log)
		}
		if c.EstimatedMaxModelLen < 0 {
			t.Errorf("negative estimated length %d", c.EstimatedMaxModelLen)
		}
	})
}

func TestParseCapacity(t *testing.T) {
	t.Parallel()
	log := "(EngineCore_DP0 pid=188893) INFO 10-03 10:00:00 [kv_cache_utils.py:1087] GPU KV cache size: 425,424 tokens\n" +
		"(EngineCore_DP0 pid=188893) INFO 10-03 10:00:00 [kv_cache_utils.py:1091] Maximum concurrency for 65,536 tokens per request: 6.49x\n"
	got, ok := ParseCapacityLog(log)
	if diff := cmp.Diff(Capacity{KVCacheTokens: 425424, MaxConcurrency: 6.49}, got); diff != "" || !ok {
		t.Errorf("ParseCapacityLog ok=%v (-want +got):\n%s", ok, diff)
	}
	if _, ok := ParseCapacityLog("INFO nothing here\n"); ok {
		t.Error("ParseCapacityLog found a capacity in a log without one")
	}
	metrics := "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n" +
		"# TYPE vllm:cache_config_info gauge\n" +
		`vllm:cache_config_info{block_size="16",cache_dtype="auto",engine="0",num_gpu_blocks="26589"} 1.0` + "\n"
	got, ok = ParseCacheConfigInfo(metrics, 8192)
	if diff := cmp.Diff(Capacity{KVCacheTokens: 425424, MaxConcurrency: 425424.0 / 8192}, got); diff != "" || !ok {
		t.Errorf("ParseCacheConfigInfo ok=%v (-want +got):\n%s", ok, diff)
	}
}

func FuzzParseCapacity(f *testing.F) {
	f.Add("GPU KV cache size: 425,424 tokens\nMaximum concurrency for 65,536 tokens per request: 6.49x\n")
	f.Add(`vllm:cache_config_info{block_size="16",num_gpu_blocks="26589"} 1.0`)
	f.Add(`vllm:cache_config_info{num_gpu_blocks="",block_size="x"} 1`)
	f.Fuzz(func(t *testing.T, text string) {
		if c, ok := ParseCapacityLog(text); ok && (c.KVCacheTokens < 0 || c.MaxConcurrency < 0) {
			t.Errorf("negative capacity %+v", c)
		}
		if c, ok := ParseCacheConfigInfo(text, 4096); ok && c.KVCacheTokens <= 0 {
			t.Errorf("capacity %+v without tokens", c)
		}
	})
}
