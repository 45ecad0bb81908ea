package search

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/c-bata/goptuna/cmaes"

	"github.com/frontier-llm/frontier/plan"
)

// synthetic is a made-up measurement of the sampler test space (testdata/sampler.hcl), in
// minimisation form: speed a·d (maximised), latency a² + d; c = "z" misses an SLO.
func synthetic(c plan.Config) (objectives []float64, violation float64) {
	a, _ := toFloat(c["a"])
	d, _ := toFloat(c["d"])
	if c["c"] == "z" {
		return nil, 0.4
	}
	return []float64{-a * d, a*a + d}, 0
}

// addTrial records a measured configuration in a history.
func addTrial(h *history, c plan.Config) {
	objs, v := synthetic(c)
	h.obs = append(h.obs, observation{config: c, objectives: objs, violation: v})
	h.tried[configKey(c)] = true
	h.n++
}

// plainPrior is a test's prior without SLO margins: objectives, violation and coverage.
type plainPrior func(plan.Config) ([]float64, float64, bool)

func newTestProposer(t *testing.T, prior plainPrior) (*frontProposer, *plan.Plan) {
	t.Helper()
	p := loadPlan(t, "sampler.hcl")
	sp, err := newSpace(p.Knobs)
	if err != nil {
		t.Fatal(err)
	}
	var pr Prior
	if prior != nil {
		pr = func(c plan.Config) (Forecast, bool) {
			objs, v, ok := prior(c)
			return Forecast{Objectives: objs, Violation: v}, ok
		}
	}
	return newFrontProposer(sp, p.Study.Seed, p, pr), p
}

// The joint density models knobs together: with good trials at (low, low) and (high, high),
// the mixed corners are less likely than the trials' own corners, which a product of
// per-knob densities cannot express (it gives all four corners the same density).
func TestJointParzenDensity(t *testing.T) {
	dims := []dim{{}, {}}
	var domain []candidate
	for i := 0; i <= 4; i++ {
		for j := 0; j <= 4; j++ {
			domain = append(domain, candidate{x: []float64{float64(i) / 4, float64(j) / 4}})
		}
	}
	p := newJointParzen([][]float64{{0, 0}, {1, 1}}, domain, dims)
	total := 0.0
	for _, d := range domain {
		total += p.density(d.x)
	}
	if math.Abs(total-1) > 1e-9 {
		t.Errorf("the density sums to %v over the domain, want 1", total)
	}
	same, mixed := p.density([]float64{0, 0}), p.density([]float64{0, 1})
	if same < 2*mixed {
		t.Errorf("density at a trial's corner %.4f, at a mixed corner %.4f: the knobs are not modelled jointly", same, mixed)
	}
	if a, b := p.density([]float64{1, 1}), p.density([]float64{1, 0}); a < 2*b {
		t.Errorf("density at (1,1) %.4f, at (1,0) %.4f", a, b)
	}
	// A category counts the same way: the same category is likelier than another.
	cat := newJointParzen([][]float64{{2}}, []candidate{{x: []float64{0}}, {x: []float64{1}}, {x: []float64{2}}}, []dim{{cats: 3}})
	if cat.density([]float64{2}) <= cat.density([]float64{0}) {
		t.Errorf("category density: the trial's own %.3f is not above another's %.3f", cat.density([]float64{2}), cat.density([]float64{0}))
	}
}

