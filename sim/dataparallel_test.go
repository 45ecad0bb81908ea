package sim

import (
	"context"
	"testing"

	"github.com/frontier-llm/frontier/workload"
)

// TestEstimateDataParallelDoublesSaturatedThroughput offers more load than one engine core
// sustains: two cores behind the load balancer, each with the GPUs and KV cache of one,
// sustain close to twice its throughput.
func TestEstimateDataParallelDoublesSaturatedThroughput(t *testing.T) {
	t.Parallel()
	arch, sku := mustArch(t, "llama-3.1-8b"), mustSKU(t, "h100-sxm")
	cls := []workload.Class{fixedClass("chat", 1200, 1500, 200, workload.Arrival{Kind: workload.ArrivalPoisson, Rate: 200})}
	tput := map[int]float64{}
	for _, dp := range []int{1, 2} {
		cfg := DefaultConfig()
		cfg.MaxModelLen = 8192
		cfg.MaxNumSeqs = 128
		cfg.DataParallelSize = dp
		if got := cfg.GPUs(); got != dp {
			t.Errorf("data_parallel_size %d occupies %d GPUs, want %d", dp, got, dp)
		}
		m, err := Estimate(context.Background(), arch, sku, cfg, cls, 1)
		if err != nil {
			t.Fatal(err)
		}
		r := m.Total.Metrics
		if r[workload.Completed] != 1200 {
			t.Errorf("data_parallel_size %d: completed %v, want 1200", dp, r[workload.Completed])
		}
		tput[dp] = r[workload.OutputTokenThroughput]
		t.Logf("data_parallel_size %d: %.0f output tokens/s, queue p99 %.0f ms", dp, tput[dp], r[workload.QueueP99Ms])
		if dp == 1 && r[workload.QueueP99Ms] < 1000 {
			t.Fatalf("one engine core queues %.0f ms at p99: the load does not saturate it", r[workload.QueueP99Ms])
		}
	}
	if ratio := tput[2] / tput[1]; ratio < 1.8 || ratio > 2.05 {
		t.Errorf("data_parallel_size 2 sustains %.2f times the throughput of 1, want close to 2", ratio)
	}
}

// TestBalancePicksTheLeastLoadedCore checks the load balancer's score: waiting requests count
// four times a running one.
func TestBalancePicksTheLeastLoadedCore(t *testing.T) {
	t.Parallel()
	a, b, c := &engine{}, &engine{}, &engine{}
	a.running = make([]*seq, 3) // score 3
	b.queue = make([]*seq, 1)   // score 4
	c.running = make([]*seq, 2) // score 2 + 4 = 6 with one waiting
	c.preempted = make([]*seq, 1)
	if got := balance([]*engine{a, b, c}); got != 0 {
		t.Errorf("balance picked core %d, want 0 (3 running against 1 waiting and 2 running + 1 waiting)", got)
	}
	a.running = make([]*seq, 5)
	if got := balance([]*engine{a, b, c}); got != 1 {
		t.Errorf("balance picked core %d, want 1", got)
	}
	if got := balance([]*engine{{}, {}}); got != 0 {
		t.Errorf("balance picked core %d of two idle ones, want the first", got)
	}
}
