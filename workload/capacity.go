package workload

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"time"
)

// CapacityOptions tune the search for a class's capacity.
type CapacityOptions struct {
	// Seed draws the requests of every measurement (the same requests at every rate).
	Seed uint64
	// Start is the first arrival rate tried, in req/s; 0 means the class's own rate when it
	// has one, else 1.
	Start float64
	// Max is the highest rate tried; 0 means 1,000,000.
	Max float64
	// Tolerance ends the bisection once the bracket's upper end is within this fraction of
	// its lower end; 0 means 0.05.
	Tolerance float64
	// MaxMeasurements bounds the measurements of one search; 0 means 20.
	MaxMeasurements int
	// Hold is the least time each rate is offered: a measurement sends the class's requests,
	// or more, rate × Hold of them, so that a rate is judged on a load it held rather than on
	// a burst the server drains in time, and it is judged also on whether the server kept up
	// (BacklogGrowth). 0 sends the class's requests only.
	Hold time.Duration
	// Observe, when set, is told each measurement, its rate and whether it met the SLO.
	Observe func(rate float64, m *Measurement, ok bool)
	// Run carries the options of each run of FindCapacity (Progress, Transport, ...); its
	// Seed and EarlyStop are set by the search.
	Run RunOptions
	// DrainTimeout bounds FindCapacity's wait, before each rate after the first, for the
	// engine's running and waiting requests (the vllm:num_requests_running and
	// vllm:num_requests_waiting gauges of the target's MetricsURL) to reach zero: a rate that
	// stopped early leaves requests the server may go on serving, and the next rate must not
	// be measured on them. 0 means DefaultDrainTimeout; without a MetricsURL there is no wait.
	DrainTimeout time.Duration
	// Drained, when set, is told how long each wait for the engine to drain took and whether
	// it drained within DrainTimeout (false also when the gauges could not be read).
	Drained func(rate float64, waited time.Duration, drained bool)
}

// DefaultDrainTimeout is CapacityOptions.DrainTimeout when it is zero.
const DefaultDrainTimeout = 2 * time.Minute

// drainPoll is how often the engine's gauges are read while it drains.
const drainPoll = 100 * time.Millisecond

func (o CapacityOptions) withDefaults(c Class) CapacityOptions {
	if o.Start <= 0 {
		o.Start = 1
		if r := c.Arrival.Rate; r > 0 && !math.IsInf(r, 0) && c.Arrival.Kind != ArrivalConcurrency {
			o.Start = r
		}
	}
	if o.Max <= 0 {
		o.Max = 1e6
	}
	if o.Tolerance <= 0 {
		o.Tolerance = 0.05
	}
	if o.MaxMeasurements <= 0 {
		o.MaxMeasurements = 20
	}
	return o
}

// attainmentOf is a class's attainment target: Attainment, or 0.99.
func attainmentOf(c Class) float64 {
	if c.Attainment > 0 {
		return c.Attainment
	}
	return 0.99
}

// MeetsCapacitySLO reports whether a class's result is within its SLO for a capacity search:
// the share of its requests that met every per-request bound is at least the class's
// Attainment, every other bound (error rate, throughput, ...) holds, and, for a held load
// (one whose BacklogGrowth was measured), the server kept up with it: its backlog did not
// grow by more than MaxBacklogGrowth of the offered rate beyond the estimate's noise
// (FellBehind).
func MeetsCapacitySLO(c Class, r *Result) bool {
	if r == nil || r.Metrics[Completed] == 0 {
		return false
	}
	if g, ok := r.Metrics[BacklogGrowth]; ok && FellBehind(g, r.Metrics[BacklogGrowthSE]) {
		return false
	}
	if Attainment(r) < attainmentOf(c) {
		return false
	}
	for _, b := range c.Missed(r) {
		if !b.PerRequest() {
			return false
		}
	}
	return true
}