// The split ranks complete trials by non-domination rank, within a rank by hypervolume
// contribution, and infeasible trials after them by how far they missed.
func TestFrontOrder(t *testing.T) {
	obs := []sampledObs{
		{objectives: []float64{0, 1}},       // 0: front, an extreme
		{objectives: []float64{0.5, 0.5}},   // 1: front, the largest contribution
		{objectives: []float64{1, 0}},       // 2: front, an extreme
		{objectives: []float64{0.6, 0.6}},   // 3: dominated by 1
		{violation: 0.8},                    // 4: infeasible, far
		{violation: 0.1},                    // 5: infeasible, near
		{objectives: []float64{0.9, 0.95}},  // 6: rank 2
		{objectives: []float64{0.55, 0.55}}, // 7: rank 1, dominates 3
	}
	got := frontOrder(obs)
	if got[0] != 1 {
		t.Errorf("first is %d, want 1 (the front point with the largest hypervolume contribution); order %v", got[0], got)
	}
	rank := map[int]int{}
	for r, i := range got {
		rank[i] = r
	}
	for _, front := range []int{0, 2} {
		if rank[front] > 2 {
			t.Errorf("front trial %d is ranked %d; order %v", front, rank[front], got)
		}
	}
	if !(rank[7] < rank[3] && rank[3] < rank[6] && rank[6] < rank[5] && rank[5] < rank[4]) {
		t.Errorf("order %v: want 7 (rank 1) before 3 before 6 (rank 2), then infeasible 5 (0.1) before 4 (0.8)", got)
	}
	if goodCount(30) != 6 || goodCount(1) != 1 || goodCount(1000) != frontMaxGood {
		t.Errorf("goodCount: %d %d %d", goodCount(30), goodCount(1), goodCount(1000))
	}
}

// Every proposal is a configuration the rules allow and the study has not tried, whatever
// phase the sampler is in, until the space is exhausted: rules and duplicates never cost a
// proposal.
func TestFrontProposerNoDuplicateOrRuleViolation(t *testing.T) {
	for _, withPrior := range []bool{false, true} {
		var prior plainPrior
		if withPrior {
			// A stand-in for the performance model: the synthetic truth, a little off.
			prior = func(c plan.Config) ([]float64, float64, bool) {
				objs, v := synthetic(c)
				if objs == nil {
					return []float64{1, 100}, v, true
				}
				return []float64{-objs[0] * 1.1, objs[1] * 0.9}, 0, true
			}
		}
		f, p := newTestProposer(t, prior)
		h := &history{tried: map[string]bool{}}
		for {
			c, _, err := f.propose(h, 0)
			if errors.Is(err, errExhausted) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if h.tried[configKey(c)] {
				t.Fatalf("prior %t: proposal %d repeats %v", withPrior, h.n, c)
			}
			if v, err := p.CheckRules(c); err != nil || len(v) > 0 {
				t.Fatalf("prior %t: proposal %d %v breaks a rule: %v %v", withPrior, h.n, c, v, err)
			}
			addTrial(h, c)
			if h.n > 200 {
				t.Fatal("the sampler never reported the space exhausted")
			}
		}
		if h.n != 105 {
			t.Errorf("prior %t: %d proposals before exhaustion, want all 105 allowed configurations", withPrior, h.n)
		}
	}
}

// Proposals reproduce from the seed.
func TestFrontProposerReproduces(t *testing.T) {
	run := func() []string {
		f, _ := newTestProposer(t, nil)
		h := &history{tried: map[string]bool{}}
		var keys []string
		for i := 0; i < 20; i++ {
			c, _, err := f.propose(h, 0)
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, configKey(c))
			addTrial(h, c)
		}
		return keys
	}
	a, b := run(), run()
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("proposal %d differs between two runs with one seed", i)
		}
	}
}

