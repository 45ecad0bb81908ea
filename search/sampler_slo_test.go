package search

import (
	"math"
	"slices"
	"testing"

	"github.com/frontier-llm/frontier/plan"
	"github.com/frontier-llm/frontier/record"
	"github.com/frontier-llm/frontier/workload"
)

// SLOMargins: log(value/bound) for an upper bound, log(bound/value) for a lower one, NaN
// where the metric was not measured or no request completed, nil for a trial that did not
// run.
func TestSLOMargins(t *testing.T) {
	p := &plan.Plan{Workloads: []workload.Class{
		{Name: "chat", SLO: []workload.Bound{{Metric: "ttft_p99_ms", Value: 2000}, {Metric: "output_token_throughput", Value: 100, AtLeast: true}}},
		{Name: "batch", SLO: []workload.Bound{{Metric: "tpot_p99_ms", Value: 50}}},
	}}
	tr := &record.Trial{Workloads: map[string]*workload.Result{
		"chat":  {Metrics: map[string]float64{workload.Completed: 10, "ttft_p99_ms": 3000, "output_token_throughput": 50}},
		"batch": {Metrics: map[string]float64{workload.Completed: 10}},
	}}
	got := SLOMargins(p, tr)
	if len(got) != 3 {
		t.Fatalf("SLOMargins = %v, want three margins", got)
	}
	if want := math.Log(1.5); math.Abs(got[0]-want) > 1e-12 {
		t.Errorf("TTFT 3000 ms against 2000: margin %v, want %v (a miss is above 0)", got[0], want)
	}
	if want := math.Log(2); math.Abs(got[1]-want) > 1e-12 {
		t.Errorf("throughput 50 against at least 100: margin %v, want %v", got[1], want)
	}
	if !math.IsNaN(got[2]) {
		t.Errorf("an unmeasured TPOT: margin %v, want NaN", got[2])
	}
	tr.Workloads["chat"].Metrics[workload.Completed] = 0
	if got := SLOMargins(p, tr); !math.IsNaN(got[0]) || math.IsNaN(got[1]) {
		t.Errorf("no completed request: margins %v, want NaN for the TTFT (a per-request bound) and the throughput's kept", got)
	}
	if got := SLOMargins(p, &record.Trial{}); got != nil {
		t.Errorf("a trial that did not run: margins %v, want nil", got)
	}
}

// marginPrior is a model of the sampler test space whose one SLO margin grows with knob d
// and whose verdict follows it: it calls d <= 4 feasible.
func marginPrior(c plan.Config) (Forecast, bool) {
	objs, _ := synthetic(c)
	if objs == nil {
		objs = []float64{0, 0}
	}
	d, _ := toFloat(c["d"])
	m := (d - 4) / 4
	v := 0.0
	if m > 0 {
		v = m
	}
	return Forecast{Objectives: []float64{-objs[0], objs[1]}, Violation: v, Margins: []float64{m}}, true
}

