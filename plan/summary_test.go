package plan

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/frontier-llm/frontier/redact"
)

const summaryPlan = `
study "s" {
  trials = 12
  seed   = 7
}
model {
  name = "m"
}
engine "vllm" {
  env        = { HF_TOKEN = "hf_secret", CUDA_DEVICE_ORDER = "PCI_BUS_ID" }
  secret_env = ["HF_TOKEN"]
}
knob "max_num_seqs" { values = [8, 16] }
knob "gpu_memory_utilization" {
  min = 0.8
  max = 0.95
}
rule "small" {
  condition = knob.max_num_seqs <= 16
  message   = "too many"
}
workload "chat" {
  requests      = 10
  input_tokens  = fixed(100)
  output_tokens = fixed(10)
  arrival       = poisson(1)
}
objective "throughput" {
  maximize = metric.total.output_token_throughput
}
`

func TestDescribeKeepsTheJSONKeysOfFrontierPlan(t *testing.T) {
	t.Parallel()
	p := mustLoad(t, summaryPlan, LoadOptions{})
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // as frontier plan --json prints it
	if err := enc.Encode(p.Describe()); err != nil {
		t.Fatal(err)
	}
	var got map[string]json.RawMessage
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 0, len(got))
	for k := range got {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{"checks", "engine", "grid_size", "hardware", "knobs", "model", "notes", "objectives", "plan_hash",
		"pre_screen", "quality", "rules", "space_hash", "study", "variables", "warnings", "workloads"}
	if diff := cmp.Diff(want, keys); diff != "" {
		t.Errorf("top-level keys (-want +got):\n%s", diff)
	}
	for key, want := range map[string]string{
		"checks":     "[]", // empty lists are lists, not null
		"quality":    "[]",
		"variables":  "{}",
		"grid_size":  "null", // a continuous knob: no grid
		"pre_screen": "null",
		"rules":      `[{"name":"small","condition":"knob.max_num_seqs <= 16","message":"too many"}]`,
		"objectives": `[{"name":"throughput","direction":"maximize","expression":"metric.total.output_token_throughput"}]`,
	} {
		if string(got[key]) != want {
			t.Errorf("%s = %s, want %s", key, got[key], want)
		}
	}
	var knobs []map[string]any
	if err := json.Unmarshal(got["knobs"], &knobs); err != nil {
		t.Fatal(err)
	}
	if len(knobs) != 2 || knobs[0]["size"] != 2.0 || knobs[1]["size"] != nil || knobs[1]["min"] != 0.8 {
		t.Errorf("knobs = %v; want max_num_seqs of size 2, then a continuous range from 0.8 with size null", knobs)
	}
}

func TestDescribeRedactsSecretEnv(t *testing.T) {
	t.Parallel()
	p := mustLoad(t, summaryPlan, LoadOptions{})
	s := p.Describe()
	want := map[string]string{"HF_TOKEN": redact.Placeholder, "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
	if diff := cmp.Diff(want, s.Engine.Env); diff != "" {
		t.Errorf("engine env (-want +got):\n%s", diff)
	}
	var text bytes.Buffer
	if err := s.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(s)
	for name, out := range map[string]string{"text": text.String(), "JSON": string(b)} {
		if strings.Contains(out, "hf_secret") {
			t.Errorf("the %s summary shows the secret:\n%s", name, out)
		}
	}
}

func TestSummaryWriteTextShowsEachBlock(t *testing.T) {
	t.Parallel()
	p := mustLoad(t, summaryPlan, LoadOptions{})
	s := p.Describe()
	passMemory := 1
	s.PreScreen = &PreScreen{Examined: 2, PassRules: 2, PassMemory: &passMemory, Rejected: map[string]int{"oom": 1}}
	var b bytes.Buffer
	if err := s.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"Study s\n  12 trials, sampler tpe, seed 7",
		"Engine vllm: vllm serve",
		"env HF_TOKEN=" + redact.Placeholder,
		"Grid: none, a knob is continuous",
		"Pre-screen: 2 of 2 configurations pass the rules, 1 of them start within GPU memory (simulated)\n  rejected by oom: 1\n",
		"knob.max_num_seqs <= 16",
		"poisson(1)",
		"in fixed(100), out fixed(10)",
		"metric.total.output_token_throughput",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the text lacks %q:\n%s", want, out)
		}
	}
}
