package pressure

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frontier-llm/frontier/plan"
	"github.com/frontier-llm/frontier/record"
	"github.com/frontier-llm/frontier/workload"
)

// launchSmall loads testdata/small.hcl and starts its only configuration on the simulator.
func launchSmall(t *testing.T) (*plan.Plan, *Server) {
	t.Helper()
	p, err := plan.Load(filepath.Join("testdata", "small.hcl"), plan.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := plan.Config{"max_num_seqs": int64(4), "max_num_batched_tokens": int64(2048)}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Launch(ctx, p, cfg, LaunchOptions{FrontierBinary: frontierBin, LogPath: filepath.Join(t.TempDir(), "engine.log"), GracePeriod: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			t.Logf("stop: %v", err)
		}
	})
	return p, s
}

func only(p *plan.Plan, names ...string) *plan.Pressure {
	ps := *p.Pressure
	keep := map[string]bool{}
	for _, n := range names {
		keep[n] = true
	}
	if !keep["ladder"] {
		ps.Ladder = nil
	}
	if !keep["burst"] {
		ps.Burst = nil
	}
	if !keep["restart"] {
		ps.Restart = nil
	}
	if !keep["shift"] {
		ps.Shift = nil
	}
	return &ps
}

func TestLadderSaturationAgreesWithFindCapacity(t *testing.T) {
	p, s := launchSmall(t)
	ctx := context.Background()
	chat := p.Workloads[0]
	want, err := workload.FindCapacity(ctx, s.Target, chat, workload.CapacityOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Run(ctx, s, []workload.Class{chat}, only(p, "ladder"), Options{Seed: 1, Trial: -1})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Ladders) != 1 {
		t.Fatalf("ladders: %+v, errors %v", got.Ladders, got.Errors)
	}
	l := got.Ladders[0]
	for _, st := range l.Steps {
		t.Logf("step %.3g req/s met=%v ttft_p99=%.0fms goodput=%.3g", st.Rate, st.MetSLO, st.Metrics["ttft_p99_ms"], st.Metrics[workload.Goodput])
	}
	t.Logf("ladder saturation %.3g req/s (%s, %s); find-capacity %.3g req/s", l.SaturationRPS, l.Boundary, l.Shape, want)
	if want <= 0 || math.Abs(l.SaturationRPS-want)/want > 0.15 {
		t.Errorf("saturation %.3g req/s, capacity search %.3g req/s: more than 15%% apart", l.SaturationRPS, want)
	}
	if l.Boundary != "slo" && l.Boundary != "errors" {
		t.Errorf("boundary %q: the ladder should end by crossing the SLO", l.Boundary)
	}
	above := false
	for _, st := range l.Steps {
		above = above || (!st.MetSLO && st.Rate > l.SaturationRPS)
	}
	if !above {
		t.Error("no step past the saturation point was measured")
	}
	if l.Shape == "" {
		t.Error("no shape past saturation")
	}
}

