package sim_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/frontier-llm/frontier/hw"
	"github.com/frontier-llm/frontier/sim"
	"github.com/frontier-llm/frontier/workload"
)

// CheckStartup is the memory pre-screen: whether vLLM would start, and with how much KV
// cache.
func ExampleCheckStartup() {
	arch, _ := sim.LookupArch("llama-3.1-8b")
	h100, _ := hw.LookupSKU("h100-sxm")
	cfg, _ := sim.ConfigFromSettings(map[string]any{"gpu_memory_utilization": 0.9}, 8192)
	st, _ := sim.CheckStartup(arch, h100, cfg)
	fmt.Printf("weights %.1f GiB, KV cache %d tokens, %.0fx concurrency at 8192 tokens\n", st.WeightsGiB, st.KVCacheTokens, st.MaxConcurrency)

	l4, _ := hw.LookupSKU("l4")
	cfg, _ = sim.ConfigFromSettings(nil, 131072)
	_, err := sim.CheckStartup(arch, l4, cfg)
	var se *sim.StartupError
	if errors.As(err, &se) {
		fmt.Println(se.Class)
	}
	// Output:
	// weights 15.0 GiB, KV cache 433888 tokens, 53x concurrency at 8192 tokens
	// kv_cache_too_small
}

// Estimate runs a workload on the model, without HTTP.
func ExampleEstimate() {
	arch, _ := sim.LookupArch("llama-3.1-8b")
	h100, _ := hw.LookupSKU("h100-sxm")
	cfg, _ := sim.ConfigFromSettings(map[string]any{"max_num_seqs": int64(64)}, 8192)
	chat := workload.Class{Name: "chat", Requests: 100,
		InputTokens:  workload.Dist{Kind: workload.DistFixed, A: 1000},
		OutputTokens: workload.Dist{Kind: workload.DistFixed, A: 100},
		Arrival:      workload.Arrival{Kind: workload.ArrivalConcurrency, Concurrency: 1}}
	m, err := sim.Estimate(context.Background(), arch, h100, cfg, []workload.Class{chat}, 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("simulated: %v, completed %.0f, TPOT p50 %.1f ms\n", m.Simulated, m.Total.Metrics[workload.Completed], m.Total.Metrics["tpot_p50_ms"])
	// Output:
	// simulated: true, completed 100, TPOT p50 6.5 ms
}
