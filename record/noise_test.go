package record

import (
	"math"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// noisyStudy is a study of two objectives, throughput (max) and tail (min), whose trials have
// the given runs: each trial's first run and its confirmations.
func noisyStudy(confirm int, runs map[int][][2]float64) *Study {
	s := &Study{Objectives: []Objective{{Name: "throughput", Maximize: true}, {Name: "tail"}}, Confirm: confirm}
	for n := 0; n < len(runs); n++ {
		r := runs[n]
		t := Trial{Number: n, State: StateComplete, Objectives: map[string]float64{"throughput": r[0][0], "tail": r[0][1]}}
		for _, c := range r[1:] {
			t.Confirmations = append(t.Confirmations, map[string]float64{"throughput": c[0], "tail": c[1]})
		}
		s.Trials = append(s.Trials, t)
	}
	return s
}

func TestMarkFrontKeepsConfigurationsThatTieWithinNoise(t *testing.T) {
	t.Parallel()
	// Trials 0 and 1 scatter by about 5% from run to run, each its own way; trial 2 is 1%
	// behind trial 0 on both objectives (beaten by trial 1 on the means, not beyond noise),
	// trial 3 is 40% behind on both (beaten beyond noise).
	s := noisyStudy(1, map[int][][2]float64{
		0: {{3000, 60}, {2850, 63}},
		1: {{2900, 61}, {3050, 58}},
		2: {{2950, 61}},
		3: {{1800, 90}, {1810, 89}},
	})
	if diff := cmp.Diff([]int{0, 1, 2}, s.MarkFront()); diff != "" {
		t.Errorf("front (-want +got):\n%s", diff)
	}
	if plain := NonDominated([][]float64{{-2925, 61.5}, {-2975, 59.5}, {-2950, 61}, {-1805, 89.5}}); len(plain) != 1 {
		t.Fatalf("the plain front of the means is %v: the test wants one that drops the tied trials", plain)
	}
	for _, tr := range s.Trials {
		if want := tr.Number != 2; tr.Confirmed != want {
			t.Errorf("trial %d: Confirmed = %v, want %v", tr.Number, tr.Confirmed, want)
		}
	}
}

func TestMarkFrontDropsAConfigurationBeatenBeyondNoise(t *testing.T) {
	t.Parallel()
	// Trial 1 reads 0.5% better on the tail than trial 0, inside a 4% run-to-run noise, and
	// is 30% behind on throughput: beaten beyond noise, it leaves the front that the plain
	// means would keep it on.
	s := noisyStudy(1, map[int][][2]float64{
		0: {{3000, 60.3}, {2900, 63}},
		1: {{2100, 62.7}, {2000, 60}},
	})
	if diff := cmp.Diff([]int{0}, s.MarkFront()); diff != "" {
		t.Errorf("front (-want +got):\n%s", diff)
	}
}

func TestMarkFrontWithoutNoiseIsThePlainFront(t *testing.T) {
	t.Parallel()
	// Runs that never differ (the offline estimator) leave every range a point.
	s := noisyStudy(1, map[int][][2]float64{
		0: {{3000, 60}, {3000, 60}},
		1: {{2990, 59.9}, {2990, 59.9}},
		2: {{2980, 61}, {2980, 61}},
	})
	if diff := cmp.Diff([]int{0, 1}, s.MarkFront()); diff != "" {
		t.Errorf("front (-want +got):\n%s", diff)
	}
	if e := s.Trials[0].Uncertainty["throughput"]; e.Lo != 3000 || e.Hi != 3000 || e.Runs != 2 {
		t.Errorf("trial 0's throughput = %+v, want the point 3000 over 2 runs", e)
	}
}

func TestEstimatesWeighRunNoiseAndSamplingIntervals(t *testing.T) {
	t.Parallel()
	s := noisyStudy(1, map[int][][2]float64{
		0: {{1000, 100}, {1100, 110}},
		1: {{1000, 100}},
	})
	// Trial 1's tail is a p99 whose interval over its requests runs from 80 to 500: wider
	// than the study's run-to-run noise on the high side (one degree of freedom: t = 12.7),
	// narrower below.
	s.Trials[1].ObjectiveCI = map[string][2]float64{"tail": {80, 500}}
	est := s.Estimates()
	noise := s.RunNoise()
	// Two runs 1000 and 1100: deviations ±0.0476 of the mean, one degree of freedom, too few
	// to tell the draws' common effect from the configuration's own; the pool is that one
	// variance over the median of a chi-square with one degree of freedom over one.
	want0 := math.Sqrt(2 * (50.0 / 1050) * (50.0 / 1050) / math.Pow(1-2.0/9, 3))
	if n := noise["throughput"]; math.Abs(n.Total-want0) > 1e-12 || n.PriorDOF != 1 || n.Rel != n.Total || n.Draw != nil {
		t.Fatalf("RunNoise = %+v; want Total = Rel = %v with one degree of freedom and no draw effects", n, want0)
	}
	h := 12.706 * noise["tail"].Total // trial 1: one run, mean 100: the pool alone, as a factor
	run, runUp := 100*(1-math.Exp(-h)), 100*(math.Exp(h)-1)
	got := est[1]["tail"]
	want := Estimate{Mean: 100, Lo: 100 - run, Hi: 500, Runs: 1, Level: 100, CompareLo: 100 - run, CompareHi: 500}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("trial 1's tail (-want +got):\n%s", diff)
	}
	if run <= 20 || runUp >= 400 {
		t.Fatalf("run noise -%v/+%v: the test wants it past the sampling interval's 20 below and within its 400 above", run, runUp)
	}
}

