package storage

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frontier-llm/frontier/quality"
)

// studyWith creates the study name in st with trials in the given goptuna states, and
// records rel on it unless rel is nil (a study begun by a release before CheckRelease).
func studyWith(t *testing.T, st *Store, name string, rel *StudyRelease, states ...string) int {
	t.Helper()
	id, err := st.EnsureStudy(context.Background(), name, StudyMeta{PlanHash: "plan", SpaceHash: "space", Budget: 4})
	if err != nil {
		t.Fatal(err)
	}
	if rel != nil {
		if err := st.KeepRelease(id, *rel); err != nil {
			t.Fatal(err)
		}
	}
	for i, s := range states {
		if err := st.DB.Create(&TrialRow{StudyID: id, Number: i, State: s}).Error; err != nil {
			t.Fatal(err)
		}
	}
	return id
}

func TestCheckReleaseRefusesAResumeWithOtherSimulatedNumbers(t *testing.T) {
	t.Parallel()
	st, err := Open(context.Background(), filepath.Join(t.TempDir(), "s.db"), false)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	old := StudyRelease{Release: "0.1.0+aaaaaaaaaaaa", SimModel: "111111111111"}
	studyWith(t, st, "sim", &old, DBComplete, DBFail)
	studyWith(t, st, "queued", &old, DBWaiting)
	studyWith(t, st, "before-versions", nil, DBComplete)
	studyWith(t, st, "live", &StudyRelease{Release: "0.1.0+aaaaaaaaaaaa"}, DBComplete)
	newSim := StudyRelease{Release: "0.1.0+bbbbbbbbbbbb", SimModel: "222222222222"}
	newLive := StudyRelease{Release: "0.1.0+bbbbbbbbbbbb"}
	for _, tc := range []struct {
		name, study string
		rel         StudyRelease
		want        string // "" for no error
	}{
		{"same model, newer release", "sim", StudyRelease{Release: "0.1.0+cccccccccccc", SimModel: "111111111111"}, ""},
		{"another model", "sim", newSim, "its 2 trials hold the numbers of performance model 111111111111 (by frontier 0.1.0+aaaaaaaaaaaa), and this frontier's model is 222222222222"},
		{"simulated study resumed on an engine", "sim", newLive, "its 2 trials hold simulated numbers (performance model 111111111111"},
		{"only queued trials", "queued", newSim, ""},
		{"begun before model versions", "before-versions", newSim, "its 1 trials were measured by an earlier release of frontier, which did not record its performance model version"},
		{"live study resumed on an engine", "live", newLive, ""},
		{"live study resumed simulated", "live", newSim, "did not record its performance model version, or on an engine"},
		{"new study", "new", newSim, ""},
	} {
		err := st.CheckRelease(tc.study, tc.rel)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: CheckRelease = %v, want nil", tc.name, err)
		case tc.want != "" && (!errors.Is(err, ErrModelChanged) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: CheckRelease = %v, want ErrModelChanged saying %q", tc.name, err, tc.want)
		}
	}
}

func TestASimulatedBaselineIsKeyedByTheModelVersion(t *testing.T) {
	t.Parallel()
	st, err := Open(context.Background(), filepath.Join(t.TempDir(), "s.db"), false)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	id := studyWith(t, st, "sim", nil)
	if _, err := st.KeepBaseline(id, SimBaselineKey("support", "space", "111111111111"), &quality.Outcome{Score: 1}); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := st.StoredBaseline(id, SimBaselineKey("support", "space", "222222222222")); err != nil || ok {
		t.Errorf("the baseline of model 111111111111 was found under model 222222222222 (ok %v, err %v)", ok, err)
	}
	if _, ok, err := st.StoredBaseline(id, BaselineKey("support", "space")); err != nil || ok {
		t.Errorf("the simulated baseline was found under the key of a measured one (ok %v, err %v)", ok, err)
	}
	if _, ok, err := st.StoredBaseline(id, SimBaselineKey("support", "space", "111111111111")); err != nil || !ok {
		t.Errorf("the baseline was not found under its own model version (ok %v, err %v)", ok, err)
	}
}

func TestCheckReleaseRefusesToMixEstimatesAndMeasurements(t *testing.T) {
	t.Parallel()
	st, err := Open(context.Background(), filepath.Join(t.TempDir(), "s.db"), false)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const model = "111111111111"
	estimate := StudyRelease{Release: "0.1.0+aaaaaaaaaaaa", SimModel: model, Estimated: true}
	simLive := StudyRelease{Release: "0.1.0+aaaaaaaaaaaa", SimModel: model} // engine "sim"
	studyWith(t, st, "estimates", &estimate, DBComplete, DBPruned)
	studyWith(t, st, "measured", &simLive, DBComplete)
	studyWith(t, st, "queued", &estimate, DBWaiting)
	// A study of estimates begun before studies recorded where their trials come from: a
	// model version, and no trial that launched an engine.
	legacy := studyWith(t, st, "legacy", &estimate, DBComplete)
	if err := st.deleteAttrs(st.DB, studySystemAttrs, legacy, attrMeasuredBy); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, study string
		rel         StudyRelease
		want        string // "" for no error
	}{
		{"estimates topped up", "estimates", estimate, ""},
		{"estimates resumed on the simulator's engine", "estimates", simLive, "its 2 trials are estimates of the offline model (frontier apply --estimate) and this run measures on an engine"},
		{"measurements resumed with estimates", "measured", estimate, "its 1 trials were measured on an engine and this run estimates on the offline model"},
		{"measurements resumed", "measured", simLive, ""},
		{"only queued trials", "queued", simLive, ""},
		{"estimates of an earlier release resumed on an engine", "legacy", simLive, "its 1 trials are estimates"},
		{"estimates of an earlier release topped up", "legacy", estimate, ""},
	} {
		err := st.CheckRelease(tc.study, tc.rel)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: CheckRelease = %v, want nil", tc.name, err)
		case tc.want != "" && (!errors.Is(err, ErrEstimateMixed) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: CheckRelease = %v, want ErrEstimateMixed saying %q", tc.name, err, tc.want)
		}
	}
}
