package record

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// Prediction is the performance model's prediction of one configuration: its objectives,
// by name in the plan's orientation, and its violation (0 when it is predicted to meet every
// SLO and check; up to 1 otherwise).
type Prediction struct {
	Objectives map[string]float64 `json:"objectives,omitempty"`
	Violation  float64            `json:"violation"`
	// Proposal says what proposed the trial: "model" (the prior) or "sampler" (the
	// sampler's own density); empty when unknown.
	Proposal string `json:"proposal,omitempty"`
	// SLO is the predicted value of each SLO metric, by workload class and metric
	// ("chat ttft_p99_ms"); absent where the model gives none.
	SLO map[string]float64 `json:"slo,omitempty"`
}

// SLOKey names an SLO metric of a workload class in Prediction.SLO and Standing.SLOs.
func SLOKey(class, metric string) string { return class + " " + metric }

// ProposalSampler is Prediction.Proposal for a trial the sampler's own density proposed.
const ProposalSampler = "sampler"

// ProposalModel is Prediction.Proposal for a trial the model (the prior) proposed.
const ProposalModel = "model"

// StandingPair is one measured trial beside the model's prediction of it. Predicted and
// Measured are the objectives in one order, in minimisation form (a maximised objective
// negated, as Orient does; nil where there are none: a measured trial that did not
// complete); PredictedFeasible and Feasible are the model's verdict and the measured one.
// Own is true for a trial the sampler's own density proposed, Model for one the model
// proposed (neither when unknown): the sampler's own trials are a fair sample of the space,
// where those the model proposed crowd its own front; and how often each kind lands on the
// measured front says whether following the model helps.
type StandingPair struct {
	Predicted         []float64
	PredictedFeasible bool
	Measured          []float64
	Feasible          bool
	Own               bool
	Model             bool
	// Violation is how far a trial measured infeasible missed (0 to 1, 1 when it did not
	// run; as Trial.Violation): while no trial is feasible, the one that missed by least
	// stands on the front.
	Violation float64
	// SLO is, for each SLO metric both predicted and measured (positive) on this trial, the
	// two values, predicted first, by SLOKey.
	SLO map[string][2]float64
}

// SLOStanding is how the model's predictions of one SLO metric matched the measured ones.
type SLOStanding struct {
	Name  string `json:"name"`
	Pairs int    `json:"pairs"`
	// Ratio is the geometric mean of predicted over measured (0.7: the model's TTFT is
	// 0.7 times the measured one, so it calls configurations feasible that are not).
	Ratio float64 `json:"ratio"`
}

// ObjectiveStanding is how the model's predictions of one objective matched the measured
// trials that completed.
type ObjectiveStanding struct {
	Name string `json:"name"`
	// Pairs is how many complete trials have both a prediction and a measurement.
	Pairs int `json:"pairs"`
	// Ranks is Spearman's rank correlation of predicted and measured (1: the model orders
	// the trials exactly; -1: in reverse); NaN with fewer than standingMinPairs pairs.
	// OwnRanks is the same over the trials the sampler's own density proposed.
	Ranks    float64 `json:"ranks"`
	OwnRanks float64 `json:"own_ranks"`
	// Ratio is the geometric mean of predicted over measured (1.4: the model's values are
	// 1.4 times the measured ones); 0 when the values are not all of one sign.
	Ratio float64 `json:"ratio"`
	// Spread is the standard deviation of log(predicted/measured) about its mean: what is
	// left of the model's error once its bias is corrected (0.1: about 10%).
	Spread float64 `json:"spread"`
	// Trust is this objective's part of the prior's weight (0 to 1).
	Trust float64 `json:"trust"`
}

