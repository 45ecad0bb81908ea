package search

import (
	"fmt"
	"sync"
	"time"

	"github.com/frontier-llm/frontier/plan"
	"github.com/frontier-llm/frontier/record"
)

// EventKind says what an Event reports.
type EventKind int

// Event kinds.
const (
	// EventNote is a message about the study (a repaired trial, a warm start, the
	// preflight, confirmation); Message says it.
	EventNote EventKind = iota
	// EventStarted is a trial that started: Trial and Config.
	EventStarted
	// EventPreScreened is a configuration the memory model rejected before any GPU time was
	// spent: Record (outside the budget) and Config.
	EventPreScreened
	// EventFinished is a trial that finished, with the study's progress: Record, Config,
	// Done, Budget, Running, Elapsed, Left, Front and Objectives.
	EventFinished
	// EventStopped is a trial that stopped running, whatever became of it (it follows
	// EventFinished, or stands alone for a trial another process took over).
	EventStopped
	// EventEnd is the end of the run.
	EventEnd
)

// Event is one thing a running study reports; a command renders them (see Options.Events).
type Event struct {
	Kind    EventKind
	Message string
	// Trial is the trial's number; Config its configuration in words, in the order of the
	// plan's knobs.
	Trial  int
	Config string
	// Record is the finished (or pre-screened) trial as stored.
	Record *record.Trial
	// Done is how many trials of the study's Budget are finished, Running how many others
	// this process is running, Elapsed the time since the run began and Left the estimated
	// time to the budget (negative when unknown).
	Done, Budget, Running int
	Elapsed, Left         time.Duration
	// Front is the size of the Pareto front of the feasible trials so far; Objectives names
	// the plan's objectives, in order.
	Front      int
	Objectives []string
	// Model is the performance model's standing against the measured trials that carry
	// a prediction, with the prior's weight; nil when none does (no prior).
	Model *record.Standing
}

// progress keeps what the running study knows of itself (trials done and running, their GPU
// time, the front so far) and reports it as events.
type progress struct {
	emit   func(Event)
	sp     *space
	budget int
	start  time.Time

	mu       sync.Mutex
	running  map[int]bool
	done     int // trials of the study that are finished
	ran      int // trials this process finished
	gpuSecs  []float64
	maximize []bool
	objs     []string
	front    [][]float64
	// pairs are the measured trials beside the model's predictions of them.
	pairs []record.StandingPair
}

func newProgress(emit func(Event), sp *space, budget int, start time.Time) *progress {
	if emit == nil {
		emit = func(Event) {}
	}
	return &progress{emit: emit, sp: sp, budget: budget, start: start, running: map[int]bool{}}
}

func (p *progress) setObjectives(objs []plan.Objective) {
	for _, o := range objs {
		p.objs = append(p.objs, o.Name)
		p.maximize = append(p.maximize, o.Maximize)
	}
}

// setDone records how many trials were finished before this run.
func (p *progress) setDone(n int) {
	p.mu.Lock()
	p.done = n
	p.mu.Unlock()
}

// addFeasible records a finished feasible trial's objectives (for the front so far).
func (p *progress) addFeasible(t *record.Trial) {
	v := make([]float64, len(p.objs))
	for i, n := range p.objs {
		x, ok := t.Objectives[n]
		if !ok {
			return
		}
		v[i] = x
	}
	p.front = append(p.front, record.Orient(v, p.maximize))
}

// addPredicted records a measured trial's prediction (for the model's standing).
func (p *progress) addPredicted(t *record.Trial) {
	objs := make([]record.Objective, len(p.objs))
	for i, n := range p.objs {
		objs[i] = record.Objective{Name: n, Maximize: p.maximize[i]}
	}
	if pair, ok := record.TrialPair(t, objs); ok {
		p.pairs = append(p.pairs, pair)
	}
}

// standing is the model's standing so far; nil when no trial carries a prediction.
func (p *progress) standing() *record.Standing {
	if len(p.pairs) == 0 {
		return nil
	}
	s := record.NewStanding(p.objs, p.pairs)
	return &s
}

// linef reports a message.
func (p *progress) linef(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.emit(Event{Kind: EventNote, Message: fmt.Sprintf(format, args...)})
}

func (p *progress) started(n int, cfg plan.Config) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running[n] = true
	p.emit(Event{Kind: EventStarted, Trial: n, Config: p.sp.describe(cfg)})
}

func (p *progress) finished(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.running, n)
	p.emit(Event{Kind: EventStopped, Trial: n})
}

// result reports a finished trial.
func (p *progress) result(t *record.Trial) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if t.OutsideBudget {
		p.emit(Event{Kind: EventPreScreened, Trial: t.Number, Record: t, Config: p.sp.describe(t.Config)})
		return
	}
	if t.State != record.StateInterrupted {
		p.done++
		p.ran++
	}
	if fullRun(t) {
		p.gpuSecs = append(p.gpuSecs, t.GPUSeconds)
	}
	if t.State == record.StateComplete {
		p.addFeasible(t)
	}
	p.addPredicted(t)
	elapsed := time.Since(p.start)
	left := time.Duration(-1)
	if p.ran > 0 && p.done < p.budget {
		left = elapsed / time.Duration(p.ran) * time.Duration(p.budget-p.done)
	} else if p.done >= p.budget {
		left = 0
	}
	p.emit(Event{Kind: EventFinished, Trial: t.Number, Record: t, Config: p.sp.describe(t.Config),
		Done: min(p.done, p.budget), Budget: p.budget, Running: len(p.running) - 1, Elapsed: elapsed, Left: left,
		Front: len(record.NonDominated(p.front)), Objectives: p.objs, Model: p.standing()})
}

// close reports the end of the run.
func (p *progress) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.emit(Event{Kind: EventEnd})
}

func (p *progress) meanGPUSeconds() float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.gpuSecs) == 0 {
		return 0
	}
	sum := 0.0
	for _, s := range p.gpuSecs {
		sum += s
	}
	return sum / float64(len(p.gpuSecs))
}

// fullRun reports whether a trial ran its whole workload: the trials whose GPU time says
// what a trial costs.
func fullRun(t *record.Trial) bool {
	return t.GPUSeconds > 0 && t.Total != nil && (t.State == record.StateComplete || t.State == record.StateInfeasible)
}
