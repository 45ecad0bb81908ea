package pressure

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/frontier-llm/frontier/plan"
	"github.com/frontier-llm/frontier/record"
	"github.com/frontier-llm/frontier/workload"
)

// burst sends b.Base times the saturation rate, then b.Factor times it for b.Duration, then
// the base rate again for b.Recover, and measures how long each class takes to meet its SLO
// again after the burst ends and how many requests were lost.
func (x *experiment) burst(ctx context.Context, b *plan.PressureBurst, sat float64) (*record.Episode, error) {
	phases := []phase{
		{"base", b.Before, x.scaled(b.Base * sat)},
		{"burst", b.Duration, x.scaled(b.Factor * sat)},
		{"recover", b.Recover, x.scaled(b.Base * sat)},
	}
	x.say("burst: %.3g× the saturation rate for %s", b.Factor, b.Duration)
	tr, err := x.send(ctx, phases, b.CancelFraction, x.settings.Retry)
	if err != nil {
		return nil, err
	}
	start, end := b.Before.Seconds(), (b.Before + b.Duration).Seconds()
	ep, err := x.episode(ctx, "burst", tr, start, end)
	if err != nil {
		return nil, err
	}
	ep.Events = []record.Event{{Name: "burst", T: start}, {Name: "burst_end", T: end}}
	return ep, nil
}

// restart sends r.Base times the saturation rate, kills the engine's process group with
// SIGKILL after r.Before, restarts it at once, and keeps the load on for r.After: the time
// to ready, the time until each class meets its SLO again, and what the clients saw.
func (x *experiment) restart(ctx context.Context, r *plan.PressureRestart, sat float64) (*record.Episode, error) {
	phases := []phase{{"load", r.Before + r.After, x.scaled(r.Base * sat)}}
	x.say("restart: kill the engine after %s under load", r.Before)
	var (
		wg               sync.WaitGroup
		killAt, readyAt  time.Duration
		restartErr       error
		t0               = time.Now()
		killed, restored bool
	)
	sendCtx, stopSending := context.WithCancel(ctx)
	defer stopSending()
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-time.After(r.Before):
		case <-sendCtx.Done():
			return
		}
		killAt = time.Since(t0)
		if err := x.server.Kill(ctx); err != nil {
			restartErr = err
			return
		}
		killed = true
		if err := x.server.Restart(ctx); err != nil {
			restartErr = err
			return
		}
		readyAt = time.Since(t0)
		restored = true
	}()
	tr, err := x.send(sendCtx, phases, 0, x.settings.Retry)
	stopSending()
	wg.Wait()
	if err != nil {
		return nil, err
	}
	if !killed {
		return nil, fmt.Errorf("the engine was not killed: %v", restartErr)
	}
	// The run's clock started when send began, a moment after t0: put the kill on it.
	kill := killAt.Seconds() - sendLag(t0, tr)
	ep, err := x.episode(ctx, "restart", tr, kill, kill)
	if err != nil {
		return nil, err
	}
	ep.Events = []record.Event{{Name: "kill", T: round3(kill)}}
	ep.ReadyS = -1
	if restored {
		ready := readyAt.Seconds() - sendLag(t0, tr)
		ep.ReadyS = round3(ready - kill)
		ep.Events = append(ep.Events, record.Event{Name: "ready", T: round3(ready)})
	}
	ep.ClientSaw = map[string]int{}
	for _, c := range ep.Classes {
		for k, v := range c.Errors {
			ep.ClientSaw[k] += v
		}
	}
	if restartErr != nil {
		return ep, fmt.Errorf("the engine did not come back: %w", restartErr)
	}
	return ep, nil
}

// sendLag is how long after t0 the episode's run clock started (to within the time the
// run takes to read its traces, a few milliseconds).
func sendLag(t0 time.Time, tr *traffic) float64 {
	return tr.started.Sub(t0).Seconds()
}

// shift sends the s.From mix at s.Base times the mix's saturation rate for s.Before, then
// the s.To mix at the same total rate for s.After: which class's SLO breaks first, and how
// long each takes to settle.
func (x *experiment) shift(ctx context.Context, s *plan.PressureShift, sat float64) (*record.Episode, error) {
	total := s.Base * sat * x.planRate(x.classes)
	mix := func(w map[string]float64) map[string]float64 {
		sum := 0.0
		for _, v := range w {
			sum += v
		}
		m := map[string]float64{}
		for k, v := range w {
			m[k] = total * v / sum
		}
		return m
	}
	phases := []phase{{"before", s.Before, mix(s.From)}, {"after", s.After, mix(s.To)}}
	x.say("shift: the class mix changes after %s at %.3g req/s", s.Before, total)
	tr, err := x.send(ctx, phases, 0, x.settings.Retry)
	if err != nil {
		return nil, err
	}
	at := s.Before.Seconds()
	ep, err := x.episode(ctx, "shift", tr, at, at)
	if err != nil {
		return nil, err
	}
	ep.Events = []record.Event{{Name: "shift", T: at}}
	first := -1.0
	for _, c := range ep.Classes {
		if c.BrokeS >= 0 && (first < 0 || c.BrokeS < first) {
			first, ep.FirstBroken = c.BrokeS, c.Class
		}
	}
	return ep, nil
}

// episode assembles the record of one timeline experiment whose disturbance runs from
// `from` to `until` (seconds on the episode's clock).
func (x *experiment) episode(ctx context.Context, kind string, tr *traffic, from, until float64) (*record.Episode, error) {
	logical, firstSent := x.requests(tr.res.Records)
	reqs := x.requestTimes(tr.res.Records, firstSent)
	timeline, err := x.timeline(ctx, tr, reqs)
	if err != nil {
		return nil, err
	}
	ep := &record.Episode{Kind: kind, Phases: tr.phases, Requests: reqs, Timeline: timeline}
	if m := tr.res.Measurement; m != nil && m.Total != nil {
		ep.SimLagS = round3(m.Total.Metrics[workload.SimLagS])
	}
	if tr.retry != nil {
		ep.Retry = tr.retry.outcome(reqs, ep.Timeline)
	}
	for _, c := range x.classes {
		oc, err := x.classOutcome(ctx, c, logical, from, until)
		if err != nil {
			return nil, err
		}
		if oc.Sent > 0 {
			ep.Classes = append(ep.Classes, oc)
		}
	}
	for i := range ep.Phases {
		ep.Phases[i].Rates = maps.Clone(ep.Phases[i].Rates)
		for k, v := range ep.Phases[i].Rates {
			ep.Phases[i].Rates[k] = round3(v)
		}
	}
	return ep, nil
}