// TestHeldLadderAgreesWithHeldFindCapacity holds every step for a few seconds, as the plan's
// default ladder does: both searches then judge a rate also on whether the server kept up
// with it (the backlog's growth), and they must find the same sustained rate.
func TestHeldLadderAgreesWithHeldFindCapacity(t *testing.T) {
	p, s := launchSmall(t)
	ctx := context.Background()
	chat := p.Workloads[0]
	const hold = 3 * time.Second
	observe := func(rate float64, m *workload.Measurement, ok bool) {
		r := m.Workloads[chat.Name]
		g, measured := r.Metrics[workload.BacklogGrowth]
		t.Logf("find-capacity %.3g req/s met=%v attainment %.3f ttft_p99=%.0fms backlog growth %.3f (measured %v)", rate, ok, workload.Attainment(r), r.Metrics["ttft_p99_ms"], g, measured)
	}
	want, err := workload.FindCapacity(ctx, s.Target, chat, workload.CapacityOptions{Seed: 1, Hold: hold, Observe: observe})
	if err != nil {
		t.Fatal(err)
	}
	ps := only(p, "ladder")
	lad := *ps.Ladder
	lad.Duration = hold
	ps.Ladder = &lad
	got, err := Run(ctx, s, []workload.Class{chat}, ps, Options{Seed: 1, Trial: -1})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Ladders) != 1 {
		t.Fatalf("ladders: %+v, errors %v", got.Ladders, got.Errors)
	}
	l := got.Ladders[0]
	fellBehind := false
	for _, st := range l.Steps {
		if st.BacklogGrowth == nil {
			t.Errorf("step %.3g req/s held for %s has no backlog growth", st.Rate, hold)
			continue
		}
		g := *st.BacklogGrowth
		t.Logf("step %.3g req/s met=%v ttft_p99=%.0fms backlog growth %.3f", st.Rate, st.MetSLO, st.Metrics["ttft_p99_ms"], g)
		if g > workload.MaxBacklogGrowth && st.MetSLO {
			t.Errorf("step %.3g req/s met the SLO though its backlog grew at %.3f of the offered rate", st.Rate, g)
		}
		fellBehind = fellBehind || (g > workload.MaxBacklogGrowth && st.Rate > l.SaturationRPS)
		finished := 0
		for reason, n := range st.FinishReasons {
			finished += n
			if reason == "none" {
				t.Errorf("step %.3g req/s: %d streams ended without a finish_reason", st.Rate, n)
			}
		}
		if finished != int(st.Metrics[workload.Completed]) {
			t.Errorf("step %.3g req/s: finish reasons %v for %g completed requests", st.Rate, st.FinishReasons, st.Metrics[workload.Completed])
		}
	}
	t.Logf("held ladder saturation %.3g req/s; held find-capacity %.3g req/s", l.SaturationRPS, want)
	if want <= 0 || math.Abs(l.SaturationRPS-want)/want > 0.15 {
		t.Errorf("saturation %.3g req/s, held capacity search %.3g req/s: more than 15%% apart", l.SaturationRPS, want)
	}
	if !fellBehind {
		t.Error("no step past the saturation point fell behind its offered rate")
	}
}

func TestBurstRecoversInFiniteTime(t *testing.T) {
	p, s := launchSmall(t)
	chat := p.Workloads[0]
	ps := only(p, "ladder", "burst")
	lad := *ps.Ladder
	lad.Refine, lad.Past = 0, 0
	ps.Ladder = &lad
	got, err := Run(context.Background(), s, []workload.Class{chat}, ps, Options{Seed: 2, Trial: -1})
	if err != nil {
		t.Fatal(err)
	}
	if got.Release != record.Release() {
		t.Errorf("the result's release is %q, want the running release %q", got.Release, record.Release())
	}
	b := got.Burst
	if b == nil {
		t.Fatalf("no burst: %v", got.Errors)
	}
	if len(b.Classes) != 1 {
		t.Fatalf("classes: %+v", b.Classes)
	}
	c := b.Classes[0]
	t.Logf("burst: broke at %.2fs, recovered %.2fs after the burst, lost %d of %d", c.BrokeS, c.RecoveredS, c.Lost, c.Sent)
	if c.RecoveredS < 0 {
		t.Errorf("chat did not recover within the experiment: %+v", c)
	}
	if c.BrokeS < 0 {
		t.Errorf("a 2x burst above saturation never broke the SLO: %+v", c)
	}
	finished := 0
	for reason, n := range c.FinishReasons {
		finished += n
		if reason == "none" {
			t.Errorf("%d streams of the burst ended without a finish_reason", n)
		}
	}
	if finished != c.Completed {
		t.Errorf("finish reasons %v for %d completed requests", c.FinishReasons, c.Completed)
	}
	if len(b.Requests) != c.Sent || len(b.Timeline) == 0 {
		t.Errorf("%d request timestamps and %d timeline points for %d requests sent", len(b.Requests), len(b.Timeline), c.Sent)
	}
	peak := 0.0
	for _, pt := range b.Timeline {
		peak = math.Max(peak, pt.Offered)
	}
	sat, _ := got.Saturation("chat")
	if peak < 1.3*sat {
		t.Errorf("peak offered load %.3g req/s, want well above the saturation rate %.3g", peak, sat)
	}
}

