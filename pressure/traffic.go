package pressure

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/frontier-llm/frontier/plan"
	"github.com/frontier-llm/frontier/record"
	"github.com/frontier-llm/frontier/workload"
)

// phase is a stretch of constant offered load: each class's Poisson rate for a duration.
type phase struct {
	name  string
	dur   time.Duration
	rates map[string]float64
}

// traffic is one episode's load, sent and measured.
type traffic struct {
	res    *workload.RunResult
	phases []record.Phase
	// t0 is the send time of the first request, the origin of the server's series.
	t0 time.Duration
	// started is the wall time at which the run began.
	started time.Time
	// retry is the clients' retry policy; nil when they do not retry.
	retry *retrier
}

// schedule draws each class's send times over the phases: a Poisson process whose rate
// changes at phase boundaries (memorylessness makes each phase's draw exact). Every class
// with traffic sends its first request at time 0, so the classes share one time origin.
// It refuses, before drawing or as soon as the draws pass it, a load of more than limit
// requests, and stops when ctx ends.
func schedule(ctx context.Context, classes []workload.Class, phases []phase, seed uint64, limit int) (map[string][]float64, error) {
	expected := 0.0
	for _, ph := range phases {
		for _, c := range classes {
			expected += ph.rates[c.Name] * ph.dur.Seconds() * c.RequestsPerSession()
		}
	}
	tooMany := func() error {
		return fmt.Errorf("the experiment would send more than max_requests = %d requests (about %.3g at the rates and durations asked)", limit, expected)
	}
	// A Poisson count over twice its mean is vanishingly rare once the mean is large: the
	// draw would be refused anyway. NaN and +Inf are refused here too.
	if !(expected <= 2*float64(limit)) {
		return nil, tooMany()
	}
	out := map[string][]float64{}
	n := 0
	for ci, c := range classes {
		r := rand.New(rand.NewPCG(seed, uint64(ci)+0x51ed270b))
		stamps := []float64{0}
		from := 0.0
		// Each send time starts a session; every turn of a conversation is a request.
		requests := func() int { return c.RequestsOf(len(stamps)) }
		for _, ph := range phases {
			to := from + ph.dur.Seconds()
			rate := ph.rates[c.Name]
			t := max(from, stamps[len(stamps)-1])
			for rate > 0 {
				t += r.ExpFloat64() / rate
				if t >= to {
					break
				}
				stamps = append(stamps, t)
				if requests()+n > limit {
					return nil, tooMany()
				}
				if len(stamps)%4096 == 0 && ctx.Err() != nil {
					return nil, ctx.Err()
				}
			}
			from = to
		}
		hasTraffic := false
		for _, ph := range phases {
			hasTraffic = hasTraffic || ph.rates[c.Name] > 0
		}
		if hasTraffic {
			out[c.Name] = stamps
			n += requests()
			if n > limit {
				return nil, tooMany()
			}
		}
	}
	return out, nil
}

