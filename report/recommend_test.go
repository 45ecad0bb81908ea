package report

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/frontier-llm/frontier/record"
	"github.com/frontier-llm/frontier/workload"
)

// tieStudy is a study whose trials 0, 1 and 2 tie within noise (about 5% run to run) and
// whose trial 3 is an end of the front beyond noise (much lower tail, much less throughput).
// Trial 0 is the knee on the means; trial 1 uses one GPU where trial 0 uses two.
func tieStudy() *record.Study {
	s := &record.Study{Study: "ties", Objectives: []record.Objective{{Name: "throughput", Maximize: true}, {Name: "tail"}}, Confirm: 1,
		SLOs: map[string][]workload.Bound{"chat": {{Metric: "ttft_p99_ms", Value: 100}}}}
	add := func(n, gpus int, tp float64, runs ...[2]float64) {
		t := record.Trial{Number: n, State: record.StateComplete, GPUs: gpus, Config: map[string]any{"tensor_parallel_size": tp},
			Objectives: map[string]float64{"throughput": runs[0][0], "tail": runs[0][1]},
			Workloads: map[string]*workload.Result{"chat": {Metrics: map[string]float64{"ttft_p99_ms": runs[0][1]},
				CI: map[string][2]float64{"ttft_p99_ms": {runs[0][1] * 0.9, runs[0][1] * 1.7}}}}}
		for _, r := range runs[1:] {
			t.Confirmations = append(t.Confirmations, map[string]float64{"throughput": r[0], "tail": r[1]})
		}
		s.Trials = append(s.Trials, t)
	}
	add(0, 2, 2, [2]float64{3050, 60}, [2]float64{3000, 59})
	add(1, 1, 1, [2]float64{2950, 62}, [2]float64{2900, 63})
	add(2, 2, 2, [2]float64{2900, 61}, [2]float64{3050, 64})
	add(3, 1, 1, [2]float64{1000, 20}, [2]float64{1010, 20.5})
	s.MarkFront()
	return s
}

func TestRecommendPicksTheCheapestOfTheKneesTieGroup(t *testing.T) {
	t.Parallel()
	s := tieStudy()
	a := Analyze(s)
	r := a.Recommended
	if r == nil {
		t.Fatal("no recommendation")
	}
	got := struct {
		Trial, Knee int
		Group       []int
		Method      string
		Confirmed   bool
		Runs        int
	}{r.Trial, r.Knee, r.TieGroup, r.Method, r.Confirmed, r.Runs}
	want := struct {
		Trial, Knee int
		Group       []int
		Method      string
		Confirmed   bool
		Runs        int
	}{1, Knee(s.Objectives, a.Front).Trial, []int{0, 1, 2}, TieMethod, true, 2}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("recommendation (-want +got):\n%s", diff)
	}
	if want.Knee == 1 {
		t.Fatalf("the knee is trial 1 already: the test wants a knee that costs more than a tied trial")
	}
	for _, w := range []string{"trials 0, 1, 2 tie within noise", "trial 1 is recommended because it costs least: 1 GPU"} {
		if !strings.Contains(r.Why, w) {
			t.Errorf("Why = %q, want it to say %q", r.Why, w)
		}
	}
	if diff := cmp.Diff([][]int{{0, 1, 2}, {3}}, a.TieGroups); diff != "" {
		t.Errorf("tie groups (-want +got):\n%s", diff)
	}
	var text strings.Builder
	if err := WriteText(&text, a, Options{}); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"1 (recommended)", "(knee)", "Evidence: 2 runs of this configuration (confirmed"} {
		if !strings.Contains(text.String(), w) {
			t.Errorf("the text report does not say %q:\n%s", w, text.String())
		}
	}
}

func TestRecommendFlagsHeadroomInsideTheNoise(t *testing.T) {
	t.Parallel()
	a := Analyze(tieStudy())
	h := a.Recommended.Headroom
	// Trial 1's p99 is 62 ms against 100 ms: 38% headroom, but its interval over the run's
	// requests reaches 62 x 1.7 = 105.4 ms, past the bound.
	if len(h) != 1 || h[0].Margin < 0.37 || h[0].Margin > 0.39 || !h[0].InsideNoise {
		t.Errorf("headroom = %+v, want one bound at 38%% flagged inside the noise", h)
	}
}

func TestKneeWhyNamesAnEndOfTheFrontAsAnEnd(t *testing.T) {
	t.Parallel()
	objs := []record.Objective{{Name: "throughput", Maximize: true}, {Name: "tail"}}
	mk := func(n int, tp, tail float64) *record.Trial {
		return &record.Trial{Number: n, State: record.StateComplete, Objectives: map[string]float64{"throughput": tp, "tail": tail}}
	}
	// Two ends and a middle far from the utopia point: an end is the knee.
	front := []*record.Trial{mk(0, 3000, 100), mk(1, 1500, 80), mk(2, 1000, 10)}
	r := Knee(objs, front)
	if r.Trial == 1 {
		t.Fatalf("knee = trial 1 (the middle): the test wants an end")
	}
	if !strings.Contains(r.Why, "is an end of the front") || strings.Contains(r.Why, "gives up the least") {
		t.Errorf("Why = %q, want it to name an end of the front as an end", r.Why)
	}
}

func TestAStudyOfTwoModelVersionsSaysSo(t *testing.T) {
	t.Parallel()
	s := tieStudy()
	for i := range s.Trials {
		v := "sim-2026.12"
		if i >= 2 {
			v = "sim-2026.11"
		}
		s.Trials[i].Simulated = true
		s.Trials[i].Provenance = &record.Provenance{SimModel: v}
	}
	var text strings.Builder
	if err := WriteText(&text, Analyze(s), Options{}); err != nil {
		t.Fatal(err)
	}
	want := "MIXED MODEL VERSIONS: the trials hold the numbers of 2 versions of the performance model, sim-2026.11 (trials 2-3), sim-2026.12 (trials 0-1)"
	if !strings.Contains(text.String(), want) {
		t.Errorf("the report does not say %q:\n%s", want, text.String())
	}
	s.Trials[2].Provenance.SimModel, s.Trials[3].Provenance.SimModel = "sim-2026.12", "sim-2026.12"
	text.Reset()
	if err := WriteText(&text, Analyze(s), Options{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text.String(), "MIXED MODEL VERSIONS") {
		t.Errorf("a study of one model version is reported as mixed:\n%s", text.String())
	}
}

func TestAContinuousKnobIsShortInTablesAndExactInTheRecommendation(t *testing.T) {
	t.Parallel()
	if got := knobCell(0.928760161936); got != "0.9288" {
		t.Errorf("knobCell(0.928760161936) = %q, want 0.9288", got)
	}
	for _, v := range []any{0.9, int64(64), 2048.0, "fp8", true} {
		if knobCell(v) != knobString(v) {
			t.Errorf("knobCell(%v) = %q, want the exact %q", v, knobCell(v), knobString(v))
		}
	}
	if got := knobString(0.928760161936); got != "0.928760161936" {
		t.Errorf("knobString = %q, want the exact value for flags and the recommendation", got)
	}
}
