package record

import (
	"math"
	"slices"
)

// Estimate is one objective of a configuration with its uncertainty: the mean over the
// configuration's runs and a range [Lo, Hi] that holds the configuration's true value with
// about 95% confidence (see Study.Estimates for how it is made).
type Estimate struct {
	Mean float64 `json:"mean"`
	Lo   float64 `json:"lo"`
	Hi   float64 `json:"hi"`
	// Runs is how many measurements the estimate rests on: the first run and its
	// confirmations.
	Runs int `json:"runs"`
	// Level is the mean with the common effect of each run's workload draw taken out (every
	// configuration's first run measures one draw of requests, every first confirmation
	// another: see Study.RunNoise), and [CompareLo, CompareHi] its 95% range for comparing
	// configurations of the study with each other, which share those draws.
	Level     float64 `json:"level"`
	CompareLo float64 `json:"compare_lo"`
	CompareHi float64 `json:"compare_hi"`
}

// HalfWidth is the larger distance from the mean to an end of the range.
func (e Estimate) HalfWidth() float64 { return math.Max(e.Mean-e.Lo, e.Hi-e.Mean) }

// Overlaps reports whether two estimates' comparison ranges share a value: the two
// configurations of one study tie on this objective within noise.
func (e Estimate) Overlaps(o Estimate) bool {
	return e.CompareLo <= o.CompareHi && o.CompareLo <= e.CompareHi
}

// Runs is how many times the trial's configuration was measured: its first run and its
// confirmation runs.
func (t *Trial) Runs() int { return 1 + len(t.Confirmations) }

// IsConfirmed reports whether the trial was measured again as many times as the study asks
// (at least once): its numbers rest on more than one run.
func (s *Study) IsConfirmed(t *Trial) bool {
	return len(t.Confirmations) >= max(1, s.Confirm)
}

// runValues is one objective's value in each of the trial's runs, and, where the runs recorded
// one, the sampling interval of that value in the same run (NaN ends where a run has none).
func (t *Trial) runValues(name string) (vals []float64, lo, hi []float64) {
	add := func(objs map[string]float64, ci map[string][2]float64) {
		v, ok := objs[name]
		if !ok || math.IsNaN(v) {
			return
		}
		vals = append(vals, v)
		if iv, ok := ci[name]; ok {
			lo, hi = append(lo, iv[0]), append(hi, iv[1])
		} else {
			lo, hi = append(lo, math.NaN()), append(hi, math.NaN())
		}
	}
	add(t.Objectives, t.ObjectiveCI)
	for i, c := range t.Confirmations {
		var ci map[string][2]float64
		if i < len(t.ConfirmationCI) {
			ci = t.ConfirmationCI[i]
		}
		add(c, ci)
	}
	return vals, lo, hi
}

// RunNoise describes how one objective's runs scatter in a study. Every configuration's
// first run measures the same draw of requests (the workload seed), every first confirmation
// another draw, and so on: a draw that happens to hold longer replies moves every
// configuration alike. Draw holds, per run index, that common relative effect. Rel is the
// typical relative standard deviation of what is left, a configuration's own scatter: a
// robust pool over the trials measured more than once (the median of their own variances,
// rescaled to a variance), which a configuration's own runs then refine (Study.Estimates).
// Total adds the draws' own scatter (the variance of Draw): what another run, with another
// draw, may read. PriorDOF is the weight, in degrees of freedom, the pool has against a
// configuration's own runs.
type RunNoise struct {
	Draw       []float64
	Rel, Total float64
	PriorDOF   int
}

// priorDOF is the most weight, in degrees of freedom, a study's pooled scatter gets against a
// configuration's own runs: as much as four runs of its own. Configurations near saturation
// scatter far more than the others (a burst that fills the queue in one draw and not in the
// next); a pool that outweighed their own runs would hide that, one that weighed nothing
// would trust two runs' spread alone. Set by judgement, not fitted.
const priorDOF = 4

