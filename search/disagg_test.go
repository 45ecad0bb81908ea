package search

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/frontier-llm/frontier/record"
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

// TestADisaggregatedConfigurationDoesNotAlsoOffload: vLLM's kv_offloading_size replaces the
// NixlConnector a disaggregated instance needs, so 1p1d with a CPU tier is refused before any
// launch, as an invalid combination naming both knobs, while 1p1d alone and offloading alone
// are assessed.
func TestADisaggregatedConfigurationDoesNotAlsoOffload(t *testing.T) {
	t.Parallel()
	p := loadPlan(t, "disagg.hcl")
	as, err := NewAssessor(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cfg     map[string]any
		refused bool
	}{
		{map[string]any{"disaggregation": "1p1d", "enable_chunked_prefill": true, "kv_offloading_size": int64(64)}, true},
		{map[string]any{"disaggregation": "1p1d", "enable_chunked_prefill": true, "kv_offloading_size": int64(0)}, false},
		{map[string]any{"disaggregation": "none", "enable_chunked_prefill": true, "kv_offloading_size": int64(64)}, false},
	} {
		a, err := as.Assess(context.Background(), c.cfg, ThroughMemory)
		if err != nil {
			t.Fatal(err)
		}
		tr := a.Trial
		refused := tr.FailureClass == record.FailInvalidArgs
		if refused != c.refused {
			t.Errorf("%v: failure %q (%s), want refused %v", c.cfg, tr.FailureClass, tr.Reason, c.refused)
			continue
		}
		if refused && (!tr.PreScreened || !strings.Contains(tr.Reason, "kv_offloading_size = 64") || !strings.Contains(tr.Reason, "NixlConnector")) {
			t.Errorf("%v: prescreened %v, reason %q; want a pre-screened refusal naming kv_offloading_size and the NixlConnector", c.cfg, tr.PreScreened, tr.Reason)
		}
	}
}
