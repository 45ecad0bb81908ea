package plan

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/frontier-llm/frontier/vllm"
)

// exampleVars are the variables an example needs to load here: the Ollama example serves a
// GGUF file that `frontier testmodel` writes, so the test points it at a file of its own.
func exampleVars(t *testing.T, name string) []string {
	if name != "ollama-cpu.hcl" {
		return nil
	}
	gguf := filepath.Join(t.TempDir(), "tiny.gguf")
	if err := os.WriteFile(gguf, []byte("GGUF"), 0o644); err != nil {
		t.Fatal(err)
	}
	return []string{"gguf=" + gguf}
}

// TestExamplesLoad loads every plan in examples/, as a user would validate it.
func TestExamplesLoad(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../examples/*.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 7 {
		t.Fatalf("found %d examples, want at least 7", len(files))
	}
	for _, file := range files {
		if strings.HasPrefix(filepath.Base(file), ".") {
			continue // not an example: an editor's or a tool's scratch file
		}
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			p, err := Load(file, LoadOptions{Vars: exampleVars(t, filepath.Base(file))})
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			// Users copy examples, so they should validate cleanly; a quality gate that is only
			// measured is a deliberate choice, not a mistake to copy.
			for _, w := range p.warnings {
				if w.Summary != "Quality gate without a bound" {
					t.Errorf("an example has a warning: %s", w.Error())
				}
			}
			if p.Study.Description == "" {
				t.Errorf("the example's study has no description")
			}
			// A vllm example is checked against the newest table: what a user installs today.
			if p.Engine.Kind == EngineVLLM {
				if v, err := p.VLLMVersion(); err != nil || v.Name != vllm.Current {
					t.Errorf("validated against %v (%v), want the newest line v%s", v, err, vllm.Current)
				}
			}
		})
	}
}

// TestQuickstartIsSmall checks what the quickstart promises: a simulated engine, a space of a
// few hundred configurations, about 20 trials with short measurement windows.
func TestQuickstartIsSmall(t *testing.T) {
	t.Parallel()
	p, err := Load("../examples/quickstart.hcl", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n, ok := p.GridSize()
	if !ok || n < 100 || n > 1000 {
		t.Errorf("grid size %d (finite %v), want a few hundred", n, ok)
	}
	if p.Engine.Kind != EngineSim || p.Study.Trials > 25 || len(p.Objectives) != 2 {
		t.Errorf("engine %q, %d trials, %d objectives; want sim, at most 25, 2", p.Engine.Kind, p.Study.Trials, len(p.Objectives))
	}
	for _, c := range p.Workloads {
		window := float64(c.Requests+c.Warmup) / c.Arrival.Rate
		if c.Arrival.Rate <= 0 || window > 6 {
			t.Errorf("workload %q lasts %.1fs at %g req/s; want a few seconds", c.Name, window, c.Arrival.Rate)
		}
	}
}

// TestDesignPlanGridSize loads the example plan of the design document.
func TestDesignPlanGridSize(t *testing.T) {
	t.Parallel()
	p, err := Load("testdata/design.hcl", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n, ok := p.GridSize()
	if diff := cmp.Diff(508928, n); diff != "" || !ok {
		t.Errorf("grid size (-want +got):\n%s (finite: %v)", diff, ok)
	}
}
