package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/frontier-llm/frontier/record"

	"github.com/frontier-llm/frontier/plan"
	"github.com/frontier-llm/frontier/report"
	"github.com/frontier-llm/frontier/search"
)

func cmdReport(ctx context.Context, c *cli, args []string) int {
	fs := flag.NewFlagSet("frontier report", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	var src studyFlags
	src.register(fs)
	format := fs.String("format", "table", "output `FORMAT`: table, json, markdown or html")
	out := fs.String("o", "", "write the report to `FILE` instead of standard output")
	all := fs.Bool("all", false, "list every trial, not only the Pareto front")
	estimate := fs.Bool("estimate", true, "with a plan, estimate on the performance model the knobs no trial changed alone (marked simulated)")
	fs.Usage = func() {
		fmt.Fprintln(c.stderr, "usage: frontier report [PLAN | --storage URL] [--study NAME] [--format table|json|markdown|html] [-o FILE] [--all]")
		fmt.Fprintln(c.stderr, "\nShows a study's Pareto front, the recommended configuration and why, what failed, what")
		fmt.Fprintln(c.stderr, "each knob does on its own, GPU time and provenance.")
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return exitForFlagError(err)
	}
	var write func(io.Writer, *report.Analysis) error
	switch *format {
	case "table", "text":
		write = func(w io.Writer, a *report.Analysis) error { return report.WriteText(w, a, report.Options{All: *all}) }
	case "markdown", "md":
		write = func(w io.Writer, a *report.Analysis) error {
			return report.WriteMarkdown(w, a, report.Options{All: *all})
		}
	case "html":
		write = func(w io.Writer, a *report.Analysis) error { return report.WriteHTML(w, a, report.Options{All: *all}) }
	case "json":
		write = report.WriteJSON
	default:
		fmt.Fprintf(c.stderr, "frontier report: unknown --format %q: use table, json, markdown or html\n", *format)
		return exitInvalid
	}
	if len(pos) > 1 {
		fmt.Fprintf(c.stderr, "frontier report: one plan at most, got %d arguments\n", len(pos))
		fs.Usage()
		return exitInvalid
	}
	rec, code := src.load(ctx, c, "frontier report", pos)
	if rec == nil {
		return code
	}
	a := report.Analyze(rec)
	if *estimate && *format != "json" {
		estimateSensitivity(ctx, src.loaded, a)
	}
	if err := writeOutput(c, *out, func(w io.Writer) error { return write(w, a) }); err != nil {
		fmt.Fprintf(c.stderr, "frontier report: %v\n", err)
		return exitRuntime
	}
	return exitOK
}

// studyFlags say where a command reads a study: a plan (its default storage and study
// name), --storage, --study, and the plan's variables.
type studyFlags struct {
	storage string
	study   string
	plan    planFlags
	// loaded is the plan load read, when a plan was given.
	loaded *plan.Plan
}

func (sf *studyFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&sf.storage, "storage", "", "study database `URL` or path (default: the plan's, beside it); a .json file is a study record")
	fs.StringVar(&sf.study, "study", "", "study `NAME` (default: the plan's, or the only study in the database)")
	sf.plan.register(fs)
}

// load reads the study the flags and the positional plan (pos, zero or one element) name.
// On failure it prints why and returns a nil record and the exit code.
func (sf *studyFlags) load(ctx context.Context, c *cli, cmd string, pos []string) (*record.Study, int) {
	storage, study := sf.storage, sf.study
	if len(pos) == 1 {
		p, code := sf.plan.load(c, pos[0])
		if p == nil {
			return nil, code
		}
		sf.loaded = p
		if storage == "" {
			storage = search.DefaultStorage(p.Filename)
		}
		if study == "" {
			study = p.Study.Name
		}
	}
	if storage == "" {
		fmt.Fprintf(c.stderr, "%s: name a plan or a study database with --storage\n", cmd)
		return nil, exitInvalid
	}
	rec, code, err := loadStudy(ctx, storage, study)
	if err != nil {
		fmt.Fprintf(c.stderr, "%s: %v\n", cmd, err)
		return nil, code
	}
	return rec, exitOK
}

