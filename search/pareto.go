package search

import (
	"math"
	"math/rand/v2"
	"sort"
)

// Points handed to these functions are in minimisation form: an objective to maximise is
// negated first (see orient), so that smaller is better in every coordinate.

// dominates reports whether a is at least as good as b everywhere and better somewhere.
func dominates(a, b []float64) bool {
	better := false
	for i := range a {
		if a[i] > b[i] {
			return false
		}
		if a[i] < b[i] {
			better = true
		}
	}
	return better
}

// nonDominated returns the indices of the points that no other point dominates, in order.
// Identical points are all kept.
func nonDominated(points [][]float64) []int {
	var front []int
	for i, p := range points {
		dominated := false
		for j, q := range points {
			if i != j && dominates(q, p) {
				dominated = true
				break
			}
		}
		if !dominated {
			front = append(front, i)
		}
	}
	return front
}

// orient converts objective values to minimisation form.
func orient(values []float64, maximize []bool) []float64 {
	out := make([]float64, len(values))
	for i, v := range values {
		if maximize[i] {
			v = -v
		}
		out[i] = v
	}
	return out
}

// Hypervolume is the volume of the region dominated by points (in minimisation form) and
// bounded by ref: the usual measure of how good a Pareto front is. Points that do not
// dominate ref contribute nothing.
func Hypervolume(points [][]float64, ref []float64) float64 {
	var kept [][]float64
	for _, p := range points {
		inside := true
		for i := range p {
			if p[i] >= ref[i] {
				inside = false
				break
			}
		}
		if inside {
			kept = append(kept, p)
		}
	}
	return hv(kept, ref)
}

// hv computes the hypervolume by slicing along the last coordinate (HSO); exact, and fast
// enough for the fronts of a study (tens of points, a handful of objectives).
func hv(points [][]float64, ref []float64) float64 {
	if len(points) == 0 {
		return 0
	}
	d := len(ref)
	if d == 1 {
		best := ref[0]
		for _, p := range points {
			best = math.Min(best, p[0])
		}
		return ref[0] - best
	}
	if d == 2 {
		ps := make([][]float64, len(points))
		copy(ps, points)
		sort.Slice(ps, func(i, j int) bool {
			if ps[i][0] != ps[j][0] {
				return ps[i][0] < ps[j][0]
			}
			return ps[i][1] < ps[j][1]
		})
		vol, lastY := 0.0, ref[1]
		for _, p := range ps {
			if p[1] < lastY {
				vol += (ref[0] - p[0]) * (lastY - p[1])
				lastY = p[1]
			}
		}
		return vol
	}
	ps := make([][]float64, len(points))
	copy(ps, points)
	sort.Slice(ps, func(i, j int) bool { return ps[i][d-1] < ps[j][d-1] })
	vol := 0.0
	for i := range ps {
		next := ref[d-1]
		if i+1 < len(ps) {
			next = ps[i+1][d-1]
		}
		depth := next - ps[i][d-1]
		if depth <= 0 {
			continue
		}
		slice := make([][]float64, 0, i+1)
		for _, p := range ps[:i+1] {
			slice = append(slice, p[:d-1])
		}
		vol += depth * hv(nonDominatedPoints(slice), ref[:d-1])
	}
	return vol
}

func nonDominatedPoints(points [][]float64) [][]float64 {
	idx := nonDominated(points)
	out := make([][]float64, len(idx))
	for i, j := range idx {
		out[i] = points[j]
	}
	return out
}

// scalarizer turns a trial's objectives into the one value goptuna minimises: ParEGO's
// augmented Chebyshev scalarisation with a weight vector drawn afresh for every proposal,
// over objectives normalised to [0, 1] by the range seen among feasible trials. Feasible
// trials score in [0, 1+rho]; infeasible ones score penaltyBase plus their violation, so
// that every feasible trial ranks before every infeasible one.
type scalarizer struct {
	weights  []float64
	lo, span []float64
}

const (
	parEGORho   = 0.05
	penaltyBase = 2.0
)

// newScalarizer draws a weight vector uniformly from the simplex and normalises by the
// range of the feasible points (in minimisation form).
func newScalarizer(feasible [][]float64, dims int, rng *rand.Rand) *scalarizer {
	s := &scalarizer{weights: make([]float64, dims), lo: make([]float64, dims), span: make([]float64, dims)}
	sum := 0.0
	for i := range s.weights {
		w := rng.ExpFloat64()
		s.weights[i] = w
		sum += w
	}
	for i := range s.weights {
		s.weights[i] /= sum
	}
	for i := 0; i < dims; i++ {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, p := range feasible {
			lo = math.Min(lo, p[i])
			hi = math.Max(hi, p[i])
		}
		if math.IsInf(lo, 0) {
			lo, hi = 0, 1
		}
		s.lo[i] = lo
		s.span[i] = hi - lo
		if s.span[i] <= 0 {
			s.span[i] = 1
		}
	}
	return s
}

// equalWeights is a scalarizer with every weight equal: the value stored for the dashboard.
func equalWeights(feasible [][]float64, dims int) *scalarizer {
	s := newScalarizer(feasible, dims, rand.New(rand.NewPCG(1, 1)))
	for i := range s.weights {
		s.weights[i] = 1 / float64(dims)
	}
	return s
}

// feasible scores a feasible trial's objectives (minimisation form).
func (s *scalarizer) feasible(p []float64) float64 {
	if len(p) == 0 {
		return 0
	}
	maxTerm, sum := math.Inf(-1), 0.0
	for i, v := range p {
		f := (v - s.lo[i]) / s.span[i]
		if math.IsNaN(f) || math.IsInf(f, 0) {
			f = 1
		}
		f = math.Max(0, math.Min(1, f))
		t := s.weights[i] * f
		maxTerm = math.Max(maxTerm, t)
		sum += t
	}
	return maxTerm + parEGORho*sum
}

// infeasible scores an infeasible trial from its violation (0 to 1; 1 when it did not run).
func infeasibleScore(violation float64) float64 {
	if math.IsNaN(violation) || violation < 0 {
		violation = 1
	}
	return penaltyBase + math.Min(violation, 1)
}

// paretoRanks is each point's non-domination rank: 0 for the front, 1 for the front of the
// rest, and so on.
func paretoRanks(points [][]float64) []int {
	rank := make([]int, len(points))
	left := make([]int, len(points))
	for i := range left {
		left[i] = i
	}
	for r := 0; len(left) > 0; r++ {
		sub := make([][]float64, len(left))
		for i, j := range left {
			sub[i] = points[j]
		}
		front := nonDominated(sub)
		inFront := make(map[int]bool, len(front))
		for _, f := range front {
			inFront[f] = true
			rank[left[f]] = r
		}
		var rest []int
		for i, j := range left {
			if !inFront[i] {
				rest = append(rest, j)
			}
		}
		left = rest
	}
	return rank
}
