package sim

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/frontier-llm/frontier/workload"
)

// BenchmarkEstimate measures the estimator on one configuration of 500 requests (a chat
// class: log-normal prompts of 800 tokens with a 200-token shared prefix, 50 to 300 output
// tokens, Poisson arrivals at 20 req/s) of Llama-3.1-8B on an H100, with as many
// configurations at once as -cpu allows. configs/min is by wall time; cpu-ms/config is the
// process's CPU time (GC included) per configuration, which does not depend on what else the
// machine runs: two cores estimate 2 × 60000 / cpu-ms configurations a minute.
func BenchmarkEstimate(b *testing.B) { benchmarkEstimate(b, nil) }

// benchmarkEstimate is BenchmarkEstimate's configuration, changed by edit.
func benchmarkEstimate(b *testing.B, edit func(*EngineConfig)) {
	arch, sku := mustArch(b, "llama-3.1-8b"), mustSKU(b, "h100-sxm")
	cls := []workload.Class{{Name: "chat", Requests: 500,
		InputTokens:  workload.Dist{Kind: workload.DistLogNormal, A: 800, B: 0.6},
		OutputTokens: workload.Dist{Kind: workload.DistUniform, A: 50, B: 300}, PrefixTokens: 200,
		Arrival: workload.Arrival{Kind: workload.ArrivalPoisson, Rate: 20}}}
	cfg := DefaultConfig()
	cfg.MaxModelLen = 8192
	cfg.MaxNumSeqs = 128
	if edit != nil {
		edit(&cfg)
	}
	b.ReportAllocs()
	cpu0 := cpuTime()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := Estimate(context.Background(), arch, sku, cfg, cls, 1); err != nil {
				b.Error(err)
				return
			}
		}
	})
	cpu := cpuTime() - cpu0
	b.ReportMetric(float64(b.N)/b.Elapsed().Minutes(), "configs/min")
	b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/config")
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkEngine is BenchmarkEstimate without the aggregation of the records into metrics:
// the scheduler and the step-time model alone.
func BenchmarkEngine(b *testing.B) {
	arch, sku := mustArch(b, "llama-3.1-8b"), mustSKU(b, "h100-sxm")
	cls := []workload.Class{{Name: "chat", Requests: 500,
		InputTokens:  workload.Dist{Kind: workload.DistLogNormal, A: 800, B: 0.6},
		OutputTokens: workload.Dist{Kind: workload.DistUniform, A: 50, B: 300}, PrefixTokens: 200,
		Arrival: workload.Arrival{Kind: workload.ArrivalPoisson, Rate: 20}}}
	reqs, err := loadRequests(cls[0], 1)
	if err != nil {
		b.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.MaxModelLen = 8192
	cfg.MaxNumSeqs = 128
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		e, err := newEngine(arch, sku, cfg)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := e.run(context.Background(), cls, [][]workload.Request{reqs}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Milliseconds())/float64(b.N), "cpu-ms/config")
}

// BenchmarkEstimateOffload is BenchmarkEstimate with a CPU tier of 16 GiB
// (kv_offloading_size): every computed block is also stored there.
func BenchmarkEstimateOffload(b *testing.B) {
	benchmarkEstimate(b, func(c *EngineConfig) { c.KVOffloadingSize = 16 })
}
