package main

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/frontier-llm/frontier/plan"
	"github.com/frontier-llm/frontier/workload"
)

// truth is one way the benchmark's truth departs from the model the prior uses. Every truth
// starts from the scaled one (the model on a perturbed copy of each GPU); the others then
// reshape each measurement in a way the model does not have, so that the model's errors are
// structural, not a scale factor. None is fitted to the sampler: each is a mechanism a real
// engine has and the model leaves out, with its constant from first principles.
type truth struct {
	name, note string
	// reshape changes the measurements of a space's points (nil keeps them).
	reshape func(p *plan.Plan, pts []*point) error
}

var truths = []truth{
	{name: "scaled", note: "the model on a perturbed copy of each GPU (memory bandwidth, dense compute per precision and interconnect each scaled by a factor in [0.7, 1.3] drawn from a hash of the GPU's name and the quantity)"},
	{name: "load", note: "scaled, plus a host-side cost of 40 us per running sequence on every engine step (scheduling, sampling, detokenising), which the model does not have: time per output token grows with the batch, and time to first token with it (the queue and the prefill wait whole steps), so the SLO boundary moves towards smaller batches",
		reshape: reshapeLoad},
	{name: "prefill", note: "scaled, with prefill twice as fast as the model's (attention kernels at twice its assumed efficiency on long prompts): the prefill part of the time to first token (TTFT less its queueing) halves, so the SLO boundary lies where the model says configurations fail",
		reshape: reshapePrefill},
	{name: "reversed", note: "scaled, with the effect of one knob on the engine's step time the inverse of the model's (quantization, else kv_cache_dtype, else enable_chunked_prefill; against its first value): where the model says a value is k times faster the truth has it k times slower, so the model ranks that knob backwards",
		reshape: reshapeReversed},
}

// lookupTruths picks truths by name, comma-separated ("all" for every one).
func lookupTruths(s string) ([]truth, error) {
	if s == "" || s == "all" {
		return truths, nil
	}
	var out []truth
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		found := false
		for _, t := range truths {
			if t.name == name {
				out, found = append(out, t), true
			}
		}
		if !found {
			var names []string
			for _, t := range truths {
				names = append(names, t.name)
			}
			return nil, fmt.Errorf("-truths: no truth %q; use %s or all", name, strings.Join(names, ", "))
		}
	}
	return out, nil
}

// stretch changes one class's (or the total's) metrics: time to first token (and the queue)
// by ttft, time per output token and inter-token latency by tpot; the request's end-to-end
// latency, the run's duration and every throughput follow (a closed loop: a longer request
// holds its slot longer).
func stretch(r *workload.Result, ttft, tpot float64) {
	if r == nil {
		return
	}
	m := r.Metrics
	t0, e0 := m["ttft_mean_ms"], m["e2e_mean_ms"]
	e2e := tpot
	if e0 > 0 && t0 <= e0 {
		e2e = (t0*ttft + (e0-t0)*tpot) / e0
	}
	for name, v := range m {
		switch {
		case strings.HasPrefix(name, "ttft_"), strings.HasPrefix(name, "queue_"):
			m[name] = v * ttft
		case strings.HasPrefix(name, "tpot_"), strings.HasPrefix(name, "itl_"):
			m[name] = v * tpot
		case strings.HasPrefix(name, "e2e_"), name == workload.DurationS:
			m[name] = v * e2e
		case name == workload.RequestThroughput, name == workload.InputTokenThroughput,
			name == workload.OutputTokenThroughput, name == workload.TotalTokenThroughput,
			name == workload.Goodput, name == workload.CapacityRPS:
			m[name] = v / e2e
		}
	}
	for name, ci := range r.CI {
		f := 1.0
		switch {
		case strings.HasPrefix(name, "ttft_"):
			f = ttft
		case strings.HasPrefix(name, "tpot_"), strings.HasPrefix(name, "itl_"):
			f = tpot
		case strings.HasPrefix(name, "e2e_"):
			f = e2e
		}
		r.CI[name] = [2]float64{ci[0] * f, ci[1] * f}
	}
	for name, qs := range r.Quantiles {
		f := 1.0
		switch name {
		case "ttft_ms":
			f = ttft
		case "tpot_ms", "itl_ms":
			f = tpot
		case "e2e_ms":
			f = e2e
		}
		for i := range qs {
			qs[i] *= f
		}
	}
}

