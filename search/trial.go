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

	"github.com/frontier-llm/frontier/record"
	"github.com/frontier-llm/frontier/search/storage"

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
	quality map[string]record.QualityScore
	// pruned is set when the workload stopped early because an SLO was already missed.
	pruned      bool
	pruneReason string
	// prescreened is set when the memory model rejected the configuration.
	prescreened bool
	// failClass and failMessage describe a failed launch or an engine that died.
	failClass record.FailureClass
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
func (r *runner) runTrial(ctx context.Context, c *storage.Claim) error {
	cfg, err := r.sp.normalize(c.Config)
	if err != nil {
		return fmt.Errorf("trial %d: %w", c.Number, err)
	}
	rec := &record.Trial{Number: c.Number, Config: map[string]any(cfg), GPUs: cfg.GPUs(), WarmStart: c.Warm}
	rec.Predicted = r.prediction(cfg)
	r.prog.started(c.Number, cfg)
	defer r.prog.finished(c.Number)

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
				_ = r.st.Heartbeat(c.TrialID) // a missed beat only risks an early takeover
			}
		}
	}()

	watchResumes()
	resumesBefore := resumes.Load()
	started := time.Now()
	seed := uint64(r.p.WorkloadSeed())
	out, evalErr := r.eval.evaluate(ctx, job{number: c.Number, config: cfg, seed: seed})
	finished := time.Now()
	rec.Provenance = &record.Provenance{FrontierVersion: r.opts.Version, SimModel: r.simModel(), Model: r.p.Model.Name, PlanHash: r.p.Hash,
		WorkloadSeed: r.p.WorkloadSeed(), Started: started.UTC(), Finished: finished.UTC()}
	if out != nil && out.launch != nil {
		rec.Provenance.Launch = *out.launch
	}

	dbState := storage.DBComplete
	value := 0.0
	switch {
	case ctx.Err() != nil:
		rec.State = record.StateInterrupted
		rec.Reason = "interrupted by a signal; the next apply measures it again"
		dbState = storage.DBWaiting
		if out != nil {
			rec.GPUSeconds = out.gpuSeconds
			rec.CPUOnly = out.cpu
		}
	case evalErr == nil && resumes.Load() != resumesBefore && out != nil && !out.prescreened && r.opts.eval == nil && !r.opts.Estimate:
		// Stopped and continued while measuring: put it back, to be measured again.
		rec.State = record.StateInterrupted
		rec.Reason = suspendedReason
		dbState = storage.DBWaiting
		rec.GPUSeconds = out.gpuSeconds
		rec.CPUOnly = out.cpu
		r.prog.linef("trial %d: %s", c.Number, suspendedReason)
	case evalErr != nil && isHostIO(evalErr):
		// frontier's failure, not the configuration's: put it back and stop the study.
		rec.State = record.StateInterrupted
		rec.Reason = hostIOReason(evalErr)
		dbState = storage.DBWaiting
		if out != nil {
			rec.GPUSeconds = out.gpuSeconds
			rec.CPUOnly = out.cpu
		}
	case evalErr != nil:
		rec.State = record.StateFailed
		rec.Reason = evalErr.Error()
		dbState = storage.DBFail
	default:
		r.judge(rec, cfg, out)
		switch rec.State {
		case record.StatePruned:
			dbState = storage.DBPruned
			value = infeasibleScore(rec.Violation)
		case record.StateInfeasible:
			value = infeasibleScore(rec.Violation)
		case record.StateComplete:
			value = r.dashboardValue(rec)
		}
	}
	user := map[string]string{"state": string(rec.State)}
	if rec.Reason != "" {
		user["reason"] = record.Truncate(rec.Reason, 2000)
	}
	for k, v := range rec.Objectives {
		user["objective:"+k] = fmt.Sprintf("%g", v)
	}
	err = r.st.Finish(c, r.owner, rec, dbState, value, user)
	if errors.Is(err, storage.ErrLostClaim) {
		r.prog.linef("trial %d was taken over by another process while it ran; its result is not stored", c.Number)
		return nil
	}
	if err != nil {
		return err
	}
	if evalErr != nil && isHostIO(evalErr) && ctx.Err() == nil {
		return fmt.Errorf("trial %d: %w; it is left to be measured again once the disk can be written", c.Number, evalErr)
	}
	if rec.State != record.StateInterrupted {
		r.mu.Lock()
		r.measured++
		if c.Rerun {
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

func (r *runner) checkEngine(rec *record.Trial, out *outcome) error {
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
		if msg == r.lastFailure || out.failClass == launcher.FailOther || out.failClass == launcher.FailCrash {
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

// dashboardValue is the value stored in goptuna's own column: the equal-weight
// scalarisation of the trial against the study so far, for goptuna's dashboard.
func (r *runner) dashboardValue(rec *record.Trial) float64 {
	p, ok := objectiveVector(rec, r.p.Objectives)
	if !ok {
		return 0
	}
	maximize := make([]bool, len(r.p.Objectives))
	for i, o := range r.p.Objectives {
		maximize[i] = o.Maximize
	}
	return equalWeights([][]float64{record.Orient(p, maximize)}, len(p)).feasible(record.Orient(p, maximize))
}

// judge turns an outcome into the trial's record for the study: the verdict of judge, and
// the GPU time the pre-screen saved.
func (r *runner) judge(rec *record.Trial, cfg plan.Config, out *outcome) {
	judge(r.p, rec, cfg, out)
	if out.prescreened {
		rec.SavedGPUSeconds = r.meanTrialSeconds()
	}
}

// judge turns an outcome into a trial's record: cost, SLOs, checks, quality gates and
// objectives decide between complete, infeasible and pruned. Every bound missed is a
// record.Violation; Reason lists them in words, and Violation says how far the trial missed
// (0 to 1), for the search to rank infeasible trials among themselves.
func judge(p *plan.Plan, rec *record.Trial, cfg plan.Config, out *outcome) {
	rec.Simulated = out.simulated
	rec.GPUSeconds = out.gpuSeconds
	rec.CPUOnly = out.cpu
	rec.Capacity = out.capacity
	if out.gpus > 0 {
		rec.GPUs = out.gpus
	}
	if out.prescreened || out.failClass != "" {
		rec.State = record.StateInfeasible
		rec.Violation = 1
		rec.FailureClass = out.failClass
		rec.EngineMessage = out.failMessage
		rec.PreScreened = out.prescreened
		what, kind := "the engine failed to start", record.ViolationLaunch
		if out.exited {
			what = "the engine exited during the workload"
		}
		if out.prescreened {
			what, kind = "the memory pre-screen rejected it", record.ViolationPreScreen
		}
		msg := fmt.Sprintf("%s: %s: %s", what, out.failClass, firstLine(out.failMessage))
		rec.Violations = []record.Violation{{Kind: kind, Failure: out.failClass, Message: msg}}
		rec.Reason = msg
		return
	}
	m := out.m
	if m != nil {
		addCost(p, m, cfg, rec.GPUs)
		rec.Workloads = m.Workloads
		rec.Total = m.Total
		rec.Series = m.Series
		rec.StartupWave = m.StartupWave
	}
	if out.pruned {
		rec.State = record.StatePruned
		rec.Reason = "stopped early: " + out.pruneReason
		rec.Violations = []record.Violation{{Kind: record.ViolationPruned, Message: rec.Reason}}
		rec.Violation = 0.5
		if out.fullSeconds > out.gpuSeconds {
			rec.SavedGPUSeconds = out.fullSeconds - out.gpuSeconds
		}
		return
	}
	if m == nil {
		rec.State = record.StateFailed
		rec.Reason = "no measurement"
		return
	}
	var vs []record.Violation
	violation := 0.0
	for _, c := range p.Workloads {
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
					vs = append(vs, record.Violation{Kind: record.ViolationNoneCompleted, Class: c.Name, Message: noneCompletedCause(c, res)})
					saidNone = true
				}
				violation += 1
				continue
			}
			if !ok || math.IsNaN(v) {
				vs = append(vs, record.Violation{Kind: record.ViolationUnmeasured, Class: c.Name, Metric: b.Metric, Bound: b.Value, AtLeast: b.AtLeast})
				violation += 1
				continue
			}
			if b.Met(v) {
				continue
			}
			vs = append(vs, record.Violation{Kind: record.ViolationSLO, Class: c.Name, Metric: b.Metric, Value: v, Bound: b.Value, AtLeast: b.AtLeast})
			violation += math.Min(1, math.Abs(v-b.Value)/math.Max(math.Abs(b.Value), 1e-9))
		}
	}
	qscores := map[string]float64{}
	if len(out.quality) > 0 {
		rec.Quality = out.quality
		for _, name := range sortedGates(out.quality) {
			q := out.quality[name]
			qscores[name] = q.Score
			if !q.Passed {
				vs = append(vs, record.Violation{Kind: record.ViolationQuality, Metric: name, Value: q.Score, Bound: q.Baseline, Message: q.Reason})
				violation += 0.5
			}
		}
	}
	tv := plan.TrialValues{Config: cfg, GPUs: rec.GPUs, Measurement: m, Quality: qscores}
	checks, err := p.EvalChecks(tv)
	if err != nil {
		vs = append(vs, record.Violation{Kind: record.ViolationCheck, Message: "checks: " + err.Error()})
		violation += 1
	}
	for _, ch := range checks {
		if !ch.Passed {
			msg := ch.Message
			if msg == "" {
				msg = "failed"
			}
			vs = append(vs, record.Violation{Kind: record.ViolationCheck, Metric: ch.Name, Message: msg})
			violation += 0.5
		}
	}
	vals, err := p.EvalObjectives(tv)
	if err != nil {
		vs = append(vs, record.Violation{Kind: record.ViolationObjective, Message: "objectives: " + err.Error()})
		violation += 1
	} else {
		rec.Objectives = map[string]float64{}
		for i, o := range p.Objectives {
			if i < len(vals) {
				rec.Objectives[o.Name] = vals[i]
			}
		}
		rec.ObjectiveCI = objectiveCI(p, tv, vals)
	}
	if len(vs) == 0 {
		rec.State = record.StateComplete
		return
	}
	rec.State = record.StateInfeasible
	rec.Violations = vs
	rec.Reason = reasonOf(vs)
	rec.Violation = math.Min(1, violation/float64(len(vs)))
}

// reasonOf lists violations in words, as a trial's Reason.
func reasonOf(vs []record.Violation) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = v.String()
	}
	return strings.Join(parts, "; ")
}

