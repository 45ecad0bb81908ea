package search

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/frontier-llm/frontier/engine"
	"github.com/frontier-llm/frontier/record"
	"github.com/frontier-llm/frontier/search/storage"
	"github.com/frontier-llm/frontier/sim"

	"github.com/c-bata/goptuna"

	"github.com/frontier-llm/frontier/plan"
	"github.com/frontier-llm/frontier/redact"
	"github.com/frontier-llm/frontier/workload"
)

// Options configure one run of a study.
type Options struct {
	// Storage is the study database's URL: sqlite:///path.db, a file path, postgres://...
	// or mysql://...; "" means storage.DefaultStorage(plan.Filename), or
	// storage.DefaultEstimateStorage(plan.Filename) with Estimate.
	Storage string
	// Trials is the budget: the study is topped up to this many trials; 0 means the plan's.
	Trials int
	// Parallel is how many trials run at once; 0 means as many as free GPU slots allow and a
	// negative value means the plan's setting.
	Parallel int
	// Estimate runs every trial on the offline performance model (sim.Estimate) instead of
	// launching an engine. A study holds estimates or measurements, never both: a run that
	// would add one kind to a study of the other is refused (storage.ErrEstimateMixed).
	Estimate bool
	// WarmStart is the storage of an earlier study whose best configurations are measured
	// first; "" means the plan's warm_start.
	WarmStart string
	// Events receives what the study does as it runs (trials started and finished, with
	// the trials done, the time left and the front so far; notes); nil means none. It is
	// called from the study's workers one event at a time.
	Events func(Event)
	// FrontierBinary is the frontier executable that serves the simulator; "" means
	// os.Executable().
	FrontierBinary string
	// Environ is the environment engines inherit (secrets named there are redacted).
	Environ []string
	// Version is frontier's version, for provenance.
	Version string
	// StaleAfter is the lease: how long a running trial may go without a heartbeat before
	// another process takes it back and measures it again; 0 means two minutes. A process
	// beats every quarter of it, and at most once a second.
	StaleAfter time.Duration
	// GracePeriod is how long an engine gets to stop after SIGTERM; 0 means the launcher's.
	GracePeriod time.Duration

	// Prior, when set, replaces the offline performance model as the sampler's prior
	// (a benchmark hands a cached one); it is used only when the plan's prior is on.
	Prior Prior
	// Measure, when set, measures every trial instead of an engine or the estimator: a
	// stand-in for an engine in benchmarks, whose answer is judged as a measurement is. A
	// *sim.StartupError means the engine could not start the configuration.
	Measure func(ctx context.Context, cfg plan.Config) (*workload.Measurement, error)

	// eval, when set, replaces the evaluator (the benchmark answers from a precomputed grid).
	eval evaluator
}

// Summary is what one run of a study did and where the study stands; `apply --json` prints it.
type Summary struct {
	Study   string `json:"study"`
	Storage string `json:"storage"`
	Budget  int    `json:"budget"`
	Trials  int    `json:"trials"` // trials in the study that count against the budget
	Done    int    `json:"done"`   // of those, the finished ones
	// PreScreened counts the configurations the memory model rejected before they were
	// claimed: recorded as infeasible trials, at no GPU time and outside the budget.
	PreScreened int            `json:"prescreened"`
	Measured    int            `json:"measured"` // trials this run finished
	Resumed     int            `json:"resumed"`  // interrupted trials this run measured again
	Repaired    []int          `json:"repaired"` // stale running trials returned to the queue
	Feasible    int            `json:"feasible"` // complete trials: every SLO, check and gate met
	States      map[string]int `json:"states"`
	Front       []FrontEntry   `json:"front"`
	// ConfirmRuns counts the confirmation runs this run made; ConfirmFailed lists the trials
	// a confirmation run took off the front (it missed an SLO, check or gate); Unconfirmed
	// lists front trials with fewer runs than the plan's confirm, left so when confirmation
	// reached its limit of confirm × (front size + 3) runs or was interrupted.
	ConfirmRuns int `json:"confirm_runs"`
	// BaselinesMeasured counts the quality baselines this run measured; a baseline is kept
	// in the study and measured once per study and space.
	BaselinesMeasured int   `json:"baselines_measured,omitempty"`
	ConfirmFailed     []int `json:"confirm_failed,omitempty"`
	Unconfirmed       []int `json:"unconfirmed,omitempty"`
	// GPUSeconds is the GPU time of every trial in the study (confirmations included);
	// SavedPreScreen and SavedEarlyStop estimate what the pre-screen and early stopping saved.
	GPUSeconds     float64 `json:"gpu_seconds"`
	SavedPreScreen float64 `json:"saved_gpu_seconds_prescreen"`
	SavedEarlyStop float64 `json:"saved_gpu_seconds_early_stop"`
	// EarlyStopUnknown counts the pruned trials whose saving is unknown, not counted in
	// SavedEarlyStop: they stopped before any trial had run to the end, so how long a full
	// run takes was not known.
	EarlyStopUnknown int `json:"early_stop_unknown,omitempty"`
	// CPUEngineSeconds is the part of GPUSeconds (and of the savings) measured on engines
	// that ran with no GPU: seconds of engine time, not GPU-seconds. CPUOnly is true when
	// every trial that ran did so; the keys above then hold engine time.
	CPUEngineSeconds float64 `json:"cpu_engine_seconds,omitempty"`
	CPUOnly          bool    `json:"cpu_only,omitempty"`
	ElapsedSeconds   float64 `json:"elapsed_s"`
	// Interrupted is true when the run was stopped by a signal; ConfirmInterrupted when that
	// was after the budget was met, while the front was being confirmed.
	Interrupted        bool `json:"interrupted"`
	ConfirmInterrupted bool `json:"confirm_interrupted,omitempty"`
	// Exhausted is true when every configuration the rules allow had been tried before the
	// budget was met.
	Exhausted bool `json:"exhausted,omitempty"`
	Simulated bool `json:"simulated"`
	// Record is the whole study as stored.
	Record *record.Study `json:"-"`
}

