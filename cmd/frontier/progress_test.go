package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/frontier-llm/frontier/record"
	"github.com/frontier-llm/frontier/search"
	"github.com/frontier-llm/frontier/workload"
)

// TestProgressSaysWhenTheSimulatorLagged: a finished trial whose simulated engine fell behind
// real time says so in its progress line; one that kept time does not.
func TestProgressSaysWhenTheSimulatorLagged(t *testing.T) {
	line := func(lag float64) string {
		var buf bytes.Buffer
		v := newProgressView(&buf, false)
		v.handle(search.Event{Kind: search.EventFinished, Trial: 3, Config: "max_num_seqs=64", Done: 1, Budget: 2, Left: -1,
			Objectives: []string{"throughput"},
			Record: &record.Trial{Number: 3, State: record.StateComplete, Objectives: map[string]float64{"throughput": 2900},
				Total: &workload.Result{Metrics: map[string]float64{workload.DurationS: 4, workload.SimLagS: lag}}}})
		return buf.String()
	}
	if got := line(0.4); !strings.Contains(got, "the simulator fell 0.4 s behind real time") {
		t.Errorf("a trial that lagged 0.4 s of 4 s: %q", got)
	}
	if got := line(0.01); strings.Contains(got, "behind real time") {
		t.Errorf("a trial that lagged 0.01 s of 4 s: %q", got)
	}
}

// TestProgressShowsTheModelsStanding: with a prior, each finished trial's line says how the
// model has matched the measurements so far and the prior's weight; without one it says
// nothing of a model.
func TestProgressShowsTheModelsStanding(t *testing.T) {
	line := func(model *record.Standing) string {
		var buf bytes.Buffer
		v := newProgressView(&buf, false)
		v.handle(search.Event{Kind: search.EventFinished, Trial: 5, Config: "max_num_seqs=64", Done: 6, Budget: 30, Left: -1,
			Objectives: []string{"tpot"}, Model: model,
			Record: &record.Trial{Number: 5, State: record.StateComplete, Objectives: map[string]float64{"tpot": 20}}})
		return buf.String()
	}
	var pairs []record.StandingPair
	for i := 1; i <= 6; i++ {
		pairs = append(pairs, record.StandingPair{Predicted: []float64{1.4 * float64(i)}, Measured: []float64{float64(i)}, Feasible: true})
	}
	s := record.NewStanding([]string{"tpot"}, pairs)
	got := line(&s)
	if !strings.Contains(got, "| model vs measured: tpot 1.4x high, ranks 1.00; feasibility 0 of 6 right; prior weight ") {
		t.Errorf("progress line with a prior: %q", got)
	}
	if got := line(nil); strings.Contains(got, "model vs measured") {
		t.Errorf("progress line without a prior: %q", got)
	}
}
