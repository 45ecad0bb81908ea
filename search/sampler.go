package search

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/c-bata/goptuna"
	"github.com/c-bata/goptuna/cmaes"
	"github.com/c-bata/goptuna/sobol"

	"github.com/frontier-llm/frontier/plan"
)

// Sampler names, as in the plan's study block.
const (
	SamplerTPE    = "tpe"
	SamplerCMAES  = "cmaes"
	SamplerRandom = "random"
	SamplerGrid   = "grid"
	SamplerSobol  = "sobol"
)

// errExhausted is returned by a proposer that has no untried configuration left.
var errExhausted = errors.New("every configuration has been tried")

// observation is one measured trial as a sampler sees it.
type observation struct {
	config plan.Config
	// score is the scalarised value for this proposal: smaller is better.
	score float64
	attrs map[string]string
}

// history is what a proposer knows when it proposes: the measured trials, scored for this
// proposal, and the keys of every configuration already in the study.
type history struct {
	obs   []observation
	tried map[string]bool
	// n is the number of trials in the study, the index of the next proposal.
	n int
}

// proposer proposes the next configuration. attempt counts the proposals already
// rejected for this trial (a duplicate or a rule), so that each attempt draws anew.
type proposer interface {
	propose(h *history, attempt int) (plan.Config, map[string]string, error)
}

// newProposer returns the plan's sampler.
func newProposer(name string, sp *space, seed int64, p *plan.Plan) (proposer, error) {
	switch name {
	case "", SamplerTPE:
		return &tpeProposer{sp: sp, seed: seed}, nil
	case SamplerRandom:
		return &randomProposer{sp: sp, seed: seed}, nil
	case SamplerSobol:
		return newSobolProposer(sp, seed), nil
	case SamplerGrid:
		grid, err := p.Grid()
		if err != nil {
			return nil, fmt.Errorf("grid sampler: %w", err)
		}
		return &gridProposer{grid: grid}, nil
	case SamplerCMAES:
		return &cmaesProposer{sp: sp, seed: seed, tpe: &tpeProposer{sp: sp, seed: seed},
			sampler: cmaes.NewSampler(cmaes.SamplerOptionSeed(seed))}, nil
	}
	return nil, fmt.Errorf("unknown sampler %q; use tpe, cmaes, random, grid or sobol", name)
}

// rngFor is a generator for one proposal: a pure function of the study's seed, the
// proposal's index and its attempt, so a study reproduces and a resumed one draws anew.
func rngFor(seed int64, n, attempt int, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed)^0x9e3779b97f4a7c15*stream, uint64(n)<<20|uint64(attempt)))
}

// randomProposer draws every knob uniformly (log-uniformly for log knobs).
type randomProposer struct {
	sp   *space
	seed int64
}

func (r *randomProposer) propose(h *history, attempt int) (plan.Config, map[string]string, error) {
	rng := rngFor(r.seed, h.n, attempt, 1)
	c := make(plan.Config, len(r.sp.knobs))
	for i, k := range r.sp.knobs {
		c[k.Name] = r.sp.fromUnit(i, rng.Float64())
	}
	return c, nil, nil
}

// sobolProposer walks a Sobol sequence, shifted by a random vector drawn from the seed
// (a Cranley-Patterson rotation), so different seeds give different point sets.
type sobolProposer struct {
	sp     *space
	shift  []float64
	engine *sobol.Engine
	drawn  [][]float64
}

func newSobolProposer(sp *space, seed int64) *sobolProposer {
	rng := rngFor(seed, 0, 0, 2)
	shift := make([]float64, len(sp.knobs))
	for i := range shift {
		shift[i] = rng.Float64()
	}
	return &sobolProposer{sp: sp, shift: shift, engine: sobol.NewEngine(uint32(max(1, len(sp.knobs))))}
}

func (s *sobolProposer) propose(h *history, attempt int) (plan.Config, map[string]string, error) {
	idx := h.n + attempt
	for len(s.drawn) <= idx {
		s.drawn = append(s.drawn, s.engine.Draw())
	}
	pt := s.drawn[idx]
	c := make(plan.Config, len(s.sp.knobs))
	for i, k := range s.sp.knobs {
		u := pt[i] + s.shift[i]
		u -= math.Floor(u)
		c[k.Name] = s.sp.fromUnit(i, u)
	}
	return c, nil, nil
}

// gridProposer proposes every configuration the rules allow, in the plan's stable order,
// skipping those already in the study.
type gridProposer struct {
	grid []plan.Config
}

func (g *gridProposer) propose(h *history, attempt int) (plan.Config, map[string]string, error) {
	skip := attempt
	for _, c := range g.grid {
		if h.tried[configKey(c)] {
			continue
		}
		if skip > 0 {
			skip--
			continue
		}
		return c, nil, nil
	}
	return nil, nil, errExhausted
}