// FrontEntry is one configuration of the Pareto front.
type FrontEntry struct {
	Number     int                `json:"number"`
	Config     map[string]any     `json:"config"`
	Objectives map[string]float64 `json:"objectives"`
	Spread     map[string]float64 `json:"spread,omitempty"`
	Runs       int                `json:"runs"`
	// Uncertainty is each objective's mean with its 95% ranges (record.Estimate), and
	// Confirmed whether the configuration was measured again as the study asks.
	Uncertainty map[string]record.Estimate `json:"uncertainty,omitempty"`
	Confirmed   bool                       `json:"confirmed"`
}

// maxRejections bounds how many proposals one trial may throw away (rules, duplicates)
// before the search picks uniformly among the configurations not yet tried.
const maxRejections = 64

// maxPreScreened bounds how many configurations the memory model may reject in a row
// before the next one is claimed anyway (and rejected by the evaluator, within the budget).
const maxPreScreened = 256

// runner is one process's part in a study.
type runner struct {
	p       *plan.Plan
	opts    Options
	sp      *space
	st      *storage.Store
	studyID int
	name    string
	budget  int
	owner   string
	host    string
	pid     int
	prop    proposer
	eval    evaluator
	// assess is the plan's offline assessment: the memory pre-screen, and --estimate's model.
	assess *Assessor
	logDir string
	start  time.Time
	prog   *progress

	mu        sync.Mutex // guards the fields below and serialises proposals
	exhausted bool
	// started counts engines that started; failedStarts counts launches that failed in a
	// row before any started, to stop a study whose engine cannot run at all.
	started      int
	failedStarts int
	lastFailure  string
	measured     int
	resumed      int
	// repaired lists the trials this process took back from a process that stopped.
	repaired []int
	// waiting is true while a worker waits for trials other processes measure.
	waiting bool
	// confirmRuns counts the confirmation runs this process made.
	confirmRuns int
	// baselinesMeasured counts the quality baselines this process measured.
	baselinesMeasured int
}