// The model's feasibility is calibrated on its SLO margins: where the measured margins are
// 0.3 above the model's (its TTFT 1.35 times too low), two measured trials move the SLO
// boundary from d = 4 to about d = 2.8 across the space, where the model's verdict and the
// measured verdicts nearby would still call d = 3.2 likely feasible.
func TestSLOFeasibilityMovesAWrongBoundary(t *testing.T) {
	f, _ := newTestProposer(t, nil)
	f.prior = marginPrior
	cfg := func(d float64) plan.Config { return plan.Config{"a": int64(2), "b": false, "c": "x", "d": d} }
	var obs []sampledObs
	for _, d := range []float64{2, 3.5} {
		c := cfg(d)
		m := f.predict(candidate{cfg: c, key: configKey(c)}).margins[0] + 0.3
		o := sampledObs{x: f.encode(c), cfg: c, margins: []float64{m}}
		if m <= 0 {
			objs, _ := synthetic(c)
			o.objectives = objs
		} else {
			o.violation = m
		}
		obs = append(obs, o)
	}
	bw := bandwidth(len(obs), len(f.dims))
	bySLO, _ := f.sloFeasibility(obs, bw)
	at := func(d float64) float64 {
		t.Helper()
		c := cfg(d)
		pf, ok := bySLO(f.encode(c), f.predict(candidate{cfg: c, key: configKey(c)}))
		if !ok {
			t.Fatalf("d = %v: no calibrated feasibility, want one from the two trials' margins", d)
		}
		return pf
	}
	if pf := at(3.2); pf >= 0.5 {
		t.Errorf("d = 3.2 (model margin -0.2, measured about +0.1): P(feasible) = %.2f, want below 0.5", pf)
	}
	if pf := at(4.5); pf >= 0.05 {
		t.Errorf("d = 4.5: P(feasible) = %.2f, want below 0.05", pf)
	}
	if pf := at(1.2); pf <= 0.9 {
		t.Errorf("d = 1.2 (model margin -0.7): P(feasible) = %.2f, want above 0.9", pf)
	}
	// Against the same trials without margins the verdict-based estimate keeps d = 3.2
	// likely feasible: the calibration is what moved it.
	plain, _ := f.sloFeasibility([]sampledObs{{x: obs[0].x, cfg: obs[0].cfg, objectives: obs[0].objectives}}, bw)
	if _, ok := plain(f.encode(cfg(3.2)), f.predict(candidate{cfg: cfg(3.2), key: configKey(cfg(3.2))})); ok {
		t.Error("trials without measured margins calibrated the margins")
	}
}

// A failure the margins do not explain (the engine did not start) lowers the feasibility
// of its neighbours, and not of configurations far from it.
func TestSLOFeasibilityCountsOtherFailuresNearby(t *testing.T) {
	f, _ := newTestProposer(t, nil)
	f.prior = marginPrior
	cfg := func(a int64, d float64) plan.Config { return plan.Config{"a": a, "b": false, "c": "x", "d": d} }
	met := cfg(1, 1.5)
	objs, _ := synthetic(met)
	obs := []sampledObs{
		{x: f.encode(met), cfg: met, objectives: objs, margins: []float64{f.predict(candidate{cfg: met, key: configKey(met)}).margins[0]}},
		{x: f.encode(cfg(8, 1.5)), cfg: cfg(8, 1.5), violation: 1}, // did not start: no margins
	}
	bySLO, _ := f.sloFeasibility(obs, bandwidth(len(obs), len(f.dims)))
	near, _ := bySLO(f.encode(cfg(8, 1.6)), f.predict(candidate{cfg: cfg(8, 1.6), key: configKey(cfg(8, 1.6))}))
	far, _ := bySLO(f.encode(cfg(1, 1.6)), f.predict(candidate{cfg: cfg(1, 1.6), key: configKey(cfg(1, 1.6))}))
	if near >= 0.7*far {
		t.Errorf("P(feasible) beside a launch failure %.2f, far from it %.2f: want the first well below", near, far)
	}
}

// A knob value's correction is taken nearly whole where the model's error moves with that
// knob and little else, and shrunk hard where the knob explains nothing.
func TestEffectPseudoFollowsTheEvidence(t *testing.T) {
	at := []float64{0, 0, 0, 1, 1, 1}
	clean := [][]float64{{-0.2}, {-0.21}, {-0.19}, {0.2}, {0.19}, {0.21}}
	noise := [][]float64{{-0.2}, {0.2}, {0.01}, {0.2}, {-0.2}, {-0.01}}
	group := func(left [][]float64) (map[float64][]float64, map[float64]float64) {
		sum, n := map[float64][]float64{}, map[float64]float64{}
		for i, v := range at {
			if sum[v] == nil {
				sum[v] = []float64{0}
			}
			sum[v][0] += left[i][0]
			n[v]++
		}
		return sum, n
	}
	s, n := group(clean)
	if ps := effectPseudo(at, clean, s, n, 1)[0]; ps > 0.5 {
		t.Errorf("a clean effect of ±0.2: pseudo-count %.2f, want at most 0.5", ps)
	}
	s, n = group(noise)
	if ps := effectPseudo(at, noise, s, n, 1)[0]; ps < priorEffectPseudoMax {
		t.Errorf("no effect: pseudo-count %.2f, want %v", ps, priorEffectPseudoMax)
	}
}