// Running trials are respected: with the prior, a running trial stands at its predicted
// objectives, so a candidate predicted to be no better is not proposed next; with the TPE,
// running trials count as bad (a constant liar) and push proposals away from them.
func TestPendingRespected(t *testing.T) {
	cfg := func(a int64, b bool, c string, d int64) plan.Config {
		return plan.Config{"a": a, "b": b, "c": c, "d": d}
	}
	running := cfg(4, false, "x", 5)
	twin := cfg(4, false, "x", 4) // predicted as good as the running trial
	fast := cfg(8, false, "y", 5) // the fastest, and slow per token
	other := cfg(1, false, "y", 1)
	predictions := map[string][]float64{ // speed, latency: the plan's orientation
		configKey(running): {20, 10},
		configKey(twin):    {20, 10},
		configKey(fast):    {30, 40},
		configKey(other):   {2, 2},
	}
	prior := func(c plan.Config) ([]float64, float64, bool) {
		if v, ok := predictions[configKey(c)]; ok {
			return v, 0, true
		}
		return []float64{1, 50}, 0, true // dominated by all of the above
	}
	f, _ := newTestProposer(t, prior)
	h := &history{tried: map[string]bool{}}
	// Nothing running: the running trial's configuration or its twin adds the most.
	c, _, err := f.propose(h, 0)
	if err != nil {
		t.Fatal(err)
	}
	if k := configKey(c); k != configKey(running) && k != configKey(twin) {
		t.Fatalf("without running trials the proposal is %v, want the predicted best", c)
	}
	// With it running, its twin adds nothing: the next proposal is another trade-off.
	h.tried[configKey(running)] = true
	h.pending = []plan.Config{running}
	h.n++
	c, _, err = f.propose(h, 0)
	if err != nil {
		t.Fatal(err)
	}
	if configKey(c) != configKey(other) {
		t.Errorf("with %v running the proposal is %v, want %v", running, c, other)
	}

	// TPE: good trials at one end of a line, bad at the other; candidates near the good end
	// lose to the middle once running trials crowd the good end.
	dims := []dim{{}}
	var domain []candidate
	for i := 0; i <= 20; i++ {
		domain = append(domain, candidate{x: []float64{float64(i) / 20}})
	}
	obs := []sampledObs{{x: []float64{0}, objectives: []float64{0, 0}}}
	for i := 0; i < 6; i++ {
		obs = append(obs, sampledObs{x: []float64{1 - float64(i)/40}, objectives: []float64{1, 1}})
	}
	cands := []candidate{{x: []float64{0.1}}, {x: []float64{0.5}}}
	rng := rand.New(rand.NewPCG(1, 2))
	if got := tpePick(cands, domain, obs, nil, dims, rng); got != 0 {
		t.Fatalf("with no running trials TPE picks %v, want the candidate near the good trial", cands[got].x)
	}
	var pending [][]float64
	for i := 0; i < 8; i++ {
		pending = append(pending, []float64{0.05 + float64(i%3)/40})
	}
	if got := tpePick(cands, domain, obs, pending, dims, rng); got != 1 {
		t.Errorf("with running trials around 0.1 TPE picks %v, want 0.5", cands[got].x)
	}
}

// runProposals makes n proposals, each measured by the synthetic truth, and returns what
// proposed each (the proposal attribute).
func runProposals(t *testing.T, f proposer, n int) []string {
	t.Helper()
	h := &history{tried: map[string]bool{}}
	var by []string
	for i := 0; i < n; i++ {
		c, attrs, err := f.propose(h, 0)
		if err != nil {
			t.Fatal(err)
		}
		objs, v := synthetic(c)
		h.obs = append(h.obs, observation{config: c, objectives: objs, violation: v, attrs: attrs})
		h.tried[configKey(c)] = true
		h.n++
		by = append(by, attrs[attrProposal])
	}
	return by
}

