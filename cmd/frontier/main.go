// Command frontier finds the Pareto-optimal serving configurations of an LLM inference engine.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

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

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, c *cli, args []string) int
}

func commands() []command {
	return []command{
		{"validate", "check a plan and print every diagnostic", cmdValidate},
		{"plan", "show what a study of a plan will search", cmdPlan},
		{"apply", "run a study", cmdApply},
		{"report", "show a study's Pareto front and recommendation", cmdReport},
		{"export", "print a trial's configuration ready to deploy", cmdExport},
		{"compare", "put studies side by side", cmdCompare},
		{"estimate", "run the offline performance model on a plan", cmdEstimate},
		{"pressure", "saturation, overload, recovery, restart and class shift of chosen configurations", cmdPressure},
		{"bench", "measure an OpenAI-compatible server", cmdBench},
		{"quality", "score outputs or run a plan's evaluation sets", cmdQuality},
		{"sim", "run the simulated vLLM server", cmdSim},
		{"testmodel", "write a small random GGUF model for tests", cmdTestmodel},
		{"hw", "list the GPUs NVML sees", cmdHW},
		{"version", "print frontier's version", cmdVersion},
	}
}

// version is frontier's version, recorded in every trial's provenance.
const version = "0.1.0"

func cmdVersion(_ context.Context, c *cli, _ []string) int {
	fmt.Fprintln(c.stdout, "frontier", version)
	return exitOK
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
		return cmdVersion(ctx, c, nil)
	}
	for _, cmd := range commands() {
		if cmd.name == args[0] {
			return cmd.run(ctx, c, args[1:])
		}
	}
	fmt.Fprintf(stderr, "frontier: unknown command %q\n\n", args[0])
	usage(stderr)
	return exitInvalid
}
