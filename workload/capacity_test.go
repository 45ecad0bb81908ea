package workload_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/frontier-llm/frontier/workload"
	"github.com/frontier-llm/frontier/workload/workloadtest"
)

// modelMeasure is a measure function for SearchCapacity with a known capacity: below it every
// request meets the SLO, above it the share that does falls as the queue grows, and the
// server completes at most saturation requests a second. It stands in for the simulator's
// estimator, which calls SearchCapacity the same way.
func modelMeasure(capacity, saturation float64, calls *[]float64) func(context.Context, float64) (*workload.Measurement, error) {
	return func(_ context.Context, rate float64) (*workload.Measurement, error) {
		*calls = append(*calls, rate)
		att := 1.0
		if rate > capacity {
			att = math.Max(0, 1-(rate-capacity)/capacity)
		}
		tput := math.Min(rate, saturation)
		good := tput * att
		res := &workload.Result{Metrics: map[string]float64{
			workload.Completed: tput * 10, workload.Failed: 0, workload.DurationS: 10,
			workload.RequestThroughput: tput, workload.Goodput: good, workload.ErrorRate: 0,
			"ttft_p99_ms": 100,
		}}
		return &workload.Measurement{Workloads: map[string]*workload.Result{"c": res}, Total: res}, nil
	}
}

func TestSearchCapacityBracketsTheKnownCapacity(t *testing.T) {
	t.Parallel()
	c := workload.Class{Name: "c", Arrival: workload.Arrival{Kind: workload.ArrivalPoisson, Rate: 100},
		SLO: []workload.Bound{{Metric: "ttft_p99_ms", Value: 500}, {Metric: "error_rate", Value: 0.01}}}
	tests := []struct {
		name       string
		capacity   float64
		saturation float64
		opts       workload.CapacityOptions
		maxCalls   int
	}{
		{"doubling then bisecting", 37, 1e9, workload.CapacityOptions{Start: 1}, 20},
		{"start above capacity halves first", 3, 1e9, workload.CapacityOptions{Start: 50}, 20},
		{"the class's rate is the default start", 300, 1e9, workload.CapacityOptions{}, 12},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var calls []float64
			got, err := workload.SearchCapacity(context.Background(), modelMeasure(tt.capacity, tt.saturation, &calls), c, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			// Attainment 0.99 holds up to capacity * 1.01; the search stops within 5%.
			if got > tt.capacity*1.01 || got < tt.capacity*1.01/1.05 {
				t.Errorf("capacity %v, want within 5%% below %v (rates tried %v)", got, tt.capacity, calls)
			}
			if len(calls) > tt.maxCalls {
				t.Errorf("%d measurements (%v), want at most %d", len(calls), calls, tt.maxCalls)
			}
		})
	}
}

func TestSearchCapacityZeroWhenNothingMeetsTheSLO(t *testing.T) {
	t.Parallel()
	c := workload.Class{Name: "c"}
	never := func(context.Context, float64) (*workload.Measurement, error) {
		res := &workload.Result{Metrics: map[string]float64{workload.Completed: 0, workload.Failed: 10, workload.DurationS: 1}}
		return &workload.Measurement{Workloads: map[string]*workload.Result{"c": res}, Total: res}, nil
	}
	got, err := workload.SearchCapacity(context.Background(), never, c, workload.CapacityOptions{})
	if err != nil || got != 0 {
		t.Errorf("SearchCapacity = %v, %v; want 0, nil", got, err)
	}
	boom := errors.New("boom")
	_, err = workload.SearchCapacity(context.Background(), func(context.Context, float64) (*workload.Measurement, error) { return nil, boom }, c, workload.CapacityOptions{})
	if !errors.Is(err, boom) {
		t.Errorf("error %v, want the measurement's", err)
	}
}

// TestFindCapacityAgainstAServerWithLimitedSlots runs alone (not in parallel): its latencies
// must come from the server's queue, not from a busy machine.
func TestFindCapacityAgainstAServerWithLimitedSlots(t *testing.T) {
	// Two slots of 20 ms: 100 req/s served at most; a TTFT bound of 100 ms allows a short queue.
	s := startServer(t, workloadtest.Options{TTFT: 20 * time.Millisecond, Tokens: 1, Slots: 2})
	c := workload.Class{Name: "c", Requests: 40, Warmup: 4, InputTokens: fixed(8), OutputTokens: fixed(1), Attainment: 0.9,
		SLO: []workload.Bound{{Metric: "ttft_p99_ms", Value: 100}}}
	var tried []float64
	got, err := workload.FindCapacity(context.Background(), workload.Target{URL: s.URL(), Model: "m"}, c,
		workload.CapacityOptions{Start: 40, Tolerance: 0.25, Seed: 1, Observe: func(rate float64, m *workload.Measurement, ok bool) {
			t.Logf("%v ok=%v att=%v p50=%v p99=%v done=%v", rate, ok, workload.Attainment(m.Total), m.Total.Metrics["ttft_p50_ms"], m.Total.Metrics["ttft_p99_ms"], m.Total.Metrics["completed"])
			tried = append(tried, rate)
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("tried %v", tried)
	// A short run tolerates a little overload before the queue passes 100 ms: at 200 req/s
	// 40 requests leave 20 waiting for 200 ms, so the capacity is below that.
	if got < 20 || got >= 200 {
		t.Errorf("capacity %v req/s (tried %v); want between 20 and 200 for a server of 100 req/s", got, tried)
	}

}

func TestCostPerMillionOutputTokens(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name            string
		price           float64
		gpus            int
		tokensPerSecond float64
		want            float64
	}{
		{"one GPU", 2.5, 1, 1000, 2.5 / 3.6},
		{"two GPUs double the cost", 2.5, 2, 1000, 5 / 3.6},
		{"no output is infinitely expensive", 2.5, 1, 0, math.Inf(1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := workload.CostPerMillionOutputTokens(tt.price, tt.gpus, tt.tokensPerSecond)
			if got != tt.want && math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("cost = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestFindCapacityHoldsEachRate: with Hold, each rate sends rate × Hold requests when that
// is more than the class's own (plus its warm-up), so a rate is judged on a held load.
func TestFindCapacityHoldsEachRate(t *testing.T) {
	s := startServer(t, workloadtest.Options{TTFT: time.Millisecond, Tokens: 1, Slots: 64})
	c := workload.Class{Name: "c", Requests: 10, Warmup: 2, InputTokens: fixed(8), OutputTokens: fixed(1),
		SLO: []workload.Bound{{Metric: "ttft_p99_ms", Value: 1000}}}
	sent := map[float64]float64{}
	_, err := workload.FindCapacity(context.Background(), workload.Target{URL: s.URL(), Model: "m"}, c,
		workload.CapacityOptions{Start: 50, Max: 100, MaxMeasurements: 2, Seed: 1, Hold: 2 * time.Second,
			Observe: func(rate float64, m *workload.Measurement, ok bool) { sent[rate] = m.Total.Metrics[workload.Completed] }})
	if err != nil {
		t.Fatal(err)
	}
	for rate, n := range sent {
		if want := rate * 2; n < want*0.9 {
			t.Errorf("at %v req/s: %v requests completed; want about %v (held 2 s)", rate, n, want)
		}
	}
	if len(sent) == 0 {
		t.Fatal("no rate was measured")
	}
}