// The prior's weight is earned: a model that ranks the configurations backwards loses it
// within a few trials, and the sampler then proposes by its own density; a model that
// agrees keeps it, bar the one proposal in four that always goes by the sampler's density.
func TestPriorWeightEarnedFromMeasurements(t *testing.T) {
	reversed := func(c plan.Config) ([]float64, float64, bool) {
		objs, _ := synthetic(c)
		if objs == nil {
			return []float64{1, 1}, 0, true // and it calls the SLO-missing ones feasible
		}
		// The plan's orientation (speed maximised): speed and latency both backwards.
		return []float64{objs[0], -objs[1]}, 0, true
	}
	f, _ := newTestProposer(t, reversed)
	by := runProposals(t, f, 30)
	model := 0
	for _, b := range by[15:] {
		if b == proposalModel {
			model++
		}
	}
	if model > 1 {
		t.Errorf("a model ranking backwards proposed %d of trials 15-29 (%v), want at most 1", model, by)
	}

	agreeing := func(c plan.Config) ([]float64, float64, bool) {
		objs, v := synthetic(c)
		if objs == nil {
			return []float64{1, 100}, v, true
		}
		return []float64{-objs[0] * 1.2, objs[1] * 0.8}, 0, true
	}
	f, _ = newTestProposer(t, agreeing)
	by = runProposals(t, f, 16)
	// The first proposal is the model's and the second the sampler's; once the model's
	// land on the front and the sampler's spread-out ones do not, it proposes
	// nearly all it may (every proposal bar the one in four kept for the sampler).
	model = 0
	for i, b := range by {
		if i%priorExploreEvery == priorExploreEvery-1 {
			if b != proposalOwn {
				t.Errorf("agreeing model: proposal %d by %q, want %q: one in four goes by the sampler's own density (all: %v)", i, b, proposalOwn, by)
			}
			continue
		}
		if i >= 4 && b == proposalModel {
			model++
		}
	}
	if model < 7 {
		t.Errorf("agreeing model: %d of the 9 proposals 4-15 it may make, want at least 7 (all: %v)", model, by)
	}
}

