package search

import (
	"context"
	"errors"
	"math"

	"github.com/frontier-llm/frontier/plan"
	"github.com/frontier-llm/frontier/record"
	"github.com/frontier-llm/frontier/sim"
	"github.com/frontier-llm/frontier/workload"
)

// studyPrior is the sampler's prior for a study: nil when the plan turns it off (prior =
// false) or the offline model does not cover the plan (an engine it does not model, no
// model architecture); Options.Prior when set; else the offline performance model
// (ModelPrior).
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

// ModelPrior predicts configurations with the offline assessment (Assessor, in full: the
// performance model on the plan's workloads with the study's workload seed, judged against
// the plan's SLOs, checks and gates as a measured trial would be). It fails when the model
// does not cover the plan; a configuration it does not cover (a GPU not in the catalog) or
// that would not start is not predicted (ok false).
func ModelPrior(p *plan.Plan) (Prior, error) {
	as, err := NewAssessor(p)
	if err != nil {
		return nil, err
	}
	if why := as.NoModel(); why != "" {
		return nil, errors.New(why)
	}
	return func(cfg plan.Config) (Forecast, bool) {
		a, err := as.Assess(context.Background(), cfg, Full)
		if err != nil || !a.Covered || a.out == nil || a.out.failClass != "" {
			return Forecast{}, false
		}
		objs, v, ok := verdict(p, &a.Trial)
		return Forecast{Objectives: objs, Violation: v, Margins: SLOMargins(p, &a.Trial)}, ok
	}, nil
}

// SLOMargins is how far a trial's measurements are inside or beyond the plan's SLOs: one
// number for each bound of each workload class, in the plan's order, log(value/bound) for
// an upper bound and log(bound/value) for a lower one, so that above 0 is a miss and -0.1
// about 10% to spare. A bound whose metric was not measured, or is not positive, is NaN;
// nil when the plan has no SLO or the trial measured nothing (it did not run).
func SLOMargins(p *plan.Plan, t *record.Trial) []float64 {
	if len(t.Workloads) == 0 {
		return nil
	}
	var out []float64
	for _, c := range p.Workloads {
		res := t.Workloads[c.Name]
		for _, b := range c.SLO {
			m := math.NaN()
			if res != nil {
				if v, ok := res.Metrics[b.Metric]; ok && v > 0 && b.Value > 0 && !math.IsInf(v, 0) {
					m = math.Log(v / b.Value)
					if b.AtLeast {
						m = -m
					}
				}
				// With no completed request the latency statistics are zeros, not
				// measurements (as judge has it).
				if res.Metrics[workload.Completed] == 0 && b.PerRequest() {
					m = math.NaN()
				}
			}
			out = append(out, m)
		}
	}
	return out
}

// predictor is a proposer that can say what its model predicts of a configuration.
type predictor interface {
	predicted(cfg plan.Config) *record.Prediction
}

func (c *cmaesProposer) predicted(cfg plan.Config) *record.Prediction { return c.tpe.predicted(cfg) }

// prediction is the model's prediction of cfg for its trial's record (so that the report
// and the progress lines can say how the model fared); nil when the sampler has no prior.
func (r *runner) prediction(cfg plan.Config) *record.Prediction {
	if p, ok := r.prop.(predictor); ok {
		return p.predicted(cfg)
	}
	return nil
}

// verdict is a judged trial's objectives and violation, as a Prior answers.
func verdict(p *plan.Plan, t *record.Trial) ([]float64, float64, bool) {
	objs, ok := objectiveVector(t, p.Objectives)
	if !ok {
		return nil, 0, false
	}
	v := 0.0
	if t.State != record.StateComplete {
		v = t.Violation
		if v <= 0 {
			v = 1
		}
	}
	return objs, v, true
}

// Judge judges a measurement of cfg as a study judges a measured trial (cost, SLOs, checks,
// objectives; quality gates are not scored) and returns the trial's record; startErr, a
// *sim.StartupError, says the engine could not start the configuration. judge adds the cost
// metric to m's total. Benchmarks use it to know the truth of a whole space.
func Judge(p *plan.Plan, cfg plan.Config, m *workload.Measurement, startErr error) record.Trial {
	out := &outcome{m: m, gpus: cfg.GPUs(), simulated: true}
	var se *sim.StartupError
	if errors.As(startErr, &se) {
		out = &outcome{failClass: record.FailureClass(se.Class), failMessage: se.Message, gpus: cfg.GPUs(), simulated: true}
	} else if startErr != nil {
		out = &outcome{failClass: record.FailOther, failMessage: startErr.Error(), gpus: cfg.GPUs(), simulated: true}
	}
	t := record.Trial{Config: map[string]any(cfg), GPUs: cfg.GPUs()}
	judge(p, &t, cfg, out)
	return t
}

// measureFunc adapts Options.Measure to an evaluator.
type measureFunc func(ctx context.Context, cfg plan.Config) (*workload.Measurement, error)

func (f measureFunc) evaluate(ctx context.Context, j job) (*outcome, error) {
	gpus := j.config.GPUs()
	m, err := f(ctx, j.config)
	var se *sim.StartupError
	if errors.As(err, &se) {
		return &outcome{failClass: record.FailureClass(se.Class), failMessage: se.Message, gpus: gpus, simulated: true}, nil
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

// sloValues turns SLOMargins back into the SLO metrics' values, by record.SLOKey; nil
// when margins do not match the plan's SLOs. A NaN margin is left out.
func sloValues(p *plan.Plan, margins []float64) map[string]float64 {
	if margins == nil {
		return nil
	}
	out := map[string]float64{}
	i := 0
	for _, c := range p.Workloads {
		for _, b := range c.SLO {
			if i >= len(margins) {
				return nil
			}
			m := margins[i]
			i++
			if math.IsNaN(m) {
				continue
			}
			if b.AtLeast {
				m = -m
			}
			out[record.SLOKey(c.Name, b.Metric)] = b.Value * math.Exp(m)
		}
	}
	if i != len(margins) || len(out) == 0 {
		return nil
	}
	return out
}
