package report

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/frontier-llm/frontier/record"

	"github.com/frontier-llm/frontier/hw"
	"github.com/frontier-llm/frontier/workload"
)

// Analysis is what the human reports show about a study, computed once from its record.
type Analysis struct {
	Record *record.Study
	// SKU is the study's GPU SKU: the plan's, or the one NVML named.
	SKU string
	// Simulated is true when any number shown came from the performance model.
	Simulated bool
	// Counts is how many trials ended in each state, in a fixed order of states.
	Counts []StateCount
	// Front holds the trials of the Pareto front, best first by the first objective.
	Front []*record.Trial
	// Recommended is the knee of the front, or the configuration that costs least among those
	// that tie with it within noise (Recommend); nil when no trial met every SLO and gate.
	Recommended *Recommendation
	// TieGroups partitions the front into configurations that tie within noise (TieGroups).
	TieGroups [][]int
	// Problems groups the trials that did not make it, by what went wrong.
	Problems []Problem
	// Sensitivity holds, for each knob, what changing it alone did to the recommended
	// configuration.
	Sensitivity []KnobEffect
	GPUTime     GPUTime
	Provenance  ProvenanceSummary
}

// StateCount is the number of trials in one state.
type StateCount struct {
	State record.State `json:"state"`
	N     int          `json:"n"`
}

// Recommendation is the configuration a report recommends, and why.
type Recommendation struct {
	Trial int `json:"trial"`
	// Method names how the trial was chosen.
	Method string `json:"method"`
	// Why explains the choice in a sentence.
	Why        string             `json:"why"`
	Config     map[string]any     `json:"config"`
	Objectives map[string]float64 `json:"objectives"`
	// Normalized holds each objective scaled to [0, 1] over the front, 1 being the best.
	Normalized map[string]float64 `json:"normalized,omitempty"`
	// Distance is the normalised distance to the utopia point (every objective at its best).
	Distance  float64 `json:"distance"`
	Simulated bool    `json:"simulated"`
	// Knee is the front's knee; it differs from Trial when a configuration that ties with
	// the knee within noise costs less.
	Knee int `json:"knee"`
	// TieGroup lists the front's configurations that tie with the knee within noise on every
	// objective, the knee included.
	TieGroup []int `json:"tie_group,omitempty"`
	// Runs is how many measurements the recommendation rests on, and Confirmed whether the
	// configuration was measured again as the study asks.
	Runs      int  `json:"runs"`
	Confirmed bool `json:"confirmed"`
	// Uncertainty is each objective's mean over the runs with its 95% range.
	Uncertainty map[string]record.Estimate `json:"uncertainty,omitempty"`
	// Headroom is the margin to each SLO bound.
	Headroom []Headroom `json:"headroom,omitempty"`
}

// Problem is a group of trials that failed, were pruned or were infeasible for one reason.
type Problem struct {
	State record.State
	// Class is the launcher's failure class, or a short kind for other reasons.
	Class  string
	Reason string // one example reason
	Trials []int
	// Messages are the distinct engine messages of the group.
	Messages []string
}

// KnobEffect is what happened, in recorded trials, when one knob was changed and every other
// knob kept the recommended configuration's value.
type KnobEffect struct {
	Knob      string
	Base      any
	Neighbors []Neighbor
}

// Neighbor is one recorded trial that differs from the recommended configuration in one
// knob only.
type Neighbor struct {
	Value any
	Trial *record.Trial
	// Delta holds each objective's change relative to the recommended trial.
	Delta map[string]float64
	// Exact is false when other numeric knobs differ by up to 5%, or other knobs changed too.
	Exact bool
	// Also lists the other knobs this trial changed, when no trial changed this knob alone.
	Also []string
	// Estimated is true for a configuration no trial measured, whose numbers come from the
	// offline performance model (see AddEstimate).
	Estimated bool
	// WithinNoise marks the objectives on which the trial and the recommended configuration
	// tie: their 95% ranges overlap, so the change may be noise.
	WithinNoise map[string]bool
}

