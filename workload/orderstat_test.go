package workload

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRanksOfNamesTheOrderStatistics(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		n    int
		p    float64
		want QuantileRanks
	}{
		// (n-1)q = 117.81: nearest the 119th of 120, the 2nd largest; the interval's ranks
		// 118.8 -/+ 2.14 are the 116th (0-based 115) and past the end.
		{"p99 of 120 is the 2nd largest", 120, 99, QuantileRanks{Rank: 2, Low: 5, High: 1}},
		// 29.7 -/+ 1.07: 0-based 27 to past the end.
		{"p99 of 30 is the largest", 30, 99, QuantileRanks{Rank: 1, Low: 3, High: 1}},
		// (n-1)q = 989.01; 990 -/+ 6.17: 0-based 982 to 996.
		{"p99 of 1000 has ten beyond it", 1000, 99, QuantileRanks{Rank: 11, Low: 18, High: 4}},
		// 190 -/+ 6.04: 0-based 182 to 196.
		{"p95 of 200", 200, 95, QuantileRanks{Rank: 11, Low: 18, High: 4}},
		// 4.5 -/+ 2.94: 0-based 0 to 7.
		{"p50 of 9 is the middle", 9, 50, QuantileRanks{Rank: 5, Low: 9, High: 2}},
		{"one sample", 1, 99, QuantileRanks{Rank: 1, Low: 1, High: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, RanksOf(tt.n, tt.p)); diff != "" {
				t.Errorf("RanksOf(%d, %g) (-want +got):\n%s", tt.n, tt.p, diff)
			}
		})
	}
}

// TestRanksOfAgreesWithPercentile checks that the ranks are those of the values Percentile
// and PercentileCI read, on samples whose value is their ascending position.
func TestRanksOfAgreesWithPercentile(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 2, 7, 20, 99, 120, 300, 1000} {
		sorted := make([]float64, n)
		for i := range sorted {
			sorted[i] = float64(i)
		}
		for _, p := range []float64{50, 90, 95, 99, 99.9} {
			r := RanksOf(n, p)
			value := func(rank int) float64 { return float64(n - rank) }
			if got, want := value(r.Rank), Percentile(sorted, p); math.Abs(got-want) > 0.5 {
				t.Errorf("n=%d p%g: rank %d holds %g, Percentile reads %g", n, p, r.Rank, got, want)
			}
			lo, hi := PercentileCI(sorted, p)
			if value(r.Low) != lo || value(r.High) != hi {
				t.Errorf("n=%d p%g: ranks %d..%d hold %g..%g, PercentileCI gives %g..%g", n, p, r.Low, r.High, value(r.Low), value(r.High), lo, hi)
			}
		}
	}
}

func TestSamplesForPutsTenInTheTail(t *testing.T) {
	t.Parallel()
	for p, want := range map[float64]int{99: 1000, 95: 200, 90: 100, 50: 20, 99.9: 10000} {
		if got := SamplesFor(p); got != want {
			t.Errorf("SamplesFor(%g) = %d, want %d", p, got, want)
		}
	}
}
