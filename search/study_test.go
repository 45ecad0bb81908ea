package search

import (
	"context"
	"errors"
	"path/filepath"
	"sort"
	"testing"

	"github.com/frontier-llm/frontier/record"
	"github.com/frontier-llm/frontier/search/storage"

	"github.com/google/go-cmp/cmp"

	"github.com/frontier-llm/frontier/plan"
)

func loadPlan(t *testing.T, name string, vars ...string) *plan.Plan {
	t.Helper()
	p, err := plan.Load(filepath.Join("testdata", name), plan.LoadOptions{Vars: vars})
	if err != nil {
		var d *plan.DiagnosticsError
		if errors.As(err, &d) {
			var b []byte
			w := &sliceWriter{&b}
			_ = d.Write(w)
			t.Fatalf("load %s:\n%s", name, b)
		}
		t.Fatalf("load %s: %v", name, err)
	}
	return p
}

type sliceWriter struct{ b *[]byte }

func (w *sliceWriter) Write(p []byte) (int, error) { *w.b = append(*w.b, p...); return len(p), nil }

// configKeys lists the configuration keys of a study's trials, checking none repeats.
func configKeys(t *testing.T, sp *space, rec *record.Study) map[string]int {
	t.Helper()
	seen := map[string]int{}
	for _, tr := range rec.Trials {
		cfg, err := sp.normalize(tr.Config)
		if err != nil {
			t.Fatalf("trial %d: %v", tr.Number, err)
		}
		k := configKey(cfg)
		if prev, ok := seen[k]; ok {
			t.Errorf("trials %d and %d have the same configuration %v", prev, tr.Number, tr.Config)
		}
		seen[k] = tr.Number
	}
	return seen
}

func TestRunEstimateResumesToALargerBudgetWithoutRepeating(t *testing.T) {
	t.Parallel()
	p := loadPlan(t, "estimate.hcl")
	db := filepath.Join(t.TempDir(), "study.db")
	ctx := context.Background()

	sum, err := Run(ctx, p, Options{Storage: db, Estimate: true})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Trials != 12 || sum.Measured != 12 {
		t.Fatalf("first run: %d trials, %d measured; want 12 and 12", sum.Trials, sum.Measured)
	}
	if sum.Feasible == 0 || len(sum.Front) == 0 {
		t.Fatalf("first run found no feasible trial: %+v", sum.States)
	}

	sum2, err := Run(ctx, p, Options{Storage: "sqlite://" + db, Estimate: true, Trials: 20})
	if err != nil {
		t.Fatal(err)
	}
	if sum2.Trials != 20 || sum2.Measured != 8 {
		t.Errorf("resumed run: %d trials, %d measured; want 20 and 8", sum2.Trials, sum2.Measured)
	}

	rec, err := storage.Load(ctx, db, "")
	if err != nil {
		t.Fatal(err)
	}
	sp, _ := newSpace(p.Knobs)
	configKeys(t, sp, rec)
	var numbers []int
	for _, tr := range rec.Trials {
		numbers = append(numbers, tr.Number)
		if tr.State == record.StateComplete && tr.Total.Metrics["cost_per_million_output_tokens"] <= 0 {
			t.Errorf("trial %d has no cost metric", tr.Number)
		}
		if !tr.Simulated && tr.State == record.StateComplete {
			t.Errorf("trial %d is not labelled simulated", tr.Number)
		}
	}
	sort.Ints(numbers)
	want := make([]int, 20)
	for i := range want {
		want[i] = i
	}
	if diff := cmp.Diff(want, numbers); diff != "" {
		t.Errorf("trial numbers (-want +got):\n%s", diff)
	}
	if len(rec.Front) == 0 {
		t.Fatal("no front")
	}
	for _, tr := range rec.Trials {
		if tr.Pareto && tr.State != record.StateComplete {
			t.Errorf("trial %d is on the front but %s", tr.Number, tr.State)
		}
		// Every front member is confirmed before the study ends: whatever a report would
		// recommend or show on the front rests on more than one run.
		if tr.Pareto && (len(tr.Confirmations) != 1 || !tr.Confirmed) {
			t.Errorf("front trial %d has %d confirmations (confirmed %v); want 1", tr.Number, len(tr.Confirmations), tr.Confirmed)
		}
	}
	if len(sum2.Unconfirmed) != 0 {
		t.Errorf("unconfirmed front members %v, want none", sum2.Unconfirmed)
	}
	if rec.Budget != 20 || rec.SpaceHash != p.SpaceHash || len(rec.Objectives) != 2 {
		t.Errorf("study header: budget %d, space %q, objectives %v", rec.Budget, rec.SpaceHash, rec.Objectives)
	}
}