// send runs the phases against s: each class's send times are written as a trace, and the
// traces are sent together by workload.Run, the clients retrying failed requests by retry
// when it is set. The run ends when every request has ended, or when ctx does (the
// experiment's budget), with what was measured so far.
func (x *experiment) send(ctx context.Context, phases []phase, cancelFraction float64, retry *plan.PressureRetry) (*traffic, error) {
	stamps, err := schedule(ctx, x.classes, phases, x.seed, x.maxRequests)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "frontier-pressure-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	var classes []workload.Class
	for i, c := range x.classes {
		st := stamps[c.Name]
		if len(st) == 0 {
			continue
		}
		path := filepath.Join(dir, fmt.Sprintf("class-%d.jsonl", i))
		if err := writeTrace(path, st); err != nil {
			return nil, err
		}
		c.Arrival = workload.Arrival{Kind: workload.ArrivalTrace, TraceFile: path}
		c.SetSessions(len(st)) // each send time starts a request, or a conversation
		if cancelFraction > 0 {
			c.CancelFraction = cancelFraction
		}
		classes = append(classes, c)
	}
	var rec []record.Phase
	from := 0.0
	for _, ph := range phases {
		to := from + ph.dur.Seconds()
		rec = append(rec, record.Phase{Name: ph.name, From: from, To: to, Rates: ph.rates})
		from = to
	}
	opts := workload.RunOptions{Seed: x.seed, ScrapeInterval: x.scrape}
	var rt *retrier
	if retry != nil {
		// The later turns of conversations are first attempts too: what max_requests leaves
		// for retries is less them.
		later := 0
		for _, c := range classes {
			later += c.RequestsOf(c.Sessions()) - c.Sessions()
		}
		rt = newRetrier(retry, stamps, x.seed, x.maxRequests-later)
		opts.Retry = rt.decide
	}
	started := time.Now()
	res, err := workload.Run(ctx, x.server.Target, classes, opts)
	if res == nil {
		return nil, err
	}
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return nil, err
	}
	tr := &traffic{res: res, phases: rec, t0: firstSent(res.Records), started: started, retry: rt}
	return tr, nil
}

func firstSent(recs []workload.Record) time.Duration {
	first := time.Duration(math.MaxInt64)
	for i := range recs {
		first = min(first, recs[i].Sent)
	}
	if first == math.MaxInt64 {
		return 0
	}
	return first
}