// RunNoise is each objective's RunNoise, pooled over every trial measured more than once.
func (s *Study) RunNoise() map[string]RunNoise {
	out := map[string]RunNoise{}
	for _, o := range s.Objectives {
		var dev [][]float64 // per trial measured more than once: each run's relative deviation
		for i := range s.Trials {
			if d := relDeviations(s.Trials[i].runValues(o.Name)); d != nil {
				dev = append(dev, d)
			}
		}
		if len(dev) == 0 {
			continue
		}
		n := RunNoise{Draw: drawEffects(dev)}
		dof := 0
		for _, d := range dev {
			dof += len(d) - 1
		}
		if dof-(len(n.Draw)-1) <= 0 {
			// As many draws as degrees of freedom: the draws' effect cannot be told from
			// the configurations' own scatter, which is then taken as all of it.
			n.Draw = nil
		} else {
			dof -= len(n.Draw) - 1
		}
		var own []float64
		var ks []int
		for _, d := range dev {
			v, k := ownVariance(d, n.Draw)
			own, ks = append(own, v), append(ks, k)
		}
		n.Rel = robustPool(own, ks)
		// Another run is another draw: its common effect adds its own variance, the draws'
		// scatter about their mean (zero when they cannot be told apart, all of it in Rel).
		n.Total = n.Rel
		if len(n.Draw) > 1 {
			var ss float64
			for _, d := range n.Draw {
				ss += d * d
			}
			n.Total = math.Sqrt(n.Rel*n.Rel + ss/float64(len(n.Draw)-1))
		}
		n.PriorDOF = min(priorDOF, dof)
		out[o.Name] = n
	}
	return out
}

// relDeviations is each run's relative deviation from the runs' mean; nil for fewer than two
// runs or a zero mean.
func relDeviations(vals, _, _ []float64) []float64 {
	m := meanOf(vals)
	if len(vals) < 2 || m == 0 {
		return nil
	}
	d := make([]float64, len(vals))
	for r, v := range vals {
		d[r] = (v - m) / m
	}
	return d
}

// drawEffects is, per run index, the median relative deviation of the trials' runs of that
// index: the common effect of that run's draw of requests (a median, so that a configuration
// that scatters wildly does not lend its scatter to the draw).
func drawEffects(dev [][]float64) []float64 {
	var byRun [][]float64
	for _, d := range dev {
		for r, x := range d {
			for len(byRun) <= r {
				byRun = append(byRun, nil)
			}
			byRun[r] = append(byRun[r], x)
		}
	}
	out := make([]float64, len(byRun))
	for r, xs := range byRun {
		out[r] = median(xs)
	}
	return out
}

