package pressure

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/frontier-llm/frontier/plan"
	"github.com/frontier-llm/frontier/record"
	"github.com/frontier-llm/frontier/workload"
)

// ladder steps the offered rate of one class (or of the mix, every class at the same
// multiple of its plan rate) up by l.Factor from l.Start times the plan's rate while the SLO
// holds, measures l.Past more steps past the first miss to show the overload's shape, then
// bisects l.Refine times between the last rate that met the SLO and the first that did not.
// Each step sends the class's own number of requests (warm-up included), or more to last
// l.Duration, as a Poisson process and judges it as `bench --find-capacity --hold l.Duration`
// does (workload.MeetsCapacitySLO): within the SLO and, for a held step, with a backlog
// that did not keep growing.
func (x *experiment) ladder(ctx context.Context, l *plan.PressureLadder, name string) (*record.Ladder, error) {
	classes := x.classes
	if name != record.MixClass {
		c, ok := x.class(name)
		if !ok {
			return nil, errors.New("no such workload")
		}
		classes = []workload.Class{c}
	}
	base := x.planRate(classes)
	out := &record.Ladder{Class: name}
	used := 0
	measure := func(scale float64) (*record.LadderStep, error) {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var run []workload.Class
		n := 0
		for _, c := range classes {
			rate := scale * rateOf(c)
			if !(rate <= MaxRateRPS) { // +Inf and NaN too
				return nil, errMaxRate
			}
			// In floating point, so that a rate held for a long step cannot overflow the
			// count of requests past max_requests.
			// The rate starts sessions: requests, or conversations whose every turn is a
			// request against max_requests.
			need := math.Ceil(rate * l.Duration.Seconds())
			per := c.RequestsPerSession()
			if !(need*per <= float64(x.maxRequests)) {
				return nil, errBudget
			}
			c.Arrival = workload.Arrival{Kind: workload.ArrivalPoisson, Rate: rate}
			c.AtLeast(int(need))
			run = append(run, c)
			n += c.RequestsOf(c.Sessions())
		}
		if used+n > x.maxRequests {
			return nil, errBudget
		}
		used += n
		if len(out.Steps) > 0 {
			// The step before may have left requests queued (a rate past saturation, a
			// budget that ran out): measure this one on an idle engine.
			if _, err := workload.WaitDrained(ctx, x.server.Target, drainTimeout); err != nil {
				return nil, errBudget
			}
		}
		t0 := time.Now()
		res, err := workload.Run(ctx, x.server.Target, run, workload.RunOptions{Seed: x.seed, ScrapeInterval: x.scrape})
		if err != nil {
			if ctx.Err() != nil {
				return nil, errBudget
			}
			return nil, err
		}
		if l.Duration > 0 {
			workload.MeasureBacklog(res.Measurement, res.Records)
		}
		st := step(run, res, scale, scale*base)
		st.FinishReasons = finishReasons(res.Records)
		st.Seconds = round3(time.Since(t0).Seconds())
		out.Steps = append(out.Steps, *st)
		x.say("ladder %s: %.3g req/s %s", name, scale*base, stepVerdict(ctx, st))
		return st, nil
	}

	lo, hi := 0.0, 0.0 // scales: highest that met the SLO, lowest that did not
	var firstMiss *record.LadderStep
	scale := l.Start
	past := 0
	downScale, downMiss := 0.0, (*record.LadderStep)(nil) // a missed first rate, while stepping down
	out.Boundary = "max_steps"
	for len(out.Steps) < l.MaxSteps {
		st, err := measure(scale)
		if errors.Is(err, errBudget) {
			out.Boundary = "budget"
			break
		}
		if errors.Is(err, errMaxRate) {
			out.Boundary = "max_rate"
			break
		}
		if err != nil {
			return nil, err
		}
		if st.MetSLO && hi == 0 {
			lo = scale
			if downMiss != nil {
				// Stepped down to a rate that meets the SLO: the one above it was the boundary.
				hi, firstMiss, out.Boundary = downScale, downMiss, "slo"
				break
			}
			scale *= l.Factor
			continue
		}
		if !st.MetSLO && hi == 0 {
			if lo == 0 && scale > l.Start/64 && len(out.Steps) < l.MaxSteps {
				// Even the first rate misses: step down until one meets the SLO.
				downScale, downMiss = scale, st
				scale /= l.Factor
				continue
			}
			hi, firstMiss = scale, st
			out.Boundary = "slo"
			if name == record.MixClass {
				out.FirstBroken = firstBroken(x.classes, st)
			}
		}
		if st.Metrics[workload.ErrorRate] > l.MaxErrorRate {
			out.Boundary = "errors"
			break
		}
		if past >= l.Past {
			break
		}
		past++
		scale = math.Max(scale, hi) * l.Factor
	}
	if lo > 0 && hi > 0 {
		for i := 0; i < l.Refine && ctx.Err() == nil; i++ {
			mid := math.Sqrt(lo * hi)
			st, err := measure(mid)
			if err != nil {
				break
			}
			if st.MetSLO {
				lo = mid
			} else {
				hi = mid
			}
		}
	}
	out.SaturationRPS = round3(lo * base)
	out.Shape = shape(out.Steps, hi, firstMiss)
	return out, nil
}

