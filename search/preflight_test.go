package search

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frontier-llm/frontier/launcher"
	"github.com/frontier-llm/frontier/plan"
	"github.com/frontier-llm/frontier/search/storage"
)

// TestApplyRefusesFlagsTheInstalledVLLMLacks runs a study of engine vllm whose command is a
// stand-in for vLLM (vLLM cannot run here): a script that answers --version and serve
// --help=all as the current line does. The plan passes --disable-log-requests, which that
// line removed (the plan was written for v0.13, so it validates), so the study stops before
// any trial is claimed or any GPU is looked for.
func TestApplyRefusesFlagsTheInstalledVLLMLacks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := filepath.Join(dir, "vllm")
	help := "usage: vllm serve [model_tag] [options]\\n\\noptions:\\n  --max-num-seqs MAX_NUM_SEQS\\n  --enable-log-requests, --no-enable-log-requests\\n  --port PORT\\n  --host HOST\\n"
	body := "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 0.22.0; exit 0; fi\nprintf '" + help + "'\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	src := `
study "pf" {
  trials = 2
}
model {
  name = "meta-llama/Llama-3.1-8B-Instruct"
}
engine "vllm" {
  command = ["` + script + `", "serve"]
  version = "0.13"
  args    = ["--disable-log-requests"]
}
knob "max_num_seqs" { values = [16, 32] }
workload "chat" {
  requests      = 10
  input_tokens  = fixed(100)
  output_tokens = fixed(10)
  arrival       = poisson(1)
}
objective "tput" {
  maximize = metric.total.output_token_throughput
}
`
	planFile := filepath.Join(dir, "pf.hcl")
	if err := os.WriteFile(planFile, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := plan.Load(planFile, plan.LoadOptions{})
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	db := filepath.Join(dir, "pf.db")
	_, err = Run(context.Background(), p, Options{Storage: db})
	if !errors.Is(err, launcher.ErrPreflight) || !strings.Contains(err.Error(), "did you mean --enable-log-requests") {
		t.Fatalf("Run: %v; want the preflight to refuse --disable-log-requests with advice", err)
	}
	rec, err := storage.Load(context.Background(), db, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Trials) != 0 {
		t.Errorf("%d trials were recorded; want none", len(rec.Trials))
	}
}
