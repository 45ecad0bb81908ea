package workload

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// RunOptions tune Run.
type RunOptions struct {
	// Seed draws every class's requests (see Load).
	Seed uint64
	// EarlyStop cancels the run as soon as a class has missed a percentile or error-rate
	// bound of its SLO beyond recovery: more violating requests than the bound allows over the
	// class's whole run. The result is then Pruned.
	EarlyStop bool
	// Progress, when set, is called after each request ends, with the number of requests
	// ended and the number in the run (warm-up included). Calls are serialised.
	Progress func(done, total int)
	// ScrapeInterval is how often the target's MetricsURL is scraped; 0 means one second.
	ScrapeInterval time.Duration
	// Transport carries the requests; nil means a transport tuned for load generation. Tests
	// and benchmarks pass their own to compare clients on equal terms.
	Transport http.RoundTripper

	// Retry, when set, is asked after each open-loop request that failed other than by
	// cancellation whether the client sends it again: it returns the wait before the next
	// attempt and true, or false to give up. Each attempt is a Record of its own, whose
	// Attempt counts the attempts before it. It is called from many goroutines at once.
	Retry func(rec *Record) (time.Duration, bool)

	// attainment, when above 0, prunes as soon as the share of a class's requests that can
	// still meet its per-request SLO falls below it (capacity search).
	attainment float64
}

// RunResult is the outcome of Run.
type RunResult struct {
	Measurement *Measurement
	// Records holds one Record per request that was sent, warm-up included, in the order
	// the requests ended.
	Records []Record
	// Pruned is true when EarlyStop cancelled the run; PruneReason names the class and bound.
	Pruned      bool
	PruneReason string
}

// Run sends every class's requests (see Load) to t at the same time, each class on its own
// arrival process, and measures them. Open-loop classes (poisson, constant, gamma,
// immediate, trace) send on a schedule fixed in advance that does not depend on how fast the
// server answers; concurrency classes keep their number of requests in flight. Server errors
// are recorded in the Records and counted, never returned. Run returns an error when the
// requests cannot be loaded or the target is unusable, or when ctx ends, in which case it
// returns what was measured so far as well.
//
// Every time is an offset on one monotonic clock started when Run starts sending. The
// measured window runs from the first measured (not warm-up) send to the last measured end.
// When t.MetricsURL is set the engine's metrics are scraped during the run and their
// metrics and Series added to the measurement (see ServerMetrics).
func Run(ctx context.Context, t Target, classes []Class, opts RunOptions) (*RunResult, error) {
	reqs := make([][]Request, len(classes))
	total := 0
	for i, c := range classes {
		r, err := LoadContext(ctx, c, opts.Seed)
		if err != nil {
			return nil, err
		}
		reqs[i] = r
		total += len(r)
	}
	transport := opts.Transport
	if transport == nil {
		tr := newTransport()
		defer tr.CloseIdleConnections()
		transport = tr
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	cl, err := newClient(t, classes, start, transport)
	if err != nil {
		return nil, err
	}

	var scr *scraper
	if t.MetricsURL != "" {
		scr = newScraper(t.MetricsURL, &http.Client{Transport: transport}, start, opts.ScrapeInterval)
		go scr.run(runCtx)
	}

	out := make(chan Record, 1024)
	var wg sync.WaitGroup
	for i := range classes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			drive(runCtx, cl, &classes[i], reqs[i], opts.Retry, out)
		}()
	}
	go func() {
		wg.Wait()
		close(out)
	}()

	stop := newStopper(classes, reqs, opts)
	res := &RunResult{Records: make([]Record, 0, total)}
	for rec := range out {
		res.Records = append(res.Records, rec)
		if opts.Progress != nil {
			opts.Progress(len(res.Records), total)
		}
		if !res.Pruned && stop != nil {
			if reason := stop.add(&rec); reason != "" {
				res.Pruned, res.PruneReason = true, reason
				cancel()
			}
		}
	}

	window, first := windowOf(res.Records)
	res.Measurement = Aggregate(classes, res.Records, window)
	if scr != nil {
		scr.finish(ctx)
		scr.apply(res.Measurement, first, first+window)
	}
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("the run was interrupted: %w", err)
	}
	return res, nil
}

// windowOf returns the measured window of recs and its start: from the first measured send
// to the last measured end.
func windowOf(recs []Record) (window, first time.Duration) {
	var last time.Duration
	seen := false
	for i := range recs {
		r := &recs[i]
		if r.Warmup {
			continue
		}
		if !seen || r.Sent < first {
			first = r.Sent
		}
		if !seen || r.End > last {
			last = r.End
		}
		seen = true
	}
	return last - first, first
}

// preciseWait is how much of a wait before a request is slept precisely (sleepPrecise)
// rather than on the runtime's timers, whose wake-ups fall on a millisecond grid when the
// process is idle. Any wait that is left is slept, however short: a request is never sent
// before it is due.
const preciseWait = time.Millisecond