// Standing is how well the performance model has matched a study's measurements, and the
// weight the sampler gives its prior for it.
type Standing struct {
	Objectives []ObjectiveStanding `json:"objectives"`
	// SLOs are the SLO metrics' standings, by name (what the sampler's feasibility is
	// calibrated on); absent where no trial has both a predicted and a measured value.
	SLOs []SLOStanding `json:"slos,omitempty"`
	// Trials is how many measured trials have a prediction; FeasibleRight how many of them
	// the model classed right (predicted feasible and measured feasible, or both not).
	Trials        int `json:"trials"`
	FeasibleRight int `json:"feasible_right"`
	// FeasibilityTrust is feasibility's part of the prior's weight (0 to 1).
	FeasibilityTrust float64 `json:"feasibility_trust"`
	// ModelProposed and OwnProposed are how many of the trials the model and the sampler's
	// own density proposed; ModelOnFront and OwnOnFront how many of each are on the
	// measured front (complete, and no complete trial dominates them; while no trial is
	// complete, the one that missed its bounds by least).
	ModelProposed int `json:"model_proposed"`
	ModelOnFront  int `json:"model_on_front"`
	OwnProposed   int `json:"own_proposed"`
	OwnOnFront    int `json:"own_on_front"`
	// NoneFeasible is true while no measured trial is feasible: the front is then the one
	// trial that missed its bounds by least.
	NoneFeasible bool `json:"none_feasible,omitempty"`
	// ProposalTrust is the probability that a proposal of the model lands on the measured
	// front more often than one of the sampler's own density: each kind's rate has a
	// uniform prior (Beta(1, 1)) updated by its trials, so it is 0.5 before any.
	ProposalTrust float64 `json:"proposal_trust"`
	// Weight is the prior's weight, 0 to 1: the least of the objectives' trusts,
	// feasibility's and the proposals'. The sampler follows the model for that share of its
	// proposals (bar its exploration share); at 0 it proposes as with prior = false.
	Weight float64 `json:"weight"`
}

// The prior's weight is earned, per objective, for feasibility and for the proposals, from
// the measured trials. Before any, the objectives' parts are the model's head start (about
// 0.93), feasibility's is 1 (each class starts from an agreeing pseudo-count worth
// standingPseudo trials, so that one or two trials cannot take it away), and the
// proposals' is a coin (0.5), which the sampler settles by taking its first proposal from
// the model and its second from its own density.
const (
	standingMinPairs = 3
	standingPseudo   = 2.0
	// An objective's trust is the probability that the model's rank correlation with the
	// measurements is above 0 (that its ranking beats chance), from a normal prior on the
	// correlation's Fisher transform, atanh(ρ), centred on standingRankPrior (the model's
	// head start) with a standard deviation of 1, and the measured Spearman's, whose
	// transform has a variance of about 1.06/(n-3) over n pairs (Fieller, Hartley and
	// Pearson).
	standingRankPrior = 0.9
	// standingWeightFloor: a weight under it is 0 (a model that unlikely to help is not
	// followed at all, and the sampler runs exactly as with prior = false).
	standingWeightFloor = 0.01
	// A shrunk balanced accuracy of feasibility of standingFeasFull or more keeps its trust
	// at 1; standingFeasNone or less takes it to 0 (0.5 is a coin's). Each class (measured
	// feasible, measured not) starts from standingPseudo trials of its own.
	standingFeasFull = 0.8
	standingFeasNone = 0.55
	// standingPseudoRate is the rate the pseudo-counts stand for: a model right nine times
	// in ten.
	standingPseudoRate = 0.9
)

