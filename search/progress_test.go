package search

import (
	"time"

	"testing"

	"github.com/frontier-llm/frontier/plan"
	"github.com/frontier-llm/frontier/record"
)

// A finished trial's event carries the model's standing over the trials that carry a
// prediction, and none while no trial does.
func TestProgressEventCarriesTheModelsStanding(t *testing.T) {
	var got []Event
	sp, err := newSpace([]plan.Knob{{Name: "max_num_seqs", Values: []plan.Value{int64(16), int64(32)}}})
	if err != nil {
		t.Fatal(err)
	}
	p := newProgress(func(e Event) { got = append(got, e) }, sp, 10, time.Now())
	p.setObjectives([]plan.Objective{{Name: "speed", Maximize: true}})
	cfg := map[string]any{"max_num_seqs": int64(16)}
	p.result(&record.Trial{Number: 0, State: record.StateComplete, Config: cfg, Objectives: map[string]float64{"speed": 5}})
	if got[0].Model != nil {
		t.Errorf("a standing without predictions: %+v", got[0].Model)
	}
	p.result(&record.Trial{Number: 1, State: record.StateInfeasible, Config: cfg,
		Predicted: &record.Prediction{Objectives: map[string]float64{"speed": 9}}})
	m := got[1].Model
	if m == nil || m.Trials != 1 || m.FeasibleRight != 0 {
		t.Errorf("standing after a trial predicted feasible and measured infeasible: %+v, want 0 of 1 right", m)
	}
}