// NeedsEstimate lists the knobs that no recorded trial (nor an estimate already added)
// changes alone around the recommended configuration: those whose effect only an estimate
// can show.
func (a *Analysis) NeedsEstimate() []string {
	var out []string
	for _, e := range a.Sensitivity {
		exact := false
		for _, n := range e.Neighbors {
			if len(n.Also) == 0 {
				exact = true
			}
		}
		if !exact {
			out = append(out, e.Knob)
		}
	}
	return out
}

// AddEstimate adds to the sensitivity of a knob what the offline performance model estimates
// for the recommended configuration with that knob set to value: its objectives (nil when it
// would not run), and its state and reason as a study would have recorded them. Its changes
// are relative to base, the model's estimate of the recommended configuration itself: like is
// compared with like, so that the model's offset from the measurement never shows as the
// knob's effect. Estimates replace the near matches of that knob and are always marked as
// simulated.
func (a *Analysis) AddEstimate(knob string, value any, objectives map[string]float64, state record.State, reason string, base map[string]float64) {
	if a.Recommended == nil {
		return
	}
	rt := a.Record.Trial(a.Recommended.Trial)
	cfg := make(map[string]any, len(rt.Config))
	for k, v := range rt.Config {
		cfg[k] = v
	}
	cfg[knob] = value
	t := &record.Trial{Number: -1, State: state, Reason: reason, Config: cfg, Objectives: objectives, Simulated: true}
	n := Neighbor{Value: value, Trial: t, Exact: true, Estimated: true}
	if objectives != nil && base != nil {
		n.Delta = map[string]float64{}
		for _, o := range a.Record.Objectives {
			b, ok := base[o.Name]
			if v, has := objectives[o.Name]; has && ok && b != 0 {
				n.Delta[o.Name] = (v - b) / math.Abs(b)
			}
		}
	}
	for i := range a.Sensitivity {
		e := &a.Sensitivity[i]
		if e.Knob != knob {
			continue
		}
		e.Neighbors = slices.DeleteFunc(e.Neighbors, func(n Neighbor) bool { return len(n.Also) > 0 })
		e.Neighbors = append(e.Neighbors, n)
		a.Simulated = true
		return
	}
}

// GPUTime is the GPU time a study spent, and what early stopping and the pre-screen saved.
type GPUTime struct {
	Spent float64
	// Confirm is the part of Spent that went to confirmation runs of front configurations.
	Confirm float64
	Saved   float64
	// PreScreened counts the configurations the memory pre-screen rejected before any GPU
	// time was spent on them.
	PreScreened int
	ByState     map[record.State]float64
	Measured    float64 // spent on trials that completed their measurement
	// Simulated is true when some of these seconds are what the performance model estimated.
	Simulated bool
	// CPU is the part of Spent measured on engines that ran with no GPU: seconds of engine
	// time, not GPU-seconds. CPUOnly is true when every trial that ran did so.
	CPU     float64
	CPUOnly bool
}

// ProvenanceSummary says where and how the study was measured.
type ProvenanceSummary struct {
	FrontierVersions []string
	Engines          []string // "vllm 0.13.0"
	Models           []string // "name (hash)"
	GPUs             []string
	Drivers          []string
	Hosts            []string
	PlanHashes       []string
	// Search is the sampler and its seed.
	Search        string
	WorkloadSeeds []int64
	First, Last   time.Time
	// Command is the exact command of the recommended trial, with secrets redacted.
	Command []string
}

// stateOrder is the order states are listed in.
var stateOrder = []record.State{record.StateComplete, record.StateInfeasible, record.StatePruned,
	record.StateFailed, record.StateInterrupted, record.StateRunning}

// KneeMethod names the recommendation method, as reports and JSON spell it.
const KneeMethod = "knee: closest to the utopia point after normalising each objective over the front"