// schedulingLag measures, until stop is closed, how late this process's goroutines wake
// from a short sleep: how far a busy machine delays what the test times. It returns the
// largest delay seen.
func schedulingLag(stop <-chan struct{}) <-chan time.Duration {
	out := make(chan time.Duration, 1)
	go func() {
		const nap = 5 * time.Millisecond
		var worst time.Duration
		for {
			select {
			case <-stop:
				out <- worst
				return
			default:
			}
			t := time.Now()
			time.Sleep(nap)
			worst = max(worst, time.Since(t)-nap)
		}
	}()
	return out
}

// TestRestartRecordsTimeToReadyAndToSLO kills the engine under load and restarts it: the time
// to ready is recorded, and the class meets its SLO again no earlier than the engine could
// serve. The engine serves a moment before frontier sees it ready (the readiness probe polls
// every 200 ms, later on a busy machine), and a request sent up to the SLO's latency bound
// before it serves can still meet the SLO: the comparison allows for both, and for the
// scheduling lag measured while the experiment ran, so that it holds on a loaded machine.
func TestRestartRecordsTimeToReadyAndToSLO(t *testing.T) {
	p, s := launchSmall(t)
	chat := p.Workloads[0]
	ps := only(p, "restart")
	before := s.inst.(pider).Pid()
	stop := make(chan struct{})
	lag := schedulingLag(stop)
	got, err := Run(context.Background(), s, []workload.Class{chat}, ps, Options{Seed: 3, Trial: -1})
	close(stop)
	worst := <-lag
	if err != nil {
		t.Fatal(err)
	}
	r := got.Restart
	if r == nil {
		t.Fatalf("no restart: %v", got.Errors)
	}
	t.Logf("restart: ready after %.2fs; client saw %v; classes %+v; scheduling lag up to %s", r.ReadyS, r.ClientSaw, r.Classes, worst)
	if r.ReadyS <= 0 {
		t.Errorf("time to ready %v, want above zero", r.ReadyS)
	}
	c := r.Classes[0]
	var bound time.Duration // the class's latency bound (ttft_p99 = "300ms")
	for _, b := range chat.SLO {
		if !b.AtLeast && strings.HasSuffix(b.Metric, "_ms") {
			bound = max(bound, time.Duration(b.Value*float64(time.Millisecond)))
		}
	}
	if bound == 0 {
		t.Fatalf("the class's SLO %v has no latency bound", chat.SLO)
	}
	const probePoll = 200 * time.Millisecond // launcher's readiness poll
	slack := bound + probePoll + 2*worst
	if c.RecoveredS < r.ReadyS-slack.Seconds() {
		t.Errorf("met the SLO again %.2fs after the kill, before the engine could serve: it was seen ready at %.2fs, and could serve at most %s (the SLO's bound, the probe's poll, the scheduling lag) earlier",
			c.RecoveredS, r.ReadyS, slack)
	}
	if c.RecoveredS <= 0 {
		t.Errorf("met the SLO again %.2fs after the kill: the engine was down for %.2fs", c.RecoveredS, r.ReadyS)
	}
	if c.Lost == 0 || len(r.ClientSaw) == 0 {
		t.Errorf("no request was lost to a SIGKILL under load: %+v", c)
	}
	if after := s.inst.(pider).Pid(); after == before || processAlive(before) {
		t.Errorf("the engine was not replaced: pid %d before, %d after, old alive %v", before, after, processAlive(before))
	}
	names := []string{}
	for _, e := range r.Events {
		names = append(names, e.Name)
	}
	if len(names) != 2 || names[0] != "kill" || names[1] != "ready" {
		t.Errorf("events %v, want kill then ready", names)
	}
}

