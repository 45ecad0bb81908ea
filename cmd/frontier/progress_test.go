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
