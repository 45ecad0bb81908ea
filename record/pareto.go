package record

import (
	"cmp"
	"math"
	"slices"
	"sort"
)

// Points handed to the functions below are in minimisation form: an objective to maximise
// is negated first (see Orient), so that smaller is better in every coordinate.

// Dominates reports whether a is at least as good as b everywhere and better somewhere.
func Dominates(a, b []float64) bool {
	better := false
	for i := range a {
		if a[i] > b[i] {
			return false
		}
		if a[i] < b[i] {
			better = true
		}
	}
	return better
}

// NonDominated returns the indices of the points that no other point dominates, in order.
// Identical points are all kept.
func NonDominated(points [][]float64) []int {
	var front []int
	for i, p := range points {
		dominated := false
		for j, q := range points {
			if i != j && Dominates(q, p) {
				dominated = true
				break
			}
		}
		if !dominated {
			front = append(front, i)
		}
	}
	return front
}

// Orient converts objective values to minimisation form.
func Orient(values []float64, maximize []bool) []float64 {
	out := make([]float64, len(values))
	for i, v := range values {
		if maximize[i] {
			v = -v
		}
		out[i] = v
	}
	return out
}

// Ranks is each point's non-domination rank: 0 for the front, 1 for the front of the rest,
// and so on.
func Ranks(points [][]float64) []int {
	rank := make([]int, len(points))
	left := make([]int, len(points))
	for i := range left {
		left[i] = i
	}
	for r := 0; len(left) > 0; r++ {
		sub := make([][]float64, len(left))
		for i, j := range left {
			sub[i] = points[j]
		}
		front := NonDominated(sub)
		inFront := make(map[int]bool, len(front))
		for _, f := range front {
			inFront[f] = true
			rank[left[f]] = r
		}
		var rest []int
		for i, j := range left {
			if !inFront[i] {
				rest = append(rest, j)
			}
		}
		left = rest
	}
	return rank
}

// Hypervolume is the volume of the region dominated by points (in minimisation form) and
// bounded by ref: the usual measure of how good a Pareto front is. Points that do not
// dominate ref contribute nothing.
func Hypervolume(points [][]float64, ref []float64) float64 {
	var kept [][]float64
	for _, p := range points {
		inside := true
		for i := range p {
			if p[i] >= ref[i] {
				inside = false
				break
			}
		}
		if inside {
			kept = append(kept, p)
		}
	}
	return hv(kept, ref)
}

// hv computes the hypervolume by slicing along the last coordinate (HSO); exact, and fast
// enough for the fronts of a study (tens of points, a handful of objectives).
func hv(points [][]float64, ref []float64) float64 {
	if len(points) == 0 {
		return 0
	}
	d := len(ref)
	if d == 1 {
		best := ref[0]
		for _, p := range points {
			best = math.Min(best, p[0])
		}
		return ref[0] - best
	}
	if d == 2 {
		ps := make([][]float64, len(points))
		copy(ps, points)
		sort.Slice(ps, func(i, j int) bool {
			if ps[i][0] != ps[j][0] {
				return ps[i][0] < ps[j][0]
			}
			return ps[i][1] < ps[j][1]
		})
		vol, lastY := 0.0, ref[1]
		for _, p := range ps {
			if p[1] < lastY {
				vol += (ref[0] - p[0]) * (lastY - p[1])
				lastY = p[1]
			}
		}
		return vol
	}
	ps := make([][]float64, len(points))
	copy(ps, points)
	sort.Slice(ps, func(i, j int) bool { return ps[i][d-1] < ps[j][d-1] })
	vol := 0.0
	for i := range ps {
		next := ref[d-1]
		if i+1 < len(ps) {
			next = ps[i+1][d-1]
		}
		depth := next - ps[i][d-1]
		if depth <= 0 {
			continue
		}
		slice := make([][]float64, 0, i+1)
		for _, p := range ps[:i+1] {
			slice = append(slice, p[:d-1])
		}
		idx := NonDominated(slice)
		front := make([][]float64, len(idx))
		for k, j := range idx {
			front[k] = slice[j]
		}
		vol += depth * hv(front, ref[:d-1])
	}
	return vol
}

