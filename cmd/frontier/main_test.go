package main

import (
	"context"
	"flag"
	"os"
	"os/signal"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/frontier-llm/frontier/workload/workloadtest"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"frontier": func() {
			// As main: the stop signals cancel the command's context.
			ctx, stop := signal.NotifyContext(context.Background(), stopSignals()...)
			code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
			stop()
			os.Exit(code)
		},
		"frontier-pod": podShim,
	})
}

// TestScript runs the end-to-end CLI tests in testdata/script: each .txtar file is a
// session at the command line, with its files and the output it expects.
func TestScript(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("EXAMPLES", examplesDir(t))
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"streamserver": cmdStreamServer,
		},
	})
}

// cmdStreamServer starts an OpenAI-compatible streaming server with known timing on
// loopback for the rest of the script and sets $SERVER_URL to its base URL:
//
//	streamserver [-ttft D] [-itl D] [-tokens N] [-fail-every N] [-slots N]
//
// -fail-every N answers every Nth request with 500.
func cmdStreamServer(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! streamserver")
	}
	fs := flag.NewFlagSet("streamserver", flag.ContinueOnError)
	var opts workloadtest.Options
	fs.DurationVar(&opts.TTFT, "ttft", 0, "")
	fs.DurationVar(&opts.ITL, "itl", 0, "")
	fs.IntVar(&opts.Tokens, "tokens", 0, "")
	fs.IntVar(&opts.Slots, "slots", 0, "")
	failEvery := fs.Int("fail-every", 0, "")
	ts.Check(fs.Parse(args))
	if *failEvery > 0 {
		opts.Fault = func(n int) workloadtest.Fault {
			if (n+1)%*failEvery == 0 {
				return workloadtest.Fault500
			}
			return workloadtest.FaultNone
		}
	}
	s, err := workloadtest.Start(opts)
	ts.Check(err)
	ts.Defer(func() { s.Close() })
	ts.Setenv("SERVER_URL", s.URL())
}

func examplesDir(t *testing.T) string {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd + "/../../examples"
}