// Analyze computes what a report shows from a study record. It does not modify rec.
func Analyze(rec *record.Study) *Analysis {
	a := &Analysis{Record: rec, SKU: studySKU(rec)}
	counts := map[record.State]int{}
	a.Simulated = rec.Simulated
	for i := range rec.Trials {
		t := &rec.Trials[i]
		counts[t.State]++
		if t.Simulated || qualitySimulated(t) {
			a.Simulated = true
		}
	}
	for _, s := range stateOrder {
		if counts[s] > 0 {
			a.Counts = append(a.Counts, StateCount{s, counts[s]})
			delete(counts, s)
		}
	}
	for _, s := range slices.Sorted(maps.Keys(counts)) {
		a.Counts = append(a.Counts, StateCount{s, counts[s]})
	}
	a.Front = Front(rec)
	a.Recommended = Recommend(rec, a.Front)
	a.TieGroups = TieGroups(rec, a.Front)
	a.Problems = problems(rec)
	if a.Recommended != nil {
		a.Sensitivity = sensitivity(rec, rec.Trial(a.Recommended.Trial))
	}
	a.GPUTime = gpuTime(rec)
	a.Provenance = provenance(rec, a.Recommended)
	return a
}

func qualitySimulated(t *record.Trial) bool {
	for _, q := range t.Quality {
		if q.Simulated {
			return true
		}
	}
	return false
}

// studySKU is the study's SKU, or the catalog SKU matching the GPUs the trials ran on.
func studySKU(rec *record.Study) string {
	if rec.SKU != "" {
		return rec.SKU
	}
	for _, t := range rec.Trials {
		if t.Provenance == nil {
			continue
		}
		for _, n := range t.Provenance.Launch.GPUNames {
			if s, ok := hw.MatchSKU(n); ok {
				return s.Name
			}
		}
	}
	return ""
}

// Front returns the trials of the study's Pareto front, best first by the first objective:
// the front the study recorded, or, when none is recorded, the front of its complete trials.
func Front(rec *record.Study) []*record.Trial { return rec.FrontTrials() }

func hasObjectives(t *record.Trial, objs []record.Objective) bool {
	_, ok := t.ObjectiveVector(objs)
	return ok
}

// Knee returns the knee of a front: the trial closest to the utopia point after each
// objective is scaled to [0, 1] over the front (1 at its best value, 0 at its worst).
// Scaling makes objectives of different units comparable; the closest point to "best at
// everything" is the one that gives up the least on all objectives together, which is where
// the front bends. Ties go to the lower trial number. Knee returns nil for an empty front.
func Knee(objs []record.Objective, front []*record.Trial) *Recommendation {
	sc := scaleOf(objs, front)
	var best *Recommendation
	for _, t := range front {
		r := sc.recommendation(t)
		if best == nil || r.Distance < best.Distance-1e-12 ||
			(math.Abs(r.Distance-best.Distance) <= 1e-12 && r.Trial < best.Trial) {
			best = r
		}
	}
	if best == nil {
		return nil
	}
	best.Why = kneeWhy(objs, front, best)
	return best
}

// frontScale is each objective's range over a front, which scales a configuration's
// objectives to [0, 1] (1 at the front's best).
type frontScale struct {
	objs   []record.Objective
	lo, hi map[string]float64
}

// scaleOf is the range of each objective over front.
func scaleOf(objs []record.Objective, front []*record.Trial) frontScale {
	sc := frontScale{objs: objs, lo: map[string]float64{}, hi: map[string]float64{}}
	for _, o := range objs {
		sc.lo[o.Name], sc.hi[o.Name] = math.Inf(1), math.Inf(-1)
		for _, f := range front {
			v := objectiveOf(f)[o.Name]
			sc.lo[o.Name], sc.hi[o.Name] = math.Min(sc.lo[o.Name], v), math.Max(sc.hi[o.Name], v)
		}
	}
	return sc
}

// recommendation is t as a recommendation: its objectives scaled over the front and its
// distance to the utopia point.
func (sc frontScale) recommendation(t *record.Trial) *Recommendation {
	r := &Recommendation{Trial: t.Number, Method: KneeMethod, Config: t.Config,
		Objectives: objectiveOf(t), Normalized: map[string]float64{}, Simulated: t.Simulated}
	var d2 float64
	for _, o := range sc.objs {
		n := 1.0
		if span := sc.hi[o.Name] - sc.lo[o.Name]; span > 0 {
			n = (objectiveOf(t)[o.Name] - sc.lo[o.Name]) / span
			if !o.Maximize {
				n = 1 - n
			}
		}
		r.Normalized[o.Name] = n
		d2 += (1 - n) * (1 - n)
	}
	r.Distance = math.Sqrt(d2)
	return r
}