// MeanObjectives is the trial's objectives averaged over its first run and its confirmation
// runs.
func (t *Trial) MeanObjectives() map[string]float64 {
	if len(t.Confirmations) == 0 {
		return t.Objectives
	}
	out := make(map[string]float64, len(t.Objectives))
	for name, v := range t.Objectives {
		sum, n := v, 1.0
		for _, c := range t.Confirmations {
			if x, ok := c[name]; ok {
				sum += x
				n++
			}
		}
		out[name] = sum / n
	}
	return out
}

// ObjectiveVector is the trial's mean objectives in the order of objs; ok is false when one
// is missing or NaN.
func (t *Trial) ObjectiveVector(objs []Objective) (v []float64, ok bool) {
	m := t.MeanObjectives()
	v = make([]float64, len(objs))
	for i, o := range objs {
		x, has := m[o.Name]
		if !has || math.IsNaN(x) {
			return nil, false
		}
		v[i] = x
	}
	return v, true
}

// MarkFront sets Pareto on the complete trials that no other complete trial dominates beyond
// noise (DominatesBeyondNoise over Estimates: objectives averaged over every run, each with
// its 95% range), fills in their spread, each complete trial's Uncertainty and Confirmed, and
// sets and returns the front's trial numbers. A configuration within noise of a better one
// stays on the front, tied with it; one beaten beyond noise leaves it even when a noisy
// objective happens to read better. Should noisy comparisons leave no trial undominated, the
// front is the plain one of the means.
func (s *Study) MarkFront() []int {
	maximize := s.Maximize()
	all := s.Estimates()
	var idx []int
	var pts [][]float64
	var est []map[string]Estimate
	for i := range s.Trials {
		t := &s.Trials[i]
		t.Pareto, t.Uncertainty, t.Confirmed = false, nil, false
		if t.State != StateComplete {
			continue
		}
		p, ok := t.ObjectiveVector(s.Objectives)
		if !ok {
			continue
		}
		t.Uncertainty, t.Confirmed = all[t.Number], s.IsConfirmed(t)
		idx = append(idx, i)
		pts = append(pts, Orient(p, maximize))
		est = append(est, t.Uncertainty)
	}
	members := noiseFront(est, s.Objectives)
	if len(members) == 0 {
		members = NonDominated(pts)
	}
	var front []int
	for _, k := range members {
		t := &s.Trials[idx[k]]
		t.Pareto = true
		front = append(front, t.Number)
		if len(t.Confirmations) > 0 {
			t.Spread = spread(t)
		}
	}
	s.Front = front
	return front
}

// FrontTrials returns the trials of the study's Pareto front, best first by the first
// objective. It uses the front the study recorded; when none is recorded it computes the
// front of the complete trials without changing the study.
func (s *Study) FrontTrials() []*Trial {
	var front []*Trial
	if len(s.Front) > 0 {
		for _, n := range s.Front {
			if t := s.Trial(n); t != nil {
				front = append(front, t)
			}
		}
	} else {
		maximize := s.Maximize()
		var done []*Trial
		var pts [][]float64
		for i := range s.Trials {
			t := &s.Trials[i]
			if t.State != StateComplete {
				continue
			}
			if p, ok := t.ObjectiveVector(s.Objectives); ok {
				done = append(done, t)
				pts = append(pts, Orient(p, maximize))
			}
		}
		for _, k := range NonDominated(pts) {
			front = append(front, done[k])
		}
	}
	if len(s.Objectives) > 0 {
		o := s.Objectives[0]
		slices.SortStableFunc(front, func(x, y *Trial) int {
			c := cmp.Compare(x.MeanObjectives()[o.Name], y.MeanObjectives()[o.Name])
			if o.Maximize {
				c = -c
			}
			if c == 0 {
				c = cmp.Compare(x.Number, y.Number)
			}
			return c
		})
	}
	return front
}

// spread is, per objective, (max - min) / |mean| over a trial's runs.
func spread(t *Trial) map[string]float64 {
	out := make(map[string]float64, len(t.Objectives))
	for name, v := range t.Objectives {
		lo, hi, sum, n := v, v, v, 1.0
		for _, c := range t.Confirmations {
			if x, ok := c[name]; ok {
				lo, hi = math.Min(lo, x), math.Max(hi, x)
				sum += x
				n++
			}
		}
		mean := sum / n
		if mean != 0 {
			out[name] = (hi - lo) / math.Abs(mean)
		} else {
			out[name] = 0
		}
	}
	return out
}