// NewStanding measures the model against the measured trials. names are the objectives, in
// the order of the pairs' values.
func NewStanding(names []string, pairs []StandingPair) Standing {
	s := Standing{Trials: len(pairs)}
	weight := 1.0
	for j, name := range names {
		var pred, meas, ownPred, ownMeas []float64
		for _, p := range pairs {
			if p.Predicted == nil || p.Measured == nil || j >= len(p.Predicted) || j >= len(p.Measured) {
				continue
			}
			a, b := p.Predicted[j], p.Measured[j]
			if math.IsNaN(a) || math.IsNaN(b) || math.IsInf(a, 0) || math.IsInf(b, 0) {
				continue
			}
			pred, meas = append(pred, a), append(meas, b)
			if p.Own {
				ownPred, ownMeas = append(ownPred, a), append(ownMeas, b)
			}
		}
		// The trust is the lesser of the ranks over every trial and over the sampler's
		// own: a model can order its own front right and the rest of the space wrong.
		// Before standingMinPairs pairs it is the prior's alone.
		trust := func(r float64, n int) float64 {
			prec := 1.0 // the prior's
			mean := math.Atanh(standingRankPrior)
			if n > 3 {
				data := float64(n-3) / 1.06
				z := math.Atanh(math.Max(-0.999, math.Min(0.999, r)))
				mean = (mean + data*z) / (prec + data)
				prec += data
			}
			// P(atanh(ρ) > 0) under the posterior.
			return 0.5 * math.Erfc(-mean*math.Sqrt(prec)/math.Sqrt2)
		}
		o := ObjectiveStanding{Name: name, Pairs: len(pred), Ranks: math.NaN(), OwnRanks: math.NaN(), Trust: trust(0, 0)}
		if len(pred) >= standingMinPairs {
			o.Ranks = spearman(pred, meas)
			o.Trust = trust(o.Ranks, len(pred))
		}
		if len(ownPred) >= standingMinPairs {
			o.OwnRanks = spearman(ownPred, ownMeas)
			o.Trust = math.Min(o.Trust, trust(o.OwnRanks, len(ownPred)))
		}
		o.Ratio, o.Spread = logRatio(pred, meas)
		weight = math.Min(weight, o.Trust)
		s.Objectives = append(s.Objectives, o)
	}
	s.SLOs = sloStandings(pairs)
	var pos, neg, tp, tn float64
	for _, p := range pairs {
		if p.PredictedFeasible == p.Feasible {
			s.FeasibleRight++
		}
		if p.Feasible {
			pos++
			if p.PredictedFeasible {
				tp++
			}
		} else {
			neg++
			if !p.PredictedFeasible {
				tn++
			}
		}
	}
	// Balanced accuracy, so that a model that calls everything infeasible is not right
	// merely because most of what was measured is.
	tpr := (tp + standingPseudoRate*standingPseudo) / (pos + standingPseudo)
	tnr := (tn + standingPseudoRate*standingPseudo) / (neg + standingPseudo)
	s.FeasibilityTrust = ramp((tpr+tnr)/2, standingFeasNone, standingFeasFull)
	s.proposals(pairs)
	s.Weight = math.Min(math.Min(weight, s.FeasibilityTrust), s.ProposalTrust)
	if s.Weight < standingWeightFloor {
		s.Weight = 0
	}
	return s
}

