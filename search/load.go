package search

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/c-bata/goptuna"
)

// DefaultStorage is where a plan's study lives when no --storage is given: a SQLite file
// beside the plan, named after it ("chat.hcl" -> "chat.db").
func DefaultStorage(planFile string) string {
	base := strings.TrimSuffix(planFile, filepath.Ext(planFile))
	return base + ".db"
}

// Load reads a whole study from a study database. With study "", the database must hold
// exactly one study; otherwise the error lists the studies it holds. Load never writes to
// the database, and a SQLite file that does not exist is an error, not a new database.
func Load(ctx context.Context, storageURL, study string) (*StudyRecord, error) {
	s, err := openStore(ctx, storageURL, true)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	names, err := s.studyNames()
	if err != nil {
		return nil, err
	}
	if study == "" {
		switch len(names) {
		case 0:
			return nil, fmt.Errorf("%s holds no study", s.display)
		case 1:
			study = names[0]
		default:
			return nil, fmt.Errorf("%s holds %d studies (%s): name one with --study", s.display, len(names), strings.Join(names, ", "))
		}
	}
	id, ok, err := s.studyID(study)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%s has no study %q; it holds: %s", s.display, study, strings.Join(names, ", "))
	}
	return s.loadRecord(id, study)
}

// loadRecord assembles a StudyRecord from the database.
func (s *store) loadRecord(id int, name string) (*StudyRecord, error) {
	attrs, err := s.studyAttrs(id)
	if err != nil {
		return nil, err
	}
	rec := &StudyRecord{}
	if raw, ok := getChunked(attrs, attrMeta); ok {
		if err := json.Unmarshal([]byte(raw), rec); err != nil {
			return nil, fmt.Errorf("study %q in %s: stored header: %w", name, s.display, err)
		}
	}
	rec.Study = name
	rec.PlanHash = attrs[attrPlanHash]
	rec.SpaceHash = attrs[attrSpaceHash]
	if b, err := strconv.Atoi(attrs[attrBudget]); err == nil {
		rec.Budget = b
	}
	fts, err := s.allTrials(id)
	if err != nil {
		return nil, err
	}
	rec.Trials = make([]Trial, 0, len(fts))
	for _, ft := range fts {
		t, err := trialFromFrozen(ft)
		if err != nil {
			return nil, fmt.Errorf("study %q in %s: %w", name, s.display, err)
		}
		rec.Trials = append(rec.Trials, t)
	}
	rec.Front = markFront(rec.Trials, rec.Objectives)
	if rec.Front == nil {
		rec.Front = []int{}
	}
	return rec, nil
}

// trialFromFrozen decodes frontier's record of one goptuna trial.
func trialFromFrozen(ft goptuna.FrozenTrial) (Trial, error) {
	var t Trial
	if raw, ok := getChunked(ft.SystemAttrs, attrRecord); ok {
		if err := json.Unmarshal([]byte(raw), &t); err != nil {
			return Trial{}, fmt.Errorf("trial %d: stored record: %w", ft.Number, err)
		}
	} else if raw, ok := getChunked(ft.SystemAttrs, attrConfig); ok {
		if err := json.Unmarshal([]byte(raw), &t.Config); err != nil {
			return Trial{}, fmt.Errorf("trial %d: stored configuration: %w", ft.Number, err)
		}
	}
	t.Number = ft.Number
	if st := ft.SystemAttrs[attrState]; st != "" {
		t.State = st
	}
	switch ft.State {
	case goptuna.TrialStateRunning:
		t.State = StateRunning
	case goptuna.TrialStateWaiting:
		if t.State != StateInterrupted {
			t.State = StateWaiting
		}
		if r := ft.UserAttrs["reason"]; r != "" && t.Reason == "" {
			t.Reason = r
		}
	}
	if t.State == "" {
		t.State = StateFailed
	}
	t.Pareto = false
	return t, nil
}

// MeanObjectives returns the trial's objectives averaged over its first run and its
// confirmation runs, as the study ranks them.
func (t *Trial) MeanObjectives() map[string]float64 {
	if len(t.Confirmations) == 0 {
		return t.Objectives
	}
	out := make(map[string]float64, len(t.Objectives))
	for name, v := range t.Objectives {
		sum, n := v, 1.0
		for _, c := range t.Confirmations {
			if x, ok := c[name]; ok {
				sum += x
				n++
			}
		}
		out[name] = sum / n
	}
	return out
}

// markFront sets Pareto on the complete trials that no other complete trial dominates
// (objectives averaged over confirmation runs), fills in their spread, and returns their
// numbers.
func markFront(trials []Trial, objs []ObjectiveInfo) []int {
	maximize := make([]bool, len(objs))
	for i, o := range objs {
		maximize[i] = o.Maximize
	}
	var idx []int
	var pts [][]float64
	for i := range trials {
		t := &trials[i]
		t.Pareto = false
		if t.State != StateComplete {
			continue
		}
		m := t.MeanObjectives()
		p := make([]float64, len(objs))
		ok := true
		for j, o := range objs {
			v, has := m[o.Name]
			if !has || math.IsNaN(v) {
				ok = false
				break
			}
			p[j] = v
		}
		if !ok {
			continue
		}
		idx = append(idx, i)
		pts = append(pts, orient(p, maximize))
	}
	var front []int
	for _, k := range nonDominated(pts) {
		t := &trials[idx[k]]
		t.Pareto = true
		front = append(front, t.Number)
		if len(t.Confirmations) > 0 {
			t.Spread = spread(t)
		}
	}
	return front
}

// spread is, per objective, (max - min) / |mean| over a trial's runs.
func spread(t *Trial) map[string]float64 {
	out := make(map[string]float64, len(t.Objectives))
	for name, v := range t.Objectives {
		lo, hi, sum, n := v, v, v, 1.0
		for _, c := range t.Confirmations {
			if x, ok := c[name]; ok {
				lo, hi = math.Min(lo, x), math.Max(hi, x)
				sum += x
				n++
			}
		}
		mean := sum / n
		if mean != 0 {
			out[name] = (hi - lo) / math.Abs(mean)
		} else {
			out[name] = 0
		}
	}
	return out
}
