package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fuzzTargets are the Go fuzz tests of every parser that reads input frontier does not
// control; their seed corpora run with the owning package's tests.
var fuzzTargets = []struct{ input, file, fuzz string }{
	{"plans (HCL)", "plan/fuzz_test.go", "FuzzLoad"},
	{"datasets (JSONL, ShareGPT JSON)", "workload/source_test.go", "FuzzReadDataset"},
	{"trace files (JSONL)", "workload/source_test.go", "FuzzReadTrace"},
	{"evaluation sets (JSONL)", "quality/item_test.go", "FuzzReadSet"},
	{"SSE streams", "workload/sse_test.go", "FuzzSSE"},
	{"SSE chunks (the one-pass scanner against encoding/json)", "workload/sse_test.go", "FuzzScanChunk"},
	{"Prometheus text (/metrics)", "workload/metrics_test.go", "FuzzParseServerMetrics"},
	{"LLM judge verdicts", "quality/judge_test.go", "FuzzParseVerdict"},
	{"engine logs (failure classes)", "launcher/classify_test.go", "FuzzClassifyVLLMLog"},
	{"engine logs (KV cache capacity)", "launcher/classify_test.go", "FuzzParseCapacity"},
	{"`frontier sim serve` arguments", "sim/args_test.go", "FuzzParseServeArgs"},
	{"the installed vLLM's `serve --help=all` (argparse help)", "vllm/help_test.go", "FuzzParseHelp"},
	{"Hugging Face config.json", "sim/config_test.go", "FuzzParseConfigJSON"},
	{"study records (report input)", "report/fuzz_test.go", "FuzzReport"},
	{"`-var-file`s (HCL and JSON)", "plan/varfile_test.go", "FuzzVarFile"},
	{"engine error bodies (a refused request's reason)", "workload/engineerror_test.go", "FuzzEngineMessage"},
}

// TestReliabilityFuzzTargetsExist checks that each parser of outside input has its fuzz test
// and lists them in docs/reliability.md.
func TestReliabilityFuzzTargetsExist(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("| input | fuzz test |\n|---|---|\n")
	for _, ft := range fuzzTargets {
		raw, err := os.ReadFile(filepath.Join("..", "..", ft.file))
		if err != nil {
			t.Errorf("%s: %v", ft.input, err)
			continue
		}
		if !strings.Contains(string(raw), "func "+ft.fuzz+"(f *testing.F)") {
			t.Errorf("%s: %s has no func %s(f *testing.F)", ft.input, ft.file, ft.fuzz)
			continue
		}
		fmt.Fprintf(&b, "| %s | `%s` in `%s` |\n", ft.input, ft.fuzz, ft.file)
	}
	if !t.Failed() {
		checkReliabilityDoc(t, "fuzz", b.String())
	}
}
