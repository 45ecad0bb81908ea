package k8sjob

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/frontier-llm/frontier/plan"
)

// TestGPUsOfADisaggregatedPlanHoldEveryInstance: a worker runs every instance of the largest
// "XpYd" value, each as wide as the widest role.
func TestGPUsOfADisaggregatedPlanHoldEveryInstance(t *testing.T) {
	t.Parallel()
	p := vllmPlanWith(t, `knob "disaggregation"              { values = ["none", "1p1d", "2p1d"] }
knob "tensor_parallel_size"        { values = [1, 2] }
knob "decode_tensor_parallel_size" { values = [1, 4] }`)
	n, _, err := GPUs(p)
	if err != nil {
		t.Fatal(err)
	}
	if n != 12 { // three instances of at most four GPUs
		t.Errorf("a worker requests %d GPUs, want 12", n)
	}
}

// vllmPlanWith loads a plan of engine vllm on every GPU of the host with the given knobs, one
// small chat workload and one objective.
func vllmPlanWith(t *testing.T, knobs string) *plan.Plan {
	t.Helper()
	src := `model { name = "m" }
engine "vllm" {}
hardware { gpus = "all" }
` + knobs + `
workload "chat" {
  requests      = 10
  input_tokens  = fixed(100)
  output_tokens = fixed(10)
  arrival       = poisson(1)
}
objective "t" { maximize = metric.total.output_token_throughput }
`
	path := filepath.Join(t.TempDir(), "plan.hcl")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return loadPlan(t, path, plan.LoadOptions{})
}
