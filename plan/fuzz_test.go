package plan

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/frontier-llm/frontier/workload"
)

// FuzzLoad feeds arbitrary bytes to the plan loader: it must return a plan or a
// *DiagnosticsError, never panic, and a plan it returns must be safe to evaluate.
func FuzzLoad(f *testing.F) {
	seeds, err := filepath.Glob("testdata/*/*.hcl")
	if err != nil {
		f.Fatal(err)
	}
	examples, err := filepath.Glob("../examples/*.hcl")
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range append(append(seeds, "testdata/design.hcl"), examples...) {
		src, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
	f.Add([]byte(minimal))
	f.Add([]byte(trialPlan))
	f.Add([]byte("knob \"x\" { min = 1e308\n max = 1e309 }"))
	f.Add([]byte("variable \"v\" {}\nmodel { name = var.v }"))
	f.Add([]byte{0xff, 0xfe, '{', '}'})
	// Relative paths in the inputs resolve against testdata, which holds data files.
	filename := filepath.Join("testdata", "fuzz.hcl")
	f.Fuzz(func(t *testing.T, src []byte) {
		p, err := loadSource(filename, src, LoadOptions{})
		if err != nil {
			var de *DiagnosticsError
			if !errors.As(err, &de) {
				t.Fatalf("error %v is not a *DiagnosticsError", err)
			}
			if !de.Diagnostics.HasErrors() {
				t.Fatalf("a failed load has no error diagnostic")
			}
			_ = de.Write(discard{})
			return
		}
		n, ok := p.GridSize()
		if ok && n > 0 && n <= 64 {
			grid, err := p.Grid()
			if err != nil {
				t.Fatalf("Grid of %d configurations: %v", n, err)
			}
			for _, cfg := range grid {
				_, _ = p.CheckRules(cfg)
				for _, k := range p.Knobs {
					if !k.Contains(cfg[k.Name]) {
						t.Fatalf("knob %q does not contain its own grid value %v", k.Name, cfg[k.Name])
					}
				}
			}
		}
		metrics := map[string]float64{}
		for _, m := range workload.MetricNames() {
			metrics[m] = 1
		}
		tv := TrialValues{Config: Config{}, Measurement: &workload.Measurement{Workloads: map[string]*workload.Result{}, Total: &workload.Result{Metrics: metrics}}}
		_, _ = p.EvalObjectives(tv)
		_, _ = p.EvalChecks(tv)
	})
}

type discard struct{}

func (discard) Write(b []byte) (int, error) { return len(b), nil }
