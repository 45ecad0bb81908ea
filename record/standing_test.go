package record

import (
	"math"
	"strings"
	"testing"

	"github.com/frontier-llm/frontier/workload"
)

// pairsOf makes pairs of one objective: measured values, predicted as f(measured); every
// trial feasible and predicted so.
func pairsOf(measured []float64, f func(float64) float64) []StandingPair {
	var out []StandingPair
	for _, m := range measured {
		out = append(out, StandingPair{Predicted: []float64{f(m)}, PredictedFeasible: true, Measured: []float64{m}, Feasible: true})
	}
	return out
}

var ten = []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}

// A model that orders the trials right keeps its whole weight, whatever its scale: a bias
// is corrected, not held against it; its ratio says how far off it is.
func TestStandingAgreeingModelKeepsItsWeight(t *testing.T) {
	t.Parallel()
	s := NewStanding([]string{"tpot"}, pairsOf(ten, func(m float64) float64 { return 1.4 * m }))
	if s.Objectives[0].Trust != 1 || s.FeasibilityTrust != 1 {
		t.Errorf("trusts %v and %v, want 1 for a model that ranks and classes every trial right", s.Objectives[0].Trust, s.FeasibilityTrust)
	}
	// No trial says what proposed it: the proposals are a coin, and so is the weight.
	if s.ProposalTrust != 0.5 || s.Weight != 0.5 {
		t.Errorf("proposal trust %v, weight %v, want 0.5 and 0.5 with no proposal attributed", s.ProposalTrust, s.Weight)
	}
	o := s.Objectives[0]
	if math.Abs(o.Ranks-1) > 1e-12 || math.Abs(o.Ratio-1.4) > 1e-9 || o.Spread > 1e-9 || o.Pairs != 10 {
		t.Errorf("standing %+v, want ranks 1, ratio 1.4, spread 0 over 10 pairs", o)
	}
	if got, want := s.String(), "model vs measured: tpot 1.4x high, ranks 1.00; feasibility 10 of 10 right; prior weight 0.50"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

// A model whose ranking is reversed loses its weight; before standingMinPairs pairs its
// head start stands.
func TestStandingReversedModelLosesItsWeight(t *testing.T) {
	t.Parallel()
	rev := func(m float64) float64 { return 11 - m }
	// The head start: P(ρ > 0) when atanh(ρ) is normal about atanh(0.9) with a standard
	// deviation of 1, Φ(1.472) = 0.9295.
	if s := NewStanding([]string{"x"}, pairsOf(ten[:2], rev)); math.Abs(s.Objectives[0].Trust-0.9295) > 1e-3 || !math.IsNaN(s.Objectives[0].Ranks) {
		t.Errorf("two pairs: trust %v ranks %v, want the head start (0.9295, NaN)", s.Objectives[0].Trust, s.Objectives[0].Ranks)
	}
	// Four pairs in reverse take most of it, ten all of it.
	if s := NewStanding([]string{"x"}, pairsOf(ten[:4], rev)); s.Objectives[0].Trust > 0.2 {
		t.Errorf("four pairs in reverse: trust %v, want at most 0.2", s.Objectives[0].Trust)
	}
	s := NewStanding([]string{"x"}, pairsOf(ten, rev))
	if s.Weight != 0 || math.Abs(s.Objectives[0].Ranks+1) > 1e-12 {
		t.Errorf("reversed over 10: weight %v ranks %v, want 0 and -1", s.Weight, s.Objectives[0].Ranks)
	}
	// The weight is the least of the objectives': one objective wrong is enough.
	two := []StandingPair{}
	for _, m := range ten {
		two = append(two, StandingPair{Predicted: []float64{m, 11 - m}, PredictedFeasible: true, Measured: []float64{m, m}, Feasible: true})
	}
	if s := NewStanding([]string{"a", "b"}, two); s.Weight != 0 || s.Objectives[0].Trust < 0.99 || s.Objectives[1].Trust > 0.01 {
		t.Errorf("one objective right, one reversed: weight %v, trusts %v %v", s.Weight, s.Objectives[0].Trust, s.Objectives[1].Trust)
	}
}

// A model that calls every configuration infeasible where the measurements find feasible
// ones loses its weight, although it is right about the infeasible ones (balanced
// accuracy); one miss alone does not take it.
func TestStandingFeasibilityAgreement(t *testing.T) {
	t.Parallel()
	var pairs []StandingPair
	for i := 0; i < 6; i++ {
		pairs = append(pairs, StandingPair{PredictedFeasible: false, Feasible: true, Predicted: []float64{1}, Measured: []float64{1}})
	}
	for i := 0; i < 10; i++ {
		pairs = append(pairs, StandingPair{PredictedFeasible: false, Feasible: false, Predicted: []float64{1}})
	}
	s := NewStanding([]string{"x"}, pairs)
	if s.FeasibleRight != 10 || s.Trials != 16 {
		t.Errorf("feasibility %d of %d right, want 10 of 16", s.FeasibleRight, s.Trials)
	}
	if s.FeasibilityTrust > 0.25 || s.Weight > s.FeasibilityTrust {
		t.Errorf("feasibility trust %v, weight %v with six feasible trials all predicted infeasible, want at most 0.25 and no more than it", s.FeasibilityTrust, s.Weight)
	}
	if !strings.Contains(s.String(), "feasibility 10 of 16 right") {
		t.Errorf("String() = %q", s.String())
	}
	one := NewStanding([]string{"x"}, pairs[:1])
	if one.FeasibilityTrust < 0.5 {
		t.Errorf("feasibility trust %v after one miss, want the head start to hold (at least 0.5)", one.FeasibilityTrust)
	}
}

// TrialStanding reads the predictions the study recorded: trials outside the budget,
// without a prediction, or not measured to a verdict are left out.
func TestTrialStandingFromRecord(t *testing.T) {
	t.Parallel()
	objs := []Objective{{Name: "speed", Maximize: true}}
	pred := func(v, viol float64) *Prediction {
		return &Prediction{Objectives: map[string]float64{"speed": v}, Violation: viol}
	}
	trials := []Trial{
		{State: StateComplete, Objectives: map[string]float64{"speed": 10}, Predicted: pred(20, 0)},
		{State: StateComplete, Objectives: map[string]float64{"speed": 20}, Predicted: pred(40, 0)},
		{State: StateComplete, Objectives: map[string]float64{"speed": 30}, Predicted: pred(60, 0)},
		{State: StateInfeasible, Predicted: pred(80, 0.3)},
		{State: StateInfeasible, Predicted: pred(80, 0), OutsideBudget: true},
		{State: StateFailed, Predicted: pred(80, 0)},
		{State: StateComplete, Objectives: map[string]float64{"speed": 50}},
	}
	s, ok := TrialStanding(trials, objs)
	if !ok {
		t.Fatal("no standing from trials that carry predictions")
	}
	if s.Trials != 4 || s.FeasibleRight != 4 || s.Objectives[0].Pairs != 3 || math.Abs(s.Objectives[0].Ratio-2) > 1e-9 {
		t.Errorf("standing %+v, want 4 trials all right, 3 pairs at ratio 2", s)
	}
	if _, ok := TrialStanding(trials[6:], objs); ok {
		t.Error("a standing from trials without predictions")
	}
}

// A model can rank the measured trials right, objective by objective, and still propose
// configurations off the front (it ranks one region right and misses the one that holds the
// front): its proposals' record takes its weight. Four of the model's proposals, all
// dominated by the sampler's own three, leave it under 0.1, where the rank correlations
// alone (0.9 and more) would keep it whole; a model whose proposals make the front keeps
// most of it.
func TestStandingProposalsOffTheFrontLoseTheWeight(t *testing.T) {
	t.Parallel()
	// Two objectives, minimised; the model predicts each within 10%, rank for rank.
	pair := func(a, b float64, model bool) StandingPair {
		return StandingPair{Predicted: []float64{1.1 * a, 0.9 * b}, PredictedFeasible: true, Measured: []float64{a, b},
			Feasible: true, Model: model, Own: !model}
	}
	var pairs []StandingPair
	for i := 0; i < 4; i++ { // the model's: a region the sampler's own trials dominate
		pairs = append(pairs, pair(10+float64(i), 20-float64(i), true))
	}
	for i := 0; i < 3; i++ { // the sampler's: the front
		pairs = append(pairs, pair(1+float64(i), 5-float64(i), false))
	}
	s := NewStanding([]string{"a", "b"}, pairs)
	if s.Objectives[0].Ranks < 0.9 || s.Objectives[1].Ranks < 0.9 || s.Objectives[0].Trust < 0.9 || s.Objectives[1].Trust < 0.9 {
		t.Fatalf("objective standings %+v, want ranks and trusts of 0.9 and more", s.Objectives)
	}
	if s.ModelProposed != 4 || s.ModelOnFront != 0 || s.OwnProposed != 3 || s.OwnOnFront != 3 {
		t.Errorf("proposals %d/%d on the front by the model, %d/%d by the sampler, want 0/4 and 3/3",
			s.ModelOnFront, s.ModelProposed, s.OwnOnFront, s.OwnProposed)
	}
	if s.Weight >= 0.1 {
		t.Errorf("weight %v with none of the model's 4 proposals on the front and all of the sampler's 3, want under 0.1", s.Weight)
	}
	if want := "on the front: 0 of the model's 4 proposals, 3 of the sampler's 3"; !strings.Contains(s.String(), want) {
		t.Errorf("String() = %q, want it to contain %q", s.String(), want)
	}
	// The other way round: the model's proposals make the front, the sampler's do not.
	for i := range pairs {
		pairs[i].Model, pairs[i].Own = !pairs[i].Model, !pairs[i].Own
	}
	if s := NewStanding([]string{"a", "b"}, pairs); s.Weight < 0.9 {
		t.Errorf("weight %v with the model's 3 proposals on the front and none of the sampler's 4, want 0.9 or more", s.Weight)
	}
}

// Before any trial is feasible the front is constrained domination's: the trial that missed
// its bounds by least. So a model whose proposals miss by far while the sampler's own come
// close loses its weight before anything feasible is found, where a front of complete
// trials alone would leave the comparison a coin; a trial that did not run is on no front,
// and once a trial is complete, only complete trials are.
func TestStandingBeforeAnyFeasibleTrialTheLeastMissIsTheFront(t *testing.T) {
	t.Parallel()
	miss := func(violation float64, model bool) StandingPair {
		return StandingPair{Predicted: []float64{1}, PredictedFeasible: true, Violation: violation, Model: model, Own: !model}
	}
	// The model's first proposal missed its SLO by 80%, the sampler's own by 10%.
	s := NewStanding([]string{"a"}, []StandingPair{miss(0.8, true), miss(0.1, false)})
	if s.ModelOnFront != 0 || s.OwnOnFront != 1 {
		t.Errorf("on the front: %d of the model's, %d of the sampler's; want 0 and 1", s.ModelOnFront, s.OwnOnFront)
	}
	if math.Abs(s.ProposalTrust-1.0/6) > 1e-9 || s.Weight > s.ProposalTrust {
		t.Errorf("proposals' part %v, weight %v; want 1/6 (none of one against one of one) and no more", s.ProposalTrust, s.Weight)
	}
	if want := "closest miss (none feasible yet): 0 of the model's 1 proposals, 1 of the sampler's 1"; !strings.Contains(s.String(), want) {
		t.Errorf("String() = %q, want it to contain %q", s.String(), want)
	}
	// The other way round, the model keeps its head start.
	s = NewStanding([]string{"a"}, []StandingPair{miss(0.1, true), miss(0.8, false)})
	if s.ModelOnFront != 1 || s.OwnOnFront != 0 || math.Abs(s.ProposalTrust-5.0/6) > 1e-9 {
		t.Errorf("on the front: %d of the model's, %d of the sampler's, proposals' part %v; want 1, 0 and 5/6",
			s.ModelOnFront, s.OwnOnFront, s.ProposalTrust)
	}
	// Trials that did not run (violation 1) stand on no front: still a coin.
	s = NewStanding([]string{"a"}, []StandingPair{miss(1, true), miss(1, false)})
	if s.ModelOnFront+s.OwnOnFront != 0 || math.Abs(s.ProposalTrust-0.5) > 1e-9 {
		t.Errorf("launch failures: %d and %d on the front, proposals' part %v; want none and 0.5", s.ModelOnFront, s.OwnOnFront, s.ProposalTrust)
	}
	// A complete trial takes the front from every infeasible one, however close it came.
	done := StandingPair{Predicted: []float64{1}, PredictedFeasible: true, Measured: []float64{2}, Feasible: true, Own: true}
	s = NewStanding([]string{"a"}, []StandingPair{miss(0.01, true), done})
	if s.ModelOnFront != 0 || s.OwnOnFront != 1 {
		t.Errorf("with a complete trial: %d of the model's, %d of the sampler's on the front; want 0 and 1", s.ModelOnFront, s.OwnOnFront)
	}
	// The record's trials carry their violation to the standing; one without it counts as
	// not run.
	objs := []Objective{{Name: "a"}}
	trials := []Trial{
		{State: StateInfeasible, Violation: 0.3, Predicted: &Prediction{Objectives: map[string]float64{"a": 1}, Proposal: ProposalModel}},
		{State: StateInfeasible, Predicted: &Prediction{Objectives: map[string]float64{"a": 1}, Proposal: ProposalSampler}},
	}
	if s, ok := TrialStanding(trials, objs); !ok || s.ModelOnFront != 1 || s.OwnOnFront != 0 {
		t.Errorf("from the record: %+v, want the model's trial (violation 0.3) on the front and not the one without a violation", s)
	}
}

// betaGreater is P(X > Y) for two beta variables: exact against a numerical integral.
func TestBetaGreater(t *testing.T) {
	t.Parallel()
	lbeta := func(x, y float64) float64 {
		lx, _ := math.Lgamma(x)
		ly, _ := math.Lgamma(y)
		lxy, _ := math.Lgamma(x + y)
		return lx + ly - lxy
	}
	pdf := func(x, a, b float64) float64 {
		return math.Exp((a-1)*math.Log(x) + (b-1)*math.Log(1-x) - lbeta(a, b))
	}
	for _, c := range [][4]float64{{1, 1, 1, 1}, {3, 1, 1, 4}, {1, 5, 4, 1}, {2, 3, 2, 3}, {6, 2, 3, 7}} {
		// P(X > Y) = ∫ f_X(x) F_Y(x) dx, by the midpoint rule on a fine grid.
		const n = 4000
		want, cdf := 0.0, 0.0
		for i := 0; i < n; i++ {
			x := (float64(i) + 0.5) / n
			cdf += pdf(x, c[2], c[3]) / n
			want += pdf(x, c[0], c[1]) * (cdf - pdf(x, c[2], c[3])/(2*n)) / n
		}
		if got := betaGreater(c[0], c[1], c[2], c[3]); math.Abs(got-want) > 1e-3 {
			t.Errorf("betaGreater%v = %v, want %v", c, got, want)
		}
	}
	if got := betaGreater(1, 1, 1, 1); math.Abs(got-0.5) > 1e-12 {
		t.Errorf("betaGreater of two uniform rates = %v, want 0.5", got)
	}
}

func TestSpearmanTies(t *testing.T) {
	t.Parallel()
	if r := spearman([]float64{1, 1, 2, 3}, []float64{1, 2, 3, 4}); math.Abs(r-0.9486832980505138) > 1e-9 {
		t.Errorf("spearman with a tie = %v", r)
	}
	if r := spearman([]float64{1, 1, 1}, []float64{1, 2, 3}); r != 0 {
		t.Errorf("spearman of a constant = %v, want 0", r)
	}
}

// The standing says how the model's SLO metrics compare with the measured ones: a model
// whose TTFT is 0.7 times the measured one says so ("1.4x low"), from the trials that have
// both, infeasible ones included (an SLO is measured whether or not it was met), pruned
// ones not (stopped early, their latencies cover part of the run).
func TestTrialStandingOfTheSLOs(t *testing.T) {
	t.Parallel()
	objs := []Objective{{Name: "speed", Maximize: true}}
	key := SLOKey("chat", "ttft_p99_ms")
	trial := func(state State, predicted, measured float64) Trial {
		tr := Trial{State: state, Predicted: &Prediction{Objectives: map[string]float64{"speed": 1}, SLO: map[string]float64{key: predicted}},
			Workloads: map[string]*workload.Result{"chat": {Metrics: map[string]float64{"ttft_p99_ms": measured}}}}
		if state == StateComplete {
			tr.Objectives = map[string]float64{"speed": 1}
		}
		return tr
	}
	trials := []Trial{trial(StateComplete, 700, 1000), trial(StateInfeasible, 2100, 3000), trial(StateComplete, 1400, 2000)}
	trials = append(trials, Trial{State: StateInfeasible, Predicted: &Prediction{SLO: map[string]float64{key: 500}}}) // did not run
	trials = append(trials, trial(StatePruned, 12000, 1500))                                                          // stopped early
	s, ok := TrialStanding(trials, objs)
	if !ok {
		t.Fatal("no standing")
	}
	if len(s.SLOs) != 1 || s.SLOs[0].Name != key || s.SLOs[0].Pairs != 3 || math.Abs(s.SLOs[0].Ratio-0.7) > 1e-9 {
		t.Fatalf("SLO standings %+v, want chat ttft_p99_ms over 3 trials at 0.7", s.SLOs)
	}
	if got := s.String(); !strings.Contains(got, "chat ttft_p99_ms 1.4x low") {
		t.Errorf("standing %q does not say the TTFT is 1.4x low", got)
	}
}