// sortedGates lists quality gate names in order, so that reasons read the same every time.
func sortedGates(q map[string]record.QualityScore) []string {
	names := make([]string, 0, len(q))
	for n := range q {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
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

// addCost adds cost_per_million_output_tokens to the total: the plan's price per GPU-hour
// (the SKU's catalog price when the plan sets none, or when the SKU is a knob), times the
// configuration's GPUs, per million output tokens.
func addCost(p *plan.Plan, m *workload.Measurement, cfg plan.Config, gpus int) {
	if m.Total == nil || m.Total.Metrics == nil {
		return
	}
	price := p.Hardware.PricePerGPUHour
	if _, knob := cfg[plan.SKUKnob]; knob || price <= 0 {
		if sku, ok := SKUFor(p, cfg); ok && sku.PricePerHour > 0 {
			price = sku.PricePerHour
		}
	}
	tps := m.Total.Metrics[workload.OutputTokenThroughput]
	if price <= 0 || tps <= 0 {
		return
	}
	m.Total.Metrics[workload.CostPerMillionOutput] = price * float64(max(1, gpus)) / (tps * 3600) * 1e6
}

// simGenerator is the simulator's answer model for a configuration of p: the
// configuration's precision, and the checkpoint's own quantisation (a config_json with a
// quantization_config) where the configuration sets none, as vLLM applies it.
func simGenerator(p *plan.Plan, cfg plan.Config) *quality.SimGenerator {
	m := sim.AnswerModelFromSettings(cfg.EngineSettings(), uint64(p.WorkloadSeed()))
	if a, ok, err := ResolveArch(p); err == nil && ok {
		m.Checkpoint = a.QuantMethod
	}
	return quality.NewSimGeneratorFor(m)
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
// the gate and the plan's space hash, and a simulated one by the model version too
// (baselineKey).
func (r *runner) storedBaseline(gate string) (*quality.Outcome, bool, error) {
	return r.st.StoredBaseline(r.studyID, r.baselineKey(gate))
}

// keepBaseline implements baselineStore; it counts the baselines this process measured.
func (r *runner) keepBaseline(gate string, o *quality.Outcome) (*quality.Outcome, error) {
	r.mu.Lock()
	r.baselinesMeasured++
	r.mu.Unlock()
	return r.st.KeepBaseline(r.studyID, r.baselineKey(gate), o)
}

// estimator runs trials on the offline model, through the study's Assessor.
type estimator struct {
	a *Assessor
}

// newStudyEstimator returns an estimator whose quality baselines come from keep, measured
// only when the study has none.
func newStudyEstimator(p *plan.Plan, keep baselineStore) (*estimator, error) {
	a, err := NewAssessor(p)
	if err != nil {
		return nil, err
	}
	if !a.hasArch {
		return nil, errors.New("--estimate needs the model's architecture: set model.architecture or model.config_json")
	}
	if _, ok := SKUFor(p, plan.Config{}); !ok && p.Knob(plan.SKUKnob) == nil {
		return nil, fmt.Errorf("--estimate needs a GPU SKU from the catalog: set hardware.sku (or a sku knob); %q is unknown", p.Hardware.SKU)
	}
	if len(p.Quality) > 0 {
		if a.quality, err = loadSimQuality(p, keep); err != nil {
			return nil, err
		}
	}
	return &estimator{a: a}, nil
}

func (e *estimator) close() {}

// evaluate assesses the job's configuration in full; a confirmation run draws another
// sample of the simulator's noise.
func (e *estimator) evaluate(ctx context.Context, j job) (*outcome, error) {
	as, err := e.a.assess(ctx, j.config, Full, j.seed+uint64(j.run)*0x9e3779b97f4a7c15)
	if err != nil {
		return nil, err
	}
	if !as.Covered {
		return nil, fmt.Errorf("--estimate: %s", as.Note)
	}
	if as.out == nil {
		return nil, fmt.Errorf("trial %d: %s", j.number, as.Trial.Reason)
	}
	return as.out, nil
}

// scoreQuality evaluates every gate with gen and gates it against its baseline.
func scoreQuality(ctx context.Context, p *plan.Plan, items map[string][]quality.Item, baseline map[string]*quality.Outcome, gen quality.Generator) (map[string]record.QualityScore, error) {
	if len(p.Quality) == 0 {
		return nil, nil
	}
	out := map[string]record.QualityScore{}
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
		qs := record.QualityScore{Score: o.Score, Passed: passed, Reason: reason, Items: o.Items, Simulated: o.Simulated}
		if base != nil {
			qs.Baseline = base.Score
		}
		qs.Examples = examples(items[g.Name], o, base, record.MaxExamples)
		out[g.Name] = qs
	}
	return out, nil
}

// examples are the n lowest-scoring items of an evaluation (in the set's order among equal
// scores), with the reference and, when base is known, the baseline's answer to the same
// item, each text cut to record.MaxExampleChars.
func examples(items []quality.Item, o *quality.Outcome, base *quality.Outcome, n int) []record.QualityExample {
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
	var out []record.QualityExample
	for _, i := range idx[:min(n, len(idx))] {
		id := items[i].ID
		if i < len(o.IDs) {
			id = o.IDs[i]
		}
		out = append(out, record.QualityExample{ID: id, Input: record.Truncate(items[i].Text(), record.MaxExampleChars),
			Reference: record.Truncate(items[i].Reference, record.MaxExampleChars), Output: record.Truncate(o.Outputs[i], record.MaxExampleChars),
			Score: o.Items[i], BaselineOutput: record.Truncate(baseline[id], record.MaxExampleChars)})
	}
	return out
}

// noneCompletedCause says why no request of class c completed, when the measurement tells:
// every request timed out (timeoutCause), or the engine refused them, in its own words (the
// first refusal's message, as workload.Result.ErrorMessages keeps it, e.g. "HTTP 400: This
// model's maximum context length is ..."); empty otherwise.
func noneCompletedCause(c workload.Class, res *workload.Result) string {
	if s := timeoutCause(c, res); s != "" {
		return s
	}
	if res == nil || res.Metrics[workload.Failed] == 0 {
		return ""
	}
	var parts []string
	for _, class := range []string{workload.ErrHTTP, workload.ErrUnauthorized, workload.ErrStream} {
		if n := res.Errors[class]; n > 0 && res.ErrorMessages[class] != "" {
			parts = append(parts, fmt.Sprintf("%d failed, the first with %s", n, res.ErrorMessages[class]))
		}
	}
	return strings.Join(parts, "; ")
}

// timeoutCause says, when every failed request of a class that completed none timed out, that
// the request timeout is the cause and how to raise it; "" otherwise.
func timeoutCause(c workload.Class, res *workload.Result) string {
	failed := res.Metrics[workload.Failed]
	if failed == 0 || float64(res.Errors[workload.ErrTimeout]) != failed {
		return ""
	}
	return fmt.Sprintf("every request timed out after %v, the class's request timeout; if the engine is only slow under this load, raise it with timeout = \"%v\" in workload %q",
		c.Timeout, 4*c.Timeout, c.Name)
}
