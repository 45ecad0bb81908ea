package pressure

import (
	"context"
	"testing"
	"time"

	"github.com/frontier-llm/frontier/plan"
	"github.com/frontier-llm/frontier/sim"
	"github.com/frontier-llm/frontier/workload"
)

func TestRetrierBackoffBudgetAndJitter(t *testing.T) {
	p := &plan.PressureRetry{MaxRetries: 3, Budget: 0.5, Backoff: 100 * time.Millisecond, MaxBackoff: 300 * time.Millisecond, Jitter: 0.5}
	// Ten requests sent in the first second.
	stamps := map[string][]float64{"chat": {0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9}}
	r := newRetrier(p, stamps, 7, 1000)
	fail := func(attempt int, end time.Duration) *workload.Record {
		return &workload.Record{Class: "chat", ErrClass: workload.ErrConnect, Attempt: attempt, End: end}
	}
	// Backoff doubles per attempt, capped at MaxBackoff, and jitter takes off up to half.
	for attempt, full := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond} {
		wait, ok := r.decide(fail(attempt, 2*time.Second))
		if !ok || wait > full || wait < full/2 {
			t.Errorf("attempt %d: wait %v (ok %v), want between %v and %v", attempt, wait, ok, full/2, full)
		}
	}
	if _, ok := r.decide(fail(3, 2*time.Second)); ok {
		t.Error("a fourth retry was allowed with max_retries = 3")
	}
	// Three retries so far; at 0.35 s four requests had been sent, so the budget (half of
	// them: 2) is spent.
	if _, ok := r.decide(fail(0, 350*time.Millisecond)); ok {
		t.Error("a retry beyond the budget was allowed")
	}
	if r.denied != 1 {
		t.Errorf("denied %d, want 1", r.denied)
	}
	// Only failures that could succeed on a second try are retried.
	for _, rec := range []workload.Record{
		{ErrClass: workload.ErrHTTP, Status: 400},
		{ErrClass: workload.ErrCancelled},
	} {
		if _, ok := r.decide(&rec); ok {
			t.Errorf("%s %d was retried", rec.ErrClass, rec.Status)
		}
	}
	// The same seed draws the same waits.
	a, b := newRetrier(p, stamps, 11, 1000), newRetrier(p, stamps, 11, 1000)
	for i := range 3 {
		wa, _ := a.decide(fail(0, 5*time.Second))
		wb, _ := b.decide(fail(0, 5*time.Second))
		if wa != wb {
			t.Errorf("draw %d: %v and %v with the same seed", i, wa, wb)
		}
	}
}

// TestRestartWithRetries kills the simulated engine under load with clients that retry:
// the engine's restart costs its weights' load time, the refused connections are retried
// within the budget, and the timeline shows the load with and without the retries.
func TestRestartWithRetries(t *testing.T) {
	p, s := launchSmall(t)
	chat := p.Workloads[0]
	ps := only(p, "restart")
	ps.Retry = &plan.PressureRetry{MaxRetries: 2, Budget: 0.5, Backoff: 200 * time.Millisecond, MaxBackoff: time.Second, Jitter: 1}
	got, err := Run(context.Background(), s, []workload.Class{chat}, ps, Options{Seed: 5, Trial: -1})
	if err != nil {
		t.Fatal(err)
	}
	r := got.Restart
	if r == nil {
		t.Fatalf("no restart: %v", got.Errors)
	}
	// Llama 3.1 8B's weights are about 15 GiB: reading them at the simulator's load
	// bandwidth takes about 2.3 s, and the restart cannot be ready sooner.
	if load := sim.LoadDuration(14).Seconds(); r.ReadyS < load {
		t.Errorf("ready %.2f s after the kill, sooner than loading the weights takes (%.2f s)", r.ReadyS, load)
	}
	rt := r.Retry
	if rt == nil {
		t.Fatal("no retry outcome recorded")
	}
	c := r.Classes[0]
	t.Logf("restart with retries: ready %.2fs, %+v, class %+v", r.ReadyS, *rt, c)
	if rt.Retries == 0 || c.Retries != rt.Retries {
		t.Errorf("retries %d (class %d): the clients should retry refused connections", rt.Retries, c.Retries)
	}
	if float64(rt.Retries) > 0.5*float64(c.Sent)+1 {
		t.Errorf("%d retries for %d requests: more than the budget of half", rt.Retries, c.Sent)
	}
	attempts, again := 0, 0
	for _, q := range r.Requests {
		attempts++
		if q.Attempt > 0 {
			again++
		}
	}
	if attempts != c.Sent+rt.Retries || again != rt.Retries {
		t.Errorf("%d request timestamps, %d of them retries, for %d requests and %d retries", attempts, again, c.Sent, rt.Retries)
	}
	if rt.LoadFactor <= 1 || rt.PeakLoadFactor < rt.LoadFactor {
		t.Errorf("load factor %.3g overall and %.3g at peak: retries add load", rt.LoadFactor, rt.PeakLoadFactor)
	}
	retriedWindows := 0
	for _, pt := range r.Timeline {
		if pt.Retries > 0 {
			retriedWindows++
		}
	}
	if retriedWindows == 0 {
		t.Error("no window of the timeline shows retries")
	}
}
