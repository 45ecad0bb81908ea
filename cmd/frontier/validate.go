package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/frontier-llm/frontier/hw"
	"github.com/frontier-llm/frontier/hw/nvml"
	"github.com/frontier-llm/frontier/plan"
	"github.com/frontier-llm/frontier/sim"
)

func cmdValidate(_ context.Context, c *cli, args []string) int {
	fs := flag.NewFlagSet("frontier validate", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	var pf planFlags
	pf.register(fs)
	fs.Usage = func() {
		fmt.Fprintln(c.stderr, "usage: frontier validate PLAN [-var NAME=VALUE]... [-var-file FILE]...")
		fmt.Fprintln(c.stderr, "\nChecks a plan and prints every problem it finds; exits 1 when there is one.")
		fs.PrintDefaults()
	}
	arg, code, ok := parseOneArg(fs, args)
	if !ok {
		return code
	}
	p, code := pf.loadAndWarn(c, arg, "frontier validate")
	if p == nil {
		return code
	}
	for _, w := range hardwareWarnings(p, nvml.Detect()) {
		fmt.Fprintf(c.stderr, "Warning: %s\n\n", w)
	}
	fmt.Fprintf(c.stdout, "%s is valid: %s, %s, %s.\n", arg,
		count(len(p.Knobs), "knob"), count(len(p.Workloads), "workload"), count(len(p.Objectives), "objective"))
	return exitOK
}

// count writes n with a noun, plural when n is not 1.
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// planFlags are the flags of every command that loads a plan: -var and -var-file, each
// repeatable, applied in order.
type planFlags struct {
	vars     stringsFlag
	varFiles stringsFlag
}

func (pf *planFlags) register(fs *flag.FlagSet) {
	fs.Var(&pf.vars, "var", "set a plan variable, `NAME=VALUE` (repeatable)")
	fs.Var(&pf.varFiles, "var-file", "read plan variables from an HCL `FILE` of NAME = VALUE lines (repeatable)")
}

// load loads the plan at path with the flags' variables and the command's environment. On
// failure it prints every diagnostic to stderr and returns a nil plan and the exit code.
func (pf *planFlags) load(c *cli, path string) (*plan.Plan, int) {
	opts := plan.LoadOptions{Vars: pf.vars, VarFiles: pf.varFiles, Environ: c.environ}
	for _, s := range hw.SKUs() {
		opts.SKUs = append(opts.SKUs, s.Name)
	}
	for _, a := range sim.Archs() {
		opts.Architectures = append(opts.Architectures, a.Name)
	}
	p, err := plan.Load(path, opts)
	if err == nil {
		return p, exitOK
	}
	var diags *plan.DiagnosticsError
	if errors.As(err, &diags) {
		if werr := diags.Write(c.stderr); werr != nil {
			fmt.Fprintf(c.stderr, "frontier: %v\n", werr)
			return nil, exitRuntime
		}
		return nil, exitInvalid
	}
	fmt.Fprintf(c.stderr, "frontier: %v\n", err)
	return nil, exitInvalid
}

// loadAndWarn loads the plan at path like load, then prints the plan's warnings on stderr,
// prefixed by the command's name (who) if that fails.
func (pf *planFlags) loadAndWarn(c *cli, path, who string) (*plan.Plan, int) {
	p, code := pf.load(c, path)
	if p == nil {
		return nil, code
	}
	if err := p.WriteWarnings(c.stderr); err != nil {
		fmt.Fprintf(c.stderr, "%s: %v\n", who, err)
		return nil, exitRuntime
	}
	return p, exitOK
}

// parseOneArg parses the flags of a command that takes exactly one positional argument (a
// plan), flags before or after it. It returns the argument, or ok false and the exit code
// after printing what was wrong.
func parseOneArg(fs *flag.FlagSet, args []string) (arg string, code int, ok bool) {
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return "", exitForFlagError(err), false
	}
	if len(pos) != 1 {
		fs.Usage()
		return "", exitInvalid, false
	}
	return pos[0], exitOK, true
}

// hardwareWarnings says where the plan asks for GPUs this host does not have, or of another
// SKU. validate and plan only warn; apply is where it is an error.
func hardwareWarnings(p *plan.Plan, inv hw.Inventory) []string {
	sel := hw.Selection(p.Hardware.GPUs)
	if !sel.All && sel.Count == 0 && len(sel.Indices) == 0 {
		return nil // CPU only
	}
	real := p.Engine.Kind != plan.EngineSim
	if !real && !inv.Available {
		return nil // the simulator's GPUs are virtual
	}
	gpus, notes, err := hw.Resolve(sel, inv, real)
	warnings := append([]string(nil), notes...)
	if err != nil {
		warnings = append(warnings, err.Error())
	}
	if real && p.Hardware.SKU != "" {
		for _, g := range gpus {
			if g.Name == "" {
				continue
			}
			if sku, ok := hw.MatchSKU(g.Name); !ok || sku.Name != p.Hardware.SKU {
				warnings = append(warnings, fmt.Sprintf("hardware.sku is %q, but GPU %d is a %s", p.Hardware.SKU, g.Index, g.Name))
			}
		}
	}
	return warnings
}

// stringsFlag is a repeatable string flag.
type stringsFlag []string

func (s *stringsFlag) String() string { return strings.Join(*s, ",") }

func (s *stringsFlag) Set(v string) error {
	*s = append(*s, v)
	return nil
}

// parseInterspersed parses flags that may come before or after the positional arguments
// (frontier plan PLAN --json) and returns the positional arguments. "--" ends the flags.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// exitForFlagError maps a flag parsing error to an exit code: -h is success, anything else
// invalid input (the flag package has already printed the problem and the usage).
func exitForFlagError(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	return exitInvalid
}
