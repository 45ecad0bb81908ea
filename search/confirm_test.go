package search

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frontier-llm/frontier/record"

	"github.com/google/go-cmp/cmp"

	"github.com/frontier-llm/frontier/plan"
)

// TestConfirmationMissTakesATrialOffTheFront checks the confirmation rule: a front
// configuration whose confirmation run misses an SLO is made infeasible with a reason naming
// the run and the bound, and the configuration that then joins the front is confirmed in
// turn. The test finds, on the estimator, a workload seed and a ttft bound where one
// configuration meets the bound on its first run and misses it on its confirmation run (a
// different workload seed), while the other meets it on both.
func TestConfirmationMissTakesATrialOffTheFront(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ttft := func(p *plan.Plan, ev *estimator, seqs int64, run int) float64 {
		t.Helper()
		out, err := ev.evaluate(ctx, job{config: plan.Config{"max_num_seqs": seqs}, run: run, seed: uint64(p.WorkloadSeed())})
		if err != nil || out.m == nil {
			t.Fatalf("estimate max_num_seqs=%d run %d: %v", seqs, run, err)
		}
		return out.m.Workloads["chat"].Metrics["ttft_p99_ms"]
	}
	var seed int
	var bound float64
	var miss, keep int64
	for s := 1; s <= 40 && bound == 0; s++ {
		p := loadPlan(t, "confirm.hcl", fmt.Sprintf("seed=%d", s))
		ev, err := newStudyEstimator(p, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, pair := range [][2]int64{{32, 128}, {128, 32}} {
			a0, a1 := ttft(p, ev, pair[0], 0), ttft(p, ev, pair[0], 1)
			b := max(ttft(p, ev, pair[1], 0), ttft(p, ev, pair[1], 1))
			// The bound sits between a's two runs and above both of b's.
			if lo := max(a0, b); lo < a1-2 {
				seed, bound, miss, keep = s, (lo+a1)/2, pair[0], pair[1]
				break
			}
		}
	}
	if bound == 0 {
		t.Fatal("no seed in 1..40 gives a configuration whose confirmation misses a bound its first run meets")
	}
	p := loadPlan(t, "confirm.hcl", fmt.Sprintf("seed=%d", seed), fmt.Sprintf("ttft=%.3fms", bound))
	db := filepath.Join(t.TempDir(), "study.db")
	sum, err := Run(ctx, p, Options{Storage: db, Estimate: true})
	if err != nil {
		t.Fatal(err)
	}
	byConfig := map[int64]record.Trial{}
	for _, tr := range sum.Record.Trials {
		byConfig[toInt64(tr.Config["max_num_seqs"])] = tr
	}
	missed, kept := byConfig[miss], byConfig[keep]
	type view struct {
		State         record.State
		ConfirmFailed bool
		Runs          int
		Pareto        bool
	}
	got := map[int64]view{
		miss: {missed.State, missed.ConfirmFailed, 1 + len(missed.Confirmations), missed.Pareto},
		keep: {kept.State, kept.ConfirmFailed, 1 + len(kept.Confirmations), kept.Pareto},
	}
	want := map[int64]view{
		miss: {record.StateInfeasible, true, 2, false},
		keep: {record.StateComplete, false, 2, true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("trials by max_num_seqs, seed %d, ttft bound %.3f ms (-want +got):\n%s", seed, bound, diff)
	}
	for _, part := range []string{"confirmation run 2 of 2 missed", "chat: ttft_p99_ms", fmt.Sprintf("> %.4g", bound)} {
		if !strings.Contains(missed.Reason, part) {
			t.Errorf("reason %q does not contain %q", missed.Reason, part)
		}
	}
	if diff := cmp.Diff([]int{missed.Number}, sum.ConfirmFailed); diff != "" {
		t.Errorf("summary's confirm_failed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{kept.Number}, frontNumbers(sum)); diff != "" {
		t.Errorf("front (-want +got):\n%s", diff)
	}
	if sum.Feasible != 1 || len(sum.Unconfirmed) != 0 {
		t.Errorf("summary: %d feasible, unconfirmed %v; want 1 and none", sum.Feasible, sum.Unconfirmed)
	}
}

func frontNumbers(sum *Summary) []int {
	var out []int
	for _, f := range sum.Front {
		out = append(out, f.Number)
	}
	return out
}

func toInt64(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case float64:
		return int64(x)
	case int:
		return int64(x)
	}
	return -1
}

// TestSignalDuringConfirmationIsAnInterruption stops a study with a signal (a cancelled
// context) while it confirms its front: the run reports the interruption, so the command
// exits 2 instead of 0, and the next run confirms the rest.
func TestSignalDuringConfirmationIsAnInterruption(t *testing.T) {
	t.Parallel()
	p := loadPlan(t, "estimate.hcl", "confirm=1", "trials=6")
	db := filepath.Join(t.TempDir(), "study.db")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := func(e Event) {
		if e.Kind == EventNote && strings.HasPrefix(e.Message, "confirming trial") {
			cancel()
		}
	}
	sum, err := Run(ctx, p, Options{Storage: db, Estimate: true, Events: events})
	if err != nil {
		t.Fatal(err)
	}
	if !sum.Interrupted || !sum.ConfirmInterrupted || sum.Done != 6 {
		t.Fatalf("interrupted %v, during confirmation %v, %d trials done; want both and 6", sum.Interrupted, sum.ConfirmInterrupted, sum.Done)
	}
	again, err := Run(context.Background(), p, Options{Storage: db, Estimate: true})
	if err != nil {
		t.Fatal(err)
	}
	if again.Interrupted || again.ConfirmRuns == 0 {
		t.Errorf("the next run: interrupted %v, %d confirmation runs; want the rest confirmed", again.Interrupted, again.ConfirmRuns)
	}
}
