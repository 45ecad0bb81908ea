package report

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/frontier-llm/frontier/hw"
	"github.com/frontier-llm/frontier/record"
)

// Headroom is the recommended configuration's margin to one SLO bound: how far its value is
// from the bound, and whether the value's 95% interval reaches past it (the margin is then
// inside the noise: another run may miss).
type Headroom struct {
	Class  string  `json:"class"`
	Metric string  `json:"metric"`
	Bound  float64 `json:"bound"`
	// AtLeast is true for a bound the value must reach (goodput), false for a ceiling.
	AtLeast bool    `json:"at_least,omitempty"`
	Value   float64 `json:"value"`
	// Lo and Hi are the value's 95% interval over the run's requests, where it has one.
	Lo float64 `json:"lo,omitempty"`
	Hi float64 `json:"hi,omitempty"`
	// Margin is the headroom relative to the bound: positive when met.
	Margin float64 `json:"margin"`
	// InsideNoise is true when the interval reaches the bound.
	InsideNoise bool `json:"inside_noise"`
}

// Recommend returns the configuration a report recommends from a study's front: the knee of
// the front (Knee), or, when other front members tie with the knee within noise on every
// objective (record.TiesWithinNoise), the member of that tie group that costs least: fewest
// GPUs, then least GPU memory reserved, then the knee's own distance. It returns nil for an
// empty front.
func Recommend(rec *record.Study, front []*record.Trial) *Recommendation {
	knee := Knee(rec.Objectives, front)
	if knee == nil {
		return nil
	}
	kt := rec.Trial(knee.Trial)
	group := tiedWith(rec, kt, front)
	sc := scaleOf(rec.Objectives, front)
	dist := sc.distances(front)
	pick := slices.MinFunc(group, func(x, y *record.Trial) int {
		if c := compareCost(rec, x, y); c != 0 {
			return c
		}
		return cmp.Compare(dist[x.Number], dist[y.Number])
	})
	r := knee
	if pick.Number != knee.Trial {
		r = sc.recommendation(pick)
		r.Method = TieMethod
	}
	r.Knee = knee.Trial
	for _, t := range group {
		r.TieGroup = append(r.TieGroup, t.Number)
	}
	slices.Sort(r.TieGroup)
	if len(group) > 1 {
		r.Why = tieWhy(rec, group, kt, pick)
	}
	t := rec.Trial(r.Trial)
	r.Runs, r.Confirmed, r.Uncertainty = t.Runs(), rec.IsConfirmed(t), t.Uncertainty
	r.Headroom = headroom(rec, t)
	return r
}

// TieMethod names the recommendation method when the knee ties with other configurations.
const TieMethod = "least cost among the configurations that tie with the knee within noise"

// tiedWith is the front members that tie with t within noise on every objective, t first.
func tiedWith(rec *record.Study, t *record.Trial, front []*record.Trial) []*record.Trial {
	group := []*record.Trial{t}
	if t.Uncertainty == nil {
		return group
	}
	for _, o := range front {
		if o.Number != t.Number && o.Uncertainty != nil && record.TiesWithinNoise(t.Uncertainty, o.Uncertainty, rec.Objectives) {
			group = append(group, o)
		}
	}
	return group
}

// TieGroups partitions a front into groups of configurations that tie within noise: the
// member closest to the utopia point anchors the first group, with every member that ties
// with it; the closest member left anchors the next, and so on. Groups list trial numbers in
// order; a member that ties with nothing is a group of its own.
func TieGroups(rec *record.Study, front []*record.Trial) [][]int {
	dist := scaleOf(rec.Objectives, front).distances(front)
	left := slices.Clone(front)
	slices.SortStableFunc(left, func(x, y *record.Trial) int { return cmp.Compare(dist[x.Number], dist[y.Number]) })
	var out [][]int
	for len(left) > 0 {
		g := tiedWith(rec, left[0], left)
		var nums []int
		for _, t := range g {
			nums = append(nums, t.Number)
			left = slices.DeleteFunc(left, func(o *record.Trial) bool { return o.Number == t.Number })
		}
		slices.Sort(nums)
		out = append(out, nums)
	}
	return out
}

