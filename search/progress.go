package search

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/frontier-llm/frontier/record"

	"github.com/frontier-llm/frontier/plan"
)

// progress writes what a study is doing: one line per finished trial with the trials done
// and running, elapsed and estimated time left, and the size of the front so far. On a
// terminal a status line of the running trials is redrawn below them.
type progress struct {
	w      io.Writer
	term   bool
	sp     *space
	budget int
	start  time.Time

	mu       sync.Mutex
	running  map[int]string
	done     int // trials of the study that are finished
	ran      int // trials this process finished
	gpuSecs  []float64
	maximize []bool
	objs     []string
	front    [][]float64
	statusOn bool
}

func newProgress(w io.Writer, term bool, sp *space, budget int, start time.Time) *progress {
	return &progress{w: w, term: term, sp: sp, budget: budget, start: start, running: map[int]string{}}
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
	if v, ok := objectiveVectorNames(t, p.objs); ok {
		p.front = append(p.front, record.Orient(v, p.maximize))
	}
}

func objectiveVectorNames(t *record.Trial, names []string) ([]float64, bool) {
	v := make([]float64, len(names))
	for i, n := range names {
		x, ok := t.Objectives[n]
		if !ok {
			return nil, false
		}
		v[i] = x
	}
	return v, true
}

func (p *progress) clearStatus() {
	if p.term && p.statusOn {
		fmt.Fprint(p.w, "\r\033[K")
		p.statusOn = false
	}
}

func (p *progress) drawStatus() {
	if !p.term || len(p.running) == 0 {
		return
	}
	nums := make([]int, 0, len(p.running))
	for n := range p.running {
		nums = append(nums, n)
	}
	sort.Ints(nums)
	parts := make([]string, len(nums))
	for i, n := range nums {
		parts[i] = fmt.Sprintf("#%d %s", n, p.running[n])
	}
	line := fmt.Sprintf("running %d: %s  (%s)", len(nums), strings.Join(parts, " | "), fmtDur(time.Since(p.start)))
	if len(line) > 160 {
		line = line[:157] + "..."
	}
	fmt.Fprint(p.w, line)
	p.statusOn = true
}

// linef writes one message line.
func (p *progress) linef(format string, args ...any) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearStatus()
	fmt.Fprintf(p.w, format+"\n", args...)
	p.drawStatus()
}

func (p *progress) started(n int, cfg plan.Config) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running[n] = p.sp.describe(cfg)
	p.clearStatus()
	if !p.term {
		fmt.Fprintf(p.w, "trial %d started: %s\n", n, p.running[n])
	}
	p.drawStatus()
}

func (p *progress) finished(n int) {
	p.mu.Lock()
	delete(p.running, n)
	p.mu.Unlock()
}

// result writes a finished trial's line.
func (p *progress) result(t *record.Trial) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if t.OutsideBudget {
		if p.w != nil {
			p.clearStatus()
			fmt.Fprintf(p.w, "pre-screen: trial %d %s: %s\n", t.Number, p.sp.describe(t.Config), truncate(t.Reason, 200))
			p.drawStatus()
		}
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
	if p.w == nil {
		return
	}
	elapsed := time.Since(p.start)
	eta := "?"
	if p.ran > 0 && p.done < p.budget {
		per := elapsed / time.Duration(p.ran)
		eta = fmtDur(per * time.Duration(p.budget-p.done))
	} else if p.done >= p.budget {
		eta = "0s"
	}
	detail := t.Reason
	if t.State == record.StateComplete {
		var parts []string
		for _, name := range p.objs {
			parts = append(parts, fmt.Sprintf("%s=%.4g", name, t.Objectives[name]))
		}
		detail = strings.Join(parts, " ")
	}
	p.clearStatus()
	fmt.Fprintf(p.w, "[%d/%d] trial %d %s: %s | %s | running %d, elapsed %s, eta %s, front %d\n",
		min(p.done, p.budget), p.budget, t.Number, t.State, p.sp.describe(t.Config), truncate(detail, 200),
		len(p.running)-1, fmtDur(elapsed), eta, len(record.NonDominated(p.front)))
	p.drawStatus()
}

// close ends the status line.
func (p *progress) close() {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearStatus()
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

func fmtDur(d time.Duration) string {
	d = d.Round(time.Second)
	if d < time.Minute {
		return d.String()
	}
	h := int(d.Hours())
	m := int(d.Minutes()) % 60
	s := int(d.Seconds()) % 60
	if h > 0 {
		return fmt.Sprintf("%dh%02dm", h, m)
	}
	return fmt.Sprintf("%dm%02ds", m, s)
}

// fullRun reports whether a trial ran its whole workload: the trials whose GPU time says
// what a trial costs.
func fullRun(t *record.Trial) bool {
	return t.GPUSeconds > 0 && t.Total != nil && (t.State == record.StateComplete || t.State == record.StateInfeasible)
}