// drive sends one class's requests on its arrival process, and sends a failed open-loop
// request again when retry says so.
func drive(ctx context.Context, cl *client, c *Class, reqs []Request, retry func(*Record) (time.Duration, bool), out chan<- Record) {
	if IsConversations(reqs) {
		driveConversations(ctx, cl, c, reqs, retry, out)
		return
	}
	if c.Arrival.Kind == ArrivalConcurrency {
		closedLoop(ctx, cl, c, reqs, out)
		return
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for i := range reqs {
		req := &reqs[i]
		if !waitUntil(ctx, cl, timer, req.At) {
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for attempt := 0; ; attempt++ {
				rec := Record{Scheduled: req.At, Attempt: attempt}
				cl.do(ctx, req, c.Timeout, &rec)
				out <- rec
				if retry == nil || rec.OK() || rec.ErrClass == ErrCancelled || ctx.Err() != nil {
					return
				}
				wait, again := retry(&rec)
				if !again {
					return
				}
				t := time.NewTimer(wait)
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
					return
				}
			}
		}()
	}
}

// waitUntil waits until at on the run's clock: on timer, which honours ctx, until shortly
// before, then precisely. It reports false when ctx ended first.
func waitUntil(ctx context.Context, cl *client, timer *time.Timer, at time.Duration) bool {
	if wait := at - cl.since() - preciseWait; wait > 0 {
		timer.Reset(wait)
		select {
		case <-timer.C:
		case <-ctx.Done():
			return false
		}
	}
	for wait := at - cl.since(); wait > 0; wait = at - cl.since() {
		sleepPrecise(wait)
	}
	return ctx.Err() == nil
}

// closedLoop keeps Arrival.Concurrency requests in flight until every request is sent.
func closedLoop(ctx context.Context, cl *client, c *Class, reqs []Request, out chan<- Record) {
	n := max(c.Arrival.Concurrency, 1)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < n; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= len(reqs) {
					return
				}
				rec := Record{Scheduled: cl.since()}
				cl.do(ctx, &reqs[i], c.Timeout, &rec)
				out <- rec
			}
		}()
	}
	wg.Wait()
}

// stopper decides when a run can stop early because a class can no longer meet its SLO.
type stopper struct {
	classes map[string]*classStop
}

type classStop struct {
	name     string
	n        int // measured requests in the class's run
	failed   int
	maxError float64 // error_rate bound; -1 when none
	bounds   []stopBound
	// attainment mode: requests that did not complete and meet every per-request bound.
	attainment float64
	bad        int
	all        []latencyBound
}

type stopBound struct {
	lb      latencyBound
	allowed int // violations beyond this many make the bound unreachable
	seen    int
}

func newStopper(classes []Class, reqs [][]Request, opts RunOptions) *stopper {
	if !opts.EarlyStop && opts.attainment <= 0 {
		return nil
	}
	s := &stopper{classes: make(map[string]*classStop)}
	for i := range classes {
		c := &classes[i]
		n := 0
		for _, r := range reqs[i] {
			if !r.Warmup {
				n++
			}
		}
		cs := &classStop{name: c.Name, n: n, maxError: -1, attainment: opts.attainment, all: c.perRequestBounds()}
		if opts.EarlyStop {
			for _, b := range c.SLO {
				if b.Metric == ErrorRate && !b.AtLeast {
					cs.maxError = b.Value
				}
			}
			for _, lb := range cs.all {
				q := statQuantile(lb.stat)
				if q < 0 || lb.family == "itl" || lb.bound.AtLeast {
					continue // means and pooled gaps can still recover
				}
				// With n values, the q-th percentile interpolates from index floor((n-1)q);
				// it exceeds the bound for sure once n - floor((n-1)q) values do.
				allowed := n - int(math.Floor(float64(n-1)*q/100)) - 1
				cs.bounds = append(cs.bounds, stopBound{lb: lb, allowed: allowed})
			}
		}
		s.classes[c.Name] = cs
	}
	return s
}

// add counts one ended request and returns why the run should stop, or "".
func (s *stopper) add(r *Record) string {
	cs := s.classes[r.Class]
	if cs == nil || r.Warmup || r.ErrClass == ErrCancelled {
		return ""
	}
	if !r.OK() {
		cs.failed++
		cs.bad++
		if cs.maxError >= 0 && float64(cs.failed) > cs.maxError*float64(cs.n) {
			return fmt.Sprintf("workload %q: %d of %d requests failed, above error_rate %g; the SLO can no longer be met",
				cs.name, cs.failed, cs.n, cs.maxError)
		}
	} else {
		if !meetsAll(cs.all, r) {
			cs.bad++
		}
		for i := range cs.bounds {
			b := &cs.bounds[i]
			v := requestLatency(r, b.lb.family, b.lb.stat)
			if b.lb.bound.Met(v) {
				continue
			}
			b.seen++
			if b.seen > b.allowed {
				return fmt.Sprintf("workload %q: %d of %d requests above %s %g; the SLO can no longer be met",
					cs.name, b.seen, cs.n, b.lb.bound.Metric, b.lb.bound.Value)
			}
		}
	}
	if cs.attainment > 0 && float64(cs.bad) > (1-cs.attainment)*float64(cs.n) {
		return fmt.Sprintf("workload %q: %d of %d requests missed the per-request SLO, attainment below %g",
			cs.name, cs.bad, cs.n, cs.attainment)
	}
	return ""
}
