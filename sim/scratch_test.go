package sim

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/frontier-llm/frontier/workload"
)

// TestEstimateIsTheSameOnReusedBuffers: a run on buffers other configurations have used
// (larger and smaller caches, a mixture of experts, data parallelism) gives the measurement
// a run on fresh ones gave, to the last bit.
func TestEstimateIsTheSameOnReusedBuffers(t *testing.T) {
	cls := []workload.Class{{Name: "chat", Requests: 300,
		InputTokens:  workload.Dist{Kind: workload.DistLogNormal, A: 800, B: 0.6},
		OutputTokens: workload.Dist{Kind: workload.DistUniform, A: 50, B: 300}, PrefixTokens: 200,
		Arrival: workload.Arrival{Kind: workload.ArrivalPoisson, Rate: 20}}}
	run := func(arch, sku string, edit func(*EngineConfig)) string {
		cfg := DefaultConfig()
		cfg.MaxModelLen = 8192
		if edit != nil {
			edit(&cfg)
		}
		m, err := Estimate(context.Background(), mustArch(t, arch), mustSKU(t, sku), cfg, cls, 1)
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	first := run("llama-3.1-8b", "h100-sxm", nil)
	run("qwen3-30b-a3b", "a100-80gb", nil)
	run("llama-3.2-1b", "l40s", func(c *EngineConfig) { c.EnablePrefixCaching = false })
	run("mistral-7b", "b200", nil)
	if again := run("llama-3.1-8b", "h100-sxm", nil); again != first {
		t.Fatalf("the same estimate differs once its buffers were reused:\nfirst %s\nagain %s", first, again)
	}
}
