package search

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/frontier-llm/frontier/record"

	"github.com/google/go-cmp/cmp"
)

func TestHypervolume(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		points [][]float64
		ref    []float64
		want   float64
	}{
		{"empty", nil, []float64{1, 1}, 0},
		{"one point", [][]float64{{0, 0}}, []float64{1, 1}, 1},
		{"staircase", [][]float64{{0, 2}, {1, 1}, {2, 0}}, []float64{3, 3}, 6},
		{"dominated point adds nothing", [][]float64{{1, 1}, {2, 2}}, []float64{3, 3}, 4},
		{"point beyond the reference is left out", [][]float64{{1, 1}, {4, 0}}, []float64{3, 3}, 4},
		{"three objectives", [][]float64{{0, 0, 1}, {1, 1, 0}}, []float64{2, 2, 2}, 4 + 2 - 1},
		{"one objective", [][]float64{{3}, {1}}, []float64{4}, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := record.Hypervolume(tc.points, tc.ref); math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("Hypervolume = %v; want %v", got, tc.want)
			}
		})
	}
}

// TestHypervolumeMatchesMonteCarlo checks the slicing algorithm in three dimensions against
// sampling.
func TestHypervolumeMatchesMonteCarlo(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	var pts [][]float64
	for i := 0; i < 12; i++ {
		pts = append(pts, []float64{rng.Float64(), rng.Float64(), rng.Float64()})
	}
	ref := []float64{1, 1, 1}
	const n = 200_000
	hit := 0
	for i := 0; i < n; i++ {
		x := []float64{rng.Float64(), rng.Float64(), rng.Float64()}
		for _, p := range pts {
			if p[0] <= x[0] && p[1] <= x[1] && p[2] <= x[2] {
				hit++
				break
			}
		}
	}
	mc := float64(hit) / n
	if got := record.Hypervolume(pts, ref); math.Abs(got-mc) > 0.01 {
		t.Errorf("Hypervolume = %.4f; Monte Carlo estimate %.4f", got, mc)
	}
}

func TestParetoRanks(t *testing.T) {
	t.Parallel()
	pts := [][]float64{{1, 3}, {2, 2}, {3, 1}, {2, 3}, {3, 3}, {1, 3}}
	want := []int{0, 0, 0, 1, 2, 0}
	if diff := cmp.Diff(want, record.Ranks(pts)); diff != "" {
		t.Errorf("ranks (-want +got):\n%s", diff)
	}
}

func TestScalarizerRanksFeasibleBeforeInfeasible(t *testing.T) {
	t.Parallel()
	feasible := [][]float64{{0, 10}, {5, 5}, {10, 0}}
	for seed := uint64(0); seed < 20; seed++ {
		s := newScalarizer(feasible, 2, rand.New(rand.NewPCG(seed, 1)))
		for _, p := range append(feasible, []float64{100, 100}) {
			if v := s.feasible(p); v > 1+parEGORho || v < 0 {
				t.Fatalf("seed %d: score of %v is %v; want within [0, 1+rho]", seed, p, v)
			}
			if s.feasible(p) >= infeasibleScore(0) {
				t.Fatalf("a feasible trial scores %v, not below the best infeasible one", s.feasible(p))
			}
		}
		sum := 0.0
		for _, w := range s.weights {
			sum += w
		}
		if math.Abs(sum-1) > 1e-9 {
			t.Errorf("weights %v do not sum to 1", s.weights)
		}
	}
}
