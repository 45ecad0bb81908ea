package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/frontier-llm/frontier/k8sjob"
)

func cmdK8sJob(_ context.Context, c *cli, args []string) error {
	fs := flag.NewFlagSet("frontier k8s-job", flag.ContinueOnError)
	fs.SetOutput(helpOutput(c, args))
	var pf planFlags
	pf.register(fs)
	workers := fs.Int("workers", 0, "pods measuring at once, `N`: the Job's parallelism and completions (required)")
	storage := fs.String("storage", "", "the study database `URL` the pods reach, postgres://... or mysql://... (never written: the pods read it from a Secret); default: a PostgreSQL server of the study's own, in the manifests")
	image := fs.String("image", "", "the workers' container `IMAGE`, built from frontier's Dockerfile (default: frontier:VERSION-ENGINE)")
	lease := fs.Duration("lease", 2*time.Minute, "the workers' --lease, `DURATION`: how long a trial may go without its worker's heartbeat before another worker takes it back")
	backoff := fs.Int("backoff-limit-per-index", 3, "how many times a worker's pod is replaced after a failure of its own, `N`, before its index fails")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: frontier k8s-job PLAN --workers N [--storage URL] [--image IMAGE] [--lease DURATION] [-var NAME=VALUE]... [-var-file FILE]...")
		fmt.Fprintln(fs.Output(), "\nPrints the Kubernetes manifests of the plan's study as an Indexed Job of N workers over one")
		fmt.Fprintln(fs.Output(), "study database: kubectl apply --server-side -f the output. The comments at the top say which")
		fmt.Fprintln(fs.Output(), "Secrets to create, how to apply it again, how to follow the Job and how to read the report.")
		fs.PrintDefaults()
	}
	arg, err := parseOneArg(fs, args)
	if err != nil {
		return err
	}
	if *workers < 1 {
		return invalidf("--workers N is required, at least 1: the number of pods measuring at once")
	}
	if *lease < minLease {
		return invalidf("--lease %s is too short: a worker beats once a second at most, so give it at least %s (the default is 2m)", *lease, minLease)
	}
	if *backoff < 1 {
		return invalidf("--backoff-limit-per-index must be at least 1")
	}
	p, err := pf.loadAndWarn(c, arg)
	if err != nil {
		return err
	}
	l := *lease
	if l == 2*time.Minute {
		l = 0 // apply's default: the command line stays short
	}
	err = k8sjob.Write(c.stdout, p, k8sjob.Options{
		Workers: *workers, Storage: *storage, Image: *image, Lease: l,
		Vars: pf.vars, VarFiles: pf.varFiles, Environ: c.environ, Version: version(),
		BackoffLimitPerIndex: *backoff,
	})
	return invalid(err)
}
