package report

import (
	"strings"
	"testing"

	"github.com/frontier-llm/frontier/record"
)

// The overview says how the sampler's prior matched the measured trials, from the
// predictions the record carries; a study without predictions (prior = false) says nothing
// of it.
func TestOverviewShowsTheModelsStanding(t *testing.T) {
	t.Parallel()
	rec := &record.Study{Engine: "sim", Model: "m", Objectives: []record.Objective{{Name: "tpot"}}}
	for i := 1; i <= 6; i++ {
		v := float64(i)
		rec.Trials = append(rec.Trials, record.Trial{Number: i, State: record.StateComplete,
			Objectives: map[string]float64{"tpot": v},
			Predicted:  &record.Prediction{Objectives: map[string]float64{"tpot": 14 - 2*v}}})
	}
	lines := strings.Join(overview(Analyze(rec)).Lines, "\n")
	want := "The sampler's prior (the performance model), model vs measured: tpot 2x high, ranks -1.00; feasibility 6 of 6 right; prior weight 0.00. The measurements contradict the model"
	if !strings.Contains(lines, want) {
		t.Errorf("overview:\n%s\nwant a line containing %q", lines, want)
	}
	for i := range rec.Trials {
		rec.Trials[i].Predicted = nil
	}
	if lines := strings.Join(overview(Analyze(rec)).Lines, "\n"); strings.Contains(lines, "prior") {
		t.Errorf("overview without predictions mentions the prior:\n%s", lines)
	}
}
