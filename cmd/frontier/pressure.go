package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/frontier-llm/frontier/plan"
	"github.com/frontier-llm/frontier/pressure"
	"github.com/frontier-llm/frontier/record"
	"github.com/frontier-llm/frontier/report"
	"github.com/frontier-llm/frontier/search/storage"
	"github.com/frontier-llm/frontier/workload"
)

func cmdPressure(ctx context.Context, c *cli, args []string) error {
	fs := flag.NewFlagSet("frontier pressure", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	var pf planFlags
	pf.register(fs)
	storageURL := fs.String("storage", "", "study database `URL` (default: the SQLite file beside the plan)")
	study := fs.String("study", "", "the study `NAME`, when the database holds several")
	pick := fs.String("pick", "", "which configurations: knee, front or a trial `N` (default: the plan's pressure.pick, else knee)")
	url := fs.String("url", "", "measure the server at `URL` instead of starting the study's configurations; it is never restarted")
	model := fs.String("model", "", "the model `NAME` to request from --url (default: the plan's model)")
	asJSON := fs.Bool("json", false, "print the results as JSON")
	markdown := fs.Bool("markdown", false, "print the results as Markdown")
	fs.Usage = func() {
		fmt.Fprintln(c.stderr, "usage: frontier pressure PLAN [--pick knee|N|front] [--storage URL] [--study NAME] [--url URL [--model NAME]] [--json|--markdown]")
		fmt.Fprintln(c.stderr, "\nRuns the plan's pressure experiments (a load ladder past saturation, a burst and recovery, an engine")
		fmt.Fprintln(c.stderr, "restart under load, a class shift) on configurations of a finished study, and keeps the results in it.")
		fs.PrintDefaults()
	}
	arg, err := parseOneArg(fs, args)
	if err != nil {
		return err
	}
	p, err := pf.loadAndWarn(c, arg)
	if err != nil {
		return err
	}
	if *pick != "" {
		if _, err := parsePick(*pick); err != nil {
			return invalidf("--pick: %v", err)
		}
	}
	res, err := runPressure(ctx, c, p, pressureRun{storage: *storageURL, study: *study, pick: *pick, url: *url, model: *model})
	if errors.Is(err, errBadPick) {
		return invalid(err)
	}
	if err != nil && len(res) == 0 {
		return err
	}
	var werr error
	switch {
	case *asJSON:
		enc := json.NewEncoder(c.stdout)
		enc.SetIndent("", "  ")
		werr = enc.Encode(res)
	case *markdown:
		werr = report.WritePressureMarkdown(c.stdout, res)
	default:
		werr = report.WritePressureText(c.stdout, res)
	}
	if werr != nil {
		return werr
	}
	return err // an experiment cut short, after what it measured was printed and stored
}

// pressureRun says where the configurations come from and what to measure.
type pressureRun struct {
	storage, study, pick string
	url, model           string
}

var errBadPick = errors.New(`want "knee", "front" or a trial number`)

// parsePick returns the trial number of a pick, or -1 for knee and -2 for front.
func parsePick(s string) (int, error) {
	switch s {
	case "knee", "":
		return -1, nil
	case "front":
		return -2, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q: %w", s, errBadPick)
	}
	return n, nil
}

// runPressure runs the plan's pressure experiments (or the defaults) on the picked
// configurations of the plan's study, or on the server at r.url, and stores the results in
// the study. Every engine it starts is stopped before it returns.
func runPressure(ctx context.Context, c *cli, p *plan.Plan, r pressureRun) ([]record.Pressure, error) {
	settings := p.Pressure
	if settings == nil {
		settings = plan.DefaultPressure()
	}
	progress := func(line string) { fmt.Fprintln(c.stderr, "pressure:", line) }
	if r.url != "" {
		m := r.model
		if m == "" {
			m = p.Model.Name
		}
		s := pressure.AtURL(workload.Target{URL: r.url, Model: m, MetricsURL: r.url + "/metrics", TokenIDs: p.Engine.Kind != plan.EngineOllama}, p.Engine.Kind)
		res, err := pressure.Run(ctx, s, p.Workloads, settings, pressure.Options{Seed: uint64(p.Study.Seed), Trial: -1, Progress: progress})
		if res == nil {
			return nil, err
		}
		return []record.Pressure{*res}, err
	}
	dbURL := r.storage
	if dbURL == "" {
		dbURL = storage.DefaultStorage(p.Filename)
	}
	name := r.study
	if name == "" {
		name = p.Study.Name
	}
	rec, err := storage.Load(ctx, dbURL, name)
	if err != nil {
		return nil, err
	}
	pick := r.pick
	if pick == "" {
		pick = settings.Pick
	}
	n, err := parsePick(pick)
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
			return nil, fmt.Errorf("the study has no trial %d", n)
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
		res, err := pressureTrial(ctx, c, p, cfg, t.Number, settings, logDir, progress)
		if res != nil {
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

// pressureTrial starts one configuration, runs the experiments on it and stops it.
func pressureTrial(ctx context.Context, c *cli, p *plan.Plan, cfg plan.Config, trial int, settings *plan.Pressure, logDir string, progress func(string)) (*record.Pressure, error) {
	work, err := os.MkdirTemp(logDir, fmt.Sprintf("pressure-%d-*.work", trial))
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	s, err := pressure.Launch(ctx, p, cfg, pressure.LaunchOptions{FrontierBinary: frontierBinary(c),
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
	return pressure.Run(ctx, s, p.Workloads, settings, pressure.Options{Seed: uint64(p.Study.Seed), Trial: trial, Config: config, Progress: progress})
}