// distances is each front member's distance to the utopia point, by trial number.
func (sc frontScale) distances(front []*record.Trial) map[int]float64 {
	out := make(map[int]float64, len(front))
	for _, t := range front {
		out[t.Number] = sc.recommendation(t).Distance
	}
	return out
}

func kneeWhy(objs []record.Objective, front []*record.Trial, r *Recommendation) string {
	switch {
	case len(front) == 1:
		return fmt.Sprintf("trial %d is the only configuration on the front: the only one that met every SLO and gate without being beaten on every objective", r.Trial)
	case len(objs) == 1:
		return fmt.Sprintf("trial %d has the best %s of the configurations that met every SLO and gate", r.Trial, objs[0].Name)
	}
	var parts, best, worst []string
	for _, o := range objs {
		n := r.Normalized[o.Name]
		parts = append(parts, fmt.Sprintf("%s at %.0f%% of the front's range", o.Name, 100*n))
		switch {
		case n >= 1-1e-9:
			best = append(best, o.Name)
		case n <= 1e-9:
			worst = append(worst, o.Name)
		}
	}
	if len(best) > 0 && len(worst) > 0 {
		// An end of the front: nothing between the ends came closer to the utopia point.
		return fmt.Sprintf("trial %d is an end of the front, with its best %s and its worst %s; of the %d configurations on the front none between the ends came closer to the best at everything (%s; 100%% is the front's best), so no configuration trades the two better",
			r.Trial, strings.Join(best, " and "), strings.Join(worst, " and "), len(front), strings.Join(parts, ", "))
	}
	return fmt.Sprintf("of the %d configurations on the front, trial %d gives up the least on all objectives together (%s; 100%% is the front's best): moving along the front from it buys a little of one objective for a lot of another",
		len(front), r.Trial, strings.Join(parts, ", "))
}

var digits = regexp.MustCompile(`\b[0-9][0-9.]*(?:[eE][+-]?[0-9]+)?\b`)

// problems groups the trials that are not complete by state and failure class, else by what
// their first violation missed (kind, class, metric), else by their reason with the numbers
// taken out.
func problems(rec *record.Study) []Problem {
	type key struct {
		state record.State
		class string
	}
	groups := map[key]*Problem{}
	var order []key
	for i := range rec.Trials {
		t := &rec.Trials[i]
		if t.State == record.StateComplete || t.State == record.StateRunning || t.State == record.StateWaiting {
			continue
		}
		k := key{t.State, string(t.FailureClass)}
		if k.class == "" && len(t.Violations) > 0 {
			k.class = t.Violations[0].Group()
		}
		if k.class == "" {
			k.class = reasonKind(t.Reason)
		}
		g, ok := groups[k]
		if !ok {
			g = &Problem{State: t.State, Class: k.class, Reason: scrub(t.Reason)}
			groups[k] = g
			order = append(order, k)
		}
		g.Trials = append(g.Trials, t.Number)
		if m := scrub(strings.TrimSpace(t.EngineMessage)); m != "" && !slices.ContainsFunc(g.Messages, func(seen string) bool {
			return digits.ReplaceAllString(seen, "N") == digits.ReplaceAllString(m, "N")
		}) {
			g.Messages = append(g.Messages, m)
		}
	}
	out := make([]Problem, 0, len(order))
	for _, k := range order {
		out = append(out, *groups[k])
	}
	rank := func(s record.State) int {
		if i := slices.Index(stateOrder, s); i >= 0 {
			return i
		}
		return len(stateOrder)
	}
	slices.SortStableFunc(out, func(x, y Problem) int {
		if c := cmp.Compare(rank(x.State), rank(y.State)); c != 0 {
			return c
		}
		return cmp.Compare(len(y.Trials), len(x.Trials))
	})
	return out
}

