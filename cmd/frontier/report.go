package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/frontier-llm/frontier/inputfile"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/frontier-llm/frontier/plan"
	"github.com/frontier-llm/frontier/record"
	"github.com/frontier-llm/frontier/report"
	"github.com/frontier-llm/frontier/search"
	"github.com/frontier-llm/frontier/search/storage"
)

func cmdReport(ctx context.Context, c *cli, args []string) error {
	fs := flag.NewFlagSet("frontier report", flag.ContinueOnError)
	fs.SetOutput(helpOutput(c, args))
	var src studyFlags
	src.register(fs)
	format := fs.String("format", "table", "output `FORMAT`: table, json, markdown or html")
	out := fs.String("o", "", "write the report to `FILE` instead of standard output")
	all := fs.Bool("all", false, "list every trial, not only the Pareto front")
	estimate := fs.Bool("estimate", true, "with a plan, estimate on the performance model the knobs no trial changed alone (marked simulated)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: frontier report [PLAN | --storage URL] [--study NAME] [--format table|json|markdown|html] [-o FILE] [--all]")
		fmt.Fprintln(fs.Output(), "\nShows a study's Pareto front, the recommended configuration and why, what failed, what")
		fmt.Fprintln(fs.Output(), "each knob does on its own, GPU time and provenance.")
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	opts := report.Options{All: *all}
	var write func(io.Writer, *report.Analysis) error
	switch *format {
	case "table", "text":
		write = func(w io.Writer, a *report.Analysis) error { return report.WriteText(w, a, opts) }
	case "markdown", "md":
		write = func(w io.Writer, a *report.Analysis) error { return report.WriteMarkdown(w, a, opts) }
	case "html":
		write = func(w io.Writer, a *report.Analysis) error { return report.WriteHTML(w, a, opts) }
	case "json":
		write = report.WriteJSON
	default:
		return invalidf("unknown --format %q: use table, json, markdown or html", *format)
	}
	if len(pos) > 1 {
		fmt.Fprintf(c.stderr, "frontier report: one plan at most, got %d arguments\n", len(pos))
		fs.Usage()
		return silent(exitInvalid)
	}
	rec, err := src.load(ctx, c, pos)
	if err != nil {
		return err
	}
	a := report.Analyze(rec)
	if *estimate && *format != "json" {
		estimateSensitivity(ctx, src.loaded, a)
	}
	return writeOutput(c, *out, func(w io.Writer) error { return write(w, a) })
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
	fs.StringVar(&sf.storage, "storage", "", "study database `URL` or path (default: the plan's measured study beside it, PLAN.db, or its estimates, PLAN.estimate.db, when only they exist); a .json file is a study record")
	fs.StringVar(&sf.study, "study", "", "study `NAME` (default: the plan's, or the only study in the database)")
	sf.plan.register(fs)
}

// load reads the study the flags and the positional plan (pos, zero or one element) name.
func (sf *studyFlags) load(ctx context.Context, c *cli, pos []string) (*record.Study, error) {
	dbURL, study := sf.storage, sf.study
	if len(pos) == 1 {
		p, err := sf.plan.load(c, pos[0])
		if err != nil {
			return nil, err
		}
		sf.loaded = p
		if dbURL == "" {
			dbURL = planStorage(c, p.Filename)
		}
		if study == "" {
			study = p.Study.Name
		}
	}
	if dbURL == "" {
		return nil, invalidf("name a plan or a study database with --storage")
	}
	return loadStudy(ctx, dbURL, study)
}

// planStorage is the study database beside a plan that a command reads when given no
// --storage: the plan's measured study, or its study of estimates (apply --estimate) when
// only that one exists, which it says on stderr.
func planStorage(c *cli, planFile string) string {
	measured := storage.DefaultStorage(planFile)
	if _, err := os.Stat(measured); err == nil {
		return measured
	}
	estimated := storage.DefaultEstimateStorage(planFile)
	if _, err := os.Stat(estimated); err != nil {
		return measured
	}
	fmt.Fprintf(c.stderr, "frontier: the plan has no measured study yet (%s); reading its estimates (frontier apply --estimate) in %s\n",
		report.Printable(relativePath(measured)), report.Printable(relativePath(estimated)))
	return estimated
}