// A trial's record keeps the model's SLO values (from its margins), so that the progress
// lines and the report can say how far off the model's TTFT is.
func TestPredictionKeepsTheSLOValues(t *testing.T) {
	f, p := newTestProposer(t, nil)
	p.Workloads[0].SLO = []workload.Bound{{Metric: "ttft_p99_ms", Value: 2000}}
	f.prior = marginPrior
	c := plan.Config{"a": int64(2), "b": false, "c": "x", "d": 2.0} // margin -0.5
	got := f.predicted(c)
	key := record.SLOKey(p.Workloads[0].Name, "ttft_p99_ms")
	if got == nil || math.Abs(got.SLO[key]-2000*math.Exp(-0.5)) > 1e-9 {
		t.Fatalf("prediction %+v, want %s = %.1f", got, key, 2000*math.Exp(-0.5))
	}
	if v := sloValues(p, []float64{0.1, 0.2}); v != nil {
		t.Errorf("two margins for one SLO: %v, want none", v)
	}
}

// A measured trial's margins reach the sampler, a pruned trial's do not: it stopped while
// its queue was still building, so its latencies cover part of the run.
func TestHistoryLeavesOutPrunedMargins(t *testing.T) {
	p := loadPlan(t, "sampler.hcl")
	p.Workloads[0].SLO = []workload.Bound{{Metric: "ttft_p99_ms", Value: 1000}}
	r := &runner{p: p}
	res := func(ttft float64) map[string]*workload.Result {
		return map[string]*workload.Result{p.Workloads[0].Name: {Metrics: map[string]float64{workload.Completed: 5, "ttft_p99_ms": ttft}}}
	}
	cfg := plan.Config{"a": int64(1), "b": false, "c": "x", "d": 1.0}
	s := &snapshot{tried: map[string]bool{}, measured: []measuredTrial{
		{t: record.Trial{State: record.StateInfeasible, Config: cfg, Workloads: res(2000), Violation: 1}},
		{t: record.Trial{State: record.StatePruned, Config: cfg, Workloads: res(1500), Violation: 0.5}},
	}}
	h := r.history(s, 0)
	if len(h.obs) != 2 {
		t.Fatalf("%d observations, want 2", len(h.obs))
	}
	if m := h.obs[0].margins; len(m) != 1 || math.Abs(m[0]-math.Log(2)) > 1e-12 {
		t.Errorf("an infeasible trial's margins %v, want [log 2]", m)
	}
	if m := h.obs[1].margins; m != nil {
		t.Errorf("a pruned trial's margins %v, want none", m)
	}
}