func writeTrace(path string, stamps []float64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	for _, t := range stamps {
		if err := enc.Encode(map[string]float64{"timestamp": t}); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

func secs(d time.Duration) float64 { return d.Seconds() }

// reqKey names one request across its attempts.
type reqKey struct {
	class string
	index int
}

// request is what one request came to over its attempts, as its user saw it.
type request struct {
	class string
	// sent is the first attempt's send time; err and metSLO are the last attempt's.
	sent    float64
	err     string
	metSLO  bool
	retries int
	finish  string // the last attempt's finish reason (workload.Record.Finish)
}

// requests groups the attempts of recs by request. A request meets its SLO when its last
// attempt completed within every per-request bound, its latency counted from the first
// attempt: a retry that succeeds late has not served its user in time.
func (x *experiment) requests(recs []workload.Record) ([]request, map[reqKey]time.Duration) {
	firstSent := map[reqKey]time.Duration{}
	last := map[reqKey]*workload.Record{}
	for i := range recs {
		r := &recs[i]
		k := reqKey{r.Class, r.Index}
		if s, ok := firstSent[k]; !ok || r.Sent < s {
			firstSent[k] = r.Sent
		}
		if l, ok := last[k]; !ok || r.Attempt > l.Attempt {
			last[k] = r
		}
	}
	out := make([]request, 0, len(last))
	for k, r := range last {
		q := request{class: k.class, sent: secs(firstSent[k]), err: r.ErrClass, retries: r.Attempt, finish: r.Finish()}
		if c, ok := x.class(k.class); ok && r.OK() {
			user := *r
			user.Sent = firstSent[k]
			q.metSLO = c.MeetsRequestSLO(&user)
		}
		out = append(out, q)
	}
	slices.SortFunc(out, func(a, b request) int { return cmp.Compare(a.sent, b.sent) })
	return out, firstSent
}

// requestTimes are the request-level timestamps of a run, every attempt, in send order.
func (x *experiment) requestTimes(recs []workload.Record, firstSent map[reqKey]time.Duration) []record.RequestTimes {
	out := make([]record.RequestTimes, 0, len(recs))
	for i := range recs {
		r := &recs[i]
		rt := record.RequestTimes{Class: r.Class, Sched: secs(r.Scheduled), Sent: secs(r.Sent), End: secs(r.End), Err: r.ErrClass, Attempt: r.Attempt}
		if r.FirstToken > 0 {
			rt.First = secs(r.FirstToken)
		}
		if c, ok := x.class(r.Class); ok && r.OK() {
			user := *r
			if s, ok := firstSent[reqKey{r.Class, r.Index}]; ok {
				user.Sent = s
			}
			rt.MetSLO = c.MeetsRequestSLO(&user)
		}
		out = append(out, rt)
	}
	slices.SortStableFunc(out, func(a, b record.RequestTimes) int {
		switch {
		case a.Sent < b.Sent:
			return -1
		case a.Sent > b.Sent:
			return 1
		}
		return 0
	})
	return out
}

// timeline computes the series of an episode: one point every half window, each over the
// window that ends at it. Each count is read from sorted times by binary search, so a
// point costs the requests that ended in its window, not every request; it refuses a
// timeline of more than twice plan.MaxTimelinePoints points (a window far narrower than the
// experiment: the plan's bounds keep it within plan.MaxTimelinePoints), and stops when ctx
// ends.
func (x *experiment) timeline(ctx context.Context, tr *traffic, reqs []record.RequestTimes) ([]record.Point, error) {
	w := x.window.Seconds()
	end := 0.0
	for _, r := range reqs {
		end = max(end, r.End)
	}
	if n := 2 * end / w; !(n <= 2*plan.MaxTimelinePoints) {
		return nil, fmt.Errorf("a timeline of %.0f s in windows of %s would have %.3g points, more than %d: widen the pressure block's window", end, x.window, n, 2*plan.MaxTimelinePoints)
	}
	var offered, retries, accepted []float64
	ended := make([]record.RequestTimes, 0, len(reqs))
	for _, r := range reqs {
		if r.Attempt == 0 {
			offered = append(offered, r.Sched)
		} else {
			retries = append(retries, r.Sent)
		}
		if r.First > 0 {
			accepted = append(accepted, r.First)
		}
		ended = append(ended, r)
	}
	slices.Sort(offered)
	slices.Sort(retries)
	slices.Sort(accepted)
	slices.SortStableFunc(ended, func(a, b record.RequestTimes) int { return cmp.Compare(a.End, b.End) })
	ends := make([]float64, len(ended))
	for i, r := range ended {
		ends[i] = r.End
	}
	// The server's state: series times start at the first send.
	series := tr.res.Measurement.Series
	scrapes := make([]float64, len(series))
	order := make([]int, len(series))
	for i, s := range series {
		scrapes[i], order[i] = s.T+secs(tr.t0), i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(scrapes[a], scrapes[b]) })
	sortedScrapes := make([]float64, len(order))
	for i, j := range order {
		sortedScrapes[i] = scrapes[j]
	}
	// in counts the values of sorted v in (lo, t].
	in := func(v []float64, lo, t float64) (int, int) {
		return atMost(v, lo), atMost(v, t)
	}
	count := func(v []float64, lo, t float64) float64 {
		i, j := in(v, lo, t)
		return float64(j - i)
	}
	var pts []record.Point
	for t := w; t <= end+w/2; t += w / 2 {
		if len(pts)%1024 == 0 && interrupted(ctx) {
			return nil, ctx.Err()
		}
		lo := t - w
		p := record.Point{T: round3(t)}
		p.Offered = count(offered, lo, t) / w
		p.Retries = count(retries, lo, t) / w
		p.Accepted = count(accepted, lo, t) / w
		var ttft, e2e []float64
		i, j := in(ends, lo, t)
		for _, r := range ended[i:j] {
			switch {
			case r.Err == "":
				p.Completed++
				if r.MetSLO {
					p.Goodput++
				}
				if r.First > 0 {
					ttft = append(ttft, (r.First-r.Sent)*1000)
				}
				e2e = append(e2e, (r.End-r.Sent)*1000)
			case r.Err != workload.ErrCancelled:
				p.Failed++
			}
		}
		p.Completed /= w
		p.Failed /= w
		p.Goodput /= w
		p.TTFTP99Ms = p99(ttft)
		p.E2EP99Ms = p99(e2e)
		// The last scrape in the window.
		if i, j := in(sortedScrapes, lo, t); j > i {
			s := series[order[j-1]]
			p.Running, p.Waiting, p.KVCacheUsage = s.Running, s.Waiting, s.KVCacheUsage
		}
		pts = append(pts, p)
	}
	return pts, nil
}

// interrupted reports whether ctx was cancelled (a signal), as opposed to having passed
// the experiment's budget, after which what was measured is still summarised.
func interrupted(ctx context.Context) bool {
	return errors.Is(ctx.Err(), context.Canceled)
}

// atMost is how many values of sorted v are at most x.
func atMost(v []float64, x float64) int {
	return sort.Search(len(v), func(i int) bool { return v[i] > x })
}

// atLeast is the index of the first value of sorted v at or above x.
func atLeast(v []float64, x float64) int {
	return sort.SearchFloat64s(v, x)
}

func p99(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	return round3(workload.Percentile(v, 99))
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// classOutcome counts what happened to one class and when it broke and recovered: windows
// of the experiment's width, stepped by half a width, over the requests sent in them; a
// window misses the SLO when fewer of its requests than the class's attainment target
// completed within every per-request bound. broke is the start of the first missing window
// at or after from; recovered is the end of the last missing window, measured from until,
// provided a window that meets the SLO follows it.
func (x *experiment) classOutcome(ctx context.Context, c workload.Class, reqs []request, from, until float64) (record.EpisodeClass, error) {
	out := record.EpisodeClass{Class: c.Name, BrokeS: -1, RecoveredS: -1, Errors: map[string]int{}}
	var mine []request
	last := 0.0
	for _, r := range reqs {
		if r.class != c.Name {
			continue
		}
		mine = append(mine, r)
		last = max(last, r.sent)
		out.Sent++
		out.Retries += r.retries
		switch r.err {
		case "":
			out.Completed++
			if out.FinishReasons == nil {
				out.FinishReasons = map[string]int{}
			}
			out.FinishReasons[r.finish]++
		case workload.ErrCancelled:
			out.Cancelled++
		default:
			out.Failed++
			out.Errors[r.err]++
			if r.err == workload.ErrTimeout {
				out.TimedOut++
			}
		}
	}
	out.Lost = out.Failed
	if len(out.Errors) == 0 {
		out.Errors = nil
	}
	target := c.Attainment
	if target <= 0 {
		target = 0.99
	}
	// The requests that count in a window (all but the client's own cancellations), by send
	// time, and how many of the first i met the SLO.
	var sent []float64
	goodBefore := []int{0}
	for _, r := range mine {
		if r.err == workload.ErrCancelled {
			continue
		}
		sent = append(sent, r.sent)
		g := goodBefore[len(goodBefore)-1]
		if r.metSLO {
			g++
		}
		goodBefore = append(goodBefore, g)
	}
	w := x.window.Seconds()
	lastBad, anyGoodAfter := -1.0, false
	for k, lo := 0, math.Max(0, from-w); lo+w <= last+1e-9; k, lo = k+1, lo+w/2 {
		if k%1024 == 0 && interrupted(ctx) {
			return out, ctx.Err()
		}
		i, j := atLeast(sent, lo), atLeast(sent, lo+w)
		n, good := j-i, goodBefore[j]-goodBefore[i]
		if n == 0 {
			continue
		}
		if float64(good) < target*float64(n) {
			if lo+w > from && out.BrokeS < 0 {
				out.BrokeS = round3(math.Max(0, lo-from))
			}
			lastBad, anyGoodAfter = lo+w, false
			continue
		}
		anyGoodAfter = true
	}
	switch {
	case lastBad < 0:
		out.RecoveredS = 0 // it never missed the SLO
	case anyGoodAfter:
		out.RecoveredS = round3(math.Max(0, lastBad-until))
	}
	return out, nil
}
