package search

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"sync"

	"github.com/frontier-llm/frontier/plan"
	"github.com/frontier-llm/frontier/record"
)

// Prior predicts a configuration (see Forecast). ok is false where the predictor does not
// cover the configuration. The offline performance model is the usual one (ModelPrior).
type Prior func(cfg plan.Config) (f Forecast, ok bool)

// Forecast is a prior's answer for one configuration: its objectives, in the plan's order
// and orientation; its violation (0 when it is predicted to meet every SLO, check and gate;
// up to 1 otherwise, as Trial.Violation); and, where the predictor has them, its margins on
// the plan's SLOs (SLOMargins), from which the sampler calibrates the model's feasibility
// against the measured trials' own margins. Margins is nil when there are none.
type Forecast struct {
	Objectives []float64
	Violation  float64
	Margins    []float64
}

// The default sampler (`tpe`) proposes only configurations the rules allow and the study has
// not tried. On a finite space of at most maxEnumerate configurations it lists them all once;
// otherwise it draws a fresh set of candidates for each proposal and keeps the allowed,
// untried ones. Of those candidates it picks one in one of three ways:
//
//   - with a prior (the performance model), by the hypervolume the model, corrected by the
//     measured trials, expects a candidate to add to the front measured so far; the model
//     is followed with a probability that is its weight, earned from how its predictions
//     matched the measured trials and how often its proposals landed on the measured front
//     against the sampler's own (see record.NewStanding), and never for one proposal in
//     priorExploreEvery, which goes by the sampler's own density as below;
//   - without one, for the first frontStartup trials, a spread-out candidate (Mitchell's
//     best candidate: of a few random ones, the farthest from every tried configuration);
//   - then by a multivariate TPE: the trials ranked as a front (non-domination rank, then
//     hypervolume contribution; infeasible trials after, by violation), the best share
//     against the rest, a joint Parzen density over all knobs for each, and of candidates
//     drawn from the good density the one with the largest ratio of the two.
//
// Running trials count as bad observations (a constant liar) for the TPE and as points at
// their predicted objectives for the prior, so parallel workers do not crowd one region.
type frontProposer struct {
	sp    *space
	p     *plan.Plan
	seed  int64
	prior Prior
	dims  []dim

	// The allowed configurations when the space is enumerated (enumerated is true then).
	enumerated bool
	tooLarge   bool
	allowed    []candidate
	// predictions caches the prior per configuration key; mu guards it (trials being
	// measured read it for their records while a proposal is made).
	mu          sync.Mutex
	callMu      sync.Mutex
	predictions map[string]prediction
	// proposedBy says what proposed each configuration this process proposed.
	proposedBy map[string]string
	// pool holds the keys of the configurations the prior ranks in a large listed space.
	pool map[string]bool
}

// candidate is one configuration with its key and its encoding.
type candidate struct {
	cfg plan.Config
	key string
	x   []float64
}

// prediction is the prior's answer for one configuration.
type prediction struct {
	objectives []float64 // minimisation form
	violation  float64
	margins    []float64 // SLOMargins; nil when the prior gives none
	ok         bool
}

// signature identifies a prediction: configurations with one signature are predicted alike.
func (p prediction) signature() string {
	return fmt.Sprintf("%.9g|%.6g", p.objectives, p.violation)
}

// dim is how one knob is encoded: a position in [0, 1] (cats == 0), or one of cats
// unordered categories (its index).
type dim struct {
	cats int
}

const (
	// maxEnumerate is the largest grid listed in full for candidates.
	maxEnumerate = 200_000
	// frontStartup is how many spread-out proposals come before the TPE model, without prior.
	frontStartup = 8
	// frontGamma is the share of the trials in the good group (at most frontMaxGood).
	frontGamma   = 0.2
	frontMaxGood = 25
	// frontDraws is how many candidates are drawn from the good density per proposal.
	frontDraws = 24
	// sampledCandidates is how many candidates are drawn per proposal in a space too large
	// to list.
	sampledCandidates = 2048
	// catMismatch is the kernel's weight for a different category, relative to the same.
	catMismatch = 0.25
	// priorSigma is the model's error assumed before any trial is measured: 15% in log
	// space (objectives that can be negative or zero are compared linearly, in units of
	// their range).
	priorSigma = 0.15
	// priorExploreEvery makes every so many proposals of a study with a prior go by the
	// sampler's own density (spread-out points, then the TPE), whatever the model's
	// weight, so that a region the model wrongly calls poor or infeasible is measured
	// within a few trials and the model's standing learns from more than its own front.
	priorExploreEvery = 4
	// priorAlike is how close two predictions must be, as a share of the predicted range of
	// each objective, for a measured verdict on one to carry to the other.
	priorAlike = 0.05
	// priorEffectPseudoMin and priorEffectPseudoMax bound how many trials of no error a
	// knob value's correction starts from (effectPseudo estimates it from the residuals).
	priorEffectPseudoMin = 0.25
	priorEffectPseudoMax = 8.0
	// priorLikelyFeasible is the chance of feasibility from which the model calls a
	// configuration likely feasible: where any candidate reaches it, the model proposes
	// among those that do (the running trials stand on the front only above it, and so do
	// the predicted front's points that set its scale).
	priorLikelyFeasible = 0.5
	// maxPriorCandidates is how many configurations of a listed space the prior ranks, and
	// maxPriorSampled how many of a proposal's fresh candidates in a space too large to list.
	maxPriorCandidates = 8192
	maxPriorSampled    = 256
)

func newFrontProposer(sp *space, seed int64, p *plan.Plan, prior Prior) *frontProposer {
	f := &frontProposer{sp: sp, p: p, seed: seed, prior: prior, predictions: map[string]prediction{},
		proposedBy: map[string]string{}}
	for _, k := range sp.knobs {
		d := dim{}
		if len(k.Values) > 0 && !allNumeric(k.Values) {
			d.cats = len(k.Values)
		}
		f.dims = append(f.dims, d)
	}
	return f
}