// reasonKind is a reason with its numbers replaced, so that "ttft_p99_ms 646 > 600" and
// "ttft_p99_ms 675 > 600" fall in one group, cut at its first colon-separated detail.
func reasonKind(reason string) string {
	r := strings.TrimSpace(reason)
	if r == "" {
		return "no reason recorded"
	}
	r = digits.ReplaceAllString(r, "N")
	if len(r) > 80 {
		r = r[:80]
	}
	return r
}

// sensitivity finds, for each knob, the recorded trials that differ from the recommended
// trial in that knob alone. When no trial does, it takes the trials closest to that: the ones
// that also change the fewest other knobs (two at most), and says which.
func sensitivity(rec *record.Study, base *record.Trial) []KnobEffect {
	if base == nil {
		return nil
	}
	knobs := knobNames(rec)
	var out []KnobEffect
	for _, k := range knobs {
		e := KnobEffect{Knob: k, Base: base.Config[k]}
		fewest := 3
		for i := range rec.Trials {
			t := &rec.Trials[i]
			if t.Number == base.Number || t.State == record.StateRunning ||
				t.State == record.StateInterrupted || t.State == record.StateWaiting {
				continue
			}
			if nearValue(t.Config[k], base.Config[k]) {
				continue
			}
			var also []string
			exact := true
			for _, o := range knobs {
				if o == k {
					continue
				}
				if !nearValue(t.Config[o], base.Config[o]) {
					also = append(also, o)
				} else if !sameValue(t.Config[o], base.Config[o]) {
					exact = false
				}
			}
			if len(also) > fewest {
				continue
			}
			if len(also) < fewest {
				fewest = len(also)
				e.Neighbors = nil
			}
			n := Neighbor{Value: t.Config[k], Trial: t, Exact: exact && len(also) == 0, Also: also}
			if hasObjectives(t, rec.Objectives) {
				n.Delta, n.WithinNoise = map[string]float64{}, map[string]bool{}
				for _, o := range rec.Objectives {
					b := objectiveOf(base)[o.Name]
					if b != 0 {
						n.Delta[o.Name] = (objectiveOf(t)[o.Name] - b) / math.Abs(b)
					}
					be, ok1 := base.Uncertainty[o.Name]
					te, ok2 := t.Uncertainty[o.Name]
					n.WithinNoise[o.Name] = ok1 && ok2 && be.Overlaps(te)
				}
			}
			e.Neighbors = append(e.Neighbors, n)
		}
		slices.SortStableFunc(e.Neighbors, func(x, y Neighbor) int {
			fx, okx := knobFloat(x.Value)
			fy, oky := knobFloat(y.Value)
			if okx && oky {
				return cmp.Compare(fx, fy)
			}
			return cmp.Compare(knobString(x.Value), knobString(y.Value))
		})
		out = append(out, e)
	}
	return out
}

