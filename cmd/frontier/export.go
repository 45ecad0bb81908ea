package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/frontier-llm/frontier/record"

	"github.com/frontier-llm/frontier/report"
)

func cmdExport(ctx context.Context, c *cli, args []string) int {
	fs := flag.NewFlagSet("frontier export", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	var src studyFlags
	src.register(fs)
	trial := fs.Int("trial", -1, "export trial `N`")
	pick := fs.String("pick", "", "export the trial a rule picks: knee (the recommended configuration)")
	format := fs.String("format", report.FormatVLLMArgs, "output `FORMAT`: "+strings.Join(report.ExportFormats(), ", "))
	out := fs.String("o", "", "write to `FILE` instead of standard output")
	fs.Usage = func() {
		fmt.Fprintln(c.stderr, "usage: frontier export [PLAN | --storage URL] [--study NAME] (--trial N | --pick knee) [--format vllm-args|vllm-yaml|docker|k8s] [-o FILE]")
		fmt.Fprintln(c.stderr, "\nPrints a trial's configuration ready to deploy: a vllm serve line, a file for")
		fmt.Fprintln(c.stderr, "vllm serve --config, a docker run line or a Kubernetes Deployment. Secrets are never exported.")
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return exitForFlagError(err)
	}
	switch {
	case !slices.Contains(report.ExportFormats(), *format):
		fmt.Fprintf(c.stderr, "frontier export: unknown --format %q: use one of %s\n", *format, strings.Join(report.ExportFormats(), ", "))
		return exitInvalid
	case (*trial >= 0) == (*pick != ""):
		fmt.Fprintln(c.stderr, "frontier export: give either --trial N or --pick knee")
		return exitInvalid
	case *pick != "" && *pick != "knee":
		fmt.Fprintf(c.stderr, "frontier export: unknown --pick %q: the only rule is knee\n", *pick)
		return exitInvalid
	case len(pos) > 1:
		fmt.Fprintf(c.stderr, "frontier export: one plan at most, got %d arguments\n", len(pos))
		return exitInvalid
	}
	rec, code := src.load(ctx, c, "frontier export", pos)
	if rec == nil {
		return code
	}
	var t *record.Trial
	if *pick == "knee" {
		r := report.Analyze(rec).Recommended
		if r == nil {
			fmt.Fprintf(c.stderr, "frontier export: study %s has no configuration that met every SLO and gate, so no knee; export one with --trial N\n", rec.Study)
			return exitNoFeasible
		}
		t = rec.Trial(r.Trial)
	} else {
		t = rec.Trial(*trial)
		if t == nil {
			fmt.Fprintf(c.stderr, "frontier export: study %s has no trial %d (it has %d trials)\n", rec.Study, *trial, len(rec.Trials))
			return exitInvalid
		}
	}
	if t.State != record.StateComplete {
		why := string(t.State)
		if t.Reason != "" {
			why += ": " + t.Reason
		}
		fmt.Fprintf(c.stderr, "frontier export: warning: trial %d did not meet every SLO and gate (%s)\n", t.Number, why)
	}
	if err := writeOutput(c, *out, func(w io.Writer) error { return report.Export(w, rec, t, *format) }); err != nil {
		fmt.Fprintf(c.stderr, "frontier export: %v\n", err)
		return exitInvalid
	}
	return exitOK
}