func allNumeric(vs []plan.Value) bool {
	for _, v := range vs {
		if _, ok := toFloat(v); !ok {
			return false
		}
	}
	return true
}

// encode places a configuration in the unit cube: a list of numbers by its index (so a
// list of powers of two is evenly spaced), a range by its (log) position, a category by
// its index.
func (f *frontProposer) encode(c plan.Config) []float64 {
	x := make([]float64, len(f.sp.knobs))
	for i, k := range f.sp.knobs {
		v := c[k.Name]
		switch {
		case len(k.Values) > 0:
			idx, _ := f.sp.toInternal(i, v)
			if f.dims[i].cats > 0 {
				x[i] = idx
			} else if len(k.Values) > 1 {
				x[i] = idx / float64(len(k.Values)-1)
			}
		default:
			fv, _ := toFloat(v)
			lo, hi := k.Min, k.Max
			if k.Log && k.Min > 0 && fv > 0 {
				lo, hi, fv = math.Log(lo), math.Log(hi), math.Log(fv)
			}
			if hi > lo {
				x[i] = (fv - lo) / (hi - lo)
			}
		}
	}
	return x
}

// candidates lists the allowed configurations not yet in the study; domain is the set the
// densities are normalised over (every allowed configuration when listed).
func (f *frontProposer) candidates(h *history, rng *rand.Rand) (cands, domain []candidate, err error) {
	if !f.enumerated && !f.tooLarge {
		if err := f.enumerate(); err != nil {
			return nil, nil, err
		}
	}
	if f.enumerated {
		for _, c := range f.allowed {
			if !h.tried[c.key] {
				cands = append(cands, c)
			}
		}
		return cands, f.allowed, nil
	}
	seen := map[string]bool{}
	add := func(c plan.Config) error {
		key := configKey(c)
		if seen[key] || h.tried[key] {
			return nil
		}
		seen[key] = true
		v, err := f.p.CheckRules(c)
		if err != nil {
			return err
		}
		if len(v) == 0 {
			cands = append(cands, candidate{cfg: c, key: key, x: f.encode(c)})
		}
		return nil
	}
	// Half at random, half around the measured trials (each knob moved with probability
	// one half), so that the neighbourhood of good trials is always represented.
	for i := 0; i < sampledCandidates/2; i++ {
		c := make(plan.Config, len(f.sp.knobs))
		for j, k := range f.sp.knobs {
			c[k.Name] = f.sp.fromUnit(j, rng.Float64())
		}
		if err := add(c); err != nil {
			return nil, nil, err
		}
	}
	for i := 0; i < sampledCandidates/2 && len(h.obs) > 0; i++ {
		base := h.obs[rng.IntN(len(h.obs))].config
		c := make(plan.Config, len(f.sp.knobs))
		for j, k := range f.sp.knobs {
			c[k.Name] = base[k.Name]
			if rng.IntN(2) == 0 {
				continue
			}
			if f.dims[j].cats > 0 {
				c[k.Name] = f.sp.fromUnit(j, rng.Float64())
				continue
			}
			u := f.encode(base)[j] + 0.1*rng.NormFloat64()
			u = math.Max(0, math.Min(1, u))
			if len(k.Values) > 0 {
				idx := int(math.Round(u * float64(len(k.Values)-1)))
				c[k.Name] = k.Values[idx]
				continue
			}
			c[k.Name] = f.sp.fromUnit(j, u)
		}
		if err := add(c); err != nil {
			return nil, nil, err
		}
	}
	return cands, cands, nil
}

// enumerate lists the allowed configurations of a finite space of at most maxEnumerate.
func (f *frontProposer) enumerate() error {
	size, finite := f.p.GridSize()
	if !finite || size > maxEnumerate {
		f.tooLarge = true
		return nil
	}
	seq, err := f.p.GridSeq()
	if err != nil {
		f.tooLarge = true
		return nil
	}
	for c := range seq {
		v, err := f.p.CheckRules(c)
		if err != nil {
			return err
		}
		if len(v) == 0 {
			f.allowed = append(f.allowed, candidate{cfg: c, key: configKey(c), x: f.encode(c)})
		}
	}
	f.enumerated = true
	return nil
}

func (f *frontProposer) propose(h *history, attempt int) (plan.Config, map[string]string, error) {
	rng := rngFor(f.seed, h.n, attempt, 3)
	cands, domain, err := f.candidates(h, rng)
	if err != nil {
		return nil, nil, err
	}
	if len(cands) == 0 {
		if f.enumerated {
			return nil, nil, errExhausted
		}
		// Nothing allowed among the draws: a random configuration, for the runner's
		// rejection and its uniform fallback to deal with.
		c := make(plan.Config, len(f.sp.knobs))
		for i, k := range f.sp.knobs {
			c[k.Name] = f.sp.fromUnit(i, rng.Float64())
		}
		return c, nil, nil
	}
	obs := f.sampled(h.obs)
	pending := make([][]float64, len(h.pending))
	for i, c := range h.pending {
		pending[i] = f.encode(c)
	}
	// The sampler's own density is the same with a prior as without: spread-out points
	// while fewer than frontStartup trials are measured or running, whoever proposed them,
	// then the TPE over every trial (what the model's proposals measured is information
	// too, their violations included).
	var pick int
	switch {
	case f.prior != nil && f.followPrior(h) && f.priorCovers(f.subsample(cands, h.n)):
		// (An exhausted share covers nothing: the sampler goes on without the model.)
		sub := f.subsample(cands, h.n)
		pick = f.priorPick(h, sub, obs, rng)
		f.noteProposal(sub[pick].key, proposalModel)
		return sub[pick].cfg, map[string]string{attrProposal: proposalModel}, nil
	case len(obs)+len(pending) < frontStartup:
		pick = spreadPick(cands, obs, pending, f.dims, nil, rng)
	default:
		pick = tpePick(cands, domain, obs, pending, f.dims, rng)
	}
	if f.prior == nil {
		return cands[pick].cfg, nil, nil
	}
	f.noteProposal(cands[pick].key, proposalOwn)
	return cands[pick].cfg, map[string]string{attrProposal: proposalOwn}, nil
}

