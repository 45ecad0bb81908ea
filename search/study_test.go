package search

import (
	"context"
	"errors"
	"path/filepath"
	"sort"
	"testing"

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
func configKeys(t *testing.T, sp *space, rec *StudyRecord) map[string]int {
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

	rec, err := Load(ctx, db, "")
	if err != nil {
		t.Fatal(err)
	}
	sp, _ := newSpace(p.Knobs)
	configKeys(t, sp, rec)
	var numbers []int
	for _, tr := range rec.Trials {
		numbers = append(numbers, tr.Number)
		if tr.State == StateComplete && tr.Total.Metrics["cost_per_million_output_tokens"] <= 0 {
			t.Errorf("trial %d has no cost metric", tr.Number)
		}
		if !tr.Simulated && tr.State == StateComplete {
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
		if tr.Pareto && tr.State != StateComplete {
			t.Errorf("trial %d is on the front but %s", tr.Number, tr.State)
		}
		if tr.Pareto && len(tr.Confirmations) != 1 {
			t.Errorf("front trial %d has %d confirmations; want 1", tr.Number, len(tr.Confirmations))
		}
	}
	if rec.Budget != 20 || rec.SpaceHash != p.SpaceHash || len(rec.Objectives) != 2 {
		t.Errorf("study header: budget %d, space %q, objectives %v", rec.Budget, rec.SpaceHash, rec.Objectives)
	}
}
