package plan_test

import (
	"fmt"
	"log"

	"github.com/frontier-llm/frontier/plan"
	"github.com/frontier-llm/frontier/workload"
)

// A plan is loaded once; its rules, checks and objectives are then evaluated for each trial.
func ExampleLoad() {
	p, err := plan.Load("testdata/design.hcl", plan.LoadOptions{Vars: []string{"model=my-org/llama-ft"}})
	if err != nil {
		log.Fatal(err) // a *plan.DiagnosticsError: print it with its Write method
	}
	size, _ := p.GridSize()
	fmt.Println(p.Model.Name, size)
	for _, c := range p.Workloads {
		fmt.Println(c.Name, c.SLO)
	}

	cfg := plan.Config{"max_num_seqs": int64(256), "max_num_batched_tokens": int64(2048),
		"gpu_memory_utilization": 0.9, "tensor_parallel_size": int64(2), "quantization": "fp8",
		"kv_cache_dtype": "auto", "enable_chunked_prefill": true}
	violations, err := p.CheckRules(cfg)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("violations:", len(violations))

	objectives, err := p.EvalObjectives(plan.TrialValues{
		Config: cfg,
		Measurement: &workload.Measurement{
			Workloads: map[string]*workload.Result{"chat": {Metrics: map[string]float64{"ttft_p99_ms": 410}}},
			Total:     &workload.Result{Metrics: map[string]float64{"output_token_throughput": 9000}},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(objectives)
	// Output:
	// my-org/llama-ft 508928
	// chat [{ttft_p99_ms 600 false} {tpot_p99_ms 40 false} {error_rate 0.01 false}]
	// summarize [{e2e_p95_ms 20000 false}]
	// violations: 0
	// [4500 410]
}