// noteProposal remembers what proposed a configuration, for its trial's record.
func (f *frontProposer) noteProposal(key, by string) {
	f.mu.Lock()
	f.proposedBy[key] = by
	f.mu.Unlock()
}

// attrProposal is the trial attribute that says what proposed a trial: the model
// (proposalModel) or the sampler's own density (proposalOwn).
const (
	attrProposal  = "frontier:proposal"
	proposalModel = record.ProposalModel
	proposalOwn   = record.ProposalSampler
)

// sampledObs is one measured trial, encoded.
type sampledObs struct {
	x          []float64
	cfg        plan.Config
	objectives []float64 // minimisation form; nil unless complete
	missed     []float64 // as observation.missed
	violation  float64
	margins    []float64 // measured SLOMargins; nil when not measured
}

// sampled is the history's trials in the space's unit coordinates, as the proposals weigh them.
func (f *frontProposer) sampled(hobs []observation) []sampledObs {
	obs := make([]sampledObs, len(hobs))
	for i, o := range hobs {
		obs[i] = sampledObs{x: f.encode(o.config), objectives: o.objectives, missed: o.missed,
			violation: o.violation, cfg: o.config, margins: o.margins}
	}
	return obs
}

// ran is what the trial measured of its objectives, met or missed: the model's objectives
// are corrected on these, while the front is of complete trials only.
func (o sampledObs) ran() []float64 {
	if o.objectives != nil {
		return o.objectives
	}
	return o.missed
}

// spreadPick is Mitchell's best candidate: of a few random candidates (restricted to those
// where keep is true, when any is), the one farthest from every tried and pending point.
func spreadPick(cands []candidate, obs []sampledObs, pending [][]float64, dims []dim, keep []bool, rng *rand.Rand) int {
	var pool []int
	for i := range cands {
		if keep == nil || keep[i] {
			pool = append(pool, i)
		}
	}
	if len(pool) == 0 {
		for i := range cands {
			pool = append(pool, i)
		}
	}
	var taken [][]float64
	for _, o := range obs {
		taken = append(taken, o.x)
	}
	taken = append(taken, pending...)
	draws := 2 * (len(taken) + 1)
	best, bestD := pool[rng.IntN(len(pool))], -1.0
	if len(taken) == 0 {
		return best
	}
	for i := 0; i < draws; i++ {
		c := pool[rng.IntN(len(pool))]
		d := math.Inf(1)
		for _, t := range taken {
			d = math.Min(d, distance(cands[c].x, t, dims))
		}
		if d > bestD {
			best, bestD = c, d
		}
	}
	return best
}

// distance is the Euclidean distance of two encoded points; a differing category counts 1.
func distance(a, b []float64, dims []dim) float64 {
	s := 0.0
	for i := range a {
		if dims[i].cats > 0 {
			if a[i] != b[i] {
				s++
			}
			continue
		}
		d := a[i] - b[i]
		s += d * d
	}
	return math.Sqrt(s)
}

// kernel is the product kernel of two encoded points: a Gaussian of bandwidth bw per
// position, catMismatch for a different category.
func kernel(a, b []float64, dims []dim, bw float64) float64 {
	logK := 0.0
	for i := range a {
		if dims[i].cats > 0 {
			if a[i] != b[i] {
				logK += math.Log(catMismatch)
			}
			continue
		}
		z := (a[i] - b[i]) / bw
		logK -= 0.5 * z * z
	}
	return math.Exp(logK)
}

// bandwidth is Scott's rule for n points in d dimensions on the unit cube (a spread of
// about 0.3), kept within [0.08, 0.5].
func bandwidth(n, d int) float64 {
	return math.Max(0.08, math.Min(0.5, 0.3*math.Pow(float64(max(n, 1)), -1/float64(d+4))))
}

// jointParzen is a Parzen density over whole configurations: one product kernel per
// observation, each normalised over the domain (the allowed configurations), mixed with the
// uniform density over the domain as a prior component.
type jointParzen struct {
	centers [][]float64
	norm    []float64
	dims    []dim
	bw      float64
	uniform float64
}

func newJointParzen(centers [][]float64, domain []candidate, dims []dim) *jointParzen {
	p := &jointParzen{centers: centers, dims: dims, bw: bandwidth(len(centers), len(dims)),
		uniform: 1 / float64(max(1, len(domain)))}
	p.norm = make([]float64, len(centers))
	for i, c := range centers {
		z := 0.0
		for _, d := range domain {
			z += kernel(d.x, c, dims, p.bw)
		}
		p.norm[i] = math.Max(z, 1e-300)
	}
	return p
}

// density is the probability of x under the mixture (x should be in the domain).
func (p *jointParzen) density(x []float64) float64 {
	sum := p.uniform
	for i, c := range p.centers {
		sum += kernel(x, c, p.dims, p.bw) / p.norm[i]
	}
	return sum / float64(len(p.centers)+1)
}

