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

func cmdExport(ctx context.Context, c *cli, args []string) error {
	fs := flag.NewFlagSet("frontier export", flag.ContinueOnError)
	fs.SetOutput(helpOutput(c, args))
	var src studyFlags
	src.register(fs)
	trial := fs.Int("trial", -1, "export trial `N`")
	pick := fs.String("pick", "", "export the trial a rule picks: knee (the recommended configuration)")
	format := fs.String("format", report.FormatVLLMArgs, "output `FORMAT`: "+strings.Join(report.ExportFormats(), ", "))
	out := fs.String("o", "", "write to `FILE` instead of standard output")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: frontier export [PLAN | --storage URL] [--study NAME] (--trial N | --pick knee) [--format vllm-args|vllm-yaml|docker|k8s] [-o FILE]")
		fmt.Fprintln(fs.Output(), "\nPrints a trial's configuration ready to deploy: a vllm serve line, a file for")
		fmt.Fprintln(fs.Output(), "vllm serve --config, a docker run line or a Kubernetes Deployment. Secrets are never exported.")
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	switch {
	case !slices.Contains(report.ExportFormats(), *format):
		return invalidf("unknown --format %q: use one of %s", *format, strings.Join(report.ExportFormats(), ", "))
	case (*trial >= 0) == (*pick != ""):
		return invalidf("give either --trial N or --pick knee")
	case *pick != "" && *pick != "knee":
		return invalidf("unknown --pick %q: the only rule is knee", *pick)
	case len(pos) > 1:
		return invalidf("one plan at most, got %d arguments", len(pos))
	}
	rec, err := src.load(ctx, c, pos)
	if err != nil {
		return err
	}
	var t *record.Trial
	if *pick == "knee" {
		r := report.Analyze(rec).Recommended
		if r == nil {
			return noFeasiblef("study %s has no configuration that met every SLO and gate, so no knee; export one with --trial N", report.Printable(rec.Study))
		}
		t = rec.Trial(r.Trial)
	} else {
		t = rec.Trial(*trial)
		if t == nil {
			return invalidf("study %s has no trial %d (it has %d trials)", report.Printable(rec.Study), *trial, len(rec.Trials))
		}
	}
	if t.State != record.StateComplete {
		why := string(t.State)
		if t.Reason != "" {
			why += ": " + t.Reason
		}
		fmt.Fprintf(c.stderr, "frontier export: warning: trial %d did not meet every SLO and gate (%s)\n", t.Number, report.Printable(why))
	} else if !rec.IsConfirmed(t) {
		fix := "run frontier apply on the plan again to confirm it"
		if rec.Confirm <= 0 {
			fix = "the plan's confirm = 0 turns confirmation off; set it to 1 or more and run frontier apply again"
		}
		fmt.Fprintf(c.stderr, "frontier export: warning: trial %d is unconfirmed: its numbers rest on %d run(s), never measured again; %s\n", t.Number, t.Runs(), fix)
	}
	return invalid(writeOutput(c, *out, func(w io.Writer) error { return report.Export(w, rec, t, *format) }))
}
