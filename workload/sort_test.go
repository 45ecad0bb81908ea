package workload

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestSortDurationsSortsLikeSlicesSort(t *testing.T) {
	t.Parallel()
	for i, tc := range []struct {
		name string
		n    int
		draw func(rng *rand.Rand) time.Duration
	}{
		{"short", 100, func(rng *rand.Rand) time.Duration { return time.Duration(rng.Int64N(1e9)) }},
		{"latencies", 20000, func(rng *rand.Rand) time.Duration { return time.Duration(rng.Int64N(int64(50 * time.Millisecond))) }},
		{"few distinct values", 5000, func(rng *rand.Rand) time.Duration { return time.Duration(rng.IntN(4)) * time.Millisecond }},
		{"all equal", 3000, func(rng *rand.Rand) time.Duration { return time.Second }},
		{"negative and positive", 5000, func(rng *rand.Rand) time.Duration { return time.Duration(rng.Int64N(2e12) - 1e12) }},
		{"whole int64 range", 5000, func(rng *rand.Rand) time.Duration {
			return time.Duration(int64(rng.Uint64()))
		}},
		{"extremes", 1000, func(rng *rand.Rand) time.Duration {
			return []time.Duration{math.MinInt64, math.MaxInt64, 0, -1, 1}[rng.IntN(5)]
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(1, uint64(i))) // one stream per parallel subtest
			v := make([]time.Duration, tc.n)
			for k := range v {
				v[k] = tc.draw(rng)
			}
			want := slices.Clone(v)
			slices.Sort(want)
			sortDurations(v)
			if diff := cmp.Diff(want, v); diff != "" {
				t.Errorf("sortDurations (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMergeSortedMergesRuns(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	for k := range 6 {
		runs := make([][]float64, k)
		var want []float64
		for i := range runs {
			for range rng.IntN(50) {
				runs[i] = append(runs[i], float64(rng.IntN(20)))
			}
			slices.Sort(runs[i])
			want = append(want, runs[i]...)
		}
		slices.Sort(want)
		got := mergeSorted(runs)
		if diff := cmp.Diff(want, got); len(want) > 0 && diff != "" {
			t.Errorf("%d runs (-want +got):\n%s", k, diff)
		}
		if len(want) == 0 && len(got) != 0 {
			t.Errorf("%d empty runs merged into %v, want nothing", k, got)
		}
	}
}

// TestAggregateTotalEqualsPooledValues checks that the total's latency statistics, built by
// merging each class's sorted values, are exactly those of the pooled raw values of every
// class sorted together.
func TestAggregateTotalEqualsPooledValues(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	classes := []Class{{Name: "a"}, {Name: "b"}, {Name: "c"}}
	var recs []Record
	var ttft, tpot, itl, e2e []float64
	for i := range 900 {
		r := Record{Class: classes[i%3].Name, Index: i, Sent: time.Duration(rng.Int64N(1e10))}
		// Class c has coarse gaps, so the classes share many equal values.
		step := func() time.Duration { return time.Duration(1+rng.Int64N(40)) * time.Millisecond }
		if i%3 != 2 {
			step = func() time.Duration { return time.Duration(rng.Int64N(int64(40 * time.Millisecond))) }
		}
		at := r.Sent + time.Duration(rng.Int64N(int64(time.Second)))
		r.FirstToken = at
		n := 1 + rng.IntN(200)
		for range n {
			r.Chunks = append(r.Chunks, at)
			at += step()
		}
		r.End = r.Chunks[len(r.Chunks)-1]
		r.OutputTokens = n
		r.InputTokens = 10
		if i%17 == 0 {
			r.ErrClass, r.Status = ErrHTTP, 500
			recs = append(recs, r)
			continue
		}
		recs = append(recs, r)
		ttft = append(ttft, ms(r.FirstToken-r.Sent))
		e2e = append(e2e, ms(r.End-r.Sent))
		if n > 1 {
			tpot = append(tpot, ms(r.End-r.FirstToken)/float64(n-1))
		}
		for j := 1; j < len(r.Chunks); j++ {
			itl = append(itl, ms(r.Chunks[j]-r.Chunks[j-1]))
		}
	}
	got := Aggregate(classes, recs, 10*time.Second).Total

	want := map[string]float64{}
	wantCI := map[string][2]float64{}
	wantQ := map[string][]float64{}
	for name, v := range map[string][]float64{"ttft": ttft, "tpot": tpot, "itl": itl, "e2e": e2e} {
		slices.Sort(v)
		want[name+"_mean_ms"] = mean(v)
		for _, p := range []int{50, 90, 95, 99} {
			want[name+"_p"+strconv.Itoa(p)+"_ms"] = Percentile(v, float64(p))
		}
		for _, p := range []int{50, 90, 95, 99} {
			lo, hi := PercentileCI(v, float64(p))
			wantCI[name+"_p"+strconv.Itoa(p)+"_ms"] = [2]float64{lo, hi}
		}
		lo, hi := MeanCI(v)
		wantCI[name+"_mean_ms"] = [2]float64{lo, hi}
		q := make([]float64, 21)
		for i := range q {
			q[i] = Percentile(v, float64(i*5))
		}
		wantQ[name+"_ms"] = q
	}
	gotLatency := map[string]float64{}
	for name := range want {
		gotLatency[name] = got.Metrics[name]
	}
	// Exact equality: the same values in the same order give the same sums and percentiles.
	if diff := cmp.Diff(want, gotLatency); diff != "" {
		t.Errorf("total latency metrics (-pooled +merged):\n%s", diff)
	}
	if diff := cmp.Diff(wantCI, got.CI); diff != "" {
		t.Errorf("total CIs (-pooled +merged):\n%s", diff)
	}
	if diff := cmp.Diff(wantQ, got.Quantiles); diff != "" {
		t.Errorf("total quantiles (-pooled +merged):\n%s", diff)
	}
}
