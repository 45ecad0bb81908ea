package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/frontier-llm/frontier/hw/nvml"
	"github.com/frontier-llm/frontier/search"
)

func cmdPlan(ctx context.Context, c *cli, args []string) error {
	fs := flag.NewFlagSet("frontier plan", flag.ContinueOnError)
	fs.SetOutput(helpOutput(c, args))
	var pf planFlags
	pf.register(fs)
	asJSON := fs.Bool("json", false, "print the plan as JSON")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: frontier plan PLAN [--json] [-var NAME=VALUE]... [-var-file FILE]...")
		fmt.Fprintln(fs.Output(), "\nShows what a study of the plan searches: knobs, grid size, rules, workloads, gates, objectives.")
		fs.PrintDefaults()
	}
	arg, err := parseOneArg(fs, args)
	if err != nil {
		return err
	}
	p, err := pf.load(c, arg)
	if err != nil {
		return err
	}
	sum := p.Describe()
	if sum.PreScreen, err = search.PreScreen(ctx, p, search.PreScreenSample); err != nil {
		return invalidf("pre-screen: %w", err)
	}
	hwWarnings := search.HardwareWarnings(p, nvml.Detect())
	sum.Warnings = append(sum.Warnings, hwWarnings...)
	if *asJSON {
		return writeJSON(c, sum)
	}
	if err := p.WriteWarnings(c.stderr); err != nil {
		return err
	}
	writeWarnings(c, hwWarnings)
	return sum.WriteText(c.stdout)
}