// Run runs the plan's study to its budget: resuming it when the database already holds
// it, then measuring the front again (confirmation runs). It returns when the budget is
// met, when ctx is cancelled (running trials are stopped and recorded as interrupted, to
// be measured again by the next run) or on a failure of frontier itself.
func Run(ctx context.Context, p *plan.Plan, opts Options) (*Summary, error) {
	start := time.Now()
	sp, err := newSpace(p.Knobs)
	if err != nil {
		return nil, err
	}
	opts.Storage = studyStorage(p, opts)
	if opts.StaleAfter <= 0 {
		opts.StaleAfter = 2 * time.Minute
	}
	budget := p.Study.Trials
	if opts.Trials > 0 {
		budget = opts.Trials
	}
	if budget <= 0 {
		return nil, errors.New("the study has no budget: set trials in the study block or pass --trials")
	}
	if opts.Parallel < 0 {
		opts.Parallel = p.Study.Parallel
	}
	prop, err := newProposer(p.Study.Sampler, sp, p.Study.Seed, p, studyPrior(p, opts))
	if err != nil {
		return nil, err
	}
	// A dataset or trace with a bad line is the user's to fix: say so before the study is
	// opened, instead of recording a failed trial for each configuration.
	for _, c := range p.Workloads {
		if c.Dataset == "" && c.Arrival.Kind != workload.ArrivalTrace {
			continue
		}
		if _, err := workload.LoadContext(ctx, c, uint64(p.WorkloadSeed())); err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("workload %q: %w: %w", c.Name, ErrInterruptedWaiting, err)
			}
			return nil, fmt.Errorf("workload %q: %w", c.Name, err)
		}
	}
	// Opening the study may wait long on a database another process holds (SQLite's busy
	// timeout, and tries again past it), in calls a signal does not end: stop waiting at once.
	st, err := interruptible(ctx, "waiting for the study database", func() (*storage.Store, error) {
		return storage.Open(ctx, opts.Storage, false)
	}, func(st *storage.Store) { st.Close() })
	if err != nil {
		return nil, err
	}
	environ := opts.Environ
	if environ == nil {
		environ = os.Environ()
	}
	st.Secrets = secretValues(p, environ)
	defer st.Close()
	name := p.Study.Name
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(p.Filename), filepath.Ext(p.Filename))
	}
	rel := studyRelease(p, opts)
	if _, err := interruptible(ctx, "waiting for the study database", func() (struct{}, error) {
		return struct{}{}, st.CheckRelease(name, rel)
	}, nil); err != nil {
		return nil, err
	}
	id, err := interruptible(ctx, "waiting for the study database", func() (int, error) {
		return st.EnsureStudy(ctx, name, storage.StudyMeta{PlanHash: p.Hash, SpaceHash: p.SpaceHash, Budget: budget, Header: header(p, opts)})
	}, nil)
	if err != nil {
		return nil, err
	}
	if _, err := interruptible(ctx, "waiting for the study database", func() (struct{}, error) {
		return struct{}{}, st.KeepRelease(id, rel)
	}, nil); err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	r := &runner{p: p, opts: opts, sp: sp, st: st, studyID: id, name: name, budget: budget, prop: prop,
		host: host, pid: os.Getpid(), owner: fmt.Sprintf("%s/%d/%d", host, os.Getpid(), start.UnixNano()), start: start}
	r.logDir = st.LogDir(name)
	if r.assess, err = NewAssessor(p); err != nil {
		return nil, err
	}
	r.prog = newProgress(opts.Events, sp, budget, start)
	r.prog.setObjectives(p.Objectives)

	sum := &Summary{Study: name, Storage: st.Display, Budget: budget, Simulated: opts.Estimate || engine.MustLookup(p.Engine.Kind).Simulated}
	if sum.Repaired, err = st.RepairStale(id, r.isStale); err != nil {
		return nil, err
	}
	for _, n := range sum.Repaired {
		r.prog.linef("trial %d was left running by a process that stopped; it will be measured again", n)
	}
	if err := r.warmStart(ctx); err != nil {
		return nil, err
	}
	if before, err := st.LoadRecord(id, name); err == nil {
		done := 0
		for i := range before.Trials {
			t := &before.Trials[i]
			if t.OutsideBudget {
				continue
			}
			switch t.State {
			case record.StateRunning, record.StateWaiting, record.StateInterrupted:
				continue
			case record.StateComplete:
				r.prog.addFeasible(t)
			}
			r.prog.addPredicted(t)
			done++
			if fullRun(t) {
				r.prog.gpuSecs = append(r.prog.gpuSecs, t.GPUSeconds)
			}
		}
		r.prog.setDone(done)
	}
	ev, workers, err := newEvaluator(ctx, r)
	if err != nil {
		return nil, err
	}
	defer ev.close()
	r.eval = ev

	// A failure of one worker stops the others; their running trials are recorded as
	// interrupted.
	wctx, stopWorkers := context.WithCancel(ctx)
	defer stopWorkers()
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.work(wctx); err != nil {
				errs <- err
				stopWorkers()
			}
		}()
	}
	wg.Wait()
	close(errs)
	var runErr error
	for err := range errs {
		if runErr == nil {
			runErr = err
		}
	}
	if runErr == nil && ctx.Err() == nil {
		runErr = r.confirm(ctx)
	}
	rec, err := st.LoadRecord(id, name)
	if err != nil {
		return nil, errors.Join(runErr, err)
	}
	r.prog.close()
	fillSummary(sum, rec)
	sum.Measured, sum.Resumed, sum.Exhausted = r.measured, r.resumed, r.exhausted
	sum.Repaired = append(sum.Repaired, r.repaired...)
	sum.ConfirmRuns = r.confirmRuns
	sum.BaselinesMeasured = r.baselinesMeasured
	// A signal stops the run whatever it was doing: measuring the budget, or confirming the
	// front once the budget was met (the next run confirms what is left).
	sum.Interrupted = ctx.Err() != nil
	sum.ConfirmInterrupted = sum.Interrupted && budgetDone(rec, budget)
	sum.ElapsedSeconds = time.Since(start).Seconds()
	sum.Record = rec
	return sum, runErr
}