// frontOrder ranks the observations best first: complete trials by non-domination rank and,
// within a rank, by hypervolume contribution (largest first); then infeasible and pruned
// trials by violation (smallest first), as c-TPE splits by violation.
func frontOrder(obs []sampledObs) []int {
	var feas []int
	var pts [][]float64
	for i, o := range obs {
		if o.objectives != nil {
			feas = append(feas, i)
			pts = append(pts, o.objectives)
		}
	}
	key := make([]float64, len(obs)) // smaller is better
	if len(pts) > 0 {
		rank := record.Ranks(pts)
		norm, ref := normalise(pts)
		contrib := make([]float64, len(pts))
		for r := 0; ; r++ {
			var group []int
			for j := range pts {
				if rank[j] == r {
					group = append(group, j)
				}
			}
			if len(group) == 0 {
				break
			}
			all := make([][]float64, len(group))
			for gi, j := range group {
				all[gi] = norm[j]
			}
			total := record.Hypervolume(all, ref)
			for gi, j := range group {
				rest := make([][]float64, 0, len(group)-1)
				rest = append(rest, all[:gi]...)
				rest = append(rest, all[gi+1:]...)
				contrib[j] = total - record.Hypervolume(rest, ref)
			}
		}
		for j, i := range feas {
			// Contributions are at most 1.21 (the box to the reference point).
			key[i] = float64(rank[j]) + 0.5*(1-math.Min(contrib[j], 1.9)/2)
		}
	}
	base := float64(len(pts) + 1)
	for i, o := range obs {
		if o.objectives == nil {
			v := o.violation
			if math.IsNaN(v) || v < 0 {
				v = 1
			}
			key[i] = base + math.Min(v, 1)
		}
	}
	order := make([]int, len(obs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return key[order[a]] < key[order[b]] })
	return order
}

// normalise maps points to [0, 1] by their range, with the reference point at 1.1.
func normalise(pts [][]float64) ([][]float64, []float64) {
	d := len(pts[0])
	lo, hi := make([]float64, d), make([]float64, d)
	for j := 0; j < d; j++ {
		lo[j], hi[j] = math.Inf(1), math.Inf(-1)
		for _, p := range pts {
			lo[j] = math.Min(lo[j], p[j])
			hi[j] = math.Max(hi[j], p[j])
		}
	}
	out := make([][]float64, len(pts))
	for i, p := range pts {
		q := make([]float64, d)
		for j := range p {
			q[j] = (p[j] - lo[j]) / math.Max(hi[j]-lo[j], 1e-12)
		}
		out[i] = q
	}
	ref := make([]float64, d)
	for j := range ref {
		ref[j] = 1.1
	}
	return out, ref
}

// goodCount is how many of n observations form the good group.
func goodCount(n int) int {
	return max(1, min(frontMaxGood, int(math.Ceil(frontGamma*float64(n)))))
}

// tpePick is the multivariate TPE step over the candidates.
func tpePick(cands, domain []candidate, obs []sampledObs, pending [][]float64, dims []dim, rng *rand.Rand) int {
	order := frontOrder(obs)
	nGood := goodCount(len(obs))
	var good, bad [][]float64
	for rank, i := range order {
		if rank < nGood {
			good = append(good, obs[i].x)
		} else {
			bad = append(bad, obs[i].x)
		}
	}
	bad = append(bad, pending...) // a constant liar: running trials count as bad
	l := newJointParzen(good, domain, dims)
	g := newJointParzen(bad, domain, dims)
	lw := make([]float64, len(cands))
	total := 0.0
	for i, c := range cands {
		lw[i] = l.density(c.x)
		total += lw[i]
	}
	best, bestScore := 0, math.Inf(-1)
	for d := 0; d < frontDraws; d++ {
		r := rng.Float64() * total
		i := 0
		for acc := lw[0]; acc < r && i < len(lw)-1; acc += lw[i] {
			i++
		}
		if s := math.Log(lw[i]) - math.Log(g.density(cands[i].x)); s > bestScore {
			best, bestScore = i, s
		}
	}
	return best
}

// followPrior decides whether this proposal follows the model: never one in
// priorExploreEvery (counting the measured and running trials), else with a probability
// that is the model's weight, earned from the measured trials (record.NewStanding: its
// ranks beat chance, its verdicts beat a coin, and its proposals land on the measured front
// more often than the sampler's own), once each side has a trial to be judged by.
func (f *frontProposer) followPrior(h *history) bool {
	taken := len(h.obs) + len(h.pending)
	if taken%priorExploreEvery == priorExploreEvery-1 {
		return false
	}
	w := f.standing(h.obs).Weight
	// The comparison of the model's proposals with the sampler's own needs a trial of each:
	// until both have one measured or running, the proposal goes to the side with none (the
	// model first, unless the measured trials already took its weight), so that the first
	// two trials are the evidence rather than a coin.
	model, own := f.proposalCounts(h)
	if model == 0 && w > 0 {
		return true
	}
	if own == 0 {
		return false
	}
	// A stream of its own, so the rest of the proposal draws alike whichever way this goes.
	return w >= 1 || rngFor(f.seed, h.n, 0, 7).Float64() < w
}

