package search

import (
	"testing"
	"time"

	"github.com/frontier-llm/frontier/record"
	"github.com/frontier-llm/frontier/workload"
)

func TestAClassWhoseRequestsAllTimedOutNamesTheTimeout(t *testing.T) {
	t.Parallel()
	c := workload.Class{Name: "long", Timeout: 5 * time.Minute}
	timedOut := &workload.Result{Metrics: map[string]float64{workload.Completed: 0, workload.Failed: 3000}, Errors: map[string]int{workload.ErrTimeout: 3000}}
	v := record.Violation{Kind: record.ViolationNoneCompleted, Class: c.Name, Message: timeoutCause(c, timedOut)}
	want := `long: no request completed: every request timed out after 5m0s, the class's request timeout; if the engine is only slow under this load, raise it with timeout = "20m0s" in workload "long"`
	if got := v.String(); got != want {
		t.Errorf("verdict\n got %s\nwant %s", got, want)
	}
	mixed := &workload.Result{Metrics: map[string]float64{workload.Completed: 0, workload.Failed: 10}, Errors: map[string]int{workload.ErrTimeout: 4, workload.ErrHTTP: 6}}
	if got := timeoutCause(c, mixed); got != "" {
		t.Errorf("a class with other errors blames the timeout: %s", got)
	}
}

func TestPrunedTrialsWithoutAnEstimateAreCountedAsUnknown(t *testing.T) {
	t.Parallel()
	rec := &record.Study{Trials: []record.Trial{
		{Number: 0, State: record.StatePruned},                        // before any trial completed
		{Number: 1, State: record.StateComplete, GPUSeconds: 40},      // the first full run
		{Number: 2, State: record.StatePruned, SavedGPUSeconds: 30.5}, // estimated from trial 1
	}}
	var sum Summary
	fillSummary(&sum, rec)
	if sum.EarlyStopUnknown != 1 || sum.SavedEarlyStop != 30.5 {
		t.Errorf("EarlyStopUnknown %d, SavedEarlyStop %v; want 1 and 30.5", sum.EarlyStopUnknown, sum.SavedEarlyStop)
	}
}
