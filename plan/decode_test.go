package plan

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/frontier-llm/frontier/workload"
)

// TestEveryAttributeDecodes loads testdata/valid/everything.hcl, which sets every attribute of
// the language, and compares the decoded plan with what it says.
func TestEveryAttributeDecodes(t *testing.T) {
	t.Parallel()
	p, err := Load("testdata/valid/everything.hcl", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	histories := filepath.Join(dir, "data", "histories.jsonl")
	evals := filepath.Join(dir, "evals", "ja-support.jsonl")
	f := func(x float64) *float64 { return &x }

	if diff := cmp.Diff(Study{Name: "everything", Description: "all of it", Trials: 7, Sampler: "random", Seed: 3,
		Parallel: 2, Confirm: 0, WarmStart: "previous.db", WorkloadSeed: 11, HasWorkloadSeed: true, Prior: false}, p.Study); diff != "" {
		t.Errorf("study (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(Model{Name: "meta-llama/Llama-3.1-8B-Instruct", Architecture: "llama-3.1-8b",
		ConfigJSON: histories, GGUF: histories, MaxModelLen: 4096}, p.Model); diff != "" {
		t.Errorf("model (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(Engine{Kind: "vllm", Command: []string{"python", "-m", "vllm.entrypoints.openai.api_server"},
		Args: []string{"--enable-log-requests"}, Env: map[string]string{"HF_HUB_OFFLINE": "1", "HF_TOKEN": "hf_x"},
		SecretEnv: []string{"HF_TOKEN"}, StartupTimeout: 30 * time.Minute}, p.Engine); diff != "" {
		t.Errorf("engine (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(Hardware{GPUs: GPUSelection{Indices: []int{0, 1}}, SKU: "h100-sxm", PricePerGPUHour: 2.5,
		AllowBusy: true}, p.Hardware); diff != "" {
		t.Errorf("hardware (-want +got):\n%s", diff)
	}
	wantKnobs := []Knob{
		{Name: "tensor_parallel_size", Kind: KnobInt, Values: []Value{int64(1), int64(2)}},
		{Name: "max_num_seqs", Kind: KnobInt, Min: 8, Max: 256, Log: true},
		{Name: "gpu_memory_utilization", Kind: KnobFloat, Min: 0.8, Max: 0.95},
		{Name: "kv_cache_dtype", Kind: KnobCategorical, Values: []Value{"auto", "fp8"}},
		{Name: "enforce_eager", Kind: KnobCategorical, Values: []Value{false, true}},
	}
	if diff := cmp.Diff(wantKnobs, p.Knobs); diff != "" {
		t.Errorf("knobs (-want +got):\n%s", diff)
	}
	wantWorkloads := []workload.Class{
		{
			Name: "chat", Requests: 1000, Warmup: 10,
			InputTokens:  workload.Dist{Kind: workload.DistLogNormal, A: 800, B: 0.6},
			OutputTokens: workload.Dist{Kind: workload.DistNormal, A: 200, B: 50},
			PrefixTokens: 100, Arrival: workload.Arrival{Kind: workload.ArrivalGamma, Rate: 8, Burstiness: 0.5},
			Endpoint: "chat", CancelFraction: 0.1, Timeout: 30 * time.Second, Attainment: 0.95, Seed: 9,
			SLO: []workload.Bound{
				{Metric: "ttft_p99_ms", Value: 600}, {Metric: "itl_p50_ms", Value: 20}, {Metric: "error_rate", Value: 0.01},
				{Metric: "output_token_throughput", Value: 100, AtLeast: true},
			},
		},
		{
			Name: "batch", Requests: 10, Endpoint: "completions", Timeout: DefaultRequestTimeout,
			InputTokens:  workload.Dist{Kind: workload.DistUniform, A: 10, B: 20},
			OutputTokens: workload.Dist{Kind: workload.DistFixed, A: 64},
			Arrival:      workload.Arrival{Kind: workload.ArrivalConstant, Rate: 2},
		},
		{
			Name: "replay", Requests: 10, Endpoint: "completions", Timeout: DefaultRequestTimeout,
			Arrival: workload.Arrival{Kind: workload.ArrivalTrace, TraceFile: histories},
		},
		{
			Name: "docs", Requests: 5, Endpoint: "completions", Dataset: histories, Timeout: DefaultRequestTimeout,
			OutputTokens: workload.Dist{Kind: workload.DistFixed, A: 100},
			Arrival:      workload.Arrival{Kind: workload.ArrivalImmediate},
		},
		{
			// No warmup: a closed loop's start-up wave, its concurrency, is warm-up by default.
			Name: "loop", Requests: 5, Warmup: 2, Endpoint: "completions", Timeout: DefaultRequestTimeout,
			InputTokens:  workload.Dist{Kind: workload.DistFixed, A: 10},
			OutputTokens: workload.Dist{Kind: workload.DistFixed, A: 10},
			Arrival:      workload.Arrival{Kind: workload.ArrivalConcurrency, Concurrency: 2},
		},
	}
	if diff := cmp.Diff(wantWorkloads, p.Workloads); diff != "" {
		t.Errorf("workloads (-want +got):\n%s", diff)
	}
	wantQuality := []QualityGate{{
		Name: "judged", Dataset: evals, Scorer: "judge",
		Baseline: Config{"kv_cache_dtype": "auto", "gpu_memory_utilization": 0.9},
		MaxDrop:  f(0.05), Min: f(0.5), JudgeModel: "qwen2.5:7b", JudgeRubric: "Is the summary faithful?",
		JudgeURL: "http://127.0.0.1:11434", Samples: 4,
	}}
	if diff := cmp.Diff(wantQuality, p.Quality); diff != "" {
		t.Errorf("quality (-want +got):\n%s", diff)
	}
	var names []string
	for _, r := range p.Rules {
		names = append(names, "rule "+r.Name)
	}
	for _, c := range p.Checks {
		names = append(names, "check "+c.Name+": "+c.Message)
	}
	for _, o := range p.Objectives {
		dir := "minimize "
		if o.Maximize {
			dir = "maximize "
		}
		names = append(names, dir+o.Name+": "+p.ExprText(o.Expr))
	}
	want := []string{"rule fits", "rule sku", "check kv: kv full",
		"maximize per-gpu: metric.total.output_token_throughput / trial.gpus",
		"maximize quality: quality.judged.score",
		"minimize tail: max(metric.chat.ttft_p99_ms, metric.batch.e2e_p95_ms)"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("rules, checks and objectives (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"model": `"meta-llama/Llama-3.1-8B-Instruct"`, "sizes": "[1,2]"}, p.Variables); diff != "" {
		t.Errorf("variables (-want +got):\n%s", diff)
	}
}