// sloStandings is the geometric mean ratio of predicted over measured per SLO metric.
func sloStandings(pairs []StandingPair) []SLOStanding {
	var pred, meas = map[string][]float64{}, map[string][]float64{}
	for _, p := range pairs {
		for k, v := range p.SLO {
			if v[0] > 0 && v[1] > 0 && !math.IsInf(v[0], 0) && !math.IsInf(v[1], 0) {
				pred[k], meas[k] = append(pred[k], v[0]), append(meas[k], v[1])
			}
		}
	}
	var out []SLOStanding
	for k := range pred {
		r, _ := logRatio(pred[k], meas[k])
		out = append(out, SLOStanding{Name: k, Pairs: len(pred[k]), Ratio: r})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// proposals counts how many of the model's proposals and of the sampler's own are on the
// measured front, and sets ProposalTrust: the chance that the model's rate of landing there
// is above the sampler's own, both rates with a uniform prior. This is the question the
// prior has to answer (does following it find the front sooner than not?), asked of the
// study's own trials; the rank correlations and the feasibility agreement are about the
// model's predictions, this is about its proposals. A model that ranks most of the space
// right and the front wrong loses here, and a model that is right keeps its share after
// two or three trials on the front. The front is that of constrained domination (Deb's
// rule, as the sampler ranks its trials): a feasible trial dominates every infeasible one,
// and of two infeasible ones the one that missed by less dominates. So a trial is on the
// front when it is complete, no complete trial dominates it, and no earlier one matched it
// in every objective (a configuration measured alike to one already tried, a knob that
// makes no difference there, adds nothing); and while no trial is complete, the first
// trial that missed by least is, unless it did not run at all. Without the second part the
// comparison stays a coin for as long as the study finds nothing feasible, which is where
// a model wrong about the SLO boundary spends the most trials. The pairs are in the order
// the trials were measured.
func (s *Standing) proposals(pairs []StandingPair) {
	var pts [][]float64
	var idx []int
	for i, p := range pairs {
		if p.Feasible && p.Measured != nil {
			pts, idx = append(pts, p.Measured), append(idx, i)
		}
	}
	onFront := make([]bool, len(pairs))
	for _, j := range NonDominated(pts) {
		onFront[idx[j]] = !slices.ContainsFunc(pts[:j], func(q []float64) bool { return slices.Equal(q, pts[j]) })
	}
	if len(pts) == 0 {
		least := -1
		for i, p := range pairs {
			if !p.Feasible && p.Violation < 1 && (least < 0 || p.Violation < pairs[least].Violation) {
				least = i
			}
		}
		if least >= 0 {
			onFront[least] = true
		}
		s.NoneFeasible = true
	}
	for i, p := range pairs {
		switch {
		case p.Model:
			s.ModelProposed++
			if onFront[i] {
				s.ModelOnFront++
			}
		case p.Own:
			s.OwnProposed++
			if onFront[i] {
				s.OwnOnFront++
			}
		}
	}
	s.ProposalTrust = betaGreater(1+float64(s.ModelOnFront), 1+float64(s.ModelProposed-s.ModelOnFront),
		1+float64(s.OwnOnFront), 1+float64(s.OwnProposed-s.OwnOnFront))
}

// betaGreater is P(X > Y) for independent X ~ Beta(a, b) and Y ~ Beta(c, d), a a whole
// number: the sum over i < a of B(c+i, b+d) / ((b+i) B(1+i, b) B(c, d)).
func betaGreater(a, b, c, d float64) float64 {
	lbeta := func(x, y float64) float64 {
		lx, _ := math.Lgamma(x)
		ly, _ := math.Lgamma(y)
		lxy, _ := math.Lgamma(x + y)
		return lx + ly - lxy
	}
	sum := 0.0
	for i := 0.0; i < a; i++ {
		sum += math.Exp(lbeta(c+i, b+d) - math.Log(b+i) - lbeta(1+i, b) - lbeta(c, d))
	}
	return math.Max(0, math.Min(1, sum))
}

// ramp is 0 at or below lo, 1 at or above hi, linear between.
func ramp(x, lo, hi float64) float64 {
	return math.Max(0, math.Min(1, (x-lo)/(hi-lo)))
}

// logRatio is the geometric mean of a/b and the spread of log(a/b) about its mean; 0, 0
// when any value is zero or the signs differ.
func logRatio(a, b []float64) (ratio, spread float64) {
	if len(a) == 0 {
		return 0, 0
	}
	var logs []float64
	for i := range a {
		if a[i] == 0 || b[i] == 0 || (a[i] > 0) != (b[i] > 0) {
			return 0, 0
		}
		logs = append(logs, math.Log(a[i]/b[i]))
	}
	mean := 0.0
	for _, l := range logs {
		mean += l
	}
	mean /= float64(len(logs))
	ss := 0.0
	for _, l := range logs {
		ss += (l - mean) * (l - mean)
	}
	return math.Exp(mean), math.Sqrt(ss / float64(len(logs)))
}

// spearman is the rank correlation of a and b (ties take their mean rank); 0 when either
// is constant.
func spearman(a, b []float64) float64 {
	ra, rb := rankOf(a), rankOf(b)
	n := float64(len(a))
	ma, mb := (n-1)/2, (n-1)/2
	var sab, saa, sbb float64
	for i := range ra {
		da, db := ra[i]-ma, rb[i]-mb
		sab += da * db
		saa += da * da
		sbb += db * db
	}
	if saa == 0 || sbb == 0 {
		return 0
	}
	return sab / math.Sqrt(saa*sbb)
}

// rankOf is each value's rank from 0, ties at their mean rank.
func rankOf(v []float64) []float64 {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(x, y int) bool { return v[idx[x]] < v[idx[y]] })
	r := make([]float64, len(v))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && v[idx[j+1]] == v[idx[i]] {
			j++
		}
		for k := i; k <= j; k++ {
			r[idx[k]] = float64(i+j) / 2
		}
		i = j + 1
	}
	return r
}