func budgetDone(rec *record.Study, budget int) bool {
	done := 0
	for _, t := range rec.Trials {
		switch {
		case t.OutsideBudget:
		case t.State == record.StateRunning, t.State == record.StateWaiting, t.State == record.StateInterrupted:
		default:
			done++
		}
	}
	return done >= budget
}

// modelConfidence is the performance model's validation on each SKU p can run on (the
// hardware's and the sku knob's values) for the family of p's model (sim.ConfidenceOf).
func modelConfidence(p *plan.Plan) []record.ModelConfidence {
	arch, hasArch, err := ResolveArch(p)
	if err != nil {
		hasArch = false // the plan's checks report a bad architecture; the grade is per SKU then
	}
	skus := []string{p.Hardware.SKU}
	for _, k := range p.Knobs {
		if k.Name != plan.SKUKnob {
			continue
		}
		for _, v := range k.Values {
			if s, ok := v.(string); ok {
				skus = append(skus, s)
			}
		}
	}
	var out []record.ModelConfidence
	seen := map[string]bool{}
	for _, sku := range skus {
		if sku == "" || seen[sku] {
			continue
		}
		seen[sku] = true
		out = append(out, sim.ConfidenceOf(sku, arch, hasArch)...)
	}
	return out
}

// header is the study's description, stored once and read by reports.
func header(p *plan.Plan, opts Options) record.Study {
	h := record.Study{
		Description:     p.Study.Description,
		Engine:          p.Engine.Kind,
		Model:           p.Model.Name,
		SKU:             p.Hardware.SKU,
		PricePerGPUHour: p.Hardware.PricePerGPUHour,
		MaxModelLen:     p.Model.MaxModelLen,
		Sampler:         p.Study.Sampler,
		Seed:            p.Study.Seed,
		Confirm:         confirmRuns(p),
		Simulated:       opts.Estimate || engine.MustLookup(p.Engine.Kind).Simulated,
	}
	if h.Sampler == "" {
		h.Sampler = SamplerTPE
	}
	if h.Simulated {
		h.ModelConfidence = modelConfidence(p)
	}
	rel := studyRelease(p, opts)
	h.Release, h.SimModel = rel.Release, rel.SimModel
	h.EngineEnv = redact.Env(p.Engine.Env, p.Engine.SecretEnv)
	h.SecretEnv = p.Engine.SecretEnv // taken from frontier's environment: exports pass them by name
	h.EngineArgs = redact.Argv(p.Engine.Args, redact.Values(nil, p.Engine.Env, nil, p.Engine.SecretEnv, p.SensitiveValues()))
	for _, o := range p.Objectives {
		h.Objectives = append(h.Objectives, record.Objective{Name: o.Name, Maximize: o.Maximize})
	}
	for _, k := range p.Knobs {
		h.Knobs = append(h.Knobs, k.Name)
	}
	for _, c := range p.Workloads {
		if len(c.SLO) > 0 {
			if h.SLOs == nil {
				h.SLOs = map[string][]workload.Bound{}
			}
			h.SLOs[c.Name] = c.SLO
		}
	}
	return h
}

// secretValues lists the values of the secrets a study could see: variables of the plan's
// engine env and of frontier's environment whose names say they are secrets. Records are
// scrubbed of them before they are stored.
func secretValues(p *plan.Plan, environ []string) []string {
	out := p.SensitiveValues()
	add := func(name, value string) {
		if len(value) >= 6 && redact.IsSecretEnv(name, p.Engine.SecretEnv) {
			out = append(out, value)
		}
	}
	for k, v := range p.Engine.Env {
		add(k, v)
	}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			add(k, v)
		}
	}
	return out
}

