package search

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

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
	// objectives are a complete trial's objectives in minimisation form; nil for an
	// infeasible or pruned trial.
	objectives []float64
	// missed are the objectives an infeasible trial measured over its whole workload, in
	// minimisation form (a trial that missed an SLO ran the same requests and measured its
	// cost and latencies all the same); nil for a complete trial and for one that did not
	// run to the end (the engine did not start, or it was stopped early).
	missed []float64
	// violation is how far an infeasible or pruned trial missed (0 to 1); 0 when complete.
	violation float64
	// margins are the trial's measured SLOMargins; nil when it measured none (it did not
	// run).
	margins []float64
}

// history is what a proposer knows when it proposes: the measured trials, scored for this
// proposal, and the keys of every configuration already in the study.
type history struct {
	obs   []observation
	tried map[string]bool
	// n is the number of trials in the study, the index of the next proposal.
	n int
	// pending lists the configurations being measured or queued: proposals should not
	// crowd around them (constant liar).
	pending []plan.Config
}

// proposer proposes the next configuration. attempt counts the proposals already
// rejected for this trial (a duplicate or a rule), so that each attempt draws anew.
type proposer interface {
	propose(h *history, attempt int) (plan.Config, map[string]string, error)
}

// newProposer returns the plan's sampler.
func newProposer(name string, sp *space, seed int64, p *plan.Plan, prior Prior) (proposer, error) {
	switch name {
	case "", SamplerTPE:
		return newFrontProposer(sp, seed, p, prior), nil
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
		return &cmaesProposer{sp: sp, seed: seed, tpe: newFrontProposer(sp, seed, p, prior),
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

// cmaesProposer runs goptuna's CMA-ES over the numeric knobs (at least two are needed) and
// TPE over the rest. The evolution strategy's state lives in this process; the generation
// of each proposal is kept in the trial's system attributes as goptuna does.
type cmaesProposer struct {
	sp      *space
	seed    int64
	tpe     *frontProposer
	sampler *cmaes.Sampler
}

func (c *cmaesProposer) propose(h *history, attempt int) (plan.Config, map[string]string, error) {
	cfg, attrs, err := c.tpe.propose(h, attempt)
	if err != nil {
		return nil, nil, err
	}
	numeric := map[string]any{}
	for i, k := range c.sp.knobs {
		if len(k.Values) == 0 {
			numeric[k.Name] = c.sp.dists[i]
		}
	}
	if len(numeric) < 2 || len(h.obs) < frontStartup {
		return cfg, attrs, nil // TPE's proposal as it is, with what proposed it
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
		return cfg, attrs, nil
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
	// The evolution strategy chose the numeric knobs, not the model: the sampler's own.
	if sys == nil {
		sys = map[string]string{}
	}
	sys[attrProposal] = proposalOwn
	return cfg, sys, nil
}