// stretchAll stretches every class by its own factors and the total by the mean of the
// classes' (weighted by completed requests).
func stretchAll(m *workload.Measurement, factors func(class string, r *workload.Result) (ttft, tpot float64)) {
	var wt, wtp, n float64
	names := make([]string, 0, len(m.Workloads))
	for name := range m.Workloads {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		r := m.Workloads[name]
		a, b := factors(name, r)
		c := math.Max(r.Metrics[workload.Completed], 1)
		wt, wtp, n = wt+a*c, wtp+b*c, n+c
		stretch(r, a, b)
	}
	if n > 0 {
		stretch(m.Total, wt/n, wtp/n)
	}
}

// hostStepCost is the engine's host-side time per running sequence per step.
const hostStepCost = 0.040 // ms

func reshapeLoad(p *plan.Plan, pts []*point) error {
	conc := map[string]float64{}
	for _, c := range p.Workloads {
		if c.Arrival.Kind == workload.ArrivalConcurrency && c.Arrival.Concurrency > 0 {
			conc[c.Name] = float64(c.Arrival.Concurrency)
		}
	}
	for _, pt := range pts {
		if pt.m == nil {
			continue
		}
		seqs := 256.0
		if v, ok := pt.cfg["max_num_seqs"]; ok {
			if f, ok := number(v); ok {
				seqs = f
			}
		}
		stretchAll(pt.m, func(class string, r *workload.Result) (float64, float64) {
			batch := seqs
			if c, ok := conc[class]; ok {
				batch = math.Min(batch, c)
			}
			step := r.Metrics["tpot_mean_ms"]
			if step <= 0 {
				return 1, 1
			}
			f := (step + hostStepCost*batch) / step
			return f, f
		})
	}
	return nil
}

// prefillSpeedup is how much faster the truth's prefill is than the model's.
const prefillSpeedup = 2.0

func reshapePrefill(_ *plan.Plan, pts []*point) error {
	for _, pt := range pts {
		if pt.m == nil {
			continue
		}
		stretchAll(pt.m, func(_ string, r *workload.Result) (float64, float64) {
			t, q := r.Metrics["ttft_mean_ms"], r.Metrics[workload.QueueMeanMs]
			if t <= 0 {
				return 1, 1
			}
			q = math.Min(math.Max(q, 0), t)
			return (q + (t-q)/prefillSpeedup) / t, 1
		})
	}
	return nil
}

// reversedKnobs are the knobs whose effect the reversed truth inverts, the first the plan
// has with more than one value.
var reversedKnobs = []string{"quantization", "kv_cache_dtype", "enable_chunked_prefill"}

func reshapeReversed(p *plan.Plan, pts []*point) error {
	var knob *plan.Knob
	for _, name := range reversedKnobs {
		for i := range p.Knobs {
			if p.Knobs[i].Name == name && len(p.Knobs[i].Values) > 1 {
				knob = &p.Knobs[i]
				break
			}
		}
		if knob != nil {
			break
		}
	}
	if knob == nil {
		return fmt.Errorf("the reversed truth needs one of the knobs %s", strings.Join(reversedKnobs, ", "))
	}
	ref := knob.Values[0]
	byText := map[string]*point{}
	for _, pt := range pts {
		byText[configText(pt.cfg)] = pt
	}
	// The model's effect of each value on the step time, against the first value: the
	// median over the pairs of configurations that differ only in this knob and both run.
	effect := map[string]float64{}
	for _, v := range knob.Values[1:] {
		var ratios []float64
		for _, pt := range pts {
			if pt.m == nil || fmt.Sprint(pt.cfg[knob.Name]) != fmt.Sprint(v) {
				continue
			}
			other := plan.Config{}
			for k, x := range pt.cfg {
				other[k] = x
			}
			other[knob.Name] = ref
			o, ok := byText[configText(other)]
			if !ok || o.m == nil || o.m.Total == nil || pt.m.Total == nil {
				continue
			}
			a, b := pt.m.Total.Metrics["tpot_mean_ms"], o.m.Total.Metrics["tpot_mean_ms"]
			if a > 0 && b > 0 {
				ratios = append(ratios, a/b)
			}
		}
		if len(ratios) == 0 {
			continue
		}
		sort.Float64s(ratios)
		effect[fmt.Sprint(v)] = ratios[len(ratios)/2]
	}
	for _, pt := range pts {
		k, ok := effect[fmt.Sprint(pt.cfg[knob.Name])]
		if pt.m == nil || !ok {
			continue
		}
		// The model has this value k times the first's step time; the truth 1/k times.
		f := 1 / (k * k)
		stretchAll(pt.m, func(string, *workload.Result) (float64, float64) { return f, f })
	}
	return nil
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}
