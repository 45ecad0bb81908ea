package storage

import (
	"errors"
	"fmt"

	"gorm.io/gorm"
)

// Keys of the release that runs a study, in the study's system attributes.
const (
	// attrRelease is the release of frontier that last opened the study (record.Release).
	attrRelease = "frontier:release"
	// attrSimModel is the performance model version (sim.ModelVersion) the study's
	// simulated trials were measured with; absent for a study measured on engines, and for
	// one begun by a release that did not record it.
	attrSimModel = "frontier:sim_model"
	// attrMeasuredBy says where the study's trials come from: trialsEstimated (the offline
	// estimator, apply --estimate) or trialsMeasured (an engine, the simulator's included);
	// absent for a study begun by a release that did not record it.
	attrMeasuredBy = "frontier:measured_by"
)

// The values of attrMeasuredBy.
const (
	trialsEstimated = "estimator"
	trialsMeasured  = "engine"
)

// ErrEstimateMixed is returned when a run would add measured trials to a study of estimates
// (apply --estimate), or estimates to a study of measured trials.
var ErrEstimateMixed = errors.New("estimates and measurements never share a study")

// ErrModelChanged is returned when a study's trials were measured with other simulated
// numbers than this frontier's: another version of the performance model, or a real engine
// where this run simulates (or the reverse).
var ErrModelChanged = errors.New("the study's trials were measured with other numbers than this frontier gives")

// StudyRelease is what a study keeps about the release that measures it.
type StudyRelease struct {
	// Release is the running frontier's record.Release.
	Release string
	// SimModel is sim.ModelVersion when the study's trials are simulated, else empty.
	SimModel string
	// Estimated is true when the study's trials come from the offline estimator (apply
	// --estimate) rather than from an engine.
	Estimated bool
}

// CheckRelease refuses to resume the study name with rel when the trials it already holds
// were measured with other numbers: estimates where rel measures on an engine, or the reverse
// (the error wraps ErrEstimateMixed); a simulated study whose stored model version differs
// from rel.SimModel (or that has none, having been begun by a release that did not record
// it), or a study measured on engines that rel would continue with simulated numbers, or the
// reverse (the error wraps ErrModelChanged). A study without measured trials (new, or only
// queued ones) passes. It only reads: a refused study is left as it was. The error says what
// is stored and what this run would add.
func (s *Store) CheckRelease(name string, rel StudyRelease) error {
	id, ok, err := s.StudyID(name)
	if err != nil || !ok {
		return err
	}
	attrs, err := s.studyAttrsTx(s.DB, id, "frontier:")
	if err != nil {
		return fmt.Errorf("read study %q from %s: %w", name, s.Display, err)
	}
	stored, hasModel := attrs[attrSimModel]
	var measured int64
	if err := s.DB.Model(&TrialRow{}).Where("study_id = ? AND state IN ?", id, []string{DBComplete, DBPruned, DBFail}).Count(&measured).Error; err != nil {
		return fmt.Errorf("read study %q from %s: %w", name, s.Display, err)
	}
	if measured == 0 {
		return nil
	}
	if err := s.checkMeasuredBy(id, name, attrs, rel, measured); err != nil {
		return err
	}
	if stored == rel.SimModel {
		return nil
	}
	by := "frontier " + attrs[attrRelease]
	if attrs[attrRelease] == "" {
		by = "an earlier release of frontier"
	}
	var what string
	switch {
	case rel.SimModel == "":
		what = fmt.Sprintf("its %d trials hold simulated numbers (performance model %s, by %s) and this run measures on an engine", measured, stored, by)
	case !hasModel:
		what = fmt.Sprintf("its %d trials were measured by %s, which did not record its performance model version, or on an engine; this frontier's simulated numbers (performance model %s) may differ from theirs", measured, by, rel.SimModel)
	default:
		what = fmt.Sprintf("its %d trials hold the numbers of performance model %s (by %s), and this frontier's model is %s, whose numbers differ", measured, stored, by, rel.SimModel)
	}
	return fmt.Errorf("study %q in %s: %w: %s; mixed on one front they would not be comparable, so the study was left as it was: give the study a new name (study block or --study) or use a new --storage, and run the old study with the release that began it",
		name, s.Display, ErrModelChanged, what)
}

// KeepRelease records rel on the study: the release that ran it last, and the model version
// of its simulated trials (kept from the first run that simulated; CheckRelease refuses
// another).
func (s *Store) KeepRelease(studyID int, rel StudyRelease) error {
	err := s.DB.Transaction(func(tx *gorm.DB) error {
		if err := s.LockStudy(tx, studyID); err != nil {
			return err
		}
		if err := s.setAttr(tx, studySystemAttrs, studyID, attrRelease, rel.Release); err != nil {
			return err
		}
		if err := s.setAttr(tx, studySystemAttrs, studyID, attrMeasuredBy, measuredBy(rel)); err != nil {
			return err
		}
		if rel.SimModel == "" {
			return nil
		}
		return s.setAttr(tx, studySystemAttrs, studyID, attrSimModel, rel.SimModel)
	})
	if err != nil {
		return s.WriteErr("record the release on the study", err)
	}
	return nil
}

// SimBaselineKey is the attribute of a gate's simulated baseline outcome for a search space
// and a performance model version (sim.ModelVersion): a baseline another model version
// simulated is not found under it, and is measured again.
func SimBaselineKey(gate, spaceHash, simModel string) string {
	return BaselineKey(gate, spaceHash) + "@" + simModel
}

// measuredBy is the attrMeasuredBy value of a run with rel.
func measuredBy(rel StudyRelease) string {
	if rel.Estimated {
		return trialsEstimated
	}
	return trialsMeasured
}

// checkMeasuredBy refuses a run with rel on study id, which holds measured finished trials,
// when its trials come from elsewhere: the estimator where rel measures on an engine, or the
// reverse. A study begun by a release that did not record where its trials come from holds
// estimates when it has a performance model version and none of its trials launched an
// engine.
func (s *Store) checkMeasuredBy(id int, name string, attrs map[string]string, rel StudyRelease, measured int64) error {
	by, ok := attrs[attrMeasuredBy]
	if !ok {
		if attrs[attrSimModel] == "" {
			return nil // measured on an engine, or left to the model version's check
		}
		launched, err := s.anyLaunched(id, name)
		if err != nil {
			return err
		}
		by = trialsEstimated
		if launched {
			by = trialsMeasured
		}
	}
	if by == measuredBy(rel) {
		return nil
	}
	what := fmt.Sprintf("its %d trials are estimates of the offline model (frontier apply --estimate) and this run measures on an engine", measured)
	if rel.Estimated {
		what = fmt.Sprintf("its %d trials were measured on an engine and this run estimates on the offline model (--estimate)", measured)
	}
	return fmt.Errorf("study %q in %s: %w: %s; the study was left as it was", name, s.Display, ErrEstimateMixed, what)
}

// anyLaunched reports whether a trial of study id records an engine it launched.
func (s *Store) anyLaunched(id int, name string) (bool, error) {
	rec, err := s.LoadRecord(id, name)
	if err != nil {
		return false, fmt.Errorf("read study %q from %s: %w", name, s.Display, err)
	}
	for _, t := range rec.Trials {
		if t.Provenance != nil && (t.Provenance.Launch.Engine != "" || len(t.Provenance.Launch.Command) > 0) {
			return true, nil
		}
	}
	return false, nil
}
