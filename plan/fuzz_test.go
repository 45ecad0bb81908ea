package plan

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

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
	f.Add([]byte(minimal + "pressure {\n  window = \"1ns\"\n  ladder { factor = 1e300 }\n  burst {}\n  retry { budget = 0 }\n}\n"))
	f.Add([]byte(closedLoop + "pressure {\n  max_requests = 7\n  ladder { classes = [\"chat\"] }\n  shift {\n    from = { chat = 1 }\n    to = { chat = 2 }\n  }\n}\n"))
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
		if ps := p.Pressure; ps != nil {
			checkPressureBounds(t, ps)
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

// checkPressureBounds fails t when a pressure block that loaded holds a value beyond the
// bounds the loader enforces.
func checkPressureBounds(t *testing.T, ps *Pressure) {
	t.Helper()
	if ps.Budget < time.Second || ps.Budget > MaxPressureDuration || ps.MaxRequests < 1 || ps.MaxRequests > MaxPressureRequests {
		t.Fatalf("budget %v, max_requests %d out of bounds", ps.Budget, ps.MaxRequests)
	}
	if ps.Window < MinPressureWindow || float64(ps.Budget)/float64(ps.Window)*2 > MaxTimelinePoints+1 {
		t.Fatalf("window %v with budget %v: over %d timeline points", ps.Window, ps.Budget, MaxTimelinePoints)
	}
	if l := ps.Ladder; l != nil && (l.Start <= 0 || l.Start > MaxLadderStart || l.Factor <= 1 || l.Factor > MaxLadderFactor || l.MaxSteps > MaxLadderSteps) {
		t.Fatalf("ladder %+v out of bounds", *l)
	}
	if b := ps.Burst; b != nil && (b.Factor <= 1 || b.Factor > MaxBurstFactor) {
		t.Fatalf("burst %+v out of bounds", *b)
	}
	if r := ps.Retry; r != nil && (r.MaxRetries > MaxRetries || r.Budget < 0 || r.Budget > MaxRetryBudget) {
		t.Fatalf("retry %+v out of bounds", *r)
	}
}

type discard struct{}

func (discard) Write(b []byte) (int, error) { return len(b), nil }