// proposalCounts counts the measured and running trials the model proposed and those the
// sampler's own density proposed.
func (f *frontProposer) proposalCounts(h *history) (model, own int) {
	count := func(by string) {
		switch by {
		case proposalModel:
			model++
		case proposalOwn:
			own++
		}
	}
	for _, o := range h.obs {
		count(o.attrs[attrProposal])
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range h.pending {
		count(f.proposedBy[configKey(c)])
	}
	return model, own
}

// standing is the model's standing against the measured trials.
func (f *frontProposer) standing(obs []observation) record.Standing {
	names := make([]string, len(f.p.Objectives))
	for i, o := range f.p.Objectives {
		names[i] = o.Name
	}
	var pairs []record.StandingPair
	for _, o := range obs {
		p := f.predict(candidate{cfg: o.config, key: configKey(o.config)})
		if !p.ok {
			continue
		}
		// Both in minimisation form: ranks and ratios are the same as in the plan's.
		pairs = append(pairs, record.StandingPair{Predicted: p.objectives, PredictedFeasible: p.violation <= 0,
			Measured: o.objectives, Feasible: o.objectives != nil, Own: o.attrs[attrProposal] == proposalOwn,
			Model: o.attrs[attrProposal] == proposalModel, Violation: o.violation})
	}
	return record.NewStanding(names, pairs)
}

// predicted is the model's prediction of cfg for its trial's record; nil without a prior
// or where the model does not cover cfg.
func (f *frontProposer) predicted(cfg plan.Config) *record.Prediction {
	if f.prior == nil {
		return nil
	}
	p := f.predict(candidate{cfg: cfg, key: configKey(cfg)})
	if !p.ok {
		return nil
	}
	maximize := make([]bool, len(f.p.Objectives))
	for i, o := range f.p.Objectives {
		maximize[i] = o.Maximize
	}
	objs := record.Orient(p.objectives, maximize) // back to the plan's orientation
	key := configKey(cfg)
	f.mu.Lock()
	by := f.proposedBy[key]
	f.mu.Unlock()
	out := &record.Prediction{Objectives: map[string]float64{}, Violation: p.violation, Proposal: by}
	for i, o := range f.p.Objectives {
		out.Objectives[o.Name] = objs[i]
	}
	out.SLO = sloValues(f.p, p.margins)
	return out
}

// predict is the prior's answer for a configuration, cached.
func (f *frontProposer) predict(c candidate) prediction {
	f.mu.Lock()
	p, ok := f.predictions[c.key]
	f.mu.Unlock()
	if ok {
		return p
	}
	f.callMu.Lock() // a Prior need not be safe for concurrent use
	fc, ok := f.prior(c.cfg)
	f.callMu.Unlock()
	objs := fc.Objectives
	p = prediction{ok: ok && len(objs) == len(f.p.Objectives), violation: fc.Violation, margins: fc.Margins}
	if p.ok {
		maximize := make([]bool, len(f.p.Objectives))
		for i, o := range f.p.Objectives {
			maximize[i] = o.Maximize
		}
		p.objectives = record.Orient(objs, maximize)
		for _, x := range p.objectives {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				p.ok = false
			}
		}
	}
	f.mu.Lock()
	f.predictions[c.key] = p
	f.mu.Unlock()
	return p
}

// priorCovers reports whether the prior predicts most candidates (a model that covers a
// few configurations only is no ranking of the space).
func (f *frontProposer) priorCovers(cands []candidate) bool {
	ok := 0
	for _, c := range cands {
		if f.predict(c).ok {
			ok++
		}
	}
	return ok*2 > len(cands)
}