// What an infeasible trial measured of its objectives reaches the sampler as its missed
// objectives (in minimisation form), for the model's correction; a complete trial's are its
// objectives; a pruned trial (stopped early) and one that did not run have none.
func TestHistoryKeepsWhatInfeasibleTrialsMeasured(t *testing.T) {
	p := loadPlan(t, "sampler.hcl")
	r := &runner{p: p}
	cfg := plan.Config{"a": int64(1), "b": false, "c": "x", "d": 1.0}
	objs := map[string]float64{"speed": 30, "latency": 4}
	s := &snapshot{tried: map[string]bool{}, measured: []measuredTrial{
		{t: record.Trial{State: record.StateInfeasible, Config: cfg, Objectives: objs, Violation: 0.3}},
		{t: record.Trial{State: record.StatePruned, Config: cfg, Objectives: objs, Violation: 0.5}},
		{t: record.Trial{State: record.StateInfeasible, Config: cfg, Violation: 1}},
		{t: record.Trial{State: record.StateComplete, Config: cfg, Objectives: objs}},
	}}
	h := r.history(s, 0)
	if len(h.obs) != 4 {
		t.Fatalf("%d observations, want 4", len(h.obs))
	}
	want := []float64{-30, 4} // speed is maximised
	if o := h.obs[0]; o.objectives != nil || !slices.Equal(o.missed, want) {
		t.Errorf("an infeasible trial that ran: objectives %v, missed %v; want none and %v", o.objectives, o.missed, want)
	}
	for i, what := range map[int]string{1: "a pruned trial", 2: "a trial that did not run"} {
		if o := h.obs[i]; o.objectives != nil || o.missed != nil {
			t.Errorf("%s: objectives %v, missed %v; want none", what, o.objectives, o.missed)
		}
	}
	if o := h.obs[3]; !slices.Equal(o.objectives, want) || o.missed != nil {
		t.Errorf("a complete trial: objectives %v, missed %v; want %v and none", o.objectives, o.missed, want)
	}
}

// The model proposes among the configurations it calls likely feasible, where it calls any
// so. Here it predicts every configuration feasible and a = 8 far better than the rest in
// both objectives; the three trials measured at a = 8 (c = x, d = 3 to 5) missed their
// bounds, having measured the objectives predicted (what a trial that misses an SLO
// measures over its whole workload), and fifteen elsewhere met them. Its chance of
// feasibility for the a = 8 configurations alike to those failures (c = y, which it says
// makes almost no difference) falls under one half without reaching 0, and their gain is
// by far the largest: weighed by the chance alone they would be proposed trial after
// trial, as a study did on a truth whose host cost grows with the batch. The pick is one
// the model calls likely feasible.
func TestPriorProposesWhatItCallsLikelyFeasible(t *testing.T) {
	model := func(c plan.Config) (objs []float64) {
		a, _ := toFloat(c["a"])
		d, _ := toFloat(c["d"])
		speed, latency := a*d, a+d
		if a == 8 {
			speed, latency = 100*d, 1/d
		}
		if c["c"] == "y" { // a shade slower: alike to c = x, not the same
			speed, latency = speed/1.01, latency*1.01
		}
		return []float64{speed, latency}
	}
	f, _ := newTestProposer(t, func(c plan.Config) ([]float64, float64, bool) { return model(c), 0, true })
	h := &history{tried: map[string]bool{}}
	add := func(c plan.Config, feasible bool) {
		objs := model(c)
		o := observation{config: c}
		if objs = []float64{-objs[0], objs[1]}; feasible { // minimisation form
			o.objectives = objs
		} else {
			o.missed, o.violation = objs, 0.4
		}
		h.obs = append(h.obs, o)
		h.tried[configKey(c)] = true
		h.n++
	}
	for _, d := range []int64{5, 4, 3} {
		add(plan.Config{"a": int64(8), "b": false, "c": "x", "d": d}, false)
	}
	for _, a := range []int64{1, 2, 4} {
		for d := int64(1); d <= 5; d++ {
			add(plan.Config{"a": a, "b": true, "c": "x", "d": d}, true)
		}
	}
	rng := rngFor(1, h.n, 0, 1)
	cands, _, err := f.candidates(h, rng)
	if err != nil {
		t.Fatal(err)
	}
	i := f.priorPick(h, cands, f.sampled(h.obs), rng)
	if i < 0 {
		t.Fatal("no pick")
	}
	a, _ := toFloat(cands[i].cfg["a"])
	d, _ := toFloat(cands[i].cfg["d"])
	if a == 8 && d >= 3 {
		t.Errorf("picked %v, alike to the measured failures at a = 8, d = 3 to 5; want one the model calls likely feasible", cands[i].cfg)
	}
}
