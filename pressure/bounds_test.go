package pressure

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/frontier-llm/frontier/plan"
	"github.com/frontier-llm/frontier/record"
	"github.com/frontier-llm/frontier/workload"
	"github.com/frontier-llm/frontier/workload/workloadtest"
)

// refusingServer is a real HTTP server on loopback that answers every request with 503, as
// an overloaded engine does, and counts the completions requests it got.
func refusingServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/completions") {
			n.Add(1)
		}
		http.Error(w, "overloaded", http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func chatClass(rate float64) workload.Class {
	return workload.Class{Name: "chat", Requests: 20, InputTokens: workload.Dist{Kind: workload.DistFixed, A: 16},
		OutputTokens: workload.Dist{Kind: workload.DistFixed, A: 4}, Arrival: workload.Arrival{Kind: workload.ArrivalPoisson, Rate: rate},
		Timeout: 5 * time.Second}
}

func burstSettings(retry *plan.PressureRetry, maxRequests int) *plan.Pressure {
	return &plan.Pressure{Budget: 20 * time.Second, MaxRequests: maxRequests, Window: time.Second,
		Burst: &plan.PressureBurst{Factor: 2, Base: 0.5, Before: 500 * time.Millisecond, Duration: 500 * time.Millisecond, Recover: time.Second},
		Retry: retry}
}

// TestRetryBudgetZeroSendsNoRetry runs a burst against a server that refuses every request,
// with clients whose retry budget is 0: no request may be sent twice.
func TestRetryBudgetZeroSendsNoRetry(t *testing.T) {
	srv, got := refusingServer(t)
	s := AtURL(workload.Target{URL: srv.URL, Model: "m"}, "vllm")
	ps := burstSettings(&plan.PressureRetry{MaxRetries: 5, Budget: 0, Backoff: time.Millisecond, MaxBackoff: time.Millisecond}, 20000)
	res, err := Run(context.Background(), s, []workload.Class{chatClass(20)}, ps, Options{Seed: 1, Trial: -1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Burst == nil {
		t.Fatalf("no burst: %v", res.Errors)
	}
	sent := res.Burst.Classes[0].Sent
	if r := res.Burst.Retry; r.Retries != 0 || r.Denied == 0 {
		t.Errorf("budget 0: %d retries, %d denied; want none sent and every failure denied", r.Retries, r.Denied)
	}
	if int(got.Load()) != sent {
		t.Errorf("the server got %d requests for %d sent: budget 0 retried", got.Load(), sent)
	}
}

// TestRetriesStayWithinMaxRequests gives the clients the largest retry policy the plan
// allows against a server that refuses everything: every attempt, retries included, must
// stay within max_requests.
func TestRetriesStayWithinMaxRequests(t *testing.T) {
	srv, got := refusingServer(t)
	s := AtURL(workload.Target{URL: srv.URL, Model: "m"}, "vllm")
	burstWithinMaxRequests(t, s, chatClass(20), 120, func() int { return int(got.Load()) })
}

// burstWithinMaxRequests runs a burst of class c against s with the largest retry policy the
// plan allows and checks that the server, which served counts, got at most maxRequests
// attempts, some of them retries.
func burstWithinMaxRequests(t *testing.T, s *Server, c workload.Class, maxRequests int, served func() int) {
	t.Helper()
	ps := burstSettings(&plan.PressureRetry{MaxRetries: plan.MaxRetries, Budget: plan.MaxRetryBudget, Backoff: time.Millisecond, MaxBackoff: time.Millisecond}, maxRequests)
	res, err := Run(context.Background(), s, []workload.Class{c}, ps, Options{Seed: 1, Trial: -1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Burst == nil {
		t.Fatalf("no burst: %v", res.Errors)
	}
	r := res.Burst.Retry
	t.Logf("%d first attempts, %d retries, %d denied, server saw %d", res.Burst.Classes[0].Sent, r.Retries, r.Denied, served())
	if n := served(); n > maxRequests || r.Retries == 0 {
		t.Errorf("the server got %d requests (%d retries) with max_requests = %d", n, r.Retries, maxRequests)
	}
}

// TestOverflowingRatesKeepTheResult runs the experiments on a class whose plan rate times the
// ladder's factors overflows: the ladder must stop at the highest rate it offers, the burst
// must be refused before it draws its send times, and the record must still be JSON.
func TestOverflowingRatesKeepTheResult(t *testing.T) {
	srv, got := refusingServer(t)
	s := AtURL(workload.Target{URL: srv.URL, Model: "m"}, "vllm")
	ps := burstSettings(nil, 20000)
	ps.Ladder = &plan.PressureLadder{Start: 1, Factor: 100, MaxSteps: 100, MaxErrorRate: 1, Duration: 0}
	ps.Burst.Factor = 1000
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	res, err := Run(context.Background(), s, []workload.Class{chatClass(1e300)}, ps, Options{Seed: 1, Trial: -1})
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("took %v", took)
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 256<<20 {
		t.Errorf("the heap grew by %d MiB", grew>>20)
	}
	if len(res.Ladders) != 1 || res.Ladders[0].Boundary != "max_rate" {
		t.Fatalf("ladders %+v, want one ended by max_rate", res.Ladders)
	}
	if got.Load() != 0 {
		t.Errorf("the server got %d requests at rates past %g req/s", got.Load(), MaxRateRPS)
	}
	if len(res.Errors) != 1 || !strings.Contains(res.Errors[0], "burst: the experiment would send more than max_requests = 20000 requests") {
		t.Errorf("errors %q, want the burst refused for its requests", res.Errors)
	}
	if _, err := json.Marshal(res); err != nil {
		t.Errorf("the record cannot be written: %v", err)
	}
}

func TestNonFiniteFiguresAreKeptAsZeroWithANote(t *testing.T) {
	t.Parallel()
	growth := math.Inf(1)
	p := &record.Pressure{Ladders: []record.Ladder{{Class: "chat", SaturationRPS: 4, Steps: []record.LadderStep{
		{Rate: math.Inf(1), Scale: 2, Metrics: map[string]float64{"goodput": 3, "tpot_p99_ms": math.NaN()}, BacklogGrowth: &growth,
			Classes: map[string]map[string]float64{"chat": {"ttft_p99_ms": math.Inf(-1), "completed": 9}}},
	}}}, Burst: &record.Episode{Timeline: []record.Point{{T: 1, Offered: math.NaN()}}}}
	if _, err := json.Marshal(p); err == nil {
		t.Fatal("the fixture has no non-finite number: the test no longer checks what it means to")
	}
	where := keepFinite(p)
	if _, err := json.Marshal(p); err != nil {
		t.Fatalf("after keepFinite: %v", err)
	}
	want := []string{"ladders[0].steps[0].rate (+Inf)", "ladders[0].steps[0].metrics.tpot_p99_ms (NaN)",
		"ladders[0].steps[0].classes.chat.ttft_p99_ms (-Inf)", "ladders[0].steps[0].backlog_growth (+Inf)", "burst.timeline[0].offered (NaN)"}
	for _, w := range want {
		if !strings.Contains(strings.Join(where, "; "), w) {
			t.Errorf("found %q, want %q among them", where, w)
		}
	}
	st := p.Ladders[0].Steps[0]
	if st.Metrics["goodput"] != 3 || st.Classes["chat"]["completed"] != 9 || p.Ladders[0].SaturationRPS != 4 {
		t.Errorf("finite figures changed: %+v", st)
	}
	if !strings.Contains(finiteNote(where), "5 figure(s) were not finite numbers") {
		t.Errorf("note %q", finiteNote(where))
	}
}

// TestNarrowWindowIsRefusedNotLooped computes the timeline of a 30 s episode in windows of
// 1 ns (6e10 points): it must be refused at once, and an interrupted one must stop.
func TestNarrowWindowIsRefusedNotLooped(t *testing.T) {
	t.Parallel()
	x := &experiment{window: time.Nanosecond, classes: []workload.Class{chatClass(1)}}
	tr := &traffic{res: &workload.RunResult{Measurement: &workload.Measurement{}}}
	reqs := []record.RequestTimes{{Class: "chat", Sent: 0, End: 30}}
	start := time.Now()
	_, err := x.timeline(context.Background(), tr, reqs)
	if err == nil || !strings.Contains(err.Error(), "widen the pressure block's window") {
		t.Errorf("err %v, want the window refused", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("took %v", took)
	}
	// At the narrowest window the plan allows, the timeline is bounded; cancelled, it stops.
	x.window = plan.MinPressureWindow
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	reqs[0].End = 100
	if _, err := x.timeline(ctx, tr, reqs); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled timeline: %v", err)
	}
	if _, err := x.classOutcome(ctx, x.classes[0], []request{{class: "chat", sent: 100}}, 0, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled outcome: %v", err)
	}
	pts, err := x.timeline(context.Background(), tr, reqs)
	if err != nil || len(pts) > plan.MaxTimelinePoints {
		t.Errorf("%d points, err %v; want at most %d", len(pts), err, plan.MaxTimelinePoints)
	}
}

// TestClosedLoopClassesAreNotLaddered runs the experiments on classes without an arrival
// rate: refused before any request with a closed loop alone, left out beside a class
// with a rate.
func TestClosedLoopClassesAreNotLaddered(t *testing.T) {
	srv, got := refusingServer(t)
	s := AtURL(workload.Target{URL: srv.URL, Model: "m"}, "vllm")
	closed := chatClass(0)
	closed.Name, closed.Arrival = "batch", workload.Arrival{Kind: workload.ArrivalConcurrency, Concurrency: 4}
	flood := chatClass(0)
	flood.Name, flood.Arrival = "flood", workload.Arrival{Kind: workload.ArrivalImmediate}
	_, err := Run(context.Background(), s, []workload.Class{closed, flood}, plan.DefaultPressure(), Options{Seed: 1, Trial: -1})
	if !errors.Is(err, ErrNoArrivalRate) || !strings.Contains(err.Error(), `"batch" (concurrency(4)), "flood" (immediate())`) {
		t.Errorf("err %v, want ErrNoArrivalRate naming both classes", err)
	}
	if got.Load() != 0 {
		t.Errorf("%d requests sent", got.Load())
	}
	ps := burstSettings(nil, 20000)
	res, err := Run(context.Background(), s, []workload.Class{chatClass(10), closed}, ps, Options{Seed: 1, Trial: -1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Burst == nil || len(res.Burst.Classes) != 1 || res.Burst.Classes[0].Class != "chat" {
		t.Fatalf("burst %+v, errors %v: want chat alone", res.Burst, res.Errors)
	}
	if !strings.Contains(strings.Join(res.Notes, "\n"), `the workloads without an arrival rate were not sent: "batch" (concurrency(4))`) {
		t.Errorf("notes %q", res.Notes)
	}
}

// naiveTimeline is the timeline by its definition: every request tested against every
// window. The binary-search timeline must agree with it.
func naiveTimeline(w float64, tr *traffic, reqs []record.RequestTimes) []record.Point {
	end := 0.0
	for _, r := range reqs {
		end = max(end, r.End)
	}
	var pts []record.Point
	for t := w; t <= end+w/2; t += w / 2 {
		lo := t - w
		p := record.Point{T: round3(t)}
		var ttft, e2e []float64
		for _, r := range reqs {
			switch {
			case r.Attempt == 0 && r.Sched > lo && r.Sched <= t:
				p.Offered++
			case r.Attempt > 0 && r.Sent > lo && r.Sent <= t:
				p.Retries++
			}
			if r.First > lo && r.First <= t {
				p.Accepted++
			}
			if r.End > lo && r.End <= t {
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
		}
		p.Offered /= w
		p.Retries /= w
		p.Accepted /= w
		p.Completed /= w
		p.Failed /= w
		p.Goodput /= w
		p.TTFTP99Ms, p.E2EP99Ms = p99(ttft), p99(e2e)
		for _, s := range tr.res.Measurement.Series {
			st := s.T + secs(tr.t0)
			if st > lo && st <= t {
				p.Running, p.Waiting, p.KVCacheUsage = s.Running, s.Waiting, s.KVCacheUsage
			}
		}
		pts = append(pts, p)
	}
	return pts
}

func TestTimelineAgreesWithItsDefinition(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	errs := []string{"", "", "", workload.ErrTimeout, workload.ErrCancelled, workload.ErrConnect}
	var reqs []record.RequestTimes
	for i := range 3000 {
		sched := math.Round(rng.Float64()*200) / 10 // on the grid too, to test the edges
		r := record.RequestTimes{Class: "chat", Sched: sched, Sent: sched + rng.Float64()*0.01, Err: errs[rng.IntN(len(errs))], Attempt: i % 3 / 2}
		if rng.IntN(4) > 0 {
			r.First = r.Sent + rng.Float64()
		}
		r.End = r.Sent + 1 + rng.Float64()*3
		r.MetSLO = r.Err == "" && rng.IntN(2) == 0
		reqs = append(reqs, r)
	}
	var series []workload.Sample
	for i := range 100 {
		series = append(series, workload.Sample{T: float64(i) * 0.25, Running: float64(i), Waiting: float64(2 * i), KVCacheUsage: float64(i) / 100})
	}
	tr := &traffic{res: &workload.RunResult{Measurement: &workload.Measurement{Series: series}}, t0: 300 * time.Millisecond}
	for _, w := range []time.Duration{100 * time.Millisecond, time.Second, 1500 * time.Millisecond} {
		x := &experiment{window: w}
		got, err := x.timeline(context.Background(), tr, reqs)
		if err != nil {
			t.Fatal(err)
		}
		if diff := gocmp.Diff(naiveTimeline(w.Seconds(), tr, reqs), got); diff != "" {
			t.Errorf("window %v (-definition +binary search):\n%s", w, diff)
		}
	}
}

// naiveRecovery is classOutcome's broke and recovered times by their definition: every
// request tested against every window.
func naiveRecovery(w, target float64, mine []request, from, until float64) (float64, float64) {
	last := 0.0
	for _, r := range mine {
		last = max(last, r.sent)
	}
	broke, recovered := -1.0, -1.0
	lastBad, anyGoodAfter := -1.0, false
	for lo := math.Max(0, from-w); lo+w <= last+1e-9; lo += w / 2 {
		n, good := 0, 0
		for _, r := range mine {
			if r.sent >= lo && r.sent < lo+w && r.err != workload.ErrCancelled {
				n++
				if r.metSLO {
					good++
				}
			}
		}
		if n == 0 {
			continue
		}
		if float64(good) < target*float64(n) {
			if lo+w > from && broke < 0 {
				broke = round3(math.Max(0, lo-from))
			}
			lastBad, anyGoodAfter = lo+w, false
			continue
		}
		anyGoodAfter = true
	}
	switch {
	case lastBad < 0:
		recovered = 0
	case anyGoodAfter:
		recovered = round3(math.Max(0, lastBad-until))
	}
	return broke, recovered
}

func TestRecoveryAgreesWithItsDefinition(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 50 {
		var mine []request
		bad := 4 + rng.Float64()*8 // requests sent in [4, bad) miss their SLO
		for range 400 {
			sent := math.Round(rng.Float64()*300) / 10
			r := request{class: "chat", sent: sent, metSLO: sent < 4 || sent >= bad || rng.IntN(10) == 0}
			if rng.IntN(8) == 0 {
				r.err = workload.ErrCancelled
			}
			mine = append(mine, r)
		}
		slices.SortFunc(mine, func(a, b request) int { return cmp.Compare(a.sent, b.sent) })
		w := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second}[trial%3]
		x := &experiment{window: w}
		got, err := x.classOutcome(context.Background(), chatClass(1), mine, 4, 6)
		if err != nil {
			t.Fatal(err)
		}
		broke, recovered := naiveRecovery(w.Seconds(), 0.99, mine, 4, 6)
		if got.BrokeS != broke || got.RecoveredS != recovered {
			t.Errorf("trial %d, window %v: broke %g recovered %g, by definition %g and %g", trial, w, got.BrokeS, got.RecoveredS, broke, recovered)
		}
	}
}

// TestRetriesOfConversationsStayWithinMaxRequests: the later turns of conversations are
// first attempts too, so what max_requests leaves for retries is less them. A real server on
// loopback resets every third connection; the clients retry as much as the plan allows.
func TestRetriesOfConversationsStayWithinMaxRequests(t *testing.T) {
	srv, err := workloadtest.Start(workloadtest.Options{Tokens: 4, Fault: func(n int) workloadtest.Fault {
		if n%3 == 2 {
			return workloadtest.FaultReset
		}
		return workloadtest.FaultNone
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	s := AtURL(workload.Target{URL: srv.URL(), Model: "m"}, "vllm")
	conv := chatClass(20)
	conv.Requests, conv.Conversations = 0, 20
	conv.Turns = workload.Dist{Kind: workload.DistFixed, A: 3}
	burstWithinMaxRequests(t, s, conv, 150, srv.Requests)
}