// priorPick ranks the candidates by the model's predictions corrected by the measured
// trials: per objective, the residual between measured and predicted (in log space for
// positive objectives) is smoothed over the space by the product kernel around its mean,
// with an uncertainty that shrinks near measured trials; a candidate scores the hypervolume
// its optimistic corrected prediction adds to the measured front (plus the running trials
// at their predictions), times its chance of being feasible (the model's verdict, corrected
// by the measured trials nearby), among the candidates it calls likely feasible where there
// are any. When no candidate adds any, the one nearest to the front (additive epsilon)
// among the likely feasible is taken.
func (f *frontProposer) priorPick(h *history, cands []candidate, obs []sampledObs, rng *rand.Rand) int {
	d := len(f.p.Objectives)
	preds := make([]prediction, len(cands))
	for i, c := range cands {
		preds[i] = f.predict(c)
	}
	// Objectives whose predictions and measurements are all of one sign are compared in
	// log space.
	logSpace := make([]bool, d)
	for j := 0; j < d; j++ {
		logSpace[j] = true
		sign := 0.0
		check := func(v float64) {
			if sign == 0 {
				sign = math.Copysign(1, v)
			}
			if v == 0 || (v > 0) != (sign > 0) {
				logSpace[j] = false
			}
		}
		for _, p := range preds {
			if p.ok {
				check(p.objectives[j])
			}
		}
		for _, o := range obs {
			if m := o.ran(); m != nil {
				check(m[j])
			}
		}
	}
	scale := make([]float64, d) // for linear objectives: the predicted range
	for j := 0; j < d; j++ {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, p := range preds {
			if p.ok {
				lo, hi = math.Min(lo, p.objectives[j]), math.Max(hi, p.objectives[j])
			}
		}
		scale[j] = math.Max(hi-lo, 1e-9)
	}
	// z is the working space: minimisation form, log of the magnitude where possible.
	z := func(v []float64) []float64 {
		out := make([]float64, d)
		for j, x := range v {
			if logSpace[j] {
				if x > 0 {
					out[j] = math.Log(x)
				} else {
					out[j] = -math.Log(-x) // a maximised objective: smaller is better
				}
			} else {
				out[j] = x / scale[j]
			}
		}
		return out
	}
	// Residuals of the trials that measured their objectives (measured - predicted, in z):
	// the complete ones and those that ran their workload to the end and missed a bound.
	// The model's error is the engine's, whether or not a trial met its SLOs; leaving the
	// misses out would keep a model that is wrong about a knob from learning it until
	// trials on both sides of it had completed.
	type resid struct {
		x []float64
		r []float64
	}
	var res []resid
	type label struct {
		x        []float64
		zp       []float64 // the model's prediction, nil when it has none
		feasible float64
	}
	var labels []label
	for _, o := range obs {
		c := candidate{cfg: o.cfg, key: configKey(o.cfg), x: o.x}
		p := f.predict(c)
		feas := 0.0
		if o.objectives != nil {
			feas = 1
		}
		l := label{x: o.x, feasible: feas}
		if p.ok {
			l.zp = z(p.objectives)
		}
		labels = append(labels, l)
		m := o.ran()
		if m == nil || !p.ok {
			continue
		}
		zm, zp := z(m), z(p.objectives)
		r := make([]float64, d)
		for j := range r {
			r[j] = zm[j] - zp[j]
		}
		res = append(res, resid{o.x, r})
	}
	mean := make([]float64, d)
	sigma := make([]float64, d)
	for j := 0; j < d; j++ {
		s := 0.0
		for _, r := range res {
			s += r.r[j]
		}
		mean[j] = s / float64(len(res)+1) // shrunk towards no bias
		ss := priorSigma * priorSigma
		for _, r := range res {
			ss += (r.r[j] - mean[j]) * (r.r[j] - mean[j])
		}
		sigma[j] = math.Sqrt(ss / float64(len(res)+1))
	}
	bw := bandwidth(max(1, len(res)), len(f.dims))
	xs, rs := make([][]float64, len(res)), make([][]float64, len(res))
	for i, r := range res {
		xs[i], rs[i] = r.x, r.r
	}
	additive, left := f.knobEffects(xs, rs, mean)
	corrected := func(x []float64, zp []float64) (mu, opt []float64) {
		mu, opt = make([]float64, d), make([]float64, d)
		wsum := 0.0
		ws := make([]float64, len(res))
		for i, r := range res {
			ws[i] = kernel(x, r.x, f.dims, bw)
			wsum += ws[i]
		}
		add := additive(x)
		for j := 0; j < d; j++ {
			num := 0.0
			for i := range res {
				num += ws[i] * left[i][j]
			}
			m := mean[j] + add[j] + num/(1+wsum)
			s := sigma[j] * math.Sqrt(1/(1+wsum))
			mu[j] = zp[j] + m
			opt[j] = mu[j] - s
		}
		return mu, opt
	}
	// The model's verdicts are calibrated by how they fared on the measured trials (a beta
	// prior worth two trials: 0.8 where the model predicts feasible, 0.2 where not), then
	// corrected by the measured verdicts nearby.
	var predFeas, predFeasOK, predInf, predInfOK float64
	for _, o := range obs {
		p := f.predict(candidate{cfg: o.cfg, key: configKey(o.cfg)})
		if !p.ok {
			continue
		}
		ok := 0.0
		if o.objectives != nil {
			ok = 1
		}
		if p.violation > 0 {
			predInf, predInfOK = predInf+1, predInfOK+ok
		} else {
			predFeas, predFeasOK = predFeas+1, predFeasOK+ok
		}
	}
	baseFeas := (0.8*2 + predFeasOK) / (2 + predFeas)
	baseInf := (0.2*2 + predInfOK) / (2 + predInf)
	// A measured verdict carries to candidates near it in the knobs, and to those the
	// model predicts alike (within priorAlike of the predicted range in every objective):
	// where the model is wrong about one configuration it is wrong about those it cannot
	// tell from it, whatever the knobs it thinks make no difference.
	zlo, zhi := make([]float64, d), make([]float64, d)
	for j := 0; j < d; j++ {
		zlo[j], zhi[j] = math.Inf(1), math.Inf(-1)
		for _, p := range preds {
			if p.ok {
				v := z(p.objectives)[j]
				zlo[j], zhi[j] = math.Min(zlo[j], v), math.Max(zhi[j], v)
			}
		}
	}
	alike := func(a, b []float64) float64 {
		if a == nil || b == nil {
			return 0
		}
		s := 0.0
		for j := range a {
			u := (a[j] - b[j]) / (math.Max(zhi[j]-zlo[j], 1e-9) * priorAlike)
			s += u * u
		}
		return math.Exp(-0.5 * s)
	}
	bySLO, _ := f.sloFeasibility(obs, bw)
	feasibility := func(x []float64, p prediction) float64 {
		p0 := baseFeas
		if p.violation > 0 {
			p0 = baseInf
		}
		if pf, ok := bySLO(x, p); ok {
			p0 = pf
		}
		var zp []float64
		if p.ok {
			zp = z(p.objectives)
		}
		num, den := p0, 1.0
		for _, l := range labels {
			w := math.Max(kernel(x, l.x, f.dims, bw), alike(zp, l.zp))
			num += w * l.feasible
			den += w
		}
		return num / den
	}
	// The measured front, and the running trials at their corrected predictions.
	var base [][]float64
	for _, o := range obs {
		if o.objectives != nil {
			base = append(base, z(o.objectives))
		}
	}
	for _, pc := range h.pending {
		c := candidate{cfg: pc, key: configKey(pc), x: f.encode(pc)}
		p := f.predict(c)
		if !p.ok || feasibility(c.x, p) < priorLikelyFeasible {
			continue
		}
		mu, _ := corrected(c.x, z(p.objectives))
		base = append(base, mu)
	}
	// A candidate the model predicts exactly as a measured or running configuration (a knob
	// the model says makes no difference here) is expected to add nothing: it is left out.
	twins := map[string]bool{}
	for _, o := range obs {
		if p := f.predict(candidate{cfg: o.cfg, key: configKey(o.cfg)}); p.ok {
			twins[p.signature()] = true
		}
	}
	for _, pc := range h.pending {
		if p := f.predict(candidate{cfg: pc, key: configKey(pc)}); p.ok {
			twins[p.signature()] = true
		}
	}
	mus := make([][]float64, len(cands))
	opts := make([][]float64, len(cands))
	pfs := make([]float64, len(cands))
	var predFeasible [][]float64
	for i, c := range cands {
		if !preds[i].ok || twins[preds[i].signature()] {
			pfs[i] = -1
			continue
		}
		mus[i], opts[i] = corrected(c.x, z(preds[i].objectives))
		pfs[i] = feasibility(c.x, preds[i])
		if pfs[i] >= priorLikelyFeasible {
			predFeasible = append(predFeasible, mus[i])
		}
	}
	// Normalise by the range of the predicted and measured fronts.
	scope := frontOf(append(append([][]float64{}, predFeasible...), base...))
	if len(scope) == 0 {
		for i := range cands {
			if mus[i] != nil {
				scope = append(scope, mus[i])
			}
		}
	}
	if len(scope) == 0 {
		return spreadPick(cands, obs, nil, f.dims, nil, rng)
	}
	lo, hi := make([]float64, d), make([]float64, d)
	for j := 0; j < d; j++ {
		lo[j], hi[j] = math.Inf(1), math.Inf(-1)
		for _, p := range scope {
			lo[j], hi[j] = math.Min(lo[j], p[j]), math.Max(hi[j], p[j])
		}
	}
	norm := func(p []float64) []float64 {
		q := make([]float64, d)
		for j := range p {
			q[j] = (p[j] - lo[j]) / math.Max(hi[j]-lo[j], 1e-9)
		}
		return q
	}
	ref := make([]float64, d)
	for j := range ref {
		ref[j] = 1.1
	}
	var front [][]float64
	for _, b := range frontOf(base) {
		front = append(front, norm(b))
	}
	baseHV := record.Hypervolume(front, ref)
	// The model proposes what it calls more likely feasible than not, where it calls
	// anything so: its chance of feasibility is calibrated, not certain, and a candidate it
	// gives a small chance with a large gain (configurations alike to measured failures,
	// whose objectives are good but whose bounds are missed) would otherwise win on the
	// gain alone, trial after trial. Exploring beyond that is the sampler's own share.
	// Where it calls nothing likely feasible, every candidate is weighed by its chance.
	floor := 0.0
	if len(predFeasible) > 0 { // some candidate's chance reaches priorLikelyFeasible
		floor = priorLikelyFeasible
	}
	// First the candidates the corrected model expects to improve the front; when there
	// are none, those its optimistic bound (one standard error better) says might.
	for _, pts := range [][][]float64{mus, opts} {
		best, bestScore := -1, 0.0
		for i := range cands {
			if pts[i] == nil || pfs[i] < floor {
				continue
			}
			q := norm(pts[i])
			gain := record.Hypervolume(append(front[:len(front):len(front)], q), ref) - baseHV
			if s := pfs[i] * gain; s > bestScore+1e-9 {
				best, bestScore = i, s
			}
		}
		if best >= 0 {
			return best
		}
	}
	best := -1
	// Nothing is expected to improve the front: the likely feasible candidate nearest to it.
	bestEps := math.Inf(1)
	for i := range cands {
		if opts[i] == nil || pfs[i] < priorLikelyFeasible {
			continue
		}
		q := norm(opts[i])
		// How far q must move (in every objective) so that no front point dominates it.
		eps := 0.0
		for _, fp := range front {
			need := math.Inf(1)
			for j := range q {
				need = math.Min(need, q[j]-fp[j])
			}
			eps = math.Max(eps, need)
		}
		if eps < bestEps {
			best, bestEps = i, eps
		}
	}
	if best >= 0 {
		return best
	}
	return spreadPick(cands, obs, nil, f.dims, nil, rng)
}

