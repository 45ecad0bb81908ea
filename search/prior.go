package search

import (
	"context"
	"errors"
	"time"

	"github.com/frontier-llm/frontier/plan"
	"github.com/frontier-llm/frontier/sim"
	"github.com/frontier-llm/frontier/workload"
)

// studyPrior is the sampler's prior for a study: nil when the plan turns it off (prior =
// false) or the offline model does not cover the plan (Ollama, no catalog architecture);
// Options.Prior when set; else the offline performance model (ModelPrior).
func studyPrior(p *plan.Plan, opts Options) Prior {
	if !p.Study.Prior {
		return nil
	}
	if opts.Prior != nil {
		return opts.Prior
	}
	pr, err := ModelPrior(p)
	if err != nil {
		return nil
	}
	return pr
}

// ModelPrior predicts configurations with the offline estimator (sim.Estimate on the
// plan's or the sku knob's catalog SKU, the plan's workloads with the study's workload
// seed), judged against the plan's SLOs, checks and gates as a measured trial would be.
func ModelPrior(p *plan.Plan) (Prior, error) {
	if p.Engine.Kind == plan.EngineOllama {
		return nil, errors.New("the offline model does not cover Ollama")
	}
	est, err := newEstimator(p)
	if err != nil {
		return nil, err
	}
	return func(cfg plan.Config) ([]float64, float64, bool) {
		if _, ok := skuFor(p, cfg); !ok {
			return nil, 0, false
		}
		out, err := est.evaluate(context.Background(), job{config: cfg, seed: uint64(p.WorkloadSeed())})
		if err != nil || out == nil {
			return nil, 0, false
		}
		a := assess(p, cfg, out)
		if a.Objectives == nil {
			// No objectives (the engine could not start it): predicted infeasible with
			// nothing to rank it by.
			return nil, 0, false
		}
		return a.Objectives, a.Violation, true
	}, nil
}

// Assessment is how a configuration fares against a plan: its objectives (in the plan's
// order, nil when there are none, e.g. the engine could not start it), whether it meets
// every SLO, check and gate, and how far it missed when not (as Trial.Violation).
type Assessment struct {
	Objectives []float64
	Feasible   bool
	Violation  float64
	// State is the trial state it would be recorded with: complete or infeasible.
	State string
}

// Assess judges a measurement of cfg as a trial's would be judged (cost, SLOs, checks,
// objectives; quality gates are not scored); startErr, a *sim.StartupError, says the engine
// could not start the configuration. Benchmarks use it to know the truth of a whole space.
func Assess(p *plan.Plan, cfg plan.Config, m *workload.Measurement, startErr error) Assessment {
	out := &outcome{m: m, gpus: gpusOf(cfg), simulated: true}
	var se *sim.StartupError
	if errors.As(startErr, &se) {
		out = &outcome{failClass: se.Class, failMessage: se.Message, gpus: gpusOf(cfg), simulated: true}
	} else if startErr != nil {
		out = &outcome{failClass: "other", failMessage: startErr.Error(), gpus: gpusOf(cfg), simulated: true}
	}
	return assess(p, cfg, out)
}

func assess(p *plan.Plan, cfg plan.Config, out *outcome) Assessment {
	judge := &runner{p: p, prog: newProgress(nil, false, nil, 0, time.Now())}
	rec := &Trial{Config: map[string]any(cfg), GPUs: gpusOf(cfg)}
	judge.judge(rec, cfg, out)
	a := Assessment{State: rec.State, Feasible: rec.State == StateComplete}
	if objs, ok := objectiveVector(rec, p.Objectives); ok && out.failClass == "" {
		a.Objectives = objs
	}
	if !a.Feasible {
		a.Violation = rec.Violation
		if a.Violation <= 0 {
			a.Violation = 1
		}
	}
	return a
}

// measureFunc adapts Options.Measure to an evaluator.
type measureFunc func(ctx context.Context, cfg plan.Config) (*workload.Measurement, error)

func (f measureFunc) evaluate(ctx context.Context, j job) (*outcome, error) {
	gpus := gpusOf(j.config)
	m, err := f(ctx, j.config)
	var se *sim.StartupError
	if errors.As(err, &se) {
		return &outcome{failClass: se.Class, failMessage: se.Message, gpus: gpus, simulated: true}, nil
	}
	if err != nil {
		return nil, err
	}
	out := &outcome{m: m, gpus: gpus, simulated: m.Simulated}
	if m.Total != nil {
		out.gpuSeconds = m.Total.Metrics[workload.DurationS] * float64(gpus)
	}
	return out, nil
}

func (f measureFunc) close() {}
