package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/frontier-llm/frontier/record"
	"github.com/frontier-llm/frontier/search"
	"github.com/frontier-llm/frontier/workload"
)

// progressView renders a running study's events: one line per finished trial with the
// trials done and running, elapsed and estimated time left, and the size of the front so
// far; on a terminal a status line of the running trials is redrawn below them.
type progressView struct {
	w     io.Writer
	term  bool
	start time.Time

	mu       sync.Mutex
	running  map[int]string
	statusOn bool
}

func newProgressView(w io.Writer, term bool) *progressView {
	return &progressView{w: w, term: term, start: time.Now(), running: map[int]string{}}
}

// handle renders one event.
func (v *progressView) handle(e search.Event) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.clearStatus()
	switch e.Kind {
	case search.EventNote:
		fmt.Fprintln(v.w, e.Message)
	case search.EventStarted:
		v.running[e.Trial] = e.Config
		if !v.term {
			fmt.Fprintf(v.w, "trial %d started: %s\n", e.Trial, e.Config)
		}
	case search.EventPreScreened:
		fmt.Fprintf(v.w, "pre-screen: trial %d %s: %s\n", e.Trial, e.Config, record.Truncate(e.Record.Reason, 200))
	case search.EventStopped:
		delete(v.running, e.Trial)
	case search.EventFinished:
		delete(v.running, e.Trial)
		t := e.Record
		detail := t.Reason
		if t.State == record.StateComplete {
			parts := make([]string, len(e.Objectives))
			for i, name := range e.Objectives {
				parts[i] = fmt.Sprintf("%s=%.4g", name, t.Objectives[name])
			}
			detail = strings.Join(parts, " ")
			if lag, ok := workload.SimLagged(t.Total); ok {
				detail += fmt.Sprintf(" (the simulator fell %.1f s behind real time: host busy)", lag)
			}
		}
		eta := "?"
		if e.Left >= 0 {
			eta = fmtDur(e.Left)
		}
		model := ""
		if e.Model != nil {
			model = " | " + e.Model.String()
		}
		fmt.Fprintf(v.w, "[%d/%d] trial %d %s: %s | %s | running %d, elapsed %s, eta %s, front %d%s\n",
			e.Done, e.Budget, t.Number, t.State, e.Config, record.Truncate(detail, 200), e.Running, fmtDur(e.Elapsed), eta, e.Front, model)
	case search.EventEnd:
		return // the status line stays cleared
	}
	v.drawStatus()
}

func (v *progressView) clearStatus() {
	if v.term && v.statusOn {
		fmt.Fprint(v.w, "\r\033[K")
		v.statusOn = false
	}
}

func (v *progressView) drawStatus() {
	if !v.term || len(v.running) == 0 {
		return
	}
	nums := make([]int, 0, len(v.running))
	for n := range v.running {
		nums = append(nums, n)
	}
	sort.Ints(nums)
	parts := make([]string, len(nums))
	for i, n := range nums {
		parts[i] = fmt.Sprintf("#%d %s", n, v.running[n])
	}
	line := fmt.Sprintf("running %d: %s  (%s)", len(nums), strings.Join(parts, " | "), fmtDur(time.Since(v.start)))
	if len(line) > 160 {
		line = line[:157] + "..."
	}
	fmt.Fprint(v.w, line)
	v.statusOn = true
}

// fmtDur writes a duration to the second: "42s", "3m07s", "1h05m".
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