// drainTimeout bounds the wait, before a ladder step, for the engine to finish the previous
// step's requests.
const drainTimeout = 30 * time.Second

// errBudget ends a ladder whose time or request budget ran out.
var errBudget = errors.New("the experiment's budget ran out")

// MaxRateRPS is the highest rate a ladder offers, in requests per second of one class: far
// beyond what one engine serves, and low enough that every rate, request count and figure
// derived from it stays a finite number. A ladder that would pass it ends with the
// boundary "max_rate".
const MaxRateRPS = 1e6

// errMaxRate ends a ladder whose next rate would pass MaxRateRPS.
var errMaxRate = errors.New("the next rate passes the highest rate a ladder offers")

// step summarises one ladder measurement.
func step(classes []workload.Class, res *workload.RunResult, scale, rate float64) *record.LadderStep {
	m := res.Measurement
	st := &record.LadderStep{Rate: round3(rate), Scale: round3(scale), MetSLO: true, Metrics: m.Total.Metrics,
		Classes: map[string]map[string]float64{}, Errors: m.Total.Errors}
	for _, c := range classes {
		r := m.Workloads[c.Name]
		if r == nil {
			st.MetSLO = false
			continue
		}
		st.Classes[c.Name] = r.Metrics
		if !workload.MeetsCapacitySLO(c, r) {
			st.MetSLO = false
		}
		if g, ok := r.Metrics[workload.BacklogGrowth]; ok && (st.BacklogGrowth == nil || g > *st.BacklogGrowth) {
			se := r.Metrics[workload.BacklogGrowthSE]
			st.BacklogGrowth, st.BacklogGrowthSE = &g, &se
		}
	}
	for _, s := range m.Series {
		st.MaxRunning = math.Max(st.MaxRunning, s.Running)
		st.MaxWaiting = math.Max(st.MaxWaiting, s.Waiting)
	}
	if n := len(m.Series); n > 0 {
		st.WaitingEnd = m.Series[n-1].Waiting
	}
	return st
}

// stepVerdict says how a ladder step went, for progress: whether it met the SLO, its TTFT
// p99, its backlog's growth when it was read, and how much of the experiment's budget is left.
func stepVerdict(ctx context.Context, st *record.LadderStep) string {
	v := "met the SLO"
	if !st.MetSLO {
		v = "missed the SLO"
	}
	v += fmt.Sprintf(" (TTFT p99 %.0f ms", st.Metrics["ttft_p99_ms"])
	if st.BacklogGrowth != nil && st.BacklogGrowthSE != nil {
		v += fmt.Sprintf(", backlog growth %+.0f%% ± %.0f%%", 100**st.BacklogGrowth, 100**st.BacklogGrowthSE)
	}
	v += fmt.Sprintf(") in %.1f s", st.Seconds)
	if d, ok := ctx.Deadline(); ok {
		v += fmt.Sprintf("; %s of the budget left", time.Until(d).Round(time.Second))
	}
	return v
}

// finishReasons counts the completed measured requests by their stream's finish_reason.
func finishReasons(recs []workload.Record) map[string]int {
	out := map[string]int{}
	for i := range recs {
		r := &recs[i]
		if r.Warmup || !r.OK() {
			continue
		}
		out[r.Finish()]++
	}
	return out
}

// firstBroken names the class of a mix step whose SLO broke: the one with the lowest
// attainment of its per-request SLO among those that missed.
func firstBroken(classes []workload.Class, st *record.LadderStep) string {
	best, name := 2.0, ""
	for _, c := range classes {
		m := st.Classes[c.Name]
		if m == nil {
			continue
		}
		r := &workload.Result{Metrics: m}
		if workload.MeetsCapacitySLO(c, r) {
			continue
		}
		if a := workload.Attainment(r); a < best {
			best, name = a, c.Name
		}
	}
	return name
}

// shape says how the configuration behaves past its saturation point, from the steps above
// it: the server refuses requests, goodput collapses, or latency grows while goodput holds.
func shape(steps []record.LadderStep, hi float64, firstMiss *record.LadderStep) string {
	if firstMiss == nil {
		return ""
	}
	peak := 0.0
	for _, s := range steps {
		peak = math.Max(peak, s.Metrics[workload.Goodput])
	}
	// Steps keep their scale rounded (round3), so the step measured at hi is compared
	// rounded too; the first miss stands in when no step reached it.
	top := firstMiss
	for i := range steps {
		if steps[i].Scale >= round3(hi) && steps[i].Scale > top.Scale {
			top = &steps[i]
		}
	}
	refused := top.Errors[workload.ErrHTTP] + top.Errors[workload.ErrConnect]
	switch {
	case top.Metrics[workload.ErrorRate] > 0.01 && refused > 0:
		return "refuses"
	case top.Metrics[workload.Goodput] < 0.5*peak:
		return "collapse"
	default:
		return "graceful"
	}
}