func TestShiftNamesTheClassThatBreaksFirst(t *testing.T) {
	p, s := launchSmall(t)
	ps := only(p, "shift")
	// A saturation rate above what the configuration sustains, so that the long-heavy mix
	// after the shift overloads it.
	got, err := Run(context.Background(), s, p.Workloads, ps, Options{Seed: 4, Trial: -1, SaturationRPS: 30})
	if err != nil {
		t.Fatal(err)
	}
	sh := got.Shift
	if sh == nil {
		t.Fatalf("no shift: %v", got.Errors)
	}
	for _, c := range sh.Classes {
		t.Logf("shift: %s broke at %.2fs, recovered %.2fs, %d sent", c.Class, c.BrokeS, c.RecoveredS, c.Sent)
	}
	if len(sh.Phases) != 2 || sh.Phases[1].Rates["long"] <= sh.Phases[0].Rates["long"] {
		t.Errorf("phases %+v: the long class's share should grow", sh.Phases)
	}
	if len(sh.Classes) != 2 {
		t.Errorf("classes %+v", sh.Classes)
	}
	if sh.FirstBroken == "" {
		t.Errorf("no class broke after shifting to a long-context-heavy mix above capacity: %+v", sh.Classes)
	}
}

func TestMixScaleFromTheClassesSaturation(t *testing.T) {
	classes := []workload.Class{{Name: "chat"}, {Name: "summarize"}}
	// chat alone saturates at 2× its plan rate, summarize at 4×: at scale s the mix uses
	// s/2 + s/4 of the server, all of it at s = 4/3.
	got, note := mixScale(classes, map[string]float64{"chat": 2, "summarize": 4})
	if math.Abs(got-4.0/3) > 1e-12 || !strings.Contains(note, "utilisation law") {
		t.Errorf("mix scale %g (%s), want 4/3 by the utilisation law", got, note)
	}
	// summarize was not laddered: the weakest laddered class bounds the mix from above.
	got, note = mixScale(classes, map[string]float64{"chat": 2})
	if got != 2 || !strings.Contains(note, "upper bound") {
		t.Errorf("mix scale %g (%s), want chat's 2 as an upper bound", got, note)
	}
}

// TestHeldLadderScalesAClassOfConversations holds each step of a class of conversations for
// its duration: the rate starts conversations, so a step starts rate × duration of them
// (not the class's own three), and every turn of each is a request against max_requests.
func TestHeldLadderScalesAClassOfConversations(t *testing.T) {
	p, s := launchSmall(t)
	ctx := context.Background()
	conv := p.Workloads[0]
	conv.Name, conv.Requests, conv.Conversations = "conv", 0, 3
	conv.Turns = workload.Dist{Kind: workload.DistFixed, A: 2}
	conv.Arrival = workload.Arrival{Kind: workload.ArrivalPoisson, Rate: 2}
	conv.SLO = nil // every step meets it: the ladder climbs until the budget stops it
	ps := only(p, "ladder")
	lad := *ps.Ladder
	lad.Duration, lad.Classes, lad.Start, lad.Factor = 2*time.Second, []string{"conv"}, 1, 2
	ps.Ladder = &lad
	// 2 conversations a second held 2 s start 4 conversations of 2 turns (8 requests), then
	// 8 (16 requests); 16 (32 requests) would pass max_requests = 30 with the 24 sent.
	ps.MaxRequests = 30
	got, err := Run(ctx, s, []workload.Class{conv}, ps, Options{Seed: 1, Trial: -1})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Ladders) != 1 {
		t.Fatalf("ladders: %+v, errors %v", got.Ladders, got.Errors)
	}
	l := got.Ladders[0]
	var completed []float64
	for _, st := range l.Steps {
		completed = append(completed, st.Metrics[workload.Completed])
	}
	if len(completed) != 2 || completed[0] != 8 || completed[1] != 16 {
		t.Errorf("steps completed %v requests; want [8 16]: 4 then 8 conversations of two turns", completed)
	}
	if l.Boundary != "budget" {
		t.Errorf("boundary %q, want budget: the third step's 32 turns pass max_requests", l.Boundary)
	}
}
