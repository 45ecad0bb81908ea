package search

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/frontier-llm/frontier/hw"
	"github.com/frontier-llm/frontier/plan"
)

// screenPlan is a vLLM plan on a catalog architecture and SKU: awq needs a quantised
// checkpoint model.name is not (the memory model refuses it as unsupported), and the rule
// refuses tensor parallel 4. %s is where a test adds a knob.
const screenPlan = `
study "screen" {
  seed = 3
}
model {
  name          = "meta-llama/Llama-3.1-8B-Instruct"
  architecture  = "llama-3.1-8b"
  max_model_len = 4096
}
engine "vllm" {}
hardware {
  gpus = 4
  sku  = "h100-sxm"
}
knob "quantization"         { values = ["none", "awq"] }
knob "tensor_parallel_size" { values = [1, 2, 4] }
%s
rule "at-most-two-gpus" {
  condition = knob.tensor_parallel_size <= 2
}
workload "chat" {
  requests      = 20
  input_tokens  = fixed(200)
  output_tokens = fixed(20)
  arrival       = poisson(2)
}
objective "throughput" {
  maximize = metric.total.output_token_throughput
}
`

func loadScreenPlan(t *testing.T, extra string) *plan.Plan {
	t.Helper()
	return loadScreenSource(t, strings.Replace(screenPlan, "%s", extra, 1))
}

// loadScreenSource loads a plan from its text.
func loadScreenSource(t *testing.T, src string) *plan.Plan {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plan.hcl")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := plan.Load(path, plan.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPreScreenCountsRulesAndMemory(t *testing.T) {
	t.Parallel()
	p := loadScreenPlan(t, "")
	got, err := PreScreen(context.Background(), p, PreScreenSample)
	if err != nil {
		t.Fatal(err)
	}
	two := 2
	want := &plan.PreScreen{
		Examined: 6, PassRules: 4, PassMemory: &two,
		Rejected: map[string]int{"rule at-most-two-gpus": 2, "unsupported": 2},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pre-screen of the whole grid (-want +got):\n%s", diff)
	}
}

func TestPreScreenSamplesALargeGridWithThePlansSeed(t *testing.T) {
	t.Parallel()
	p := loadScreenPlan(t, "")
	a, err := PreScreen(context.Background(), p, 4)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Sampled || a.Examined != 4 {
		t.Fatalf("sampled %v, examined %d; want a sample of 4", a.Sampled, a.Examined)
	}
	b, err := PreScreen(context.Background(), p, 4)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("two pre-screens with one seed differ (-first +second):\n%s", diff)
	}
	if _, err := PreScreen(context.Background(), p, 0); err == nil {
		t.Error("a sample of 0: no error")
	}
}

func TestPreScreenOfAContinuousKnobIsNil(t *testing.T) {
	t.Parallel()
	p := loadScreenPlan(t, `knob "gpu_memory_utilization" {
  min = 0.8
  max = 0.95
}`)
	got, err := PreScreen(context.Background(), p, PreScreenSample)
	if err != nil || got != nil {
		t.Errorf("PreScreen = %+v, %v; want nil, nil (there is no grid)", got, err)
	}
}

func TestHardwareWarnings(t *testing.T) {
	t.Parallel()
	p := loadScreenPlan(t, "")
	inventory := func(n int) hw.Inventory {
		inv := hw.Inventory{Available: true}
		for i := range n {
			inv.GPUs = append(inv.GPUs, hw.GPU{Index: i, Name: "NVIDIA L40S", MemoryTotalBytes: 48 << 30, MemoryFreeBytes: 48 << 30})
		}
		return inv
	}
	tests := []struct {
		name string
		gpus int
		want string
	}{
		{"fewer GPUs than the plan asks for", 2, "hardware.gpus = 4: not enough usable GPUs"},
		{"GPUs of another SKU", 4, `hardware.sku is "h100-sxm", but GPU 0 is a NVIDIA L40S`},
	}
	for _, tt := range tests {
		got := HardwareWarnings(p, inventory(tt.gpus))
		if !slices.ContainsFunc(got, func(w string) bool { return strings.Contains(w, tt.want) }) {
			t.Errorf("%s: warnings %q; want one with %q", tt.name, got, tt.want)
		}
	}
	l40s := inventory(4)
	cpu := loadScreenPlan(t, "")
	cpu.Hardware.GPUs = plan.GPUSelection{}
	if got := HardwareWarnings(cpu, l40s); got != nil {
		t.Errorf("CPU only: %q, want none", got)
	}
	simPlan := loadScreenPlan(t, "")
	simPlan.Engine.Kind = plan.EngineSim
	if got := HardwareWarnings(simPlan, hw.Inventory{}); got != nil {
		t.Errorf("the simulator without NVML: %q, want none (its GPUs are virtual)", got)
	}
}

