package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/frontier-llm/frontier/hw"
	"github.com/frontier-llm/frontier/hw/nvml"
	"github.com/frontier-llm/frontier/plan"
	"github.com/frontier-llm/frontier/quality"
	"github.com/frontier-llm/frontier/search"
	"github.com/frontier-llm/frontier/sim"
)

func cmdValidate(_ context.Context, c *cli, args []string) error {
	fs := flag.NewFlagSet("frontier validate", flag.ContinueOnError)
	fs.SetOutput(helpOutput(c, args))
	var pf planFlags
	pf.register(fs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: frontier validate PLAN [-var NAME=VALUE]... [-var-file FILE]...")
		fmt.Fprintln(fs.Output(), "\nChecks a plan and prints every problem it finds; exits 1 when there is one.")
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
	writeWarnings(c, search.HardwareWarnings(p, nvml.Detect()))
	if _, err := fmt.Fprintf(c.stdout, "%s is valid: %s, %s, %s.\n", arg,
		count(len(p.Knobs), "knob"), count(len(p.Workloads), "workload"), count(len(p.Objectives), "objective")); err != nil {
		return err
	}
	for _, n := range p.Notes {
		if _, err := fmt.Fprintf(c.stdout, "Note: %s.\n", n); err != nil {
			return err
		}
	}
	return nil
}

// interruptible runs a command that holds nothing to clean up (it reads files and prints, or
// writes its output atomically) so that SIGINT or SIGTERM ends it at once, with exit 2,
// whatever it is doing: a large plan, a slow database, a file system that hangs.
func interruptible(run cmdFunc) cmdFunc {
	return func(ctx context.Context, c *cli, args []string) error {
		done := make(chan error, 1)
		go func() { done <- run(ctx, c, args) }()
		select {
		case err := <-done:
			return err
		case <-ctx.Done():
			return runtimef("interrupted")
		}
	}
}

// writeWarnings prints warnings on stderr as a plan's warnings print.
func writeWarnings(c *cli, warnings []string) {
	for _, w := range warnings {
		fmt.Fprintf(c.stderr, "Warning: %s\n\n", w)
	}
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

// load loads the plan at path with the flags' variables, the command's environment and the
// catalogs' SKUs and architectures. Every failure is invalid input.
func (pf *planFlags) load(c *cli, path string) (*plan.Plan, error) {
	opts := plan.LoadOptions{Vars: pf.vars, VarFiles: pf.varFiles, Environ: c.environ}
	for _, s := range hw.SKUs() {
		opts.SKUs = append(opts.SKUs, s.Name)
	}
	for _, a := range sim.Archs() {
		opts.Architectures = append(opts.Architectures, a.Name)
	}
	p, err := plan.Load(path, opts)
	if err != nil {
		return nil, invalid(err)
	}
	return p, invalid(checkEvalSets(p))
}

// checkEvalSets reads each quality gate's evaluation set and checks that every item has
// what the gate's scorer needs, so that a bad or empty set is refused with the plan, before
// a study database is created or an engine started.
func checkEvalSets(p *plan.Plan) error {
	var errs []error
	for _, g := range p.Quality {
		items, err := quality.LoadSet(g.Dataset)
		if err == nil {
			err = quality.CheckItems(g.Scorer, items)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("quality %q: evaluation set %s: %w", g.Name, g.Dataset, err))
		}
	}
	return errors.Join(errs...)
}

// loadAndWarn loads the plan at path like load, then prints the plan's warnings on stderr.
func (pf *planFlags) loadAndWarn(c *cli, path string) (*plan.Plan, error) {
	p, err := pf.load(c, path)
	if err != nil {
		return nil, err
	}
	if err := p.WriteWarnings(c.stderr); err != nil {
		return nil, err
	}
	return p, nil
}

// parseOneArg parses the flags of a command that takes exactly one positional argument (a
// plan), flags before or after it, and returns the argument.
func parseOneArg(fs *flag.FlagSet, args []string) (string, error) {
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return "", err
	}
	if len(pos) != 1 {
		fs.Usage()
		return "", silent(exitInvalid)
	}
	return pos[0], nil
}

// noArgs parses flags of a command that takes no positional argument.
func noArgs(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return flagError(err)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "%s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		fs.Usage()
		return silent(exitInvalid)
	}
	return nil
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
			return nil, flagError(err)
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

// flagError is the error of a flag parsing error: -h is success (flag.ErrHelp), anything
// else invalid input that the flag package has already printed with the usage.
func flagError(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	return silent(exitInvalid)
}

// helpOutput is where a command's flag set writes: standard output when args ask for help
// (-h, -help, --help before any "--"), so that `frontier report --help | less` shows it;
// standard error otherwise, for the usage printed beside a flag error.
func helpOutput(c *cli, args []string) io.Writer {
	for _, a := range args {
		switch a {
		case "--":
			return c.stderr
		case "-h", "-help", "--help", "--h":
			return c.stdout
		}
	}
	return c.stderr
}
