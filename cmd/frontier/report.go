package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

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
}

func (sf *studyFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&sf.storage, "storage", "", "study database `URL` or path (default: the plan's, beside it); a .json file is a study record")
	fs.StringVar(&sf.study, "study", "", "study `NAME` (default: the plan's, or the only study in the database)")
	sf.plan.register(fs)
}

// load reads the study the flags and the positional plan (pos, zero or one element) name.
// On failure it prints why and returns a nil record and the exit code.
func (sf *studyFlags) load(ctx context.Context, c *cli, cmd string, pos []string) (*search.StudyRecord, int) {
	storage, study := sf.storage, sf.study
	if len(pos) == 1 {
		p, code := sf.plan.load(c, pos[0])
		if p == nil {
			return nil, code
		}
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
func loadStudy(ctx context.Context, storage, study string) (*search.StudyRecord, int, error) {
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

func readRecordFile(path string) (*search.StudyRecord, error) {
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
