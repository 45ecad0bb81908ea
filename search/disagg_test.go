package search

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/frontier-llm/frontier/workload"
)

// TestStudyRecordsDisaggregatedGPUsAndTPOT runs a study on the offline model over
// disaggregation "none" and "1p1d" for 8,000-token prompts with chunked prefill: the 1p1d
// trial records two GPUs (2 x TP), a clearly lower TPOT p99, and the KV transfer in its
// TTFT.
func TestStudyRecordsDisaggregatedGPUsAndTPOT(t *testing.T) {
	t.Parallel()
	p := loadPlan(t, "disagg.hcl")
	sum, err := Run(context.Background(), p, Options{Storage: filepath.Join(t.TempDir(), "s.db"), Estimate: true})
	if err != nil {
		t.Fatal(err)
	}
	tpot, gpus := map[string]float64{}, map[string]int{}
	for _, tr := range sum.Record.Trials {
		d, _ := tr.Config["disaggregation"].(string)
		if tr.Total == nil {
			t.Fatalf("trial %d (disaggregation %s) has no measurement: %s", tr.Number, d, tr.Reason)
		}
		tpot[d], gpus[d] = tr.Total.Metrics["tpot_p99_ms"], tr.GPUs
		x, ok := tr.Total.Metrics[workload.KVTransferMeanMs]
		if d == "1p1d" && (!ok || x <= 0 || tr.Total.Metrics[workload.KVTransferTTFTShare] <= 0) {
			t.Errorf("the 1p1d trial has no KV transfer in its TTFT: %v ms", x)
		}
		if d == "none" && ok {
			t.Errorf("the aggregated trial has a KV transfer of %v ms", x)
		}
	}
	if gpus["none"] != 1 || gpus["1p1d"] != 2 {
		t.Errorf("GPUs recorded: %v, want none 1 and 1p1d 2", gpus)
	}
	if tpot["1p1d"] <= 0 || tpot["none"] < 2*tpot["1p1d"] {
		t.Errorf("TPOT p99: %v; want 1p1d under half of none", tpot)
	}
}

// TestPreflightChecksTheKVConnectorFlagOfADisaggregatedPlan: a plan that may run 1p1d has
// the installed vLLM asked for --kv-transfer-config before any trial; one that only runs
// "none" does not.
func TestPreflightChecksTheKVConnectorFlagOfADisaggregatedPlan(t *testing.T) {
	t.Parallel()
	p := loadPlan(t, "disagg.hcl")
	if got := preflightArgs(p); !slices.Contains(got, "--kv-transfer-config") {
		t.Errorf("preflight args %q lack --kv-transfer-config", got)
	}
	p.Knob("disaggregation").Values = []any{"none"}
	if got := preflightArgs(p); slices.Contains(got, "--kv-transfer-config") {
		t.Errorf("preflight args %q of a plan that never disaggregates ask for --kv-transfer-config", got)
	}
}