// median is the middle of xs (the mean of the two middle values for an even count).
func median(xs []float64) float64 {
	v := slices.Clone(xs)
	slices.Sort(v)
	if len(v)%2 == 0 {
		return (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return v[len(v)/2]
}

// ownVariance is the relative variance of one trial's runs about its mean, each run's draw
// effect taken out (draw nil: left in), and its degrees of freedom.
func ownVariance(d, draw []float64) (float64, int) {
	var ss float64
	for r, x := range d {
		if r < len(draw) {
			x -= draw[r]
		}
		ss += x * x
	}
	return ss / float64(len(d)-1), len(d) - 1
}

// robustPool is the standard deviation that the median of several sample variances, each
// with its degrees of freedom, points to: the median over the median of a chi-square over
// its degrees of freedom (Wilson-Hilferty: (1 - 2/(9k))^3, 0.47 for one). A few
// configurations that scatter wildly do not set the figure for all the others.
func robustPool(vars []float64, ks []int) float64 {
	k := slices.Clone(ks)
	slices.Sort(k)
	med := median(vars)
	kk := float64(k[len(k)/2])
	f := math.Pow(1-2/(9*kk), 3)
	return math.Sqrt(med / f)
}

// Estimates computes, for every trial with all its objectives, each objective's mean over its
// runs with two 95% ranges: [Lo, Hi], what another run may read, and [CompareLo, CompareHi],
// for comparing it with the study's other configurations. Two sources of uncertainty are
// weighed and the larger is kept on each side:
//
//   - run to run: the configuration's relative scatter, its own runs' variance moderated by
//     the study's pool (RunNoise): (PriorDOF × pool² + k × own²) / (PriorDOF + k) for k
//     degrees of freedom of its own; times Student's t for PriorDOF + k degrees of freedom,
//     over √runs, it is h, and the range is the mean times exp(±h) (a ratio up and down);
//     for [Lo, Hi] the draws' variance (RunNoise.Total) is added, for the comparison not;
//   - within a run: for objectives read from percentiles or means of the requests, the
//     distance from each run's value to the ends of its own sampling interval (order
//     statistics for percentiles, see workload.PercentileCI), averaged over the runs, over
//     √runs.
//
// A study whose runs never differ (the offline estimator) has no run-to-run part.
func (s *Study) Estimates() map[int]map[string]Estimate {
	noise := s.RunNoise()
	out := map[int]map[string]Estimate{}
	for i := range s.Trials {
		t := &s.Trials[i]
		est := map[string]Estimate{}
		for _, o := range s.Objectives {
			vals, lo, hi := t.runValues(o.Name)
			if len(vals) == 0 {
				est = nil
				break
			}
			est[o.Name] = estimateOf(vals, lo, hi, noise[o.Name])
		}
		if est != nil {
			out[t.Number] = est
		}
	}
	return out
}

// moderated is a configuration's relative standard deviation and its degrees of freedom: the
// pool's (sd over prior degrees of freedom) refined by the configuration's own deviations d.
func moderated(pool float64, prior int, d, draw []float64) (float64, int) {
	if d == nil {
		return pool, prior
	}
	own, k := ownVariance(d, draw)
	return math.Sqrt((float64(prior)*pool*pool + float64(k)*own) / float64(prior+k)), prior + k
}

// estimateOf is one objective's Estimate from its runs' values and sampling intervals, given
// how the study's runs scatter.
func estimateOf(vals, lo, hi []float64, n RunNoise) Estimate {
	k := float64(len(vals))
	m := meanOf(vals)
	// The level: each run's value with its draw's common effect taken out.
	var level float64
	for r, v := range vals {
		d := 0.0
		if r < len(n.Draw) && n.Draw[r] > -1 {
			d = n.Draw[r]
		}
		level += v / (1 + d)
	}
	level /= k
	// The run-to-run part is a factor: a relative scatter widens a range by the same ratio
	// up and down (exp(±h)), so a large one never reaches zero or below.
	var run, cmpRun float64 // half-widths of log(value)
	if n.PriorDOF > 0 {
		d := relDeviations(vals, nil, nil)
		sdOwn, dof := moderated(n.Rel, n.PriorDOF, d, n.Draw)
		sdTotal := math.Sqrt(sdOwn*sdOwn + n.Total*n.Total - n.Rel*n.Rel)
		run = studentT95(dof) * sdTotal / math.Sqrt(k)
		cmpRun = studentT95(dof) * sdOwn / math.Sqrt(k)
	}
	var below, above float64
	j := 0
	for i, v := range vals {
		if math.IsNaN(lo[i]) || math.IsNaN(hi[i]) {
			continue
		}
		below += math.Max(0, v-lo[i])
		above += math.Max(0, hi[i]-v)
		j++
	}
	if j > 0 {
		below, above = below/float64(j)/math.Sqrt(k), above/float64(j)/math.Sqrt(k)
	}
	down := func(x, h float64) float64 { return math.Abs(x) * (1 - math.Exp(-h)) }
	up := func(x, h float64) float64 { return math.Abs(x) * (math.Exp(h) - 1) }
	return Estimate{Mean: m, Lo: m - math.Max(down(m, run), below), Hi: m + math.Max(up(m, run), above), Runs: len(vals),
		Level: level, CompareLo: level - math.Max(down(level, cmpRun), below), CompareHi: level + math.Max(up(level, cmpRun), above)}
}

// studentT95 is the two-sided 95% quantile of Student's t with dof degrees of freedom.
func studentT95(dof int) float64 {
	table := []float64{0, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
		2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086}
	switch {
	case dof <= 0:
		return math.Inf(1)
	case dof < len(table):
		return table[dof]
	case dof < 30:
		return 2.06
	case dof < 60:
		return 2.02
	}
	return 1.96
}

func meanOf(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// oriented is an estimate's comparison range in minimisation form (see Orient): [lo, hi]
// with smaller better.
func oriented(e Estimate, maximize bool) (lo, hi float64) {
	if maximize {
		return -e.CompareHi, -e.CompareLo
	}
	return e.CompareLo, e.CompareHi
}

// DominatesBeyondNoise reports whether configuration a is better than b beyond their
// uncertainty: clearly better on some objective (a's whole comparison range better than
// b's) and clearly worse on none. Where the ranges of an objective overlap the two tie on it.
func DominatesBeyondNoise(a, b map[string]Estimate, objs []Objective) bool {
	better := false
	for _, o := range objs {
		alo, ahi := oriented(a[o.Name], o.Maximize)
		blo, bhi := oriented(b[o.Name], o.Maximize)
		if alo > bhi {
			return false
		}
		if ahi < blo {
			better = true
		}
	}
	return better
}

// TiesWithinNoise reports whether two configurations tie on every objective: each
// objective's comparison ranges overlap.
func TiesWithinNoise(a, b map[string]Estimate, objs []Objective) bool {
	for _, o := range objs {
		if !a[o.Name].Overlaps(b[o.Name]) {
			return false
		}
	}
	return true
}

// noiseFront returns the indices (into est) of the estimates that no other dominates beyond
// noise, in order; nil when every one is (a cycle of noisy comparisons), for the caller to
// fall back on plain dominance.
func noiseFront(est []map[string]Estimate, objs []Objective) []int {
	var front []int
	for i := range est {
		dominated := slices.ContainsFunc(est, func(o map[string]Estimate) bool {
			return DominatesBeyondNoise(o, est[i], objs)
		})
		if !dominated {
			front = append(front, i)
		}
	}
	return front
}
