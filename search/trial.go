package search

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/frontier-llm/frontier/hw"
	"github.com/frontier-llm/frontier/launcher"
	"github.com/frontier-llm/frontier/plan"
	"github.com/frontier-llm/frontier/quality"
	"github.com/frontier-llm/frontier/sim"
	"github.com/frontier-llm/frontier/workload"
)

// job is one measurement to make: a trial's first run or a confirmation run.
type job struct {
	number int
	config plan.Config
	// run is 0 for the trial itself, 1.. for confirmation runs.
	run  int
	seed uint64
}

// outcome is what an evaluator observed.
type outcome struct {
	m       *workload.Measurement
	quality map[string]QualityScore
	// pruned is set when the workload stopped early because an SLO was already missed.
	pruned      bool
	pruneReason string
	// prescreened is set when the memory model rejected the configuration.
	prescreened bool
	// failClass and failMessage describe a failed launch or an engine that died.
	failClass string
	// exited is true when the engine had started and died during the workload.
	exited      bool
	failMessage string
	gpus        int
	gpuSeconds  float64
	// fullSeconds estimates what a full run would have taken (for time saved by pruning).
	fullSeconds float64
	capacity    launcher.Capacity
	launch      *launcher.Provenance
	simulated   bool
	// cpu is true when the engine ran with no GPU (Ollama on the CPU): gpuSeconds are then
	// seconds of engine time.
	cpu bool
}

// evaluator measures configurations: on the offline estimator or on launched engines.
type evaluator interface {
	evaluate(ctx context.Context, j job) (*outcome, error)
	close()
}

// newEvaluator returns the evaluator of the run and how many trials may run at once.
func newEvaluator(ctx context.Context, r *runner) (evaluator, int, error) {
	if r.opts.eval != nil {
		return r.opts.eval, max(1, r.opts.Parallel), nil
	}
	if r.opts.Measure != nil {
		return measureFunc(r.opts.Measure), max(1, r.opts.Parallel), nil
	}
	if r.opts.Estimate {
		ev, err := newStudyEstimator(r.p, r)
		if err != nil {
			return nil, 0, err
		}
		n := r.opts.Parallel
		if n <= 0 {
			n = 1
		}
		return ev, n, nil
	}
	return newLive(ctx, r)
}

// runTrial measures one claimed trial and records it.
func (r *runner) runTrial(ctx context.Context, c *claim) error {
	cfg, err := r.sp.normalize(c.config)
	if err != nil {
		return fmt.Errorf("trial %d: %w", c.number, err)
	}
	rec := &Trial{Number: c.number, Config: map[string]any(cfg), GPUs: gpusOf(cfg), WarmStart: c.warm}
	r.prog.started(c.number, cfg)
	defer r.prog.finished(c.number)

	beatCtx, stopBeat := context.WithCancel(context.Background())
	defer stopBeat()
	go func() {
		t := time.NewTicker(max(time.Second, r.opts.StaleAfter/4))
		defer t.Stop()
		for {
			select {
			case <-beatCtx.Done():
				return
			case <-t.C:
				_ = r.st.heartbeat(c.trialID) // a missed beat only risks an early takeover
			}
		}
	}()

	started := time.Now()
	seed := uint64(r.p.WorkloadSeed())
	out, evalErr := r.eval.evaluate(ctx, job{number: c.number, config: cfg, seed: seed})
	finished := time.Now()
	rec.Provenance = &Provenance{FrontierVersion: r.opts.Version, Model: r.p.Model.Name, PlanHash: r.p.Hash,
		WorkloadSeed: r.p.WorkloadSeed(), Started: started.UTC(), Finished: finished.UTC()}
	if out != nil && out.launch != nil {
		rec.Provenance.Launch = *out.launch
	}

	dbState := dbComplete
	value := 0.0
	switch {
	case ctx.Err() != nil:
		rec.State = StateInterrupted
		rec.Reason = "interrupted by a signal; the next apply measures it again"
		dbState = dbWaiting
		if out != nil {
			rec.GPUSeconds = out.gpuSeconds
			rec.CPUOnly = out.cpu
		}
	case evalErr != nil:
		rec.State = StateFailed
		rec.Reason = evalErr.Error()
		dbState = dbFail
	default:
		r.judge(rec, cfg, out)
		switch rec.State {
		case StatePruned:
			dbState = dbPruned
			value = infeasibleScore(rec.Violation)
		case StateInfeasible:
			value = infeasibleScore(rec.Violation)
		case StateComplete:
			value = r.dashboardValue(rec)
		}
	}
	user := map[string]string{"state": rec.State}
	if rec.Reason != "" {
		user["reason"] = truncate(rec.Reason, 2000)
	}
	for k, v := range rec.Objectives {
		user["objective:"+k] = fmt.Sprintf("%g", v)
	}
	err = r.st.finish(c, r.owner, rec, dbState, value, user)
	if errors.Is(err, errLostClaim) {
		r.prog.linef("trial %d was taken over by another process while it ran; its result is not stored", c.number)
		return nil
	}
	if err != nil {
		return err
	}
	if rec.State != StateInterrupted {
		r.mu.Lock()
		r.measured++
		if c.rerun {
			r.resumed++
		}
		r.mu.Unlock()
	}
	r.prog.result(rec)
	return r.checkEngine(rec, out)
}