func TestEstimateAllKeepsTheOrderAndSaysWhyThereIsNoMeasurement(t *testing.T) {
	t.Parallel()
	p := loadScreenPlan(t, "")
	as, err := NewAssessor(p)
	if err != nil {
		t.Fatal(err)
	}
	configs := []plan.Config{
		{"quantization": "none", "tensor_parallel_size": int64(1)},
		{"quantization": "none", "tensor_parallel_size": int64(4)},
		{"quantization": "awq", "tensor_parallel_size": int64(1)},
		{"quantization": "none", "tensor_parallel_size": int64(2)},
	}
	got, err := EstimateAll(context.Background(), as, configs)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(configs) {
		t.Fatalf("%d estimates for %d configurations", len(got), len(configs))
	}
	for i, e := range got {
		if diff := cmp.Diff(map[string]any(configs[i]), e.Config); diff != "" {
			t.Errorf("estimate %d is of another configuration (-want +got):\n%s", i, diff)
		}
		if !e.SimulatedAll {
			t.Errorf("estimate %d is not marked simulated", i)
		}
	}
	if m := got[0].Measurement; m == nil || m.Total.Metrics["output_token_throughput"] <= 0 || got[0].KVCacheTokens <= 0 {
		t.Errorf("tp 1: measurement %+v, KV cache %d tokens; want a throughput and a KV cache", m, got[0].KVCacheTokens)
	}
	if got[3].GPUs != 2 || got[3].SKU != "h100-sxm" {
		t.Errorf("tp 2 takes %d GPUs of %q, want 2 of h100-sxm", got[3].GPUs, got[3].SKU)
	}
	if e := got[1]; e.Measurement != nil || !strings.HasPrefix(e.Rejected, "at-most-two-gpus") {
		t.Errorf("tp 4: rejected %q, measurement %v; want the rule and no measurement", e.Rejected, e.Measurement != nil)
	}
	if e := got[2]; e.Measurement != nil || e.FailureClass != "unsupported" || e.EngineMessage == "" {
		t.Errorf("awq: failure %q (%q); want unsupported with the engine's message, no measurement", e.FailureClass, e.EngineMessage)
	}
}

// TestPreScreenOfThousandsOfKnobsDrawsFewerConfigurations: each configuration costs in
// proportion to its knobs, so a plan with thousands of them is sampled more thinly (at least
// a thousand configurations), and `frontier plan` answers in seconds instead of minutes.
func TestPreScreenOfThousandsOfKnobsDrawsFewerConfigurations(t *testing.T) {
	t.Parallel()
	var extra strings.Builder
	for i := range 2500 {
		fmt.Fprintf(&extra, "knob \"custom_flag_%d\" { values = [1, 2] }\n", i)
	}
	// Flags of a vLLM newer than frontier's tables, which only its own help can confirm: the
	// plan loads with a warning for each, as the preflight decides.
	src := strings.Replace(strings.Replace(screenPlan, "%s", extra.String(), 1), `engine "vllm" {}`, `engine "vllm" { version = "0.33" }`, 1)
	p := loadScreenSource(t, src)
	start := time.Now()
	got, err := PreScreen(context.Background(), p, PreScreenSample)
	if err != nil {
		t.Fatal(err)
	}
	// 2,000,000 knob values over 2,502 knobs is 799 configurations; the floor is 1,000.
	if !got.Sampled || got.Examined != minPreScreenSample {
		t.Errorf("pre-screen examined %d (sampled %v), want %d sampled", got.Examined, got.Sampled, minPreScreenSample)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("pre-screen of 2,502 knobs took %v", d)
	}
	// A plan of a few knobs keeps the full sample.
	seqs := make([]string, 1000)
	for i := range seqs {
		seqs[i] = strconv.Itoa(8 + i)
	}
	few := loadScreenPlan(t, `knob "max_num_seqs" { values = [`+strings.Join(seqs, ", ")+`] }
knob "block_size" { values = [8, 16, 32, 64, 128] }
knob "gpu_memory_utilization" { values = [0.8, 0.85, 0.9, 0.95] }`)
	if got, err := PreScreen(context.Background(), few, PreScreenSample); err != nil || got.Examined != PreScreenSample {
		t.Errorf("pre-screen of 5 knobs examined %v (err %v), want %d", got, err, PreScreenSample)
	}
}