// tpeProposer is the tree-structured Parzen estimator (Bergstra et al. 2011), one knob at a
// time as in Optuna's default: the measured trials are split into the best fraction and the
// rest, a Parzen density is fitted to each, and of candidates drawn from the first density
// the one with the highest ratio of the two is proposed. It is written here rather than
// taken from goptuna's tpe package, whose categorical and mixture draws use the process-wide
// math/rand generator, so that a seeded study reproduces.
type tpeProposer struct {
	sp   *space
	seed int64
}

const (
	tpeStartup    = 10 // random proposals before the model is used
	tpeCandidates = 24
	tpeGamma      = 0.15 // share of the trials in the good group
)

func (t *tpeProposer) propose(h *history, attempt int) (plan.Config, map[string]string, error) {
	rng := rngFor(t.seed, h.n, attempt, 3)
	c := make(plan.Config, len(t.sp.knobs))
	if len(h.obs) < tpeStartup {
		for i, k := range t.sp.knobs {
			c[k.Name] = t.sp.fromUnit(i, rng.Float64())
		}
		return c, nil, nil
	}
	order := make([]int, len(h.obs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return h.obs[order[a]].score < h.obs[order[b]].score })
	nBelow := int(math.Ceil(tpeGamma * float64(len(order))))
	nBelow = max(1, min(nBelow, 25))
	for i, k := range t.sp.knobs {
		var below, above []float64
		for rank, j := range order {
			u, ok := t.unit(i, h.obs[j].config[k.Name])
			if !ok {
				continue
			}
			if rank < nBelow {
				below = append(below, u)
			} else {
				above = append(above, u)
			}
		}
		var u float64
		if n := t.categories(i); n > 0 {
			u = (float64(tpeCategorical(n, below, above, rng)) + 0.5) / float64(n)
		} else {
			u = tpeNumeric(below, above, rng)
		}
		c[k.Name] = t.sp.fromUnit(i, u)
	}
	return c, nil, nil
}

// categories is the number of values of a knob treated as a choice, or 0 for a numeric
// knob modelled by a density.
func (t *tpeProposer) categories(i int) int {
	k := t.sp.knobs[i]
	if len(k.Values) > 0 {
		return len(k.Values)
	}
	if pts := t.sp.points[i]; pts != nil && len(pts) <= 16 && !k.Log {
		return len(pts)
	}
	return 0
}

// unit places a knob value in [0, 1): a category's centre, or its (log) position in range.
func (t *tpeProposer) unit(i int, v plan.Value) (float64, bool) {
	k := t.sp.knobs[i]
	if n := t.categories(i); n > 0 {
		var values []plan.Value
		if len(k.Values) > 0 {
			values = k.Values
		} else {
			values = t.sp.points[i]
		}
		want := formatValue(v)
		for j, x := range values {
			if formatValue(x) == want {
				return (float64(j) + 0.5) / float64(n), true
			}
		}
		return 0, false
	}
	f, ok := toFloat(v)
	if !ok {
		return 0, false
	}
	if k.Log && k.Min > 0 {
		lo, hi := math.Log(k.Min), math.Log(k.Max)
		if hi == lo {
			return 0.5, true
		}
		return (math.Log(f) - lo) / (hi - lo), true
	}
	if k.Max == k.Min {
		return 0.5, true
	}
	return (f - k.Min) / (k.Max - k.Min), true
}

// tpeCategorical picks a category: smoothed counts of the good and the rest, candidates
// drawn from the good distribution, the best ratio wins.
func tpeCategorical(n int, below, above []float64, rng *rand.Rand) int {
	count := func(us []float64) []float64 {
		w := make([]float64, n)
		total := 0.0
		for i := range w {
			w[i] = 1.0 / float64(n) // prior
			total += w[i]
		}
		for _, u := range us {
			j := min(int(u*float64(n)), n-1)
			w[j]++
			total++
		}
		for i := range w {
			w[i] /= total
		}
		return w
	}
	l, g := count(below), count(above)
	best, bestScore := 0, math.Inf(-1)
	for c := 0; c < tpeCandidates; c++ {
		r, j := rng.Float64(), 0
		for acc := l[0]; acc < r && j < n-1; acc += l[j] {
			j++
		}
		if s := math.Log(l[j]) - math.Log(g[j]); s > bestScore {
			best, bestScore = j, s
		}
	}
	return best
}

// parzen is a mixture of truncated Gaussians on [0, 1] with a broad prior component.
type parzen struct {
	mu, sigma, w []float64
}

