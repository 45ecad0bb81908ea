package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/frontier-llm/frontier/record"

	"github.com/c-bata/goptuna"
)

// DefaultStorage is where a plan's study lives when no --storage is given: a SQLite file
// beside the plan, named after it ("chat.hcl" -> "chat.db").
func DefaultStorage(planFile string) string {
	base := strings.TrimSuffix(planFile, filepath.Ext(planFile))
	return base + ".db"
}

// DefaultEstimateStorage is where a plan's study of estimates (apply --estimate) lives when
// no --storage is given: a SQLite file of its own beside the plan ("chat.hcl" ->
// "chat.estimate.db"), so that estimates and measurements never share a study.
func DefaultEstimateStorage(planFile string) string {
	base := strings.TrimSuffix(planFile, filepath.Ext(planFile))
	return base + ".estimate.db"
}

// Load reads a whole study from a study database. With study "", the database must hold
// exactly one study; otherwise the error lists the studies it holds. Load never writes to
// the database, and a SQLite file that does not exist is an error, not a new database.
func Load(ctx context.Context, storageURL, study string) (*record.Study, error) {
	s, err := Open(ctx, storageURL, true)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	names, err := s.StudyNames()
	if err != nil {
		return nil, err
	}
	if study == "" {
		switch len(names) {
		case 0:
			return nil, fmt.Errorf("%s holds no study", s.Display)
		case 1:
			study = names[0]
		default:
			return nil, fmt.Errorf("%s holds %d studies (%s): name one with --study", s.Display, len(names), strings.Join(names, ", "))
		}
	}
	id, ok, err := s.StudyID(study)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%s has no study %q; it holds: %s", s.Display, study, strings.Join(names, ", "))
	}
	return s.LoadRecord(id, study)
}

// LoadRecord assembles a record.Study from the database.
func (s *Store) LoadRecord(id int, name string) (*record.Study, error) {
	attrs, err := s.studyAttrs(id)
	if err != nil {
		return nil, err
	}
	rec := &record.Study{}
	if raw, ok := getChunked(attrs, attrMeta); ok {
		if err := json.Unmarshal([]byte(raw), rec); err != nil {
			return nil, fmt.Errorf("study %q in %s: stored header: %w", name, s.Display, err)
		}
	}
	rec.Study = name
	rec.PlanHash = attrs[attrPlanHash]
	rec.SpaceHash = attrs[attrSpaceHash]
	if b, err := strconv.Atoi(attrs[attrBudget]); err == nil {
		rec.Budget = b
	}
	fts, err := s.AllTrials(id)
	if err != nil {
		return nil, err
	}
	rec.Trials = make([]record.Trial, 0, len(fts))
	for _, ft := range fts {
		t, err := TrialFromFrozen(ft)
		if err != nil {
			return nil, fmt.Errorf("study %q in %s: %w", name, s.Display, err)
		}
		rec.Trials = append(rec.Trials, t)
	}
	if rec.Pressure, err = loadPressure(attrs); err != nil {
		return nil, fmt.Errorf("study %q in %s: %w", name, s.Display, err)
	}
	if rec.MarkFront() == nil {
		rec.Front = []int{}
	}
	return rec, nil
}

// TrialFromFrozen decodes frontier's record of one goptuna trial.
func TrialFromFrozen(ft goptuna.FrozenTrial) (record.Trial, error) {
	var t record.Trial
	if raw, ok := getChunked(ft.SystemAttrs, attrRecord); ok {
		if err := json.Unmarshal([]byte(raw), &t); err != nil {
			return record.Trial{}, fmt.Errorf("trial %d: stored record: %w", ft.Number, err)
		}
	} else if raw, ok := getChunked(ft.SystemAttrs, attrConfig); ok {
		if err := json.Unmarshal([]byte(raw), &t.Config); err != nil {
			return record.Trial{}, fmt.Errorf("trial %d: stored configuration: %w", ft.Number, err)
		}
	}
	t.Number = ft.Number
	if st := ft.SystemAttrs[AttrState]; st != "" {
		t.State = record.State(st)
	}
	switch ft.State {
	case goptuna.TrialStateRunning:
		t.State = record.StateRunning
	case goptuna.TrialStateWaiting:
		if t.State != record.StateInterrupted {
			t.State = record.StateWaiting
		}
		if r := ft.UserAttrs["reason"]; r != "" && t.Reason == "" {
			t.Reason = r
		}
	}
	if t.State == "" {
		t.State = record.StateFailed
	}
	t.Pareto = false
	return t, nil
}