func TestDominatesBeyondNoise(t *testing.T) {
	t.Parallel()
	objs := []Objective{{Name: "x", Maximize: true}, {Name: "y"}}
	e := func(lo, hi float64) Estimate {
		return Estimate{Mean: (lo + hi) / 2, Lo: lo, Hi: hi, Runs: 2, Level: (lo + hi) / 2, CompareLo: lo, CompareHi: hi}
	}
	for _, tt := range []struct {
		name string
		a, b map[string]Estimate
		want bool
	}{
		{"better beyond noise on both", map[string]Estimate{"x": e(10, 11), "y": e(1, 2)}, map[string]Estimate{"x": e(5, 6), "y": e(3, 4)}, true},
		{"better on one, tied on the other", map[string]Estimate{"x": e(10, 11), "y": e(1, 3)}, map[string]Estimate{"x": e(5, 6), "y": e(2, 4)}, true},
		{"tied on both", map[string]Estimate{"x": e(10, 12), "y": e(1, 3)}, map[string]Estimate{"x": e(11, 13), "y": e(2, 4)}, false},
		{"better on one, worse on the other", map[string]Estimate{"x": e(10, 11), "y": e(5, 6)}, map[string]Estimate{"x": e(5, 6), "y": e(1, 2)}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := DominatesBeyondNoise(tt.a, tt.b, objs); got != tt.want {
				t.Errorf("DominatesBeyondNoise = %v, want %v", got, tt.want)
			}
			if DominatesBeyondNoise(tt.a, tt.b, objs) && DominatesBeyondNoise(tt.b, tt.a, objs) {
				t.Errorf("each dominates the other")
			}
		})
	}
}

func TestRunNoiseTakesTheWorkloadDrawsCommonEffectOutOfComparisons(t *testing.T) {
	t.Parallel()
	// Every configuration's confirmation measured a draw of requests with shorter replies:
	// throughput 10% lower for all, give or take 0.5%. Trial 2 is 4% behind trial 0 in both
	// runs: beyond the configurations' own scatter, inside the draws' effect.
	s := noisyStudy(1, map[int][][2]float64{
		0: {{3000, 60}, {2700, 60}},
		1: {{2990, 60}, {2700, 60}},
		2: {{2880, 60}, {2595, 60}},
		3: {{3010, 60}, {2706, 60}},
	})
	n := s.RunNoise()["throughput"]
	if len(n.Draw) != 2 || n.Draw[0] < 0.04 || n.Draw[1] > -0.04 || n.Rel > 0.01 || n.Total < 0.04 {
		t.Fatalf("RunNoise = %+v; want draws of about +5%% and -5%%, own scatter under 1%%, in all over 4%%", n)
	}
	front := s.MarkFront()
	if slices.Contains(front, 2) {
		t.Errorf("front %v holds trial 2, 4%% behind on throughput in both draws", front)
	}
	e := s.Trials[0].Uncertainty["throughput"]
	if e.Hi-e.Lo < 2*0.04*e.Mean || e.CompareHi-e.CompareLo > 0.04*e.Mean {
		t.Errorf("trial 0's throughput %+v: want a wide range for another run (the draws) and a narrow one for comparisons", e)
	}
}

func TestAConfigurationThatScattersWildlyGetsItsOwnWideRange(t *testing.T) {
	t.Parallel()
	// Four configurations repeat within 2%; trial 4, near saturation, reads 80 ms in one
	// draw and 400 ms in the next. The pool follows the many (it is a median), trial 4's own
	// runs widen its range, and the steady configurations keep ranges narrow enough to tell
	// trial 0 from trial 3, 20% apart.
	s := noisyStudy(1, map[int][][2]float64{
		0: {{3000, 50}, {3000, 51}},
		1: {{3000, 55}, {3000, 54}},
		2: {{3000, 60}, {3000, 61}},
		3: {{3000, 61}, {3000, 60}},
		4: {{3000, 80}, {3000, 400}},
	})
	s.MarkFront()
	u := func(n int) Estimate { return s.Trials[n].Uncertainty["tail"] }
	if w0, w4 := u(0).CompareHi-u(0).CompareLo, u(4).CompareHi-u(4).CompareLo; w4 < 10*w0 {
		t.Errorf("trial 4's comparison range is %v wide, trial 0's %v: want trial 4's at least ten times wider", w4, w0)
	}
	if u(0).Overlaps(u(3)) {
		t.Errorf("trials 0 (%+v) and 3 (%+v), 20%% apart, tie: the wild trial 4 widened every range", u(0), u(3))
	}
}