func confirmRuns(p *plan.Plan) int {
	if p.Study.Confirm < 0 {
		return 0
	}
	return p.Study.Confirm
}

// isStale reports whether a running trial's process is gone: on this host, a process id
// that no longer exists or that is this process's own (an earlier process of the same host
// name with the same id: a container restarted under its host name, frontier its first
// process again); anywhere, no heartbeat for StaleAfter.
func (r *runner) isStale(owner string, beat time.Time) bool {
	if owner == r.owner {
		return false
	}
	parts := strings.Split(owner, "/")
	if len(parts) == 3 && parts[0] == r.host {
		var pid int
		if _, err := fmt.Sscan(parts[1], &pid); err == nil && pid > 0 && (pid == r.pid || !processAlive(pid)) {
			return true
		}
	}
	return beat.IsZero() || time.Since(beat) > r.opts.StaleAfter
}

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// errOthersRunning is next's answer when nothing is left to claim while other processes
// still measure trials of the study: one of them may stop before it records its trial, which
// is then this process's to take back.
var errOthersRunning = errors.New("other processes are measuring the last trials")

// work is one worker: claim a trial, measure it, record it, until the budget is met and no
// other process measures a trial of the study any more.
func (r *runner) work(ctx context.Context) error {
	for ctx.Err() == nil {
		c, err := r.next(ctx)
		if errors.Is(err, errOthersRunning) {
			select {
			case <-ctx.Done():
			case <-time.After(r.pollInterval()):
			}
			continue
		}
		if err != nil {
			return err
		}
		if c == nil {
			return nil
		}
		if err := r.runTrial(ctx, c); err != nil {
			return err
		}
	}
	return nil
}

// pollInterval is how often a worker with nothing to claim looks at the trials other
// processes hold: a quarter of the lease, between a quarter of a second and five seconds.
func (r *runner) pollInterval() time.Duration {
	return min(5*time.Second, max(250*time.Millisecond, r.opts.StaleAfter/4))
}

// repair returns the running trials of processes that stopped to the queue; the caller
// holds r.mu.
func (r *runner) repair() error {
	repaired, err := r.st.RepairStale(r.studyID, r.isStale)
	if err != nil {
		return err
	}
	for _, n := range repaired {
		r.prog.linef("trial %d was left running by a process that stopped; it will be measured again", n)
	}
	r.repaired = append(r.repaired, repaired...)
	return nil
}

// drained is what next says once nothing is left to propose: errOthersRunning while another
// process holds a running trial (it is taken back if that process stops), else nil. The
// caller holds r.mu.
func (r *runner) drained() error {
	leases, err := r.st.Leases(r.studyID)
	if err != nil {
		return err
	}
	others := 0
	for _, l := range leases {
		if l.Owner != r.owner {
			others++
		}
	}
	if others == 0 {
		return nil
	}
	if !r.waiting {
		r.prog.linef("nothing left to claim; waiting while other workers measure %d trial(s), to take back any whose worker stops beating for %s",
			others, r.opts.StaleAfter)
	}
	r.waiting = true
	return errOthersRunning
}

