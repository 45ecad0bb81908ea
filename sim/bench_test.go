package sim

import (
	"context"
	"testing"

	"github.com/frontier-llm/frontier/workload"
)

// BenchmarkEstimate measures the estimator on one configuration of 500 requests (a chat
// class: log-normal prompts of 800 tokens with a 200-token shared prefix, 50 to 300 output
// tokens, Poisson arrivals at 20 req/s) of Llama-3.1-8B on an H100. It reports
// configurations per minute on one core (-cpu 1) or on all (RunParallel).
func BenchmarkEstimate(b *testing.B) {
	arch, sku := mustArch(b, "llama-3.1-8b"), mustSKU(b, "h100-sxm")
	cls := []workload.Class{{Name: "chat", Requests: 500,
		InputTokens:  workload.Dist{Kind: workload.DistLogNormal, A: 800, B: 0.6},
		OutputTokens: workload.Dist{Kind: workload.DistUniform, A: 50, B: 300}, PrefixTokens: 200,
		Arrival: workload.Arrival{Kind: workload.ArrivalPoisson, Rate: 20}}}
	cfg := DefaultConfig()
	cfg.MaxModelLen = 8192
	cfg.MaxNumSeqs = 128
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := Estimate(context.Background(), arch, sku, cfg, cls, 1); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Minutes(), "configs/min")
}
