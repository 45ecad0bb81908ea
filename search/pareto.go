package search

import (
	"math"
	"math/rand/v2"
)

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
