package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frontier-llm/frontier/launcher/ollamatest"
	"github.com/google/go-cmp/cmp"
)

// TestOllamaApplyExample runs the study of examples/ollama-cpu.hcl for real: frontier
// testmodel writes the model, frontier apply launches `ollama serve` for each of the four
// trials, drives the bursts of 8 requests and scores the quality gate, and frontier report
// reads the study back. On that real engine, 4 parallel slots give a lower median TTFT than
// 1 (with F16 weights; the quantised model is measured too but not compared, so that one
// noisy pair cannot fail the test twice).
func TestOllamaApplyExample(t *testing.T) {
	bin := ollamatest.Binary(t, filepath.Join("..", ".."))
	t.Setenv("FRONTIER_OLLAMA", bin)
	dir := t.TempDir()
	gguf := filepath.Join(dir, "tiny.gguf")
	db := filepath.Join(dir, "study.db")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	frontier := func(args ...string) (string, int) {
		var stdout, stderr bytes.Buffer
		code := run(ctx, args, nil, &stdout, &stderr)
		t.Logf("frontier %v: exit %d\n%s", args, code, stderr.String())
		return stdout.String(), code
	}

	if _, code := frontier("testmodel", "-o", gguf); code != exitOK {
		t.Fatalf("frontier testmodel: exit %d", code)
	}
	start := time.Now()
	plan := filepath.Join(examplesDir(t), "ollama-cpu.hcl")
	applied, code := frontier("apply", plan, "-var", "gguf="+gguf, "--storage", db)
	if code != exitOK {
		t.Fatalf("frontier apply: exit %d", code)
	}
	// The engine ran on the CPU: its time is engine time, not GPU time.
	if !strings.Contains(applied, "engine time (CPU only, no GPU): ") || strings.Contains(applied, "GPU-s") {
		t.Errorf("apply does not report engine time for a study with no GPU:\n%s", applied)
	}
	t.Logf("the study took %v", time.Since(start).Round(time.Second))

	out, code := frontier("report", "--storage", db, "--format", "json")
	if code != exitOK {
		t.Fatalf("frontier report: exit %d", code)
	}
	var study struct {
		Engine string `json:"engine"`
		Trials []struct {
			State     string         `json:"state"`
			Config    map[string]any `json:"config"`
			Simulated bool           `json:"simulated"`
			CPUOnly   bool           `json:"cpu_only"`
			Workloads map[string]struct {
				Metrics map[string]float64 `json:"metrics"`
			} `json:"workloads"`
			Quality map[string]struct {
				Score  float64 `json:"score"`
				Passed bool    `json:"passed"`
			} `json:"quality"`
		} `json:"trials"`
	}
	if err := json.Unmarshal([]byte(out), &study); err != nil {
		t.Fatalf("report JSON: %v\n%s", err, out)
	}
	type trial struct {
		NumParallel  float64
		Quantization string
		State        string
		Simulated    bool
		CPUOnly      bool
		Completed    float64
		Agreement    bool // scored and passed
	}
	var got []trial
	ttft := map[float64]float64{} // median TTFT by num_parallel, F16 weights
	for _, tr := range study.Trials {
		m := tr.Workloads["bursts"].Metrics
		got = append(got, trial{
			NumParallel:  tr.Config["num_parallel"].(float64),
			Quantization: tr.Config["quantization"].(string),
			State:        tr.State,
			Simulated:    tr.Simulated,
			CPUOnly:      tr.CPUOnly,
			Completed:    m["completed"],
			Agreement:    tr.Quality["agreement"].Passed,
		})
		if tr.Config["quantization"] == "none" {
			ttft[tr.Config["num_parallel"].(float64)] = m["ttft_p50_ms"]
		}
		t.Logf("num_parallel=%v quantization=%v: median TTFT %.0f ms, agreement %.3f", tr.Config["num_parallel"], tr.Config["quantization"], m["ttft_p50_ms"], tr.Quality["agreement"].Score)
	}
	want := []trial{
		{1, "none", "complete", false, true, 24, true},
		{1, "q8_0", "complete", false, true, 24, true},
		{4, "none", "complete", false, true, 24, true},
		{4, "q8_0", "complete", false, true, 24, true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("trials (-want +got):\n%s", diff)
	}
	if study.Engine != "ollama" {
		t.Errorf("engine = %q, want ollama", study.Engine)
	}
	if !(ttft[4] < ttft[1]) {
		t.Errorf("median TTFT with num_parallel 4 = %.0f ms, not lower than with 1 = %.0f ms", ttft[4], ttft[1])
	}
}