// SearchCapacity finds the highest arrival rate at which class c still meets its SLO (see
// MeetsCapacitySLO), with measure giving the measurement at a rate: it doubles the rate from
// opts.Start until the SLO is first missed (the server saturates), then bisects; it halves
// from Start instead when Start already misses. It returns 0 when even Start/64 misses the
// SLO. The throughput of a failed measurement does not narrow the bracket: in a short or
// early-stopped run it reflects latency as much as capacity. FindCapacity measures real servers with it; the simulator's estimator
// passes its own measure.
func SearchCapacity(ctx context.Context, measure func(ctx context.Context, rate float64) (*Measurement, error), c Class, opts CapacityOptions) (float64, error) {
	opts = opts.withDefaults(c)
	used := 0
	try := func(rate float64) (ok bool, err error) {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		used++
		m, err := measure(ctx, rate)
		if err != nil {
			return false, fmt.Errorf("measuring workload %q at %g req/s: %w", c.Name, rate, err)
		}
		r := m.Workloads[c.Name]
		if r == nil {
			r = m.Total
		}
		ok = MeetsCapacitySLO(c, r)
		if opts.Observe != nil {
			opts.Observe(rate, m, ok)
		}
		return ok, nil
	}

	// Double until the SLO is missed; halve first if the start already misses it.
	lo, hi := 0.0, 0.0
	rate := opts.Start
	for used < opts.MaxMeasurements {
		ok, err := try(rate)
		if err != nil {
			return lo, err
		}
		if ok {
			lo = rate
			if hi > 0 || rate >= opts.Max {
				break
			}
			rate = math.Min(rate*2, opts.Max)
			continue
		}
		hi = rate
		if lo > 0 {
			break
		}
		if rate < opts.Start/64 {
			return 0, nil
		}
		rate /= 2
	}
	if lo == 0 {
		return 0, nil
	}
	if hi == 0 {
		return lo, nil // met the SLO up to Max, or ran out of measurements while doubling
	}
	for used < opts.MaxMeasurements && hi > lo*(1+opts.Tolerance) {
		mid := (lo + hi) / 2
		ok, err := try(mid)
		if err != nil {
			return lo, err
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, nil
}

// FindCapacity measures class c against t at Poisson arrival rates and returns the highest
// rate that meets its SLO (see SearchCapacity). Each measurement sends the class's requests
// at one rate (for at least opts.Hold) and stops as soon as its attainment can no longer be
// reached.
func FindCapacity(ctx context.Context, t Target, c Class, opts CapacityOptions) (float64, error) {
	if opts.Run.Transport == nil {
		// One transport for the whole search: connections stay warm between rates.
		tr := newTransport()
		defer tr.CloseIdleConnections()
		opts.Run.Transport = tr
	}
	drainTimeout := opts.DrainTimeout
	if drainTimeout <= 0 {
		drainTimeout = DefaultDrainTimeout
	}
	first := true
	measure := func(ctx context.Context, rate float64) (*Measurement, error) {
		if !first && t.MetricsURL != "" {
			began := time.Now()
			drained, err := waitDrained(ctx, &http.Client{Transport: opts.Run.Transport}, t.MetricsURL, drainTimeout)
			if err != nil {
				return nil, err
			}
			if opts.Drained != nil {
				opts.Drained(rate, time.Since(began), drained)
			}
		}
		first = false
		cc := c
		cc.Arrival = Arrival{Kind: ArrivalPoisson, Rate: rate}
		// The arrival starts sessions: for a class of conversations the rate is
		// conversations a second.
		cc.AtLeast(int(math.Ceil(rate * opts.Hold.Seconds())))
		ro := opts.Run
		ro.Seed = opts.Seed
		ro.EarlyStop = false
		ro.attainment = attainmentOf(c)
		res, err := Run(ctx, t, []Class{cc}, ro)
		if err != nil {
			return nil, err
		}
		if opts.Hold > 0 {
			MeasureBacklog(res.Measurement, res.Records)
		}
		return res.Measurement, nil
	}
	return SearchCapacity(ctx, measure, c, opts)
}

// WaitDrained waits, at most timeout, for the engine behind t to finish the requests it is
// still running or queueing (the vllm:num_requests_running and vllm:num_requests_waiting
// gauges of t.MetricsURL reaching zero), so that the next measurement does not start on
// the last one's leftovers. It reports whether the engine drained in time; an engine
// without those gauges, or no MetricsURL, ends the wait at once (false). Only ctx's end is
// an error.
func WaitDrained(ctx context.Context, t Target, timeout time.Duration) (bool, error) {
	if t.MetricsURL == "" {
		return false, nil
	}
	tr := newTransport()
	defer tr.CloseIdleConnections()
	return waitDrained(ctx, &http.Client{Transport: tr}, t.MetricsURL, timeout)
}

// waitDrained reads the engine's running and waiting gauges at url until both are zero, and
// reports whether they were within timeout. An engine that does not export them, or whose
// metrics cannot be read, ends the wait at once (false). Only ctx's end is an error.
func waitDrained(ctx context.Context, hc *http.Client, url string, timeout time.Duration) (bool, error) {
	deadline := time.Now().Add(timeout)
	for {
		snap, err := scrapeOnce(ctx, hc, url)
		if ctxErr := ctx.Err(); ctxErr != nil {
			return false, ctxErr
		}
		if err != nil || !snap.hasRunning {
			return false, nil
		}
		if snap.running == 0 && (!snap.hasWaiting || snap.waiting == 0) {
			return true, nil
		}
		if !time.Now().Before(deadline) {
			return false, nil
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(min(drainPoll, time.Until(deadline))):
		}
	}
}

// CostPerMillionOutputTokens is the cost of a million output tokens: the price of the GPUs
// for the hours they take to produce them (the metric CostPerMillionOutput). It is +Inf when
// nothing is produced.
func CostPerMillionOutputTokens(pricePerGPUHour float64, gpus int, outputTokensPerSecond float64) float64 {
	if outputTokensPerSecond <= 0 {
		return math.Inf(1)
	}
	return pricePerGPUHour * float64(gpus) / (outputTokensPerSecond * 3600) * 1e6
}