// Before any trial the model has earned nothing, and the comparison of its proposals with
// the sampler's own needs a trial of each: the first proposal is the model's and the second
// the sampler's, whatever the seed, whether the first is measured or still running, so
// that the third proposal is already weighed on evidence rather than on a coin. A space the
// model does not cover goes by the sampler alone.
func TestPriorFirstTrialsAreOneOfEach(t *testing.T) {
	t.Parallel()
	agreeing := func(c plan.Config) ([]float64, float64, bool) {
		objs, v := synthetic(c)
		if objs == nil {
			return []float64{1, 100}, v, true
		}
		return []float64{-objs[0], objs[1]}, 0, true
	}
	for seed := int64(1); seed <= 20; seed++ {
		for _, running := range []bool{false, true} {
			f, _ := newTestProposer(t, agreeing)
			f.seed = seed
			h := &history{tried: map[string]bool{}}
			var by []string
			for i := 0; i < 2; i++ {
				c, attrs, err := f.propose(h, 0)
				if err != nil {
					t.Fatal(err)
				}
				by = append(by, attrs[attrProposal])
				if running {
					h.pending = append(h.pending, c)
					h.tried[configKey(c)] = true
					h.n++
				} else {
					objs, v := synthetic(c)
					h.obs = append(h.obs, observation{config: c, objectives: objs, violation: v, attrs: attrs})
					h.tried[configKey(c)] = true
					h.n++
				}
			}
			if by[0] != proposalModel || by[1] != proposalOwn {
				t.Errorf("seed %d (first trial running: %t): the first two proposals by %v, want [%s %s]",
					seed, running, by, proposalModel, proposalOwn)
			}
		}
	}
	uncovered := func(plan.Config) ([]float64, float64, bool) { return nil, 0, false }
	f, _ := newTestProposer(t, uncovered)
	_, attrs, err := f.propose(&history{tried: map[string]bool{}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if attrs[attrProposal] != proposalOwn {
		t.Errorf("a model covering nothing: the first proposal by %q, want %q", attrs[attrProposal], proposalOwn)
	}
}

// At weight 0 the sampler proposes exactly as with prior = false: given the same trials,
// the same configuration, in the spread-out phase and in the TPE's. The trials here come
// from a study without the prior; the model, which ranks them backwards, is at weight 0
// from its third complete trial on.
func TestPriorAtWeightZeroProposesAsWithout(t *testing.T) {
	reversed := func(c plan.Config) ([]float64, float64, bool) {
		objs, _ := synthetic(c)
		if objs == nil {
			return []float64{1, 1}, 0, true
		}
		return []float64{objs[0], -objs[1]}, 0, true
	}
	without, _ := newTestProposer(t, nil)
	with, _ := newTestProposer(t, reversed)
	h := &history{tried: map[string]bool{}}
	compared := 0
	for i := 0; i < 24; i++ {
		want, _, err := without.propose(h, 0)
		if err != nil {
			t.Fatal(err)
		}
		if w := with.standing(h.obs).Weight; w == 0 {
			got, attrs, err := with.propose(h, 0)
			if err != nil {
				t.Fatal(err)
			}
			if configKey(got) != configKey(want) || attrs[attrProposal] != proposalOwn {
				t.Fatalf("proposal %d at weight 0: %v by %q, want %v as without the prior, by %q", i, got, attrs[attrProposal], want, proposalOwn)
			}
			compared++
		} else if i >= 8 {
			t.Fatalf("proposal %d: weight %v of a model that ranks every trial backwards, want 0", i, w)
		}
		addTrial(h, want)
	}
	if compared < 16 {
		t.Errorf("compared %d proposals at weight 0, want at least 16", compared)
	}
}

// A trial's record carries the model's prediction in the plan's orientation.
func TestPredictedInPlanOrientation(t *testing.T) {
	prior := func(c plan.Config) ([]float64, float64, bool) { return []float64{12, 3}, 0.25, true }
	f, p := newTestProposer(t, prior)
	c := plan.Config{"a": int64(2), "b": true, "c": "x", "d": int64(3)}
	got := f.predicted(c)
	if got == nil || got.Violation != 0.25 || got.Objectives[p.Objectives[0].Name] != 12 || got.Objectives[p.Objectives[1].Name] != 3 {
		t.Errorf("predicted = %+v, want objectives 12 and 3, violation 0.25", got)
	}
	if f, _ := newTestProposer(t, nil); f.predicted(c) != nil {
		t.Error("a prediction without a prior")
	}
}

// Under cmaes, a proposal that TPE made (while the evolution strategy has too few numeric
// knobs or trials) keeps the attribute that says whether the model or the sampler's own
// density made it, so the model's standing is measured on cmaes studies too.
func TestCMAESKeepsWhatProposedEachTrial(t *testing.T) {
	t.Parallel()
	agreeing := func(c plan.Config) ([]float64, float64, bool) {
		objs, v := synthetic(c)
		if objs == nil {
			return []float64{1, 100}, v, true
		}
		return []float64{-objs[0], objs[1]}, 0, true
	}
	f, _ := newTestProposer(t, agreeing)
	c := &cmaesProposer{sp: f.sp, seed: f.seed, tpe: f, sampler: cmaes.NewSampler(cmaes.SamplerOptionSeed(f.seed))}
	for i, by := range runProposals(t, c, 12) {
		if by != proposalModel && by != proposalOwn {
			t.Errorf("trial %d: proposed by %q, want %q or %q", i, by, proposalModel, proposalOwn)
		}
	}
}

// A model that covers none of the space leaves the whole study as without the prior: the
// same configurations in the same order over the spread-out and the TPE phase, each by the
// sampler's own density (the prior's draws come from streams of their own).
func TestPriorCoveringNothingStudiesAsWithout(t *testing.T) {
	t.Parallel()
	uncovered := func(plan.Config) ([]float64, float64, bool) { return nil, 0, false }
	run := func(prior plainPrior) (keys, by []string) {
		f, _ := newTestProposer(t, prior)
		h := &history{tried: map[string]bool{}}
		for i := 0; i < 20; i++ {
			c, attrs, err := f.propose(h, 0)
			if err != nil {
				t.Fatal(err)
			}
			objs, v := synthetic(c)
			h.obs = append(h.obs, observation{config: c, objectives: objs, violation: v, attrs: attrs})
			h.tried[configKey(c)] = true
			h.n++
			keys, by = append(keys, configKey(c)), append(by, attrs[attrProposal])
		}
		return keys, by
	}
	want, _ := run(nil)
	got, by := run(uncovered)
	for i := range want {
		if got[i] != want[i] || by[i] != proposalOwn {
			t.Fatalf("proposal %d: %s by %q, want %s by %q as without the prior", i, got[i], by[i], want[i], proposalOwn)
		}
	}
}