func newParzen(us []float64) parzen {
	p := parzen{mu: []float64{0.5}, sigma: []float64{1}, w: []float64{1}}
	n := float64(len(us))
	bw := math.Max(0.05, 1/(1+n)) // narrower as observations accumulate
	for _, u := range us {
		p.mu = append(p.mu, u)
		p.sigma = append(p.sigma, bw)
		p.w = append(p.w, 1)
	}
	total := 0.0
	for _, w := range p.w {
		total += w
	}
	for i := range p.w {
		p.w[i] /= total
	}
	return p
}

func (p parzen) sample(rng *rand.Rand) float64 {
	r, j := rng.Float64(), 0
	for acc := p.w[0]; acc < r && j < len(p.w)-1; acc += p.w[j] {
		j++
	}
	for tries := 0; tries < 20; tries++ {
		x := p.mu[j] + p.sigma[j]*rng.NormFloat64()
		if x >= 0 && x < 1 {
			return x
		}
	}
	return math.Max(0, math.Min(math.Nextafter(1, 0), p.mu[j]))
}

func (p parzen) logPDF(x float64) float64 {
	sum := 0.0
	for i := range p.mu {
		s := p.sigma[i]
		z := (x - p.mu[i]) / s
		// Normalise for the truncation to [0, 1].
		mass := normCDF((1-p.mu[i])/s) - normCDF((0-p.mu[i])/s)
		sum += p.w[i] * math.Exp(-0.5*z*z) / (s * math.Sqrt(2*math.Pi) * math.Max(mass, 1e-12))
	}
	return math.Log(math.Max(sum, 1e-300))
}

func normCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

func tpeNumeric(below, above []float64, rng *rand.Rand) float64 {
	l, g := newParzen(below), newParzen(above)
	best, bestScore := 0.5, math.Inf(-1)
	for c := 0; c < tpeCandidates; c++ {
		x := l.sample(rng)
		if s := l.logPDF(x) - g.logPDF(x); s > bestScore {
			best, bestScore = x, s
		}
	}
	return best
}

// cmaesProposer runs goptuna's CMA-ES over the numeric knobs (at least two are needed) and
// TPE over the rest. The evolution strategy's state lives in this process; the generation
// of each proposal is kept in the trial's system attributes as goptuna does.
type cmaesProposer struct {
	sp      *space
	seed    int64
	tpe     *tpeProposer
	sampler *cmaes.Sampler
}

func (c *cmaesProposer) propose(h *history, attempt int) (plan.Config, map[string]string, error) {
	cfg, _, err := c.tpe.propose(h, attempt)
	if err != nil {
		return nil, nil, err
	}
	numeric := map[string]any{}
	for i, k := range c.sp.knobs {
		if len(k.Values) == 0 {
			numeric[k.Name] = c.sp.dists[i]
		}
	}
	if len(numeric) < 2 || len(h.obs) < tpeStartup {
		return cfg, nil, nil
	}
	storage := goptuna.NewInMemoryStorage()
	view, err := goptuna.CreateStudy("view", goptuna.StudyOptionStorage(storage),
		goptuna.StudyOptionDirection(goptuna.StudyDirectionMinimize), goptuna.StudyOptionLogger(nil))
	if err != nil {
		return nil, nil, err
	}
	for _, o := range h.obs {
		ir := map[string]float64{}
		dists := map[string]any{}
		for i, k := range c.sp.knobs {
			if _, ok := numeric[k.Name]; !ok {
				continue
			}
			x, ok := c.sp.toInternal(i, o.config[k.Name])
			if !ok {
				continue
			}
			ir[k.Name] = x
			dists[k.Name] = c.sp.dists[i]
		}
		attrs := map[string]string{}
		for k, v := range o.attrs {
			attrs[k] = v
		}
		ft := goptuna.FrozenTrial{State: goptuna.TrialStateComplete, Value: o.score, InternalParams: ir,
			Params: map[string]any{}, Distributions: dists, UserAttrs: map[string]string{}, SystemAttrs: attrs,
			IntermediateValues: map[int]float64{}}
		if _, err := storage.CloneTrial(view.ID, ft); err != nil {
			return nil, nil, err
		}
	}
	id, err := storage.CreateNewTrial(view.ID)
	if err != nil {
		return nil, nil, err
	}
	ft, err := storage.GetTrial(id)
	if err != nil {
		return nil, nil, err
	}
	params, err := c.sampler.SampleRelative(view, ft, numeric)
	if err != nil || params == nil {
		return cfg, nil, nil
	}
	for i, k := range c.sp.knobs {
		if x, ok := params[k.Name]; ok {
			cfg[k.Name] = c.sp.toValue(i, x)
		}
	}
	sys, err := storage.GetTrialSystemAttrs(id)
	if err != nil {
		return nil, nil, err
	}
	return cfg, sys, nil
}