// next claims the next trial: a waiting one first (a trial whose process stopped is taken
// back first), else a new proposal. nil means the budget is met or the space is exhausted,
// and no other process measures a trial; errOthersRunning that the budget is met but other
// processes still measure trials.
func (r *runner) next(ctx context.Context) (*storage.Claim, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.repair(); err != nil {
		return nil, err
	}
	c, err := r.st.ClaimWaiting(r.studyID, r.owner)
	if err != nil || c != nil {
		r.waiting = false
		return c, err
	}
	if r.exhausted {
		return nil, r.drained()
	}
	snap, err := r.snapshot()
	if err != nil {
		return nil, err
	}
	prescreened := 0
	for rejected := 0; ctx.Err() == nil; {
		h := r.history(snap, rejected)
		if snap.counted >= r.budget {
			// The budget is claimed; a trial whose process stops before it records it is
			// ours to finish, so wait while others measure.
			return nil, r.drained()
		}
		var cfg plan.Config
		var attrs map[string]string
		if rejected < maxRejections {
			cfg, attrs, err = r.prop.propose(h, rejected)
		} else {
			cfg, err = r.pickUntried(h, rejected)
		}
		if errors.Is(err, errExhausted) {
			r.exhausted = true
			r.prog.linef("every configuration the rules allow has been tried (%d trials)", h.n)
			return nil, r.drained()
		}
		if err != nil {
			return nil, err
		}
		key := configKey(cfg)
		if h.tried[key] {
			rejected++
			continue
		}
		if v, err := r.p.CheckRules(cfg); err != nil {
			return nil, fmt.Errorf("rules: %w", err)
		} else if len(v) > 0 {
			rejected++
			continue
		}
		nt, err := r.newTrial(cfg, key, attrs)
		if err != nil {
			return nil, err
		}
		if rec := r.prescreen(cfg); rec != nil && prescreened < maxPreScreened {
			// Recorded at once, at no GPU time and outside the budget, so the sampler learns.
			prescreened++
			nt.Final = &storage.FinalTrial{Rec: rec, DBState: storage.DBComplete, Value: infeasibleScore(1)}
			if _, _, err := r.st.ClaimNew(r.studyID, r.budget, nt, r.owner); err != nil {
				return nil, err
			}
			r.prog.result(rec)
			if snap, err = r.snapshot(); err != nil {
				return nil, err
			}
			continue
		}
		c, status, err := r.st.ClaimNew(r.studyID, r.budget, nt, r.owner)
		if err != nil {
			return nil, err
		}
		switch status {
		case storage.ClaimBudgetMet:
			return nil, r.drained()
		case storage.ClaimDuplicate:
			// Another process measured it meanwhile: read the study again.
			rejected++
			if snap, err = r.snapshot(); err != nil {
				return nil, err
			}
			continue
		}
		return c, nil
	}
	return nil, nil
}

// prescreen runs the rules and the memory model on a configuration; it returns the record
// of an infeasible trial when the engine could not start it, or nil.
func (r *runner) prescreen(cfg plan.Config) *record.Trial {
	as, err := r.assess.Assess(context.Background(), cfg, ThroughMemory)
	if err != nil || !as.Trial.PreScreened {
		return nil // the rules are checked apart; the engine itself will say what else is wrong
	}
	rec := &as.Trial
	rec.Simulated = r.opts.Estimate || engine.MustLookup(r.p.Engine.Kind).Simulated
	rec.SavedGPUSeconds = r.meanTrialSeconds()
	rec.OutsideBudget = true
	return rec
}

// newTrial prepares the goptuna rows of a configuration.
func (r *runner) newTrial(cfg plan.Config, key string, attrs map[string]string) (storage.NewTrial, error) {
	nt := storage.NewTrial{Config: map[string]any(cfg), Key: key, Attrs: attrs}
	for i, k := range r.sp.knobs {
		ir, ok := r.sp.toInternal(i, cfg[k.Name])
		if !ok {
			return nt, fmt.Errorf("knob %q: %v is outside its domain", k.Name, cfg[k.Name])
		}
		js, err := goptuna.DistributionToJSON(r.sp.dists[i])
		if err != nil {
			return nt, err
		}
		nt.Params = append(nt.Params, storage.ParamRow{Name: k.Name, Value: ir, DistributionJSON: string(js)})
	}
	return nt, nil
}

// maxUntriedScan is the largest grid pickUntried walks in full; larger spaces are sampled.
const maxUntriedScan = 2_000_000

// untriedDraws is how many random grid points pickUntried tries before it walks the grid.
const untriedDraws = 1024

