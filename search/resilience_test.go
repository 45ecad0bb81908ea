package search

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frontier-llm/frontier/record"
	"github.com/frontier-llm/frontier/search/storage"

	"github.com/google/go-cmp/cmp"
)

func TestInterruptedTrialIsMeasuredAgainByTheNextRun(t *testing.T) {
	t.Parallel()
	p := loadPlan(t, "estimate.hcl", "confirm=0", "trials=6")
	db := filepath.Join(t.TempDir(), "study.db")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Interrupt the run the moment trial 2 starts.
	events := func(e Event) {
		if e.Kind == EventStarted && e.Trial == 2 {
			cancel()
		}
	}
	sum, err := Run(ctx, p, Options{Storage: db, Estimate: true, Events: events})
	if err != nil {
		t.Fatal(err)
	}
	if !sum.Interrupted {
		t.Fatalf("the run was not reported as interrupted: %+v", sum)
	}
	rec, err := storage.Load(context.Background(), db, "")
	if err != nil {
		t.Fatal(err)
	}
	var states []record.State
	for _, tr := range rec.Trials {
		states = append(states, tr.State)
	}
	if len(states) != 3 || states[2] != record.StateInterrupted {
		t.Fatalf("states after the interruption: %v; want two finished and trial 2 interrupted", states)
	}
	interrupted := rec.Trials[2].Config

	sum, err = Run(context.Background(), p, Options{Storage: db, Estimate: true})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Trials != 6 || sum.Measured != 4 || sum.Resumed != 1 || sum.Interrupted {
		t.Errorf("resumed run: %d trials, %d measured, %d resumed, interrupted %v; want 6, 4, 1, false",
			sum.Trials, sum.Measured, sum.Resumed, sum.Interrupted)
	}
	rec, err = storage.Load(context.Background(), db, "")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(interrupted, rec.Trials[2].Config); diff != "" {
		t.Errorf("trial 2 was measured with another configuration (-want +got):\n%s", diff)
	}
	if rec.Trials[2].State == record.StateInterrupted || rec.Trials[2].State == record.StateWaiting {
		t.Errorf("trial 2 is still %s", rec.Trials[2].State)
	}
}

func TestStaleRunningTrialOfAKilledProcessIsRepaired(t *testing.T) {
	t.Parallel()
	p := loadPlan(t, "estimate.hcl", "confirm=0", "trials=3")
	db := filepath.Join(t.TempDir(), "study.db")
	if _, err := Run(context.Background(), p, Options{Storage: db, Estimate: true}); err != nil {
		t.Fatal(err)
	}
	// A process that claimed trial 3 and was killed: its pid no longer exists.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	st, err := storage.Open(context.Background(), db, false)
	if err != nil {
		t.Fatal(err)
	}
	id, _, err := st.StudyID("estimate")
	if err != nil {
		t.Fatal(err)
	}
	sp, _ := newSpace(p.Knobs)
	cfg := map[string]any{"max_num_seqs": int64(8), "max_num_batched_tokens": int64(8192), "gpu_memory_utilization": 0.9, "kv_cache_dtype": "fp8"}
	r := &runner{sp: sp}
	nt, err := r.newTrial(cfg, configKey(cfg), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, status, err := st.ClaimNew(id, 4, nt, fmt.Sprintf("%s/%d/1", host, dead.Process.Pid))
	if err != nil || status != storage.Claimed {
		t.Fatalf("claim: %v, status %d", err, status)
	}
	st.Close()

	sum, err := Run(context.Background(), p, Options{Storage: db, Estimate: true, Trials: 4})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{3}, sum.Repaired); diff != "" {
		t.Errorf("repaired trials (-want +got):\n%s", diff)
	}
	if sum.Trials != 4 || sum.Resumed != 1 {
		t.Errorf("%d trials, %d resumed; want 4 and 1", sum.Trials, sum.Resumed)
	}
}

func TestChangedSpaceIsRefused(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "study.db")
	p := loadPlan(t, "estimate.hcl", "confirm=0", "trials=2")
	if _, err := Run(context.Background(), p, Options{Storage: db, Estimate: true}); err != nil {
		t.Fatal(err)
	}
	changed := loadPlan(t, "estimate.hcl", "confirm=0", "trials=2", "gmu_max=0.9")
	_, err := Run(context.Background(), changed, Options{Storage: db, Estimate: true, Trials: 4})
	if !errors.Is(err, storage.ErrSpaceChanged) {
		t.Fatalf("err = %v; want storage.ErrSpaceChanged", err)
	}
	rec, err := storage.Load(context.Background(), db, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Trials) != 2 {
		t.Errorf("the refused run changed the study: %d trials", len(rec.Trials))
	}
}

func TestSamplersReproduceFromTheSeed(t *testing.T) {
	t.Parallel()
	for _, sampler := range []string{"tpe", "cmaes", "random", "grid", "sobol"} {
		t.Run(sampler, func(t *testing.T) {
			t.Parallel()
			p := loadPlan(t, "estimate.hcl", "confirm=0", "trials=12", "sampler="+sampler)
			var runs [2][]string
			for i := range runs {
				db := filepath.Join(t.TempDir(), fmt.Sprintf("run%d.db", i))
				if _, err := Run(context.Background(), p, Options{Storage: db, Estimate: true}); err != nil {
					t.Fatal(err)
				}
				rec, err := storage.Load(context.Background(), db, "")
				if err != nil {
					t.Fatal(err)
				}
				sp, _ := newSpace(p.Knobs)
				for _, tr := range rec.Trials {
					cfg, err := sp.normalize(tr.Config)
					if err != nil {
						t.Fatal(err)
					}
					runs[i] = append(runs[i], sp.describe(cfg))
				}
			}
			if len(runs[0]) != 12 {
				t.Errorf("%d trials; want 12", len(runs[0]))
			}
			if diff := cmp.Diff(runs[0], runs[1]); diff != "" {
				t.Errorf("two runs with one seed differ (-first +second):\n%s", diff)
			}
		})
	}
}