// maxFailedStarts is how many launches may fail in a row, before any engine has started,
// with a failure that is not the configuration's (the engine missing, a crash at startup),
// before the study stops instead of recording every trial as infeasible.
const maxFailedStarts = 3

func (r *runner) checkEngine(rec *Trial, out *outcome) error {
	if out == nil || out.prescreened {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case out.failClass == "" && (out.m != nil || out.pruned):
		r.started++
	case r.started == 0 && out.failClass != "":
		// The same message for different configurations says the engine, not the
		// configuration, is at fault; so does a crash or an unclassified failure.
		msg := firstLine(out.failMessage)
		if msg == r.lastFailure || out.failClass == string(launcher.FailOther) || out.failClass == string(launcher.FailCrash) {
			r.failedStarts++
		} else {
			r.failedStarts = 1
		}
		r.lastFailure = msg
		if r.failedStarts >= maxFailedStarts {
			return fmt.Errorf("the engine failed to start %d times in a row and never started (last: %s: %s); check the engine block and the log %s",
				r.failedStarts, out.failClass, firstLine(out.failMessage), filepath.Join(r.logDir, fmt.Sprintf("trial-%d.log", rec.Number)))
		}
	}
	return nil
}

func truncate(s string, n int) string {
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

// dashboardValue is the value stored in goptuna's own column: the equal-weight
// scalarisation of the trial against the study so far, for goptuna's dashboard.
func (r *runner) dashboardValue(rec *Trial) float64 {
	p, ok := objectiveVector(rec, r.p.Objectives)
	if !ok {
		return 0
	}
	maximize := make([]bool, len(r.p.Objectives))
	for i, o := range r.p.Objectives {
		maximize[i] = o.Maximize
	}
	return equalWeights([][]float64{orient(p, maximize)}, len(p)).feasible(orient(p, maximize))
}

// judge turns an outcome into the trial's record: cost, SLOs, checks, quality gates and
// objectives decide between complete, infeasible and pruned.
func (r *runner) judge(rec *Trial, cfg plan.Config, out *outcome) {
	rec.Simulated = out.simulated
	rec.GPUSeconds = out.gpuSeconds
	rec.CPUOnly = out.cpu
	rec.Capacity = out.capacity
	if out.gpus > 0 {
		rec.GPUs = out.gpus
	}
	if out.prescreened || out.failClass != "" {
		rec.State = StateInfeasible
		rec.Violation = 1
		rec.FailureClass = out.failClass
		rec.EngineMessage = out.failMessage
		rec.PreScreened = out.prescreened
		what := "the engine failed to start"
		if out.exited {
			what = "the engine exited during the workload"
		}
		if out.prescreened {
			what = "the memory pre-screen rejected it"
			rec.SavedGPUSeconds = r.meanTrialSeconds()
		}
		rec.Reason = fmt.Sprintf("%s: %s: %s", what, out.failClass, firstLine(out.failMessage))
		return
	}
	m := out.m
	if m != nil {
		r.addCost(m, cfg, rec.GPUs)
		rec.Workloads = m.Workloads
		rec.Total = m.Total
		rec.Series = m.Series
	}
	if out.pruned {
		rec.State = StatePruned
		rec.Reason = "stopped early: " + out.pruneReason
		rec.Violation = 0.5
		if out.fullSeconds > out.gpuSeconds {
			rec.SavedGPUSeconds = out.fullSeconds - out.gpuSeconds
		}
		return
	}
	if m == nil {
		rec.State = StateFailed
		rec.Reason = "no measurement"
		return
	}
	var reasons []string
	violation := 0.0
	for _, c := range r.p.Workloads {
		res := m.Workloads[c.Name]
		// With no completed request the latency statistics are zeros, not measurements: a
		// latency bound is missed then, as workload.Class.Missed has it.
		noneCompleted := res != nil && res.Metrics[workload.Completed] == 0
		saidNone := false
		for _, b := range c.SLO {
			v, ok := 0.0, false
			if res != nil {
				v, ok = res.Metrics[b.Metric]
			}
			if noneCompleted && b.PerRequest() {
				if !saidNone {
					reasons = append(reasons, fmt.Sprintf("%s: no request completed", c.Name))
					saidNone = true
				}
				violation += 1
				continue
			}
			if !ok || math.IsNaN(v) {
				reasons = append(reasons, fmt.Sprintf("%s: %s was not measured", c.Name, b.Metric))
				violation += 1
				continue
			}
			if b.Met(v) {
				continue
			}
			op := ">"
			if b.AtLeast {
				op = "<"
			}
			reasons = append(reasons, fmt.Sprintf("%s: %s %.4g %s %.4g", c.Name, b.Metric, v, op, b.Value))
			violation += math.Min(1, math.Abs(v-b.Value)/math.Max(math.Abs(b.Value), 1e-9))
		}
	}
	qscores := map[string]float64{}
	if len(out.quality) > 0 {
		rec.Quality = out.quality
		for name, q := range out.quality {
			qscores[name] = q.Score
			if !q.Passed {
				reasons = append(reasons, q.Reason)
				violation += 0.5
			}
		}
	}
	tv := plan.TrialValues{Config: cfg, GPUs: rec.GPUs, Measurement: m, Quality: qscores}
	checks, err := r.p.EvalChecks(tv)
	if err != nil {
		reasons = append(reasons, "checks: "+err.Error())
		violation += 1
	}
	for _, ch := range checks {
		if !ch.Passed {
			msg := ch.Message
			if msg == "" {
				msg = "failed"
			}
			reasons = append(reasons, fmt.Sprintf("check %q: %s", ch.Name, msg))
			violation += 0.5
		}
	}
	vals, err := r.p.EvalObjectives(tv)
	if err != nil {
		reasons = append(reasons, "objectives: "+err.Error())
		violation += 1
	} else {
		rec.Objectives = map[string]float64{}
		for i, o := range r.p.Objectives {
			if i < len(vals) {
				rec.Objectives[o.Name] = vals[i]
			}
		}
	}
	if len(reasons) == 0 {
		rec.State = StateComplete
		return
	}
	rec.State = StateInfeasible
	rec.Reason = strings.Join(reasons, "; ")
	rec.Violation = math.Min(1, violation/float64(max(1, len(reasons))))
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// meanTrialSeconds is the mean GPU time of the trials measured so far by this process:
// what a configuration rejected before launch would likely have cost.
func (r *runner) meanTrialSeconds() float64 {
	return r.prog.meanGPUSeconds()
}

// skuFor is the configuration's SKU: the "sku" knob, else the plan's.
func skuFor(p *plan.Plan, cfg plan.Config) (hw.SKU, bool) {
	name := p.Hardware.SKU
	if s, ok := cfg["sku"].(string); ok && s != "" {
		name = s
	}
	if name == "" {
		return hw.SKU{}, false
	}
	return hw.LookupSKU(name)
}

// addCost adds cost_per_million_output_tokens to the total: the plan's price per GPU-hour,
// else the SKU's catalog price, times the GPUs, per million output tokens.
func (r *runner) addCost(m *workload.Measurement, cfg plan.Config, gpus int) {
	if m.Total == nil || m.Total.Metrics == nil {
		return
	}
	price := r.p.Hardware.PricePerGPUHour
	if _, knob := cfg["sku"]; knob || price <= 0 {
		if sku, ok := skuFor(r.p, cfg); ok && sku.PricePerHour > 0 && (knob || price <= 0) {
			price = sku.PricePerHour
		}
	}
	tps := m.Total.Metrics[workload.OutputTokenThroughput]
	if price <= 0 || tps <= 0 {
		return
	}
	m.Total.Metrics[workload.CostPerMillionOutput] = price * float64(max(1, gpus)) / (tps * 3600) * 1e6
}

// simSettings maps a configuration to the simulator's engine configuration.
func simSettings(cfg plan.Config) map[string]any {
	out := make(map[string]any, len(cfg))
	for k, v := range cfg {
		if k == "sku" {
			continue
		}
		out[k] = v
	}
	return out
}

// simGenerator is the simulator's answer model for a configuration of p: the
// configuration's precision, and the checkpoint's own quantisation (a config_json with a
// quantization_config) where the configuration sets none, as vLLM applies it.
func simGenerator(p *plan.Plan, cfg plan.Config) *quality.SimGenerator {
	m := sim.AnswerModelFromSettings(simSettings(cfg), uint64(p.WorkloadSeed()))
	if a, ok, err := archFor(p); err == nil && ok {
		m.Checkpoint = a.QuantMethod
	}
	return quality.NewSimGeneratorFor(m)
}

// archFor resolves the plan's model architecture for the simulator; ok is false when the
// plan names none the simulator knows. With a real engine, a catalog architecture stands
// for the one checkpoint model.name serves, so the pre-screen refuses a method that needs a
// quantised checkpoint as vLLM would, instead of assuming that checkpoint as sim serve does.
func archFor(p *plan.Plan) (sim.Arch, bool, error) {
	if p.Model.ConfigJSON != "" {
		a, err := sim.ArchFromConfigJSON(p.Model.ConfigJSON)
		if err != nil {
			return sim.Arch{}, false, err
		}
		return a, true, nil
	}
	if p.Model.Architecture != "" {
		a, ok := sim.LookupArch(p.Model.Architecture)
		if !ok {
			return sim.Arch{}, false, fmt.Errorf("model architecture %q is not in the simulator's catalog", p.Model.Architecture)
		}
		a.Catalog = p.Engine.Kind == plan.EngineSim
		return a, true, nil
	}
	return sim.Arch{}, false, nil
}

// baselineStore keeps each quality gate's baseline outcome in the study, so that it is
// measured once per study rather than once per process: a resumed study and the other
// workers of a distributed one reuse it.
type baselineStore interface {
	// storedBaseline returns the gate's stored outcome; ok is false when there is none.
	storedBaseline(gate string) (o *quality.Outcome, ok bool, err error)
	// keepBaseline stores a measured outcome unless another process stored one first, and
	// returns the one the study keeps.
	keepBaseline(gate string, o *quality.Outcome) (*quality.Outcome, error)
}

// storedBaseline implements baselineStore on the study's database: the outcome is keyed by
// the gate and the plan's space hash.
func (r *runner) storedBaseline(gate string) (*quality.Outcome, bool, error) {
	return r.st.storedBaseline(r.studyID, baselineKey(gate, r.p.SpaceHash))
}

// keepBaseline implements baselineStore; it counts the baselines this process measured.
func (r *runner) keepBaseline(gate string, o *quality.Outcome) (*quality.Outcome, error) {
	r.mu.Lock()
	r.baselinesMeasured++
	r.mu.Unlock()
	return r.st.keepBaseline(r.studyID, baselineKey(gate, r.p.SpaceHash), o)
}

// estimator runs trials on sim.Estimate.
type estimator struct {
	p    *plan.Plan
	arch sim.Arch
	// quality items per gate, and the baseline outcome per gate.
	items    map[string][]quality.Item
	baseline map[string]*quality.Outcome
	// keep stores baselines in the study; nil measures them in this process only.
	keep baselineStore
}

// newEstimator returns an estimator whose quality baselines are measured by this process.
func newEstimator(p *plan.Plan) (*estimator, error) {
	return newStudyEstimator(p, nil)
}

// newStudyEstimator returns an estimator whose quality baselines come from keep, measured
// only when the study has none.
func newStudyEstimator(p *plan.Plan, keep baselineStore) (*estimator, error) {
	arch, ok, err := archFor(p)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errors.New("--estimate needs the model's architecture: set model.architecture or model.config_json")
	}
	e := &estimator{p: p, arch: arch, keep: keep}
	if err := e.loadQuality(); err != nil {
		return nil, err
	}
	return e, nil
}

func (e *estimator) close() {}

// loadQuality reads the evaluation sets and scores each gate's baseline configuration with
// the simulator's answer model, once per study when the estimator keeps baselines in it.
func (e *estimator) loadQuality() error {
	if len(e.p.Quality) == 0 {
		return nil
	}
	e.items = map[string][]quality.Item{}
	e.baseline = map[string]*quality.Outcome{}
	for _, g := range e.p.Quality {
		items, err := quality.LoadSet(g.Dataset)
		if err != nil {
			return fmt.Errorf("quality %q: %w", g.Name, err)
		}
		e.items[g.Name] = items
		if len(g.Baseline) == 0 {
			continue
		}
		if e.keep != nil {
			o, ok, err := e.keep.storedBaseline(g.Name)
			if err != nil {
				return err
			}
			if ok {
				e.baseline[g.Name] = o
				continue
			}
		}
		gen := simGenerator(e.p, g.Baseline)
		o, err := quality.Evaluate(context.Background(), g, items, gen, nil)
		if err != nil {
			return err
		}
		if e.keep != nil {
			if o, err = e.keep.keepBaseline(g.Name, o); err != nil {
				return err
			}
		}
		e.baseline[g.Name] = o
	}
	return nil
}

func (e *estimator) evaluate(ctx context.Context, j job) (*outcome, error) {
	sku, ok := skuFor(e.p, j.config)
	if !ok {
		return nil, fmt.Errorf("--estimate needs a GPU SKU from the catalog: set hardware.sku (or a sku knob); %q is unknown", e.p.Hardware.SKU)
	}
	ecfg, err := sim.ConfigFromSettings(simSettings(j.config), e.p.Model.MaxModelLen)
	if err != nil {
		return &outcome{failClass: string(launcher.FailInvalidArgs), failMessage: err.Error(), simulated: true, gpus: gpusOf(j.config)}, nil
	}
	ecfg.SKU = sku.Name
	if _, err := sim.CheckStartup(e.arch, sku, ecfg); err != nil {
		var se *sim.StartupError
		if errors.As(err, &se) {
			return &outcome{prescreened: true, failClass: se.Class, failMessage: se.Message, simulated: true, gpus: gpusOf(j.config)}, nil
		}
		return nil, err
	}
	m, err := sim.Estimate(ctx, e.arch, sku, ecfg, e.p.Workloads, j.seed+uint64(j.run)*0x9e3779b97f4a7c15)
	if err != nil {
		var se *sim.StartupError
		if errors.As(err, &se) {
			return &outcome{prescreened: true, failClass: se.Class, failMessage: se.Message, simulated: true, gpus: gpusOf(j.config)}, nil
		}
		return nil, fmt.Errorf("estimate: %w", err)
	}
	m.Simulated = true
	out := &outcome{m: m, simulated: true, gpus: gpusOf(j.config)}
	if d := m.Total.Metrics[workload.DurationS]; d > 0 {
		out.gpuSeconds = d * float64(out.gpus)
	}
	out.quality, err = scoreQuality(ctx, e.p, e.items, e.baseline, simGenerator(e.p, j.config))
	if err != nil {
		return nil, err
	}
	return out, nil
}

// scoreQuality evaluates every gate with gen and gates it against its baseline.
func scoreQuality(ctx context.Context, p *plan.Plan, items map[string][]quality.Item, baseline map[string]*quality.Outcome, gen quality.Generator) (map[string]QualityScore, error) {
	if len(p.Quality) == 0 {
		return nil, nil
	}
	out := map[string]QualityScore{}
	for _, g := range p.Quality {
		base := baseline[g.Name]
		o, err := quality.Evaluate(ctx, g, items[g.Name], gen, base)
		if err != nil {
			return nil, err
		}
		bscore := math.NaN()
		if base != nil {
			bscore = base.Score
		}
		passed, reason := quality.Gate(g, o.Score, bscore)
		qs := QualityScore{Score: o.Score, Passed: passed, Reason: reason, Items: o.Items, Simulated: o.Simulated}
		if base != nil {
			qs.Baseline = base.Score
		}
		qs.Examples = examples(items[g.Name], o, base, MaxExamples)
		out[g.Name] = qs
	}
	return out, nil
}

// examples are the n lowest-scoring items of an evaluation (in the set's order among equal
// scores), with the reference and, when base is known, the baseline's answer to the same
// item, each text cut to MaxExampleChars.
func examples(items []quality.Item, o *quality.Outcome, base *quality.Outcome, n int) []QualityExample {
	idx := make([]int, 0, len(o.Items))
	for i := range o.Items {
		if i < len(items) && i < len(o.Outputs) {
			idx = append(idx, i)
		}
	}
	sort.SliceStable(idx, func(a, b int) bool { return o.Items[idx[a]] < o.Items[idx[b]] })
	baseline := map[string]string{}
	if base != nil {
		for i, id := range base.IDs {
			if i < len(base.Outputs) {
				baseline[id] = base.Outputs[i]
			}
		}
	}
	var out []QualityExample
	for _, i := range idx[:min(n, len(idx))] {
		id := items[i].ID
		if i < len(o.IDs) {
			id = o.IDs[i]
		}
		out = append(out, QualityExample{ID: id, Input: truncate(items[i].Text(), MaxExampleChars),
			Reference: truncate(items[i].Reference, MaxExampleChars), Output: truncate(o.Outputs[i], MaxExampleChars),
			Score: o.Items[i], BaselineOutput: truncate(baseline[id], MaxExampleChars)})
	}
	return out
}