// subsample is the share of the candidates the prior ranks, since each prediction costs an
// estimate: all of a listed space of at most maxPriorCandidates configurations; of a larger
// listed space, a fixed random maxPriorCandidates of them, drawn once from the seed (so the
// predictions are made once per study); of a space too large to list, maxPriorSampled of
// each proposal's fresh candidates.
func (f *frontProposer) subsample(cands []candidate, n int) []candidate {
	if f.enumerated {
		if len(f.allowed) <= maxPriorCandidates {
			return cands
		}
		if f.pool == nil {
			f.pool = map[string]bool{}
			for _, i := range rngFor(f.seed, 0, 0, 6).Perm(len(f.allowed))[:maxPriorCandidates] {
				f.pool[f.allowed[i].key] = true
			}
		}
		var out []candidate
		for _, c := range cands {
			if f.pool[c.key] {
				out = append(out, c)
			}
		}
		return out
	}
	if len(cands) <= maxPriorSampled {
		return cands
	}
	idx := rngFor(f.seed, n, 0, 6).Perm(len(cands))[:maxPriorSampled]
	sort.Ints(idx)
	out := make([]candidate, len(idx))
	for i, j := range idx {
		out[i] = cands[j]
	}
	return out
}

func (f *frontProposer) encodeAll(cs []plan.Config) [][]float64 {
	out := make([][]float64, len(cs))
	for i, c := range cs {
		out[i] = f.encode(c)
	}
	return out
}

// frontOf keeps the points no other point dominates.
func frontOf(points [][]float64) [][]float64 {
	idx := record.NonDominated(points)
	out := make([][]float64, len(idx))
	for i, j := range idx {
		out[i] = points[j]
	}
	return out
}

// effectPseudo is, per objective, how many trials of no error knob k's corrections start
// from: the ratio of the residuals' spread within each of its values to the spread of the
// values' means (an empirical Bayes estimate of the shrinkage), kept within
// [priorEffectPseudoMin, priorEffectPseudoMax]. Where the model's error moves with the
// knob's value and little else, the corrections are taken nearly whole.
func effectPseudo(at []float64, left [][]float64, sum map[float64][]float64, n map[float64]float64, d int) []float64 {
	out := make([]float64, d)
	for j := 0; j < d; j++ {
		within := priorSigma * priorSigma * 0.1
		wn := 1.0
		for i := range left {
			v := at[i]
			m := sum[v][j] / n[v]
			within += (left[i][j] - m) * (left[i][j] - m)
			wn++
		}
		wn -= float64(len(sum))
		within /= math.Max(wn, 1)
		between := 0.0
		for v, sv := range sum {
			m := sv[j] / n[v]
			between += n[v] * m * m
		}
		between = between/float64(max(1, len(left))) - within*float64(len(sum))/float64(max(1, len(left)))
		ps := priorEffectPseudoMax
		if between > 0 {
			ps = math.Max(priorEffectPseudoMin, math.Min(priorEffectPseudoMax, within/between))
		}
		out[j] = ps
	}
	return out
}

