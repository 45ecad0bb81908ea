package search

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/frontier-llm/frontier/record"
	"github.com/frontier-llm/frontier/search/storage"

	"github.com/frontier-llm/frontier/plan"
	"gorm.io/gorm"
)

// warmStart queues the best configurations of an earlier study, once per study: the front
// first, then the other feasible trials, at most a quarter of the budget, each only if this
// plan's knobs and rules allow it.
func (r *runner) warmStart(ctx context.Context) error {
	src := r.opts.WarmStart
	if src == "" {
		src = r.p.Study.WarmStart
	}
	if src == "" {
		return nil
	}
	prev, err := storage.Load(ctx, src, "")
	if err != nil {
		var err2 error
		if prev, err2 = storage.Load(ctx, src, r.name); err2 != nil {
			return fmt.Errorf("warm start: %w", err)
		}
	}
	var first bool
	err = r.st.DB.Transaction(func(tx *gorm.DB) error {
		if err := r.st.LockStudy(tx, r.studyID); err != nil {
			return err
		}
		first, err = r.st.MarkWarmStarted(tx, r.studyID, storage.RedactURL(src))
		return err
	})
	if err != nil {
		return r.st.WriteErr("warm start", err)
	}
	if !first {
		return nil
	}
	onFront := map[int]bool{}
	for _, n := range prev.Front {
		onFront[n] = true
	}
	var cands []record.Trial
	for _, t := range prev.Trials {
		if t.State == record.StateComplete {
			cands = append(cands, t)
		}
	}
	sort.SliceStable(cands, func(i, j int) bool { return onFront[cands[i].Number] && !onFront[cands[j].Number] })
	limit := max(1, r.budget/4)
	queued := 0
	for _, t := range cands {
		if queued >= limit {
			break
		}
		cfg, err := r.sp.normalize(t.Config)
		if err != nil {
			continue
		}
		if v, err := r.p.CheckRules(cfg); err != nil || len(v) > 0 {
			continue
		}
		nt, err := r.newTrial(cfg, configKey(cfg), map[string]string{storage.AttrWarmStart: storage.RedactURL(src)})
		if err != nil {
			return err
		}
		nt.State = storage.DBWaiting
		_, status, err := r.st.ClaimNew(r.studyID, r.budget, nt, r.owner)
		if err != nil {
			return err
		}
		if status == storage.ClaimBudgetMet {
			break
		}
		if status == storage.Claimed {
			queued++
		}
	}
	r.prog.linef("warm start: queued %d configuration(s) from %s", queued, storage.RedactURL(src))
	return nil
}

// confirm measures each front configuration again (the plan's confirm runs, at least one),
// so that the front reported is the one that holds up, with the spread of its runs. A
// configuration stays on the front only if every run meets every SLO, check and gate: a run
// that misses makes the trial infeasible, and the members the new front gains are confirmed
// in turn. Confirmation goes on until every member of the front has its runs: whatever a
// report would recommend or show as on the front rests on more than one measurement. It ends,
// since each configuration is confirmed at most runs times. Only the process that sees the
// budget met with nothing running does it; claims keep processes apart.
func (r *runner) confirm(ctx context.Context) error {
	runs := confirmRuns(r.p)
	if runs == 0 {
		return nil
	}
	for ctx.Err() == nil {
		rec, err := r.st.LoadRecord(r.studyID, r.name)
		if err != nil {
			return err
		}
		if !budgetDone(rec, r.budget) && !r.exhausted {
			return nil
		}
		for _, t := range rec.Trials {
			if t.State == record.StateRunning || t.State == record.StateWaiting || t.State == record.StateInterrupted {
				return nil
			}
		}
		todo, id, err := r.claimUnconfirmed(rec, runs)
		if err != nil || todo == nil {
			return err
		}
		if err := r.confirmOne(ctx, todo, id, runs); err != nil {
			return err
		}
	}
	return nil
}

// claimUnconfirmed claims the confirmation of the next front member with fewer than runs
// confirmations, the members with fewest runs first, and returns it with its row id; nil
// when there is none left to claim.
func (r *runner) claimUnconfirmed(rec *record.Study, runs int) (*record.Trial, int, error) {
	var cands []*record.Trial
	for i := range rec.Trials {
		if t := &rec.Trials[i]; t.Pareto && len(t.Confirmations) < runs {
			cands = append(cands, t)
		}
	}
	sort.SliceStable(cands, func(i, j int) bool { return len(cands[i].Confirmations) < len(cands[j].Confirmations) })
	for _, t := range cands {
		id := r.trialID(t.Number)
		ok, err := r.st.ClaimConfirmation(r.studyID, id, r.owner, r.isStale)
		if err != nil {
			return nil, 0, err
		}
		if ok {
			return t, id, nil
		}
	}
	return nil, 0, nil
}

// trialID finds a trial's row id from its number.
func (r *runner) trialID(number int) int {
	var row storage.TrialRow
	r.st.DB.Where("study_id = ? AND number = ?", r.studyID, number).Limit(1).Find(&row)
	return row.ID
}

// confirmOne measures one more run of a front configuration (its row id, claimed), with the
// run's own workload seed, and records it; a run that misses an SLO, check or gate makes the
// trial infeasible.
func (r *runner) confirmOne(ctx context.Context, t *record.Trial, id, runs int) error {
	cfg, err := r.sp.normalize(t.Config)
	if err != nil {
		return err
	}
	run := len(t.Confirmations) + 1
	r.prog.linef("confirming trial %d (run %d of %d): %s", t.Number, run+1, runs+1, r.sp.describe(cfg))
	out, err := r.eval.evaluate(ctx, job{number: t.Number, config: cfg, run: run, seed: uint64(r.p.WorkloadSeed())})
	if ctx.Err() != nil {
		return errors.Join(r.st.ReleaseConfirmation(id))
	}
	if err != nil {
		_ = r.st.ReleaseConfirmation(id) // the error below is what matters
		return fmt.Errorf("confirmation of trial %d: %w", t.Number, err)
	}
	r.confirmRuns++
	tmp := &record.Trial{Number: t.Number, Config: map[string]any(cfg), GPUs: cfg.GPUs()}
	r.judge(tmp, plan.Config(cfg), out)
	objs := tmp.Objectives
	if objs == nil {
		objs = map[string]float64{}
	}
	var miss *record.Trial
	if tmp.State != record.StateComplete {
		miss = &record.Trial{Reason: fmt.Sprintf("confirmation run %d of %d missed: %s", run+1, runs+1, tmp.Reason), Violation: tmp.Violation}
		if miss.Violation <= 0 {
			miss.Violation = 0.5
		}
		r.prog.linef("trial %d leaves the front: %s", t.Number, miss.Reason)
	}
	missValue := 0.0
	if miss != nil {
		missValue = infeasibleScore(miss.Violation)
	}
	return r.st.AddConfirmation(id, objs, tmp.ObjectiveCI, out.gpuSeconds, miss, missValue)
}
