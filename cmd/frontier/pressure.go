package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"

	"github.com/frontier-llm/frontier/pressure"
	"github.com/frontier-llm/frontier/report"
)

func cmdPressure(ctx context.Context, c *cli, args []string) error {
	fs := flag.NewFlagSet("frontier pressure", flag.ContinueOnError)
	fs.SetOutput(helpOutput(c, args))
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
		fmt.Fprintln(fs.Output(), "usage: frontier pressure PLAN [--pick knee|N|front] [--storage URL] [--study NAME] [--url URL [--model NAME]] [--json|--markdown]")
		fmt.Fprintln(fs.Output(), "\nRuns the plan's pressure experiments (a load ladder past saturation, a burst and recovery, an engine")
		fmt.Fprintln(fs.Output(), "restart under load, a class shift) on configurations of a finished study, and keeps the results in it.")
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
		if _, err := pressure.ParsePick(*pick); err != nil {
			return invalidf("--pick: %v", err)
		}
	}
	res, err := pressure.RunStudy(ctx, p, pressure.StudyRun{Storage: *storageURL, Study: *study, Pick: *pick, URL: *url, Model: *model,
		FrontierBinary: frontierBinary(c), Progress: pressureProgress(c)})
	if errors.Is(err, pressure.ErrBadPick) || errors.Is(err, pressure.ErrNoSuchTrial) || errors.Is(err, pressure.ErrNoArrivalRate) {
		return invalid(err)
	}
	if err != nil && len(res) == 0 {
		if ctx.Err() != nil {
			return runtimef("interrupted before any experiment finished; nothing was stored")
		}
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
	if err != nil && ctx.Err() != nil {
		return runtimef("interrupted: the experiments finished before the signal are stored, the one it cut short is not; run it again to measure it")
	}
	return err // an experiment cut short, after what it measured was printed and stored
}

// pressureProgress writes the experiments' progress lines to standard error.
func pressureProgress(c *cli) func(string) {
	return func(line string) { fmt.Fprintln(c.stderr, "pressure:", line) }
}