// relativePath is path relative to the working directory when it is below it, else path.
func relativePath(path string) string {
	wd, err := os.Getwd()
	if err != nil {
		return path
	}
	if rel, err := filepath.Rel(wd, path); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return path
}

// loadStudy reads a study from a database URL or path, or from a JSON study record (a file
// ending in .json). A path that does not exist, or a record that cannot be read, is invalid
// input.
func loadStudy(ctx context.Context, dbURL, study string) (*record.Study, error) {
	if !strings.Contains(dbURL, "://") {
		path := strings.TrimPrefix(dbURL, "sqlite:")
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return nil, invalidf("no study at %s: the file does not exist (run frontier apply first, or name a study database by its path or URL, or a plan)", dbURL)
		}
		if strings.EqualFold(filepath.Ext(path), ".json") {
			rec, err := readRecordFile(path)
			if err != nil {
				return nil, invalid(err)
			}
			if study != "" && rec.Study != study {
				return nil, invalidf("%s holds study %q, not %q", path, rec.Study, study)
			}
			return rec, nil
		}
	}
	return storage.Load(ctx, dbURL, study)
}

// maxRecordBytes is the largest JSON study record read.
const maxRecordBytes = 1 << 30

// readRecordFile reads a JSON study record; a path that is not a regular file (a pipe, a
// device) or is over maxRecordBytes is refused before it is read.
func readRecordFile(path string) (*record.Study, error) {
	f, _, err := inputfile.Open(path, maxRecordBytes)
	if err != nil {
		return nil, fmt.Errorf("read study record: %w", err)
	}
	defer f.Close()
	rec, err := record.Decode(f)
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
// alone takes other values of its domain (plan.Knob.Alternatives). It needs the plan (the
// space, the workloads and the objectives) and a model and GPU the simulator knows;
// otherwise it leaves the report as it is. Every estimate is marked as simulated.
func estimateSensitivity(ctx context.Context, p *plan.Plan, a *report.Analysis) {
	if p == nil || a.Recommended == nil {
		return
	}
	as, err := search.NewAssessor(p)
	if err != nil || as.NoModel() != "" {
		return
	}
	base := a.Recommended.Config
	withValue := func(name string, v any) plan.Config {
		cfg := plan.Config{}
		for kk, vv := range base {
			cfg[kk] = vv
		}
		if name != "" {
			cfg[name] = v
		}
		if _, knob := cfg[plan.SKUKnob]; !knob && p.Hardware.SKU == "" && a.SKU != "" {
			cfg[plan.SKUKnob] = a.SKU // the GPU the study ran on, as NVML named it
		}
		return cfg
	}
	// Estimates are compared with the model's estimate of the recommended configuration
	// itself, never with its measurement: an estimate against a measurement would show the
	// model's offset as the knob's effect.
	be, err := as.Assess(ctx, withValue("", nil), search.Full)
	if err != nil || !be.Covered || be.Trial.Objectives == nil {
		return
	}
	for _, name := range a.NeedsEstimate() {
		k := p.Knob(name)
		if k == nil {
			continue
		}
		for _, v := range k.Alternatives(base[name]) {
			e, err := as.Assess(ctx, withValue(name, v), search.Full)
			if err != nil {
				a.AddEstimate(name, v, nil, record.StateFailed, err.Error(), be.Trial.Objectives)
				continue
			}
			if !e.Covered {
				return
			}
			a.AddEstimate(name, v, e.Trial.Objectives, e.Trial.State, e.Trial.Reason, be.Trial.Objectives)
		}
	}
}