// TrialStanding is the model's standing over a study's measured trials that carry a
// prediction (those that completed, or were judged infeasible or pruned, within the budget).
// ok is false when none does.
func TrialStanding(trials []Trial, objectives []Objective) (Standing, bool) {
	names := make([]string, len(objectives))
	for i, o := range objectives {
		names[i] = o.Name
	}
	var pairs []StandingPair
	for i := range trials {
		if p, ok := TrialPair(&trials[i], objectives); ok {
			pairs = append(pairs, p)
		}
	}
	if len(pairs) == 0 {
		return Standing{}, false
	}
	return NewStanding(names, pairs), true
}

// TrialPair is a measured trial beside its prediction, the objectives in their order and in
// minimisation form; ok is false when the trial has no prediction or was not measured to a
// verdict.
func TrialPair(t *Trial, objectives []Objective) (StandingPair, bool) {
	if t.Predicted == nil || t.OutsideBudget {
		return StandingPair{}, false
	}
	switch t.State {
	case StateComplete, StateInfeasible, StatePruned:
	default:
		return StandingPair{}, false
	}
	p := StandingPair{PredictedFeasible: t.Predicted.Violation <= 0, Feasible: t.State == StateComplete,
		Own: t.Predicted.Proposal == ProposalSampler, Model: t.Predicted.Proposal == ProposalModel}
	if !p.Feasible {
		p.Violation = MissedBy(t.Violation)
	}
	p.Predicted = objectiveValues(t.Predicted.Objectives, objectives)
	if p.Feasible {
		p.Measured = objectiveValues(t.Objectives, objectives)
	}
	for k, v := range t.Predicted.SLO {
		if t.State == StatePruned {
			break // stopped early: its latencies cover part of the run
		}
		class, metric, ok := strings.Cut(k, " ")
		if !ok || t.Workloads[class] == nil {
			continue
		}
		if m, ok := t.Workloads[class].Metrics[metric]; ok && m > 0 && v > 0 {
			if p.SLO == nil {
				p.SLO = map[string][2]float64{}
			}
			p.SLO[k] = [2]float64{v, m}
		}
	}
	return p, true
}

// objectiveValues is the objectives of m in minimisation form; nil when one is missing.
func objectiveValues(m map[string]float64, objectives []Objective) []float64 {
	out := make([]float64, len(objectives))
	for i, o := range objectives {
		v, ok := m[o.Name]
		if !ok {
			return nil
		}
		if o.Maximize {
			v = -v
		}
		out[i] = v
	}
	return out
}

// String says the standing in one line: "model vs measured: tpot 1.4x high, ranks 0.95;
// feasibility 0 of 6 right; on the front: 1 of the model's 4 proposals, 2 of the sampler's
// 3; prior weight 0.10".
func (s Standing) String() string {
	var parts []string
	for _, o := range s.Objectives {
		if o.Pairs == 0 {
			continue
		}
		part := o.Name
		if o.Ratio != 0 {
			part += " " + ratioText(o.Ratio)
		}
		if !math.IsNaN(o.Ranks) {
			part += fmt.Sprintf(", ranks %.2f", o.Ranks)
		} else {
			part += fmt.Sprintf(" (%d measured)", o.Pairs)
		}
		parts = append(parts, part)
	}
	for _, o := range s.SLOs {
		parts = append(parts, o.Name+" "+ratioText(o.Ratio))
	}
	parts = append(parts, fmt.Sprintf("feasibility %d of %d right", s.FeasibleRight, s.Trials))
	if s.ModelProposed+s.OwnProposed > 0 {
		front := "on the front"
		if s.NoneFeasible {
			front = "closest miss (none feasible yet)"
		}
		parts = append(parts, fmt.Sprintf("%s: %d of the model's %d proposals, %d of the sampler's %d",
			front, s.ModelOnFront, s.ModelProposed, s.OwnOnFront, s.OwnProposed))
	}
	return fmt.Sprintf("model vs measured: %s; prior weight %.2f", strings.Join(parts, "; "), s.Weight)
}

// ratioText says a ratio of predicted over measured: "1.4x high", "1.3x low", "about right".
func ratioText(r float64) string {
	switch {
	case r >= 1.05:
		return fmt.Sprintf("%.2gx high", r)
	case r <= 1/1.05:
		return fmt.Sprintf("%.2gx low", 1/r)
	}
	return "about right"
}