// pickUntried draws uniformly among the configurations the rules allow that the study has
// not tried: the way out when the sampler keeps proposing rejected configurations. On a grid
// of up to maxUntriedScan configurations it first draws random grid points (plan.GridAt),
// and when none of untriedDraws is untried and allowed it walks the whole grid one
// configuration at a time (plan.GridSeq: plan.Grid lists at most plan.GridLimit), keeping
// one of the untried allowed ones at random (reservoir sampling); when none is left the
// space is exhausted. Larger or continuous spaces are sampled at random.
func (r *runner) pickUntried(h *history, attempt int) (plan.Config, error) {
	size, finite := r.p.GridSize()
	if !finite || size > maxUntriedScan {
		rr := &randomProposer{sp: r.sp, seed: r.p.Study.Seed}
		for i := 0; i < 10_000; i++ {
			c, _, _ := rr.propose(h, attempt*10_000+i)
			if h.tried[configKey(c)] {
				continue
			}
			if v, err := r.p.CheckRules(c); err == nil && len(v) == 0 {
				return c, nil
			}
		}
		return nil, errExhausted
	}
	if size == 0 {
		return nil, errExhausted
	}
	rng := rngFor(r.p.Study.Seed, h.n, attempt, 5)
	allowed := func(c plan.Config) (bool, error) {
		if h.tried[configKey(c)] {
			return false, nil
		}
		v, err := r.p.CheckRules(c)
		if err != nil {
			return false, fmt.Errorf("rules: %w", err)
		}
		return len(v) == 0, nil
	}
	for i := 0; i < untriedDraws; i++ {
		c, err := r.p.GridAt(rng.IntN(size))
		if err != nil {
			return nil, err
		}
		if ok, err := allowed(c); err != nil || ok {
			return c, err
		}
	}
	seq, err := r.p.GridSeq()
	if err != nil {
		return nil, err
	}
	var pick plan.Config
	seen := 0
	for c := range seq {
		ok, err := allowed(c)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		seen++
		if rng.IntN(seen) == 0 {
			pick = c
		}
	}
	if pick == nil {
		return nil, errExhausted
	}
	return pick, nil
}

// snapshot is the study as read once for a proposal: the keys of every configuration in it
// and the measured trials.
type snapshot struct {
	n        int // trials in the study: the index of the next proposal
	counted  int // trials that count against the budget (all but pre-screened ones)
	tried    map[string]bool
	measured []measuredTrial
	feasible [][]float64 // objectives of complete trials, minimisation form
	pending  []plan.Config
}

type measuredTrial struct {
	t     record.Trial
	attrs map[string]string
}

// snapshot reads the study.
func (r *runner) snapshot() (*snapshot, error) {
	fts, err := r.st.AllTrials(r.studyID)
	if err != nil {
		return nil, err
	}
	s := &snapshot{tried: map[string]bool{}, n: len(fts)}
	maximize := r.maximize()
	for _, ft := range fts {
		if k := ft.SystemAttrs[storage.AttrConfigKey]; k != "" {
			s.tried[k] = true
		}
		if ft.SystemAttrs[storage.AttrPreScreened] == "" {
			s.counted++
		}
		if ft.State == goptuna.TrialStateRunning || ft.State == goptuna.TrialStateWaiting {
			if t, err := storage.TrialFromFrozen(ft); err == nil {
				if cfg, err := r.sp.normalize(t.Config); err == nil {
					s.pending = append(s.pending, cfg)
				}
			}
			continue
		}
		switch record.State(ft.SystemAttrs[storage.AttrState]) {
		case record.StateComplete, record.StateInfeasible, record.StatePruned:
		default:
			continue
		}
		t, err := storage.TrialFromFrozen(ft)
		if err != nil {
			return nil, err
		}
		cfg, err := r.sp.normalize(t.Config)
		if err != nil {
			continue // a trial of a knob value the plan no longer has
		}
		t.Config = cfg
		s.measured = append(s.measured, measuredTrial{t, ft.SystemAttrs})
		if t.State == record.StateComplete {
			if p, ok := objectiveVector(&t, r.p.Objectives); ok {
				s.feasible = append(s.feasible, record.Orient(p, maximize))
			}
		}
	}
	return s, nil
}

func (r *runner) maximize() []bool {
	m := make([]bool, len(r.p.Objectives))
	for i, o := range r.p.Objectives {
		m[i] = o.Maximize
	}
	return m
}