// gpuMemoryGiB is the GPU memory a configuration reserves: its GPUs times the SKU's memory
// times gpu_memory_utilization (vLLM's default 0.9 when the trial did not set it); the SKU
// is the trial's sku knob or the study's.
func gpuMemoryGiB(rec *record.Study, t *record.Trial) float64 {
	util := 0.9
	if f, ok := knobFloat(t.Config["gpu_memory_utilization"]); ok {
		util = f
	}
	sku := rec.SKU
	if s, ok := t.Config[record.SKUKnob].(string); ok {
		sku = s
	}
	mem := 1.0
	if s, ok := hw.LookupSKU(sku); ok && s.MemoryGiB > 0 {
		mem = s.MemoryGiB
	}
	return float64(gpus(t)) * mem * util
}

// compareCost orders two configurations by what they cost: GPUs, then GPU memory reserved.
func compareCost(rec *record.Study, x, y *record.Trial) int {
	if c := cmp.Compare(gpus(x), gpus(y)); c != 0 {
		return c
	}
	return cmp.Compare(math.Round(gpuMemoryGiB(rec, x)), math.Round(gpuMemoryGiB(rec, y)))
}

// tieWhy explains a recommendation made inside a tie group.
func tieWhy(rec *record.Study, group []*record.Trial, knee, pick *record.Trial) string {
	var ns []int
	for _, t := range group {
		ns = append(ns, t.Number)
	}
	slices.Sort(ns)
	var nums []string
	for _, n := range ns {
		nums = append(nums, fmt.Sprint(n))
	}
	head := fmt.Sprintf("trials %s tie within noise on every objective (compared on the same draws of requests, their 95%% ranges overlap), so the knee, trial %d, is not better than the others beyond what another run could change",
		strings.Join(nums, ", "), knee.Number)
	more := "; more confirmation runs (the study's confirm) or more requests per class narrow the ranges and may tell them apart"
	if pick.Number == knee.Number {
		return head + fmt.Sprintf("; none of them costs less than trial %d (%s), so the knee is kept", knee.Number, costText(rec, knee)) + more
	}
	return head + fmt.Sprintf("; trial %d is recommended because it costs least: %s, against %s for the knee", pick.Number, costText(rec, pick), costText(rec, knee)) + more
}

// costText says what a configuration costs, as compareCost weighs it.
func costText(rec *record.Study, t *record.Trial) string {
	unit := "GPUs"
	if gpus(t) == 1 {
		unit = "GPU"
	}
	return fmt.Sprintf("%d %s, %.0f GiB of GPU memory", gpus(t), unit, gpuMemoryGiB(rec, t))
}

// headroom is a trial's margin to each SLO bound of the study, classes in name order, with
// the first run's interval of the value where it has one.
func headroom(rec *record.Study, t *record.Trial) []Headroom {
	var out []Headroom
	for _, class := range slices.Sorted(maps.Keys(rec.SLOs)) {
		for _, b := range rec.SLOs[class] {
			v, ok := sloValue(t, class, b.Metric)
			if !ok {
				continue
			}
			h := Headroom{Class: class, Metric: b.Metric, Bound: b.Value, AtLeast: b.AtLeast, Value: v, Margin: margin(b, v)}
			if ci, ok := sloCI(t, class, b.Metric); ok {
				h.Lo, h.Hi = ci[0], ci[1]
				far := ci[1]
				if b.AtLeast {
					far = ci[0]
				}
				h.InsideNoise = !b.Met(far)
			}
			out = append(out, h)
		}
	}
	return out
}

// sloCI is the 95% interval of a class's metric in a trial's first run, where it has one.
func sloCI(t *record.Trial, class, metric string) ([2]float64, bool) {
	r := classResult(t, class)
	if r == nil {
		return [2]float64{}, false
	}
	ci, ok := r.CI[metric]
	return ci, ok
}
