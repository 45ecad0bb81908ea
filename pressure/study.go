package pressure

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/frontier-llm/frontier/plan"
	"github.com/frontier-llm/frontier/record"
	"github.com/frontier-llm/frontier/report"
	"github.com/frontier-llm/frontier/search/storage"
	"github.com/frontier-llm/frontier/workload"
)

// StudyRun says where the configurations under pressure come from and what to measure.
type StudyRun struct {
	// Storage and Study name the study (the plan's default database and study when empty);
	// Pick is "knee", "front" or a trial number (the plan's pressure.pick when empty).
	Storage, Study, Pick string
	// URL measures a running server instead of the study's configurations (it is never
	// restarted); Model is the model to request from it (the plan's when empty).
	URL, Model string
	// FrontierBinary runs the simulated engine; Progress receives one line per step.
	FrontierBinary string
	Progress       func(string)
}

// ErrBadPick is a pick that names no configuration.
var ErrBadPick = errors.New(`want "knee", "front" or a trial number`)

// ErrNoSuchTrial is wrapped by RunStudy's error when the pick names a trial number the study
// does not have: invalid input, as a malformed pick is.
var ErrNoSuchTrial = errors.New(`pick a trial number that "frontier report" lists`)

// ParsePick returns the trial number of a pick, or -1 for knee and -2 for front.
func ParsePick(s string) (int, error) {
	switch s {
	case "knee", "":
		return -1, nil
	case "front":
		return -2, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q: %w", s, ErrBadPick)
	}
	return n, nil
}

// RunStudy runs the plan's pressure experiments (or the defaults) on the picked
// configurations of the plan's study, or on the server at r.URL, and stores the results in
// the study. Every engine it starts is stopped before it returns.
func RunStudy(ctx context.Context, p *plan.Plan, r StudyRun) ([]record.Pressure, error) {
	settings := p.Pressure
	if settings == nil {
		settings = plan.DefaultPressure()
	}
	progress := r.Progress
	if progress == nil {
		progress = func(string) {}
	}
	// A plan with a pressure block and no arrival rate is refused when it loads; this is
	// the defaults' check, before an engine is started for nothing.
	if err := CheckArrivals(p.Workloads); err != nil {
		return nil, err
	}
	if r.URL != "" {
		m := r.Model
		if m == "" {
			m = p.Model.Name
		}
		s := AtURL(workload.Target{URL: r.URL, Model: m, MetricsURL: r.URL + "/metrics", TokenIDs: p.Engine.Kind != plan.EngineOllama}, p.Engine.Kind)
		res, err := Run(ctx, s, p.Workloads, settings, Options{Seed: uint64(p.Study.Seed), Trial: -1, Progress: progress})
		if res == nil {
			return nil, err
		}
		return []record.Pressure{*res}, err
	}
	dbURL := r.Storage
	if dbURL == "" {
		dbURL = storage.DefaultStorage(p.Filename)
	}
	name := r.Study
	if name == "" {
		name = p.Study.Name
	}
	rec, err := storage.Load(ctx, dbURL, name)
	if err != nil {
		return nil, err
	}
	pick := r.Pick
	if pick == "" {
		pick = settings.Pick
	}
	n, err := ParsePick(pick)
	if err != nil {
		return nil, err
	}
	var trials []*record.Trial
	switch n {
	case -1:
		a := report.Analyze(rec)
		if a.Recommended == nil {
			return nil, errors.New("the study has no recommended configuration: no trial met every SLO and gate")
		}
		trials = append(trials, rec.Trial(a.Recommended.Trial))
	case -2:
		trials = report.Front(rec)
	default:
		if t := rec.Trial(n); t != nil {
			trials = append(trials, t)
		} else {
			return nil, fmt.Errorf("the study has no trial %d; %w", n, ErrNoSuchTrial)
		}
	}
	if len(trials) == 0 {
		return nil, errors.New("the study's front is empty: no configuration to put under pressure")
	}
	st, err := storage.Open(ctx, dbURL, false)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	id, ok, err := st.StudyID(rec.Study)
	if err != nil || !ok {
		return nil, fmt.Errorf("study %q in %s: %v", rec.Study, st.Display, err)
	}
	logDir := st.LogDir(rec.Study)
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, fmt.Errorf("log folder: %w", err)
	}
	var out []record.Pressure
	for _, t := range trials {
		if ctx.Err() != nil {
			break
		}
		cfg := plan.Config{}
		for k, v := range t.Config {
			cfg[k] = v
		}
		progress(fmt.Sprintf("trial %d", t.Number))
		res, err := runTrial(ctx, p, cfg, t.Number, settings, logDir, r.FrontierBinary, progress)
		// An interruption that measured nothing does not replace an earlier result.
		if res != nil && (ctx.Err() == nil || len(res.Ladders) > 0 || res.Burst != nil || res.Restart != nil || res.Shift != nil) {
			if serr := st.SavePressure(id, res); serr != nil {
				return out, serr
			}
			out = append(out, *res)
		}
		if err != nil {
			return out, fmt.Errorf("trial %d: %w", t.Number, err)
		}
	}
	return out, ctx.Err()
}

// runTrial starts one configuration, runs the experiments on it and stops it.
func runTrial(ctx context.Context, p *plan.Plan, cfg plan.Config, trial int, settings *plan.Pressure, logDir, frontierBinary string, progress func(string)) (*record.Pressure, error) {
	work, err := os.MkdirTemp(logDir, fmt.Sprintf("pressure-%d-*.work", trial))
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	s, err := Launch(ctx, p, cfg, LaunchOptions{FrontierBinary: frontierBinary,
		LogPath: filepath.Join(logDir, fmt.Sprintf("pressure-%d.log", trial)), WorkDir: work})
	if err != nil {
		return nil, err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		_ = s.Close(sctx) // the engine's log holds what it said on its way out
	}()
	config := map[string]any{}
	for k, v := range cfg {
		config[k] = v
	}
	return Run(ctx, s, p.Workloads, settings, Options{Seed: uint64(p.Study.Seed), Trial: trial, Config: config, Progress: progress})
}