// knobNames is the study's knobs in declaration order, or the sorted names found in the
// trials' configurations when the record does not list them.
func knobNames(rec *record.Study) []string {
	if len(rec.Knobs) > 0 {
		return rec.Knobs
	}
	seen := map[string]bool{}
	for _, t := range rec.Trials {
		for k := range t.Config {
			seen[k] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

func gpuTime(rec *record.Study) GPUTime {
	g := GPUTime{ByState: map[record.State]float64{}}
	cpu, gpu := 0, 0
	for _, t := range rec.Trials {
		g.Spent += t.GPUSeconds + t.ConfirmGPUSeconds
		if t.CPUOnly {
			g.CPU += t.GPUSeconds + t.ConfirmGPUSeconds
			cpu++
		} else if t.GPUSeconds > 0 {
			gpu++
		}
		g.Confirm += t.ConfirmGPUSeconds
		g.Saved += t.SavedGPUSeconds
		g.ByState[t.State] += t.GPUSeconds + t.ConfirmGPUSeconds
		if t.PreScreened {
			g.PreScreened++
		}
		if t.Total != nil && (t.State == record.StateComplete || t.State == record.StateInfeasible) {
			g.Measured += t.GPUSeconds
		}
		if t.Simulated {
			g.Simulated = true
		}
	}
	g.Simulated = g.Simulated || rec.Simulated
	g.CPUOnly = cpu > 0 && gpu == 0
	return g
}

func provenance(rec *record.Study, r *Recommendation) ProvenanceSummary {
	var p ProvenanceSummary
	add := func(list *[]string, s string) {
		if s != "" && !slices.Contains(*list, s) {
			*list = append(*list, s)
		}
	}
	for _, t := range rec.Trials {
		pv := t.Provenance
		if pv == nil {
			continue
		}
		add(&p.FrontierVersions, pv.FrontierVersion)
		eng := strings.TrimSpace(pv.Launch.Engine + " " + pv.Launch.EngineVersion)
		add(&p.Engines, eng)
		m := pv.Model
		if pv.ModelHash != "" {
			m += " (" + pv.ModelHash + ")"
		}
		add(&p.Models, m)
		for _, g := range pv.Launch.GPUNames {
			add(&p.GPUs, g)
		}
		add(&p.Drivers, pv.Launch.Driver)
		add(&p.Hosts, pv.Launch.Host)
		add(&p.PlanHashes, pv.PlanHash)
		if !slices.Contains(p.WorkloadSeeds, pv.WorkloadSeed) {
			p.WorkloadSeeds = append(p.WorkloadSeeds, pv.WorkloadSeed)
		}
		if !pv.Started.IsZero() && (p.First.IsZero() || pv.Started.Before(p.First)) {
			p.First = pv.Started
		}
		if pv.Finished.After(p.Last) {
			p.Last = pv.Finished
		}
		if r != nil && t.Number == r.Trial {
			p.Command = redactArgv(pv.Launch.Command)
		}
	}
	if rec.Sampler != "" {
		p.Search = fmt.Sprintf("%s sampler, seed %d", rec.Sampler, rec.Seed)
		if rec.Confirm > 0 {
			p.Search += fmt.Sprintf(", %d confirmation run(s) per front configuration", rec.Confirm)
		}
	}
	if len(p.Engines) == 0 && rec.Engine != "" {
		p.Engines = []string{rec.Engine}
	}
	if len(p.PlanHashes) == 0 && rec.PlanHash != "" {
		p.PlanHashes = []string{rec.PlanHash}
	}
	return p
}

// sloValue returns the value of a bound's metric for a workload class of a trial ("total"
// names the total), and whether the trial measured it.
func sloValue(t *record.Trial, class, metric string) (float64, bool) {
	r := classResult(t, class)
	if r == nil {
		return 0, false
	}
	v, ok := r.Metrics[metric]
	return v, ok
}

// classResult is a trial's result for a workload class ("total" names the total); nil when
// the trial has none.
func classResult(t *record.Trial, class string) *workload.Result {
	if class == "total" {
		return t.Total
	}
	return t.Workloads[class]
}

// margin is the headroom of a value against an SLO bound, relative to the bound: positive
// when the bound is met, negative when it is missed.
func margin(b workload.Bound, v float64) float64 {
	d := b.Value - v
	if b.AtLeast {
		d = -d
	}
	if b.Value == 0 {
		return d
	}
	return d / math.Abs(b.Value)
}

// capacity returns a trial's measured capacity at its SLO in req/s (the total's, or the
// smallest class capacity), and whether it was measured.
func capacity(t *record.Trial) (float64, bool) {
	if t.Total != nil {
		if v, ok := t.Total.Metrics[workload.CapacityRPS]; ok {
			return v, true
		}
	}
	best, found := math.Inf(1), false
	for _, r := range t.Workloads {
		if r == nil {
			continue
		}
		if v, ok := r.Metrics[workload.CapacityRPS]; ok {
			best, found = math.Min(best, v), true
		}
	}
	return best, found
}

// gpus is how many GPUs a trial used: as recorded, or tensor x pipeline x data parallel.
func gpus(t *record.Trial) int {
	if t.GPUs > 0 {
		return t.GPUs
	}
	n := 1
	for _, k := range []string{"tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size"} {
		if f, ok := knobFloat(t.Config[k]); ok && f >= 1 {
			n *= int(f)
		}
	}
	return n
}

// objectiveOf returns a trial's objectives averaged over its first run and its confirmation
// runs, as the study ranks them.
func objectiveOf(t *record.Trial) map[string]float64 { return t.MeanObjectives() }
