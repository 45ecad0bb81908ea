package report

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/frontier-llm/frontier/record"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// loadFixture reads a study record from testdata.
func loadFixture(t *testing.T, name string) *record.Study {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var rec record.Study
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return &rec
}

// golden compares got with testdata/golden/NAME, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", name, diff)
	}
}

func trialWith(n int, state record.State, objs map[string]float64) record.Trial {
	return record.Trial{Number: n, State: state, Objectives: objs, Config: map[string]any{}}
}

func TestKneePicksClosestToUtopia(t *testing.T) {
	t.Parallel()
	two := []record.Objective{{Name: "tput", Maximize: true}, {Name: "lat"}}
	for _, tc := range []struct {
		name  string
		objs  []record.Objective
		front []record.Trial
		want  int
	}{
		{"bend of a convex front", two, []record.Trial{
			trialWith(1, "complete", map[string]float64{"tput": 100, "lat": 100}),
			trialWith(2, "complete", map[string]float64{"tput": 900, "lat": 150}),
			trialWith(3, "complete", map[string]float64{"tput": 1000, "lat": 1000}),
		}, 2},
		{"one objective: the best", []record.Objective{{Name: "lat"}}, []record.Trial{
			trialWith(4, "complete", map[string]float64{"lat": 30}),
			trialWith(5, "complete", map[string]float64{"lat": 20}),
		}, 5},
		{"a single point", two, []record.Trial{
			trialWith(7, "complete", map[string]float64{"tput": 1, "lat": 1}),
		}, 7},
		{"ties go to the lower trial number", two, []record.Trial{
			trialWith(9, "complete", map[string]float64{"tput": 1000, "lat": 200}),
			trialWith(8, "complete", map[string]float64{"tput": 500, "lat": 100}),
		}, 8},
		{"confirmation runs are averaged", two, []record.Trial{
			trialWith(1, "complete", map[string]float64{"tput": 100, "lat": 100}),
			{Number: 2, State: "complete", Objectives: map[string]float64{"tput": 900, "lat": 150},
				Confirmations: []map[string]float64{{"tput": 900, "lat": 1850}}},
			trialWith(3, "complete", map[string]float64{"tput": 1000, "lat": 500}),
		}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var front []*record.Trial
			for i := range tc.front {
				front = append(front, &tc.front[i])
			}
			r := Knee(tc.objs, front)
			if r == nil {
				t.Fatal("Knee returned nil for a non-empty front")
			}
			if diff := cmp.Diff(tc.want, r.Trial); diff != "" {
				t.Errorf("knee trial (-want +got):\n%s", diff)
			}
		})
	}
	if Knee(two, nil) != nil {
		t.Error("Knee of an empty front is not nil")
	}
}

func TestAnalyzeQuickstart(t *testing.T) {
	t.Parallel()
	a := Analyze(loadFixture(t, "quickstart.json"))
	var front []int
	for _, tr := range a.Front {
		front = append(front, tr.Number)
	}
	if diff := cmp.Diff([]int{8, 14, 10}, front); diff != "" {
		t.Errorf("front, best throughput first (-want +got):\n%s", diff)
	}
	if !a.Simulated {
		t.Error("a study of simulated trials is not marked simulated")
	}
	type group struct {
		State  record.State
		Class  string
		Trials []int
	}
	var got []group
	for _, p := range a.Problems {
		got = append(got, group{p.State, p.Class, p.Trials})
	}
	want := []group{
		{"infeasible", "SLO missed: chat ttft_p99_ms N > N", []int{7, 13}},
		{"infeasible", "kv_cache_too_small", []int{6}},
		{"infeasible", "invalid_args", []int{15}},
		{"pruned", "pruned: chat ttft_p99_ms N > N after N of N requests", []int{5, 9, 12, 17}},
		{"failed", "workload: dataset read: open data/chat.jsonl: too many open files", []int{19}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}

func TestSensitivityFindsOneKnobChanges(t *testing.T) {
	t.Parallel()
	rec := loadFixture(t, "quickstart.json")
	// Trial 0 is the base configuration; trials 1 to 9 each change one knob of it.
	effects := sensitivity(rec, rec.Trial(0))
	got := map[string][]int{}
	for _, e := range effects {
		for _, n := range e.Neighbors {
			got[e.Knob] = append(got[e.Knob], n.Trial.Number)
		}
	}
	want := map[string][]int{
		"max_num_seqs":           {1, 2, 16, 3},
		"max_num_batched_tokens": {4, 5},
		"gpu_memory_utilization": {6},
		"enable_chunked_prefill": {9},
		"kv_cache_dtype":         {7},
		"quantization":           {8},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("one-knob neighbours of trial 0 (-want +got):\n%s", diff)
	}
}

func TestEstimatesFillKnobsNoTrialChangedAlone(t *testing.T) {
	t.Parallel()
	a := Analyze(loadFixture(t, "quickstart.json"))
	// Trial 14, the knee, has no recorded neighbour that changes one knob alone.
	if diff := cmp.Diff(a.Record.Knobs, a.NeedsEstimate()); diff != "" {
		t.Errorf("NeedsEstimate (-want +got):\n%s", diff)
	}
	// The model puts trial 14 itself at 2000 tok/s where it measured 1551: the estimate's
	// change is against the model's 2000 (-25%), not the measurement (-3%), so the model's
	// offset does not read as the knob's effect.
	base := map[string]float64{"throughput-per-gpu": 2000, "chat-tail": 300}
	a.AddEstimate("quantization", "none", map[string]float64{"throughput-per-gpu": 1500, "chat-tail": 300}, record.StateComplete, "", base)
	for _, e := range a.Sensitivity {
		if e.Knob != "quantization" {
			continue
		}
		if len(e.Neighbors) != 1 || !e.Neighbors[0].Estimated || !e.Neighbors[0].Trial.Simulated {
			t.Fatalf("quantization neighbours = %+v, want the one simulated estimate", e.Neighbors)
		}
		want := map[string]float64{"throughput-per-gpu": -0.25, "chat-tail": 0}
		if diff := cmp.Diff(want, e.Neighbors[0].Delta); diff != "" {
			t.Errorf("estimated changes, against the model's estimate of trial 14 (-want +got):\n%s", diff)
		}
	}
	if diff := cmp.Diff([]string{"max_num_seqs", "max_num_batched_tokens", "gpu_memory_utilization", "enable_chunked_prefill", "kv_cache_dtype"}, a.NeedsEstimate()); diff != "" {
		t.Errorf("NeedsEstimate after an estimate (-want +got):\n%s", diff)
	}
}
