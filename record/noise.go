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
}

// HalfWidth is the larger distance from the mean to an end of the range.
func (e Estimate) HalfWidth() float64 { return math.Max(e.Mean-e.Lo, e.Hi-e.Mean) }

// Overlaps reports whether two estimates' ranges share a value: the two configurations tie
// on this objective within noise.
func (e Estimate) Overlaps(o Estimate) bool { return e.Lo <= o.Hi && o.Lo <= e.Hi }

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

// RunNoise is, per objective, the relative run-to-run standard deviation of the study's
// measurements, pooled over every trial measured more than once, and the degrees of freedom
// it rests on. Configurations of one study are measured the same way on the same engine, so
// their runs scatter alike in relative terms; the pooled figure is what a configuration
// measured once is taken to scatter by.
func (s *Study) RunNoise() (rel map[string]float64, dof map[string]int) {
	rel, dof = map[string]float64{}, map[string]int{}
	for _, o := range s.Objectives {
		var ss float64
		n := 0
		for i := range s.Trials {
			vals, _, _ := s.Trials[i].runValues(o.Name)
			if len(vals) < 2 {
				continue
			}
			m := meanOf(vals)
			if m == 0 {
				continue
			}
			for _, v := range vals {
				d := (v - m) / m
				ss += d * d
			}
			n += len(vals) - 1
		}
		if n > 0 {
			rel[o.Name], dof[o.Name] = math.Sqrt(ss/float64(n)), n
		}
	}
	return rel, dof
}

// Estimates computes, for every trial with all its objectives, each objective's mean over its
// runs with a 95% range. Two sources of uncertainty are weighed and the larger is kept on
// each side of the mean:
//
//   - run to run: the study's pooled relative spread of repeated runs (RunNoise), scaled to the
//     trial's mean, times Student's t for the pool's degrees of freedom, over √runs;
//   - within a run: for objectives read from percentiles or means of the requests, the
//     distance from each run's value to the ends of its own sampling interval (order
//     statistics for percentiles, see workload.PercentileCI), averaged over the runs, over
//     √runs.
//
// A study whose runs never differ (the offline estimator) has no run-to-run part.
func (s *Study) Estimates() map[int]map[string]Estimate {
	rel, dof := s.RunNoise()
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
			est[o.Name] = estimateOf(vals, lo, hi, rel[o.Name], dof[o.Name])
		}
		if est != nil {
			out[t.Number] = est
		}
	}
	return out
}

// estimateOf is one objective's Estimate from its runs' values and sampling intervals, given
// the study's pooled relative run-to-run deviation and its degrees of freedom.
func estimateOf(vals, lo, hi []float64, rel float64, dof int) Estimate {
	n := float64(len(vals))
	m := meanOf(vals)
	run := 0.0
	if dof > 0 {
		run = studentT95(dof) * rel * math.Abs(m) / math.Sqrt(n)
	}
	var below, above float64
	k := 0
	for i, v := range vals {
		if math.IsNaN(lo[i]) || math.IsNaN(hi[i]) {
			continue
		}
		below += math.Max(0, v-lo[i])
		above += math.Max(0, hi[i]-v)
		k++
	}
	if k > 0 {
		below, above = below/float64(k)/math.Sqrt(n), above/float64(k)/math.Sqrt(n)
	}
	return Estimate{Mean: m, Lo: m - math.Max(run, below), Hi: m + math.Max(run, above), Runs: len(vals)}
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

// oriented is an estimate's range in minimisation form (see Orient): [lo, hi] with smaller
// better.
func oriented(e Estimate, maximize bool) (lo, hi float64) {
	if maximize {
		return -e.Hi, -e.Lo
	}
	return e.Lo, e.Hi
}

// DominatesBeyondNoise reports whether configuration a is better than b beyond their
// uncertainty: clearly better on some objective (a's whole range better than b's) and
// clearly worse on none. Where the ranges of an objective overlap the two tie on it.
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
// objective's ranges overlap.
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