func TestLoadNamesTheStudiesWhenSeveralShareADatabase(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "two.db")
	p := loadPlan(t, "estimate.hcl", "confirm=0", "trials=1")
	if _, err := Run(context.Background(), p, Options{Storage: db, Estimate: true}); err != nil {
		t.Fatal(err)
	}
	p.Study.Name = "other"
	if _, err := Run(context.Background(), p, Options{Storage: db, Estimate: true}); err != nil {
		t.Fatal(err)
	}
	_, err := storage.Load(context.Background(), db, "")
	if err == nil || !strings.Contains(err.Error(), "estimate, other") {
		t.Errorf("storage.Load without a study name: %v; want an error listing estimate, other", err)
	}
	rec, err := storage.Load(context.Background(), db, "other")
	if err != nil || rec.Study != "other" || len(rec.Trials) != 1 {
		t.Errorf("storage.Load other: %v, %+v", err, rec)
	}
	if _, err := storage.Load(context.Background(), filepath.Join(t.TempDir(), "missing.db"), ""); err == nil {
		t.Error("storage.Load of a missing file succeeded")
	}
}

func TestWarmStartMeasuresTheEarlierFrontFirst(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	prev := filepath.Join(dir, "prev.db")
	p := loadPlan(t, "estimate.hcl", "confirm=0", "trials=8")
	if _, err := Run(context.Background(), p, Options{Storage: prev, Estimate: true}); err != nil {
		t.Fatal(err)
	}
	old, err := storage.Load(context.Background(), prev, "")
	if err != nil {
		t.Fatal(err)
	}
	next := loadPlan(t, "estimate.hcl", "confirm=0", "trials=6", "sampler=random")
	db := filepath.Join(dir, "next.db")
	if _, err := Run(context.Background(), next, Options{Storage: db, Estimate: true, WarmStart: prev}); err != nil {
		t.Fatal(err)
	}
	rec, err := storage.Load(context.Background(), db, "")
	if err != nil {
		t.Fatal(err)
	}
	sp, _ := newSpace(p.Knobs)
	byNumber := map[int]map[string]any{}
	for _, tr := range old.Trials {
		byNumber[tr.Number] = tr.Config
	}
	limit := min(len(old.Front), 6/4)
	for i := 0; i < limit; i++ {
		want, _ := sp.normalize(byNumber[old.Front[i]])
		got, _ := sp.normalize(rec.Trials[i].Config)
		if diff := cmp.Diff(sp.describe(want), sp.describe(got)); diff != "" {
			t.Errorf("trial %d is not the earlier study's front trial %d (-want +got):\n%s", i, old.Front[i], diff)
		}
		if rec.Trials[i].WarmStart != prev {
			t.Errorf("trial %d: warm_start %q; want %q", i, rec.Trials[i].WarmStart, prev)
		}
	}
	if len(rec.Trials) != 6 {
		t.Errorf("%d trials; want 6", len(rec.Trials))
	}
}

func TestSecretsFromTheEnvironmentNeverReachTheDatabase(t *testing.T) {
	t.Parallel()
	const secret = "hf_supersecretvalue123"
	p := loadPlan(t, "estimate.hcl", "confirm=0", "trials=1")
	db := filepath.Join(t.TempDir(), "study.db")
	if _, err := Run(context.Background(), p, Options{Storage: db, Estimate: true, Environ: []string{"HF_TOKEN=" + secret}}); err != nil {
		t.Fatal(err)
	}
	st, err := storage.Open(context.Background(), db, false)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	st.Secrets = secretValues(p, []string{"HF_TOKEN=" + secret, "PATH=/usr/bin"})
	id, _, err := st.StudyID("estimate")
	if err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{"max_num_seqs": int64(16), "max_num_batched_tokens": int64(4096), "gpu_memory_utilization": 0.8, "kv_cache_dtype": "auto"}
	sp, _ := newSpace(p.Knobs)
	nt, err := (&runner{sp: sp}).newTrial(cfg, configKey(cfg), nil)
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := st.ClaimNew(id, 2, nt, "me")
	if err != nil {
		t.Fatal(err)
	}
	rec := &record.Trial{Number: c.Number, State: record.StateInfeasible, Config: cfg, Reason: "crash: token " + secret + " rejected", EngineMessage: secret}
	if err := st.Finish(c, "me", rec, storage.DBComplete, 3, map[string]string{"reason": rec.Reason}); err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, table := range []string{"trial_system_attributes", "trial_user_attributes", "study_system_attributes"} {
		if err := st.DB.Raw("SELECT COUNT(*) FROM "+table+" WHERE value LIKE ?", "%"+secret+"%").Scan(&n).Error; err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			t.Errorf("%s holds the secret in %d rows", table, n)
		}
	}
	got, err := storage.Load(context.Background(), db, "")
	if err != nil {
		t.Fatal(err)
	}
	if r := got.Trials[c.Number].Reason; r != "crash: token <redacted> rejected" {
		t.Errorf("reason %q; want the secret redacted", r)
	}
}