// TestPickUntried checks the way out of a sampler stuck on rejected configurations: on a
// grid plan.Grid refuses to list (1,200,000 configurations) it returns an untried
// configuration the rules allow, the same one for the same draw; on a grid whose allowed
// configurations are all tried but one, it walks the grid to that one, then reports the
// space exhausted.
func TestPickUntried(t *testing.T) {
	t.Parallel()
	pickerFor := func(t *testing.T, name string) *runner {
		t.Helper()
		p := loadPlan(t, name)
		sp, err := newSpace(p.Knobs)
		if err != nil {
			t.Fatal(err)
		}
		return &runner{p: p, sp: sp}
	}
	t.Run("grid larger than GridLimit", func(t *testing.T) {
		t.Parallel()
		r := pickerFor(t, "wide.hcl")
		if n, _ := r.p.GridSize(); n <= plan.GridLimit || n > maxUntriedScan {
			t.Fatalf("the test plan's grid has %d configurations; want between %d and %d", n, plan.GridLimit, maxUntriedScan)
		}
		tried := plan.Config{"max_num_seqs": int64(1), "max_num_batched_tokens": int64(1001)}
		h := &history{tried: map[string]bool{configKey(tried): true}, n: 5}
		got, err := r.pickUntried(h, 0)
		if err != nil {
			t.Fatalf("pickUntried: %v", err)
		}
		if h.tried[configKey(got)] {
			t.Errorf("pickUntried returned %v, which is tried", got)
		}
		if v, err := r.p.CheckRules(got); err != nil || len(v) > 0 {
			t.Errorf("pickUntried returned %v, which the rules refuse: %v %v", got, v, err)
		}
		again, err := r.pickUntried(h, 0)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(got, again); diff != "" {
			t.Errorf("the same draw gave another configuration (-first +second):\n%s", diff)
		}
	})
	t.Run("walks the grid to the last allowed configuration", func(t *testing.T) {
		t.Parallel()
		r := pickerFor(t, "estimate.hcl")
		grid, err := r.p.Grid()
		if err != nil {
			t.Fatal(err)
		}
		h := &history{tried: map[string]bool{}}
		var last plan.Config
		for _, c := range grid {
			if v, _ := r.p.CheckRules(c); len(v) > 0 {
				continue
			}
			if last == nil && c["kv_cache_dtype"] == "fp8" && c["max_num_seqs"] == int64(64) {
				last = c
				continue
			}
			h.tried[configKey(c)] = true
		}
		got, err := r.pickUntried(h, 0)
		if err != nil {
			t.Fatalf("pickUntried: %v", err)
		}
		if diff := cmp.Diff(last, got); diff != "" {
			t.Errorf("pickUntried did not return the only untried allowed configuration (-want +got):\n%s", diff)
		}
		h.tried[configKey(last)] = true
		if _, err := r.pickUntried(h, 1); !errors.Is(err, errExhausted) {
			t.Errorf("with every allowed configuration tried: err = %v; want errExhausted", err)
		}
	})
}

// TestFillSummaryTellsEngineTimeFromGPUTime checks the summary's account of machine time:
// trials whose engines ran on the CPU only are engine time, counted apart, and a study with
// no GPU trial is CPU only.
func TestFillSummaryTellsEngineTimeFromGPUTime(t *testing.T) {
	t.Parallel()
	type account struct {
		GPUSeconds, CPUEngineSeconds float64
		CPUOnly                      bool
	}
	tests := []struct {
		name   string
		trials []record.Trial
		want   account
	}{
		{"GPUs", []record.Trial{{State: record.StateComplete, GPUSeconds: 30}, {State: record.StateInfeasible, GPUSeconds: 5}}, account{35, 0, false}},
		{"CPU only", []record.Trial{{State: record.StateComplete, GPUSeconds: 30, CPUOnly: true}, {State: record.StateInfeasible, GPUSeconds: 5, ConfirmGPUSeconds: 2, CPUOnly: true}}, account{37, 37, true}},
		{"both", []record.Trial{{State: record.StateComplete, GPUSeconds: 30}, {State: record.StateComplete, GPUSeconds: 5, CPUOnly: true}}, account{35, 5, false}},
		{"nothing ran", []record.Trial{{State: record.StateInfeasible, PreScreened: true, OutsideBudget: true}}, account{0, 0, false}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sum := &Summary{}
			fillSummary(sum, &record.Study{Trials: tc.trials})
			got := account{sum.GPUSeconds, sum.CPUEngineSeconds, sum.CPUOnly}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("machine time (-want +got):\n%s", diff)
			}
		})
	}
}

// TestQualityBaselineIsMeasuredOncePerStudy checks that a quality gate's baseline is kept
// in the study: a second apply on the same SQLite file, to a larger budget, reuses it
// instead of measuring it again, and its trials are gated against the same baseline score.
func TestQualityBaselineIsMeasuredOncePerStudy(t *testing.T) {
	t.Parallel()
	p := loadPlan(t, "quality.hcl", "trials=4")
	db := filepath.Join(t.TempDir(), "study.db")
	ctx := context.Background()
	baselines := func(sum *Summary) map[float64]int {
		seen := map[float64]int{}
		for _, tr := range sum.Record.Trials {
			if q, ok := tr.Quality["summaries"]; ok {
				seen[q.Baseline]++
			}
		}
		return seen
	}
	first, err := Run(ctx, p, Options{Storage: db, Estimate: true})
	if err != nil {
		t.Fatal(err)
	}
	second, err := Run(ctx, p, Options{Storage: db, Estimate: true, Trials: 8})
	if err != nil {
		t.Fatal(err)
	}
	got := []int{first.BaselinesMeasured, second.BaselinesMeasured, len(baselines(second))}
	if diff := cmp.Diff([]int{1, 0, 1}, got); diff != "" {
		t.Errorf("[baselines measured by the first apply, by the second, distinct baseline scores] (-want +got):\n%s", diff)
	}
	if n := second.Measured; n != 4 {
		t.Errorf("the second apply measured %d trials; want 4", n)
	}
	for score, n := range baselines(second) {
		if score <= 0 || n < 2 {
			t.Errorf("baseline score %v on %d trials; want a positive score shared by the trials", score, n)
		}
	}
}