// sloFeasibility is the model's feasibility calibrated on its SLO margins (SLOMargins): per
// bound, the residual of the measured margin against the predicted one is smoothed over the
// space as the objectives' are (its mean, shrunk towards none, and the kernel regression of
// what is left), and a candidate meets the bound with the probability that its corrected
// margin, give or take the residuals' spread, is at or below 0. Where the model puts the
// SLO boundary in the wrong place (its TTFT 1.4 times the truth's, or growing differently
// with load), one or two measured trials move the boundary everywhere, not only near them.
// Failures the margins do not explain (the engine did not start, a check or a gate, or a
// model that predicts one) are smoothed from the measured verdicts nearby, as a share. ok
// is false where the model gives no margins for the candidate or the measured trials none
// to calibrate them with: the caller then goes by the model's verdict.
func (f *frontProposer) sloFeasibility(obs []sampledObs, bw float64) (func(x []float64, p prediction) (float64, bool), int) {
	finite := func(m []float64) bool {
		for _, v := range m {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return false
			}
		}
		return len(m) > 0
	}
	met := func(m []float64) bool {
		for _, v := range m {
			if v > 0 {
				return false
			}
		}
		return true
	}
	type point struct {
		x []float64
		r []float64 // measured less predicted margin, per bound
	}
	type label struct {
		x     []float64
		other bool // infeasible for a reason the measured margins do not explain
	}
	var pts []point
	var labels []label
	nb := 0
	for _, o := range obs {
		p := f.predict(candidate{cfg: o.cfg, key: configKey(o.cfg)})
		feasible := o.objectives != nil
		explained := finite(o.margins) && met(o.margins) == feasible
		labels = append(labels, label{x: o.x, other: !feasible && !explained})
		if !explained || !p.ok || !finite(p.margins) || len(p.margins) != len(o.margins) {
			continue
		}
		nb = len(p.margins)
		r := make([]float64, nb)
		for b := range r {
			r[b] = o.margins[b] - p.margins[b]
		}
		pts = append(pts, point{o.x, r})
	}
	if len(pts) == 0 {
		return func([]float64, prediction) (float64, bool) { return 0, false }, 0
	}
	mean, sigma := make([]float64, nb), make([]float64, nb)
	for b := 0; b < nb; b++ {
		sum := 0.0
		for _, pt := range pts {
			sum += pt.r[b]
		}
		mean[b] = sum / float64(len(pts)+1)
		ss := priorSigma * priorSigma
		for _, pt := range pts {
			ss += (pt.r[b] - mean[b]) * (pt.r[b] - mean[b])
		}
		sigma[b] = math.Sqrt(ss / float64(len(pts)+1))
	}
	return func(x []float64, p prediction) (float64, bool) {
		if !p.ok || len(p.margins) != nb || !finite(p.margins) {
			return 0, false
		}
		ws := make([]float64, len(pts))
		wsum := 0.0
		for i, pt := range pts {
			ws[i] = kernel(x, pt.x, f.dims, bw)
			wsum += ws[i]
		}
		pf := 1.0
		for b := 0; b < nb; b++ {
			num := 0.0
			for i, pt := range pts {
				num += ws[i] * (pt.r[b] - mean[b])
			}
			m := p.margins[b] + mean[b] + num/(1+wsum)
			pf *= 0.5 * math.Erfc(m/(sigma[b]*math.Sqrt2))
		}
		// The rest: a model that predicts a failure its margins do not explain starts at
		// the share a wrong verdict of its has (0.2), else at none; measured failures the
		// margins do not explain pull it down nearby.
		ok0 := 1.0
		if p.violation > 0 && met(p.margins) {
			ok0 = 0.2
		}
		num, den := ok0, 1.0
		for _, l := range labels {
			w := kernel(x, l.x, f.dims, bw)
			if !l.other {
				num += w
			}
			den += w
		}
		return pf * num / den, true
	}, len(pts)
}

// knobEffects is the model's error by knob value, from the residuals rs (measured less
// predicted, one vector per measured trial at encoded point xs) less their mean: for each
// knob with listed values, in turn, the mean residual (less the mean and the knobs before)
// of the trials at each value, shrunk towards none by effectPseudo trials. A model wrong
// about one knob (its effect reversed) is corrected everywhere that knob takes that value,
// not only near the trials measured; the kernel regression then corrects what is left
// (left), locally. additive is the sum of a point's knob-value corrections.
func (f *frontProposer) knobEffects(xs, rs [][]float64, mean []float64) (additive func(x []float64) []float64, left [][]float64) {
	d := len(mean)
	type effectKey struct {
		knob int
		at   float64
	}
	effects := map[effectKey][]float64{}
	left = make([][]float64, len(rs))
	for i, r := range rs {
		left[i] = make([]float64, d)
		for j := range left[i] {
			left[i][j] = r[j] - mean[j]
		}
	}
	for k, knob := range f.sp.knobs {
		if len(knob.Values) < 2 {
			continue
		}
		sum, n := map[float64][]float64{}, map[float64]float64{}
		at := make([]float64, len(xs))
		for i, x := range xs {
			v := x[k]
			at[i] = v
			if sum[v] == nil {
				sum[v] = make([]float64, d)
			}
			for j := range left[i] {
				sum[v][j] += left[i][j]
			}
			n[v]++
		}
		pseudo := effectPseudo(at, left, sum, n, d)
		for v, sv := range sum {
			e := make([]float64, d)
			for j := range e {
				e[j] = sv[j] / (n[v] + pseudo[j])
			}
			effects[effectKey{k, v}] = e
		}
		for i, x := range xs {
			e := effects[effectKey{k, x[k]}]
			for j := range left[i] {
				left[i][j] -= e[j]
			}
		}
	}
	additive = func(x []float64) []float64 {
		a := make([]float64, d)
		for k := range f.sp.knobs {
			if e, ok := effects[effectKey{k, x[k]}]; ok {
				for j := range a {
					a[j] += e[j]
				}
			}
		}
		return a
	}
	return additive, left
}
