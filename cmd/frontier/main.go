// Command frontier finds the Pareto-optimal serving configurations of an LLM inference engine.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/frontier-llm/frontier/plan"
	"github.com/frontier-llm/frontier/record"
	"github.com/frontier-llm/frontier/search/storage"
	"github.com/frontier-llm/frontier/workload"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), stopSignals()...)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// stopSignals cancel a command's context: Ctrl-C, SIGTERM, and a closed terminal (SIGHUP),
// which stops frontier as SIGTERM does (engines stopped, running trials left to the next
// run) instead of leaving the engines to outlive it.
func stopSignals() []os.Signal { return []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP} }

// Exit codes, in one place.
const (
	exitOK         = 0 // success
	exitInvalid    = 1 // invalid input: plan, flags, dataset
	exitRuntime    = 2 // runtime failure
	exitNoFeasible = 3 // a study finished with no configuration meeting every SLO and gate
)

// cli is what every subcommand gets: its streams and environment.
type cli struct {
	stdin   io.Reader
	stdout  io.Writer
	stderr  io.Writer
	environ []string
}

// getenv returns the value of key in the command's environment.
func (c *cli) getenv(key string) string {
	for i := len(c.environ) - 1; i >= 0; i-- {
		kv := c.environ[i]
		if len(kv) > len(key) && kv[len(key)] == '=' && kv[:len(key)] == key {
			return kv[len(key)+1:]
		}
	}
	return ""
}

// writeJSON prints v on stdout as indented JSON, with <, > and & as they are.
func writeJSON(c *cli, v any) error {
	enc := json.NewEncoder(c.stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// cmdFunc runs one command. It returns nil on success; any other error says what went wrong
// and, through exitCode, how frontier exits.
type cmdFunc func(ctx context.Context, c *cli, args []string) error

type command struct {
	name    string
	summary string
	run     cmdFunc
}

func commands() []command {
	return []command{
		{"validate", "check a plan and print every diagnostic", interruptible(cmdValidate)},
		{"plan", "show what a study of a plan will search", interruptible(cmdPlan)},
		{"apply", "run a study", cmdApply},
		{"report", "show a study's Pareto front and recommendation", interruptible(cmdReport)},
		{"export", "print a trial's configuration ready to deploy", interruptible(cmdExport)},
		{"compare", "put studies side by side", interruptible(cmdCompare)},
		{"estimate", "run the offline performance model on a plan", interruptible(cmdEstimate)},
		{"pressure", "saturation, overload, recovery, restart and class shift of chosen configurations", cmdPressure},
		{"k8s-job", "print the Kubernetes manifests of a study run by N workers as an Indexed Job", interruptible(cmdK8sJob)},
		{"bench", "measure an OpenAI-compatible server", cmdBench},
		{"quality", "score outputs or run a plan's evaluation sets", cmdQuality},
		{"sim", "run the simulated vLLM server", cmdSim},
		{"router", "route requests to prefill and decode instances (vLLM's disaggregation)", cmdRouter},
		{"testmodel", "write a small random GGUF model for tests", cmdTestmodel},
		{"hw", "list the GPUs NVML sees", cmdHW},
		{"version", "print frontier's version", cmdVersion},
	}
}

// version is the running build's release (record.Release: the version and the VCS
// revision), recorded in every trial's provenance.
func version() string { return record.Release() }

func cmdVersion(_ context.Context, c *cli, _ []string) error {
	_, err := fmt.Fprintln(c.stdout, "frontier", version())
	return err
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: frontier COMMAND [ARGS]")
	fmt.Fprintln(w)
	for _, cmd := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", cmd.name, cmd.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'frontier COMMAND -h' for a command's flags.")
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c := &cli{stdin: stdin, stdout: stdout, stderr: stderr, environ: os.Environ()}
	if len(args) == 0 {
		usage(stderr)
		return exitInvalid
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		usage(stdout)
		return exitOK
	case "-version", "--version":
		return finish(stderr, "frontier version", cmdVersion(ctx, c, nil))
	}
	for _, cmd := range commands() {
		if cmd.name == args[0] {
			return finish(stderr, "frontier "+cmd.name, cmd.run(ctx, c, args[1:]))
		}
	}
	fmt.Fprintf(stderr, "frontier: unknown command %q\n\n", args[0])
	usage(stderr)
	return exitInvalid
}

// exitError is an error with the exit code it calls for. A nil err means the problem has
// already been printed (the flag package's messages, a usage text, a server's own log).
type exitError struct {
	code int
	// who replaces the command's name in the printed message ("frontier quality score").
	who string
	err error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// invalidf is invalid input: a bad plan, flag or dataset.
func invalidf(format string, args ...any) error {
	return &exitError{code: exitInvalid, err: fmt.Errorf(format, args...)}
}

// runtimef is a runtime failure.
func runtimef(format string, args ...any) error {
	return &exitError{code: exitRuntime, err: fmt.Errorf(format, args...)}
}

// noFeasiblef is a study, or a gate, that left no configuration meeting every SLO and gate.
func noFeasiblef(format string, args ...any) error {
	return &exitError{code: exitNoFeasible, err: fmt.Errorf(format, args...)}
}

// invalid marks err, when not nil, as invalid input.
func invalid(err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: exitInvalid, err: err}
}

// silent is an exit with code whose reason has already been printed.
func silent(code int) error { return &exitError{code: code} }

// as makes err's message start with who instead of the command's name.
func as(who string, err error) error {
	if err == nil {
		return nil
	}
	var e *exitError
	if errors.As(err, &e) && e.who == "" {
		e.who = who
		return err
	}
	return &exitError{code: exitCode(err), who: who, err: err}
}

// exitCode maps an error to frontier's exit code: 0 for none and for -h; what an exitError
// says; 1 for invalid input the libraries report (a plan with diagnostics, a study whose
// space changed or that the database holds read-only, a storage argument that names no study
// database or names another program's, a bad dataset); 2 for anything else.
func exitCode(err error) int {
	var e *exitError
	var diags *plan.DiagnosticsError
	var badInput *workload.InputError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, &e):
		return e.code
	case errors.As(err, &diags), errors.As(err, &badInput),
		errors.Is(err, storage.ErrSpaceChanged), errors.Is(err, storage.ErrModelChanged), errors.Is(err, storage.ErrEstimateMixed), errors.Is(err, storage.ErrReadOnly),
		errors.Is(err, storage.ErrBadStorage), errors.Is(err, storage.ErrForeignDatabase):
		return exitInvalid
	}
	return exitRuntime
}

// finish prints err once, prefixed by who (the command), and returns the exit code. A plan's
// diagnostics print as HCL writes them, each with its file, line and snippet.
func finish(stderr io.Writer, who string, err error) int {
	code := exitCode(err)
	if code == exitOK {
		return code
	}
	var e *exitError
	if errors.As(err, &e) {
		if e.err == nil {
			return code
		}
		if e.who != "" {
			who = e.who
		}
	}
	var diags *plan.DiagnosticsError
	if errors.As(err, &diags) {
		if werr := diags.Write(stderr); werr != nil {
			fmt.Fprintf(stderr, "%s: %v\n", who, werr)
			return exitRuntime
		}
		return code
	}
	fmt.Fprintf(stderr, "%s: %v\n", who, err)
	return code
}