// loadStudy reads a study from a database URL or path, or from a JSON study record (a file
// ending in .json). A path that does not exist is invalid input.
func loadStudy(ctx context.Context, storage, study string) (*record.Study, int, error) {
	if !strings.Contains(storage, "://") {
		path := strings.TrimPrefix(storage, "sqlite:")
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return nil, exitInvalid, fmt.Errorf("no study at %s: the file does not exist (run frontier apply first, or name the database with --storage)", storage)
		}
		if strings.EqualFold(filepath.Ext(path), ".json") {
			rec, err := readRecordFile(path)
			if err != nil {
				return nil, exitInvalid, err
			}
			if study != "" && rec.Study != study {
				return nil, exitInvalid, fmt.Errorf("%s holds study %q, not %q", path, rec.Study, study)
			}
			return rec, exitOK, nil
		}
	}
	rec, err := search.Load(ctx, storage, study)
	if err != nil {
		return nil, exitRuntime, err
	}
	return rec, exitOK, nil
}

func readRecordFile(path string) (*record.Study, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read study record: %w", err)
	}
	defer f.Close()
	rec, err := report.DecodeRecord(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rec, nil
}

// writeOutput runs write on standard output, or writes path atomically: a failure leaves an
// existing file as it was.
func writeOutput(c *cli, path string, write func(io.Writer) error) error {
	if path == "" || path == "-" {
		return write(c.stdout)
	}
	return report.WriteFile(path, write)
}

// estimateSensitivity fills in, for the knobs no recorded trial changed alone around the
// recommended configuration, what the offline performance model estimates when that knob
// alone takes each other value of its domain. It needs the plan (the space, the workloads and
// the objectives) and a model and GPU the simulator knows; otherwise it leaves the report as
// it is. Every estimate is marked as simulated in the report.
func estimateSensitivity(ctx context.Context, p *plan.Plan, a *report.Analysis) {
	if p == nil || a.Recommended == nil {
		return
	}
	as, err := search.NewAssessor(p)
	if err != nil || as.NoModel() != "" {
		return
	}
	knobs := map[string]plan.Knob{}
	for _, k := range p.Knobs {
		knobs[k.Name] = k
	}
	base := a.Recommended.Config
	for _, name := range a.NeedsEstimate() {
		k, ok := knobs[name]
		if !ok {
			continue
		}
		for _, v := range sensitivityValues(k, base[name]) {
			cfg := plan.Config{}
			for kk, vv := range base {
				cfg[kk] = vv
			}
			cfg[name] = v
			if _, knob := cfg[plan.SKUKnob]; !knob && p.Hardware.SKU == "" && a.SKU != "" {
				cfg[plan.SKUKnob] = a.SKU // the GPU the study ran on, as NVML named it
			}
			e, err := as.Assess(ctx, cfg, search.Full)
			if err != nil {
				a.AddEstimate(name, v, nil, record.StateFailed, err.Error())
				continue
			}
			if !e.Covered {
				return
			}
			a.AddEstimate(name, v, e.Trial.Objectives, e.Trial.State, e.Trial.Reason)
		}
	}
}

// sensitivityValues are the values a knob takes in an estimate of its effect: every listed
// value, or for a range its ends and half and twice the current value, other than the
// current value.
func sensitivityValues(k plan.Knob, current any) []any {
	cur, isNum := sensitivityNumber(current)
	var cands []any
	if len(k.Values) > 0 {
		cands = k.Values
	} else if isNum {
		for _, f := range []float64{k.Min, cur / 2, cur * 2, k.Max} {
			if f < k.Min || f > k.Max {
				continue
			}
			if k.Step > 0 {
				f = k.Min + math.Round((f-k.Min)/k.Step)*k.Step
			}
			if k.Kind == plan.KnobInt {
				cands = append(cands, int64(math.Round(f)))
			} else {
				cands = append(cands, math.Round(f*1e6)/1e6)
			}
		}
	}
	var out []any
	for _, c := range cands {
		f, ok := sensitivityNumber(c)
		same := fmt.Sprint(c) == fmt.Sprint(current) || (ok && isNum && math.Abs(f-cur) <= 1e-9*math.Max(1, math.Abs(cur)))
		dup := false
		for _, o := range out {
			if fmt.Sprint(o) == fmt.Sprint(c) {
				dup = true
			}
		}
		if !same && !dup {
			out = append(out, c)
		}
	}
	return out
}

func sensitivityNumber(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int64:
		return float64(x), true
	case int:
		return float64(x), true
	}
	return 0, false
}
