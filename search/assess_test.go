package search

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/frontier-llm/frontier/plan"
	"github.com/frontier-llm/frontier/record"
	"github.com/frontier-llm/frontier/workload"
)

// TestAssessRefusesAWQOnAnUnquantisedCheckpointForVLLM checks the pre-screen that plan and
// apply share: a vllm plan's catalog architecture stands for the one checkpoint model.name
// serves, so awq (which needs an awq checkpoint) is refused as unsupported, as vLLM would.
func TestAssessRefusesAWQOnAnUnquantisedCheckpointForVLLM(t *testing.T) {
	t.Parallel()
	p := loadPlan(t, "assess.hcl")
	a, err := NewAssessor(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		quant string
		want  record.FailureClass
	}{{"none", ""}, {"awq", record.FailUnsupported}} {
		as, err := a.Assess(context.Background(), plan.Config{"quantization": tc.quant, "tensor_parallel_size": int64(1)}, ThroughMemory)
		if err != nil {
			t.Fatal(err)
		}
		if !as.Covered || as.Trial.FailureClass != tc.want || as.Trial.PreScreened != (tc.want != "") {
			t.Errorf("quantization %s: covered %v, failure %q, prescreened %v; want covered, failure %q",
				tc.quant, as.Covered, as.Trial.FailureClass, as.Trial.PreScreened, tc.want)
		}
	}
}

// TestAssessCountsAnUnmeasuredSLOMetricAsMissed checks that the offline verdict is the
// study's: an SLO bound on a metric the model does not measure is missed, never met.
func TestAssessCountsAnUnmeasuredSLOMetricAsMissed(t *testing.T) {
	t.Parallel()
	p := loadPlan(t, "assess.hcl")
	a, err := NewAssessor(p)
	if err != nil {
		t.Fatal(err)
	}
	as, err := a.Assess(context.Background(), plan.Config{"quantization": "none", "tensor_parallel_size": int64(1)}, Full)
	if err != nil {
		t.Fatal(err)
	}
	if as.Trial.State != record.StateInfeasible {
		t.Fatalf("state %s (%s); want infeasible", as.Trial.State, as.Trial.Reason)
	}
	found := false
	for _, v := range as.Trial.Violations {
		if v.Kind == record.ViolationUnmeasured && v.Class == "chat" && v.Metric == workload.CapacityRPS {
			found = true
		}
	}
	if !found {
		t.Errorf("violations %+v; want chat's capacity_rps as unmeasured", as.Trial.Violations)
	}
}

// TestAssessCostCountsEveryGPU checks cost_per_million_output_tokens: the price per GPU-hour
// times the configuration's GPUs (tensor parallel 2: two) per million output tokens, the same
// in the assessment as in a study's trial.
func TestAssessCostCountsEveryGPU(t *testing.T) {
	t.Parallel()
	p := loadPlan(t, "assess.hcl")
	a, err := NewAssessor(p)
	if err != nil {
		t.Fatal(err)
	}
	as, err := a.Assess(context.Background(), plan.Config{"quantization": "none", "tensor_parallel_size": int64(2)}, Full)
	if err != nil {
		t.Fatal(err)
	}
	if as.Trial.Total == nil {
		t.Fatalf("no measurement: %s", as.Trial.Reason)
	}
	m := as.Trial.Total.Metrics
	want := 2.0 * 2 / (m[workload.OutputTokenThroughput] * 3600) * 1e6
	if got := m[workload.CostPerMillionOutput]; as.Trial.GPUs != 2 || math.Abs(got-want) > 1e-9*want {
		t.Errorf("GPUs %d, cost %g; want 2 GPUs and cost %g", as.Trial.GPUs, got, want)
	}

	// The study, on the same model, records the same cost for the same configuration.
	sum, err := Run(context.Background(), p, Options{Storage: filepath.Join(t.TempDir(), "s.db"), Estimate: true, Trials: 4})
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range sum.Record.Trials {
		if fmt.Sprintf("%v %v", tr.Config["quantization"], tr.Config["tensor_parallel_size"]) != "none 2" || tr.Total == nil {
			continue
		}
		tm := tr.Total.Metrics
		want := 2.0 * 2 / (tm[workload.OutputTokenThroughput] * 3600) * 1e6
		if got := tm[workload.CostPerMillionOutput]; math.Abs(got-want) > 1e-9*want {
			t.Errorf("study trial %d: cost %g; want %g", tr.Number, got, want)
		}
		return
	}
	t.Errorf("the study measured no tensor_parallel_size 2 configuration in %d trials", len(sum.Record.Trials))
}

// TestEstimateAllScoresQualityOnce runs full assessments of a plan with a quality gate on
// several goroutines (run it with -race): the gate's evaluation set and baseline are loaded
// once, and every configuration that starts gets a score.
func TestEstimateAllScoresQualityOnce(t *testing.T) {
	t.Parallel()
	p := loadPlan(t, "quality.hcl")
	a, err := NewAssessor(p)
	if err != nil {
		t.Fatal(err)
	}
	var configs []plan.Config
	for _, kv := range []string{"auto", "fp8"} {
		for _, seqs := range []int64{8, 16} {
			configs = append(configs, plan.Config{"max_num_seqs": seqs, "max_num_batched_tokens": int64(2048),
				"gpu_memory_utilization": 0.9, "kv_cache_dtype": kv})
		}
	}
	ests, err := EstimateAll(context.Background(), a, configs)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range ests {
		as, err := a.Assess(context.Background(), configs[i], Full)
		if err != nil {
			t.Fatal(err)
		}
		if e.FailureClass == "" && len(as.Trial.Quality) == 0 {
			t.Errorf("%s: no quality score", configs[i])
		}
	}
}

// TestAssessRefusesMoreGPUsThanThePlanGives checks that --estimate and the pre-screen judge a
// configuration the live run could not place (more GPUs than hardware.gpus gives the study)
// as the live run does: infeasible, too_few_gpus, never on a front.
func TestAssessRefusesMoreGPUsThanThePlanGives(t *testing.T) {
	t.Parallel()
	p := loadPlan(t, "assess.hcl") // hardware.gpus = 2
	a, err := NewAssessor(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tp   int64
		want record.FailureClass
	}{{2, ""}, {4, "too_few_gpus"}} {
		as, err := a.Assess(context.Background(), plan.Config{"quantization": "none", "tensor_parallel_size": tc.tp}, ThroughMemory)
		if err != nil {
			t.Fatal(err)
		}
		if as.Trial.FailureClass != tc.want || as.Trial.PreScreened != (tc.want != "") {
			t.Errorf("tensor_parallel_size %d: failure %q, prescreened %v (%s); want failure %q", tc.tp, as.Trial.FailureClass, as.Trial.PreScreened, as.Trial.Reason, tc.want)
		}
	}
}
