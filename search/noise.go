package search

import (
	"maps"
	"math"

	"github.com/frontier-llm/frontier/plan"
	"github.com/frontier-llm/frontier/workload"
)

// objectiveCI is, per objective, the sampling interval of one run's value: the objective
// evaluated once with every percentile and mean of the run at the low end of its 95% interval
// (workload.Result.CI) and once at the high end, the two values ordered. An objective that
// reads no statistic with an interval evaluates to its own value both times and is left out.
// The ends bound an objective that moves one way with each statistic it reads (a latency, a
// throughput divided by one); vals are the objectives' values in p.Objectives order.
func objectiveCI(p *plan.Plan, tv plan.TrialValues, vals []float64) map[string][2]float64 {
	if tv.Measurement == nil || len(vals) != len(p.Objectives) {
		return nil
	}
	at := func(end int) []float64 {
		m := *tv.Measurement
		m.Workloads = make(map[string]*workload.Result, len(tv.Measurement.Workloads))
		for name, r := range tv.Measurement.Workloads {
			m.Workloads[name] = resultAtCI(r, end)
		}
		m.Total = resultAtCI(tv.Measurement.Total, end)
		at := tv
		at.Measurement = &m
		v, err := p.EvalObjectives(at)
		if err != nil {
			return nil
		}
		return v
	}
	lo, hi := at(0), at(1)
	if lo == nil || hi == nil {
		return nil
	}
	out := map[string][2]float64{}
	for i, o := range p.Objectives {
		a, b := math.Min(lo[i], hi[i]), math.Max(lo[i], hi[i])
		a, b = math.Min(a, vals[i]), math.Max(b, vals[i])
		if a == vals[i] && b == vals[i] {
			continue
		}
		out[o.Name] = [2]float64{a, b}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// resultAtCI is a copy of r whose metrics with an interval take its low (end 0) or high
// (end 1) value.
func resultAtCI(r *workload.Result, end int) *workload.Result {
	if r == nil || len(r.CI) == 0 {
		return r
	}
	c := *r
	c.Metrics = maps.Clone(r.Metrics)
	for name, ci := range r.CI {
		if _, ok := c.Metrics[name]; ok {
			c.Metrics[name] = ci[end]
		}
	}
	return &c
}