// history scores the measured trials for one proposal: a fresh ParEGO weight vector per
// proposal (and per attempt).
func (r *runner) history(s *snapshot, attempt int) *history {
	h := &history{tried: s.tried, n: s.n, pending: s.pending}
	maximize := r.maximize()
	scal := newScalarizer(s.feasible, len(r.p.Objectives), rngFor(r.p.Study.Seed, s.n, attempt, 4))
	var pts [][]float64
	var idx []int
	for i, m := range s.measured {
		if m.t.State != record.StateComplete {
			continue
		}
		if p, ok := objectiveVector(&m.t, r.p.Objectives); ok {
			pts = append(pts, record.Orient(p, maximize))
			idx = append(idx, i)
		}
	}
	rank := record.Ranks(pts)
	score := make([]float64, len(s.measured))
	for i := range s.measured {
		score[i] = math.NaN()
	}
	for k, i := range idx {
		// Non-domination rank first; within a rank, this proposal's ParEGO scalarisation.
		score[i] = float64(rank[k]) + scal.feasible(pts[k])/(1+parEGORho+1e-9)
	}
	objectives := make([][]float64, len(s.measured))
	for k, i := range idx {
		objectives[i] = pts[k]
	}
	for i, m := range s.measured {
		sc := score[i]
		violation := 0.0
		if math.IsNaN(sc) {
			sc = float64(len(pts)+1) + infeasibleScore(m.t.Violation)
			violation = record.MissedBy(m.t.Violation) // complete with no objectives: 1
		}
		// A pruned trial stopped while its queue was still building: its latencies cover
		// part of the run and are no measure of the margins.
		var margins []float64
		if m.t.State != record.StatePruned {
			margins = SLOMargins(r.p, &m.t)
		}
		var missed []float64
		if m.t.State == record.StateInfeasible {
			if p, ok := objectiveVector(&m.t, r.p.Objectives); ok {
				missed = record.Orient(p, maximize)
			}
		}
		h.obs = append(h.obs, observation{config: m.t.Config, score: sc, attrs: m.attrs,
			objectives: objectives[i], missed: missed, violation: violation, margins: margins})
	}
	return h
}

// objectiveVector lists a trial's objectives in the plan's order.
func objectiveVector(t *record.Trial, objs []plan.Objective) ([]float64, bool) {
	p := make([]float64, len(objs))
	for i, o := range objs {
		v, ok := t.Objectives[o.Name]
		if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, false
		}
		p[i] = v
	}
	return p, true
}

// fillSummary counts states, GPU time and the front.
func fillSummary(sum *Summary, rec *record.Study) {
	sum.States = map[string]int{}
	byNumber := map[int]*record.Trial{}
	cpu, gpu := 0, 0 // trials that ran on the CPU only, and on GPUs
	for i := range rec.Trials {
		t := &rec.Trials[i]
		byNumber[t.Number] = t
		sum.States[string(t.State)]++
		switch {
		case t.OutsideBudget:
			sum.PreScreened++
		case t.State == record.StateRunning, t.State == record.StateWaiting, t.State == record.StateInterrupted:
			sum.Trials++
		default:
			sum.Trials++
			sum.Done++
		}
		if t.State == record.StateComplete {
			sum.Feasible++
		}
		if t.ConfirmFailed {
			sum.ConfirmFailed = append(sum.ConfirmFailed, t.Number)
		}
		if t.Pareto && !t.Confirmed {
			sum.Unconfirmed = append(sum.Unconfirmed, t.Number)
		}
		sum.GPUSeconds += t.GPUSeconds + t.ConfirmGPUSeconds
		if t.CPUOnly {
			sum.CPUEngineSeconds += t.GPUSeconds + t.ConfirmGPUSeconds
			cpu++
		} else if t.GPUSeconds > 0 {
			gpu++
		}
		if t.PreScreened {
			sum.SavedPreScreen += t.SavedGPUSeconds
		} else {
			sum.SavedEarlyStop += t.SavedGPUSeconds
			if t.State == record.StatePruned && t.SavedGPUSeconds == 0 {
				sum.EarlyStopUnknown++
			}
		}
	}
	sum.CPUOnly = cpu > 0 && gpu == 0
	sum.Front = []FrontEntry{}
	for _, n := range rec.Front {
		t := byNumber[n]
		sum.Front = append(sum.Front, FrontEntry{Number: n, Config: t.Config, Objectives: t.MeanObjectives(),
			Spread: t.Spread, Runs: t.Runs(), Uncertainty: t.Uncertainty, Confirmed: t.Confirmed})
	}
	sort.Slice(sum.Front, func(i, j int) bool { return sum.Front[i].Number < sum.Front[j].Number })
}

// ErrInterruptedWaiting is wrapped by Run's error when a signal came while the study
// database was being opened: nothing of the study was written.
var ErrInterruptedWaiting = errors.New("interrupted before any trial ran; nothing was recorded")

// interruptible runs f, which may wait on a locked database in calls that do not watch ctx,
// and returns as soon as ctx is done, with an error that says what was being waited for.
// What f returns after that is handed to discard (when not nil), from f's goroutine.
func interruptible[T any](ctx context.Context, what string, f func() (T, error), discard func(T)) (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := f()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		go func() {
			if r := <-done; r.err == nil && discard != nil {
				discard(r.v)
			}
		}()
		var zero T
		return zero, fmt.Errorf("%s: %w (%w)", what, ErrInterruptedWaiting, ctx.Err())
	}
}
