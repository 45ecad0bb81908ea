package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"strings"

	"github.com/frontier-llm/frontier/report"
	"github.com/frontier-llm/frontier/workload"
)

func cmdBench(ctx context.Context, c *cli, args []string) error {
	fs := flag.NewFlagSet("frontier bench", flag.ContinueOnError)
	fs.SetOutput(helpOutput(c, args))
	var (
		spec                           workload.BenchSpec
		serverURL, model, metricsURL   string
		planFile, workloadName         string
		tokenIDs, findCapacity, asJSON bool
		seed                           uint64
		pf                             planFlags
	)
	fs.StringVar(&serverURL, "url", "", "base `URL` of the OpenAI-compatible server, e.g. http://127.0.0.1:8000")
	fs.StringVar(&model, "model", "", "model `NAME` to put in requests (default: the plan's model)")
	fs.StringVar(&spec.Endpoint, "endpoint", "", "completions or chat (default completions)")
	fs.IntVar(&spec.Requests, "requests", 100, "measured requests `N`")
	fs.IntVar(&spec.Warmup, "warmup", 0, "warm-up requests `N`, sent first and not measured")
	fs.Float64Var(&spec.Rate, "rate", 0, "Poisson arrivals at `R` requests a second")
	fs.IntVar(&spec.Concurrency, "concurrency", 0, "closed loop with `N` requests in flight")
	fs.IntVar(&spec.InputTokens, "input-tokens", 256, "prompt length in tokens `N`")
	fs.IntVar(&spec.OutputTokens, "output-tokens", 128, "output length in tokens `N` (max_tokens)")
	fs.IntVar(&spec.PrefixTokens, "prefix-tokens", 0, "leading prompt tokens `N` shared by every request")
	fs.IntVar(&spec.Conversations, "conversations", 0, "multi-turn conversations `N` in place of --requests: each turn's prompt is the history so far plus --input-tokens new tokens")
	fs.IntVar(&spec.Turns, "turns", 1, "with --conversations, turns `N` per conversation")
	fs.DurationVar(&spec.ThinkTime, "think-time", 0, "with --conversations, mean time `DUR` between a reply and the next turn (exponential; 0: at once)")
	fs.IntVar(&spec.PrefixGroups, "prefix-groups", 0, "spread --prefix-tokens over `K` distinct shared prefixes, one drawn per request or conversation")
	fs.StringVar(&spec.Dataset, "dataset", "", "prompts from a JSONL or ShareGPT JSON `FILE` instead of synthetic ones")
	fs.BoolVar(&tokenIDs, "token-ids", false, "send synthetic prompts as token ids with ignore_eos, for exact lengths (vLLM, frontier sim)")
	fs.DurationVar(&spec.Timeout, "timeout", 0, "per-request timeout (0: none)")
	fs.StringVar(&metricsURL, "metrics-url", "", "Prometheus `URL` to scrape during the run (default: URL/metrics; \"off\" for none)")
	fs.StringVar(&planFile, "plan", "", "take the workload classes from a plan `FILE`")
	fs.StringVar(&workloadName, "workload", "", "with --plan, only the workload class `NAME`")
	fs.BoolVar(&findCapacity, "find-capacity", false, "search the highest Poisson rate that meets each class's SLO, from --rate or the plan's rate")
	hold := fs.Duration("hold", 0, "with --find-capacity, offer each rate for at least `DUR` (more requests than the class's when needed), as pressure ladders do")
	fs.Uint64Var(&seed, "seed", 0, "seed of the requests `S`")
	fs.BoolVar(&asJSON, "json", false, "print the measurement as JSON")
	pf.register(fs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: frontier bench --url URL --model NAME [--endpoint completions|chat] [--requests N] [--warmup N]")
		fmt.Fprintln(fs.Output(), "       [--rate R | --concurrency N] [--input-tokens N] [--output-tokens N] [--token-ids]")
		fmt.Fprintln(fs.Output(), "       [--conversations N [--turns N] [--think-time DUR]] [--prefix-tokens N [--prefix-groups K]]")
		fmt.Fprintln(fs.Output(), "       [--plan PLAN [--workload NAME]] [--find-capacity [--hold DUR]] [--seed S] [--json]")
		fmt.Fprintln(fs.Output(), "\nMeasures an OpenAI-compatible server with streaming requests. The API key, if any, comes")
		fmt.Fprintln(fs.Output(), "from FRONTIER_API_KEY or OPENAI_API_KEY. Server errors are counted, not fatal.")
		fs.PrintDefaults()
	}
	if err := noArgs(fs, args); err != nil {
		return err
	}
	spec.Set = map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { spec.Set[fl.Name] = true })
	if err := spec.Check(); err != nil {
		return invalid(err)
	}
	var classes []workload.Class
	switch {
	case spec.Set["workload"] && planFile == "":
		return invalidf("--workload needs --plan")
	case planFile == "":
		own, err := spec.Class()
		if err != nil {
			return invalid(err)
		}
		classes = []workload.Class{own}
	default:
		p, err := pf.load(c, planFile)
		if err != nil {
			return err
		}
		if classes, err = workload.SelectClass(p.Workloads, workloadName, planFile); err != nil {
			return invalid(err)
		}
		if err := spec.Override(classes); err != nil {
			return invalid(err)
		}
		if model == "" {
			model = p.Model.Name
		}
	}
	switch {
	case serverURL == "":
		return invalidf("--url is required")
	case model == "":
		return invalidf("--model is required")
	}
	u, err := url.Parse(serverURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return invalidf("--url %q: want http://HOST:PORT or https://HOST:PORT", serverURL)
	}
	target := workload.Target{URL: serverURL, Model: model, Endpoint: spec.Endpoint, TokenIDs: tokenIDs, APIKey: apiKey(c)}
	switch metricsURL {
	case "off":
	case "":
		target.MetricsURL = strings.TrimSuffix(strings.TrimRight(serverURL, "/"), "/v1") + "/metrics"
	default:
		target.MetricsURL = metricsURL
	}
	// Load every class's requests first: a bad dataset is invalid input, found before any
	// request is sent.
	for _, cl := range classes {
		if _, err := workload.Load(cl, seed); err != nil {
			return invalid(err)
		}
	}

	var m *workload.Measurement
	var runErr error
	if findCapacity {
		m, runErr = workload.MeasureCapacity(ctx, target, classes, seed, *hold, c.stderr)
	} else {
		var res *workload.RunResult
		res, runErr = workload.Run(ctx, target, classes, workload.RunOptions{Seed: seed})
		if res != nil {
			m = res.Measurement
		}
	}
	if m != nil {
		var err error
		if asJSON {
			err = writeJSON(c, m)
		} else {
			names := make([]string, len(classes))
			for i, cl := range classes {
				names[i] = cl.Name
			}
			err = report.WriteMeasurementTable(c.stdout, m, names)
		}
		if err != nil {
			return fmt.Errorf("writing the measurement: %w", err)
		}
	}
	if runErr != nil {
		return runErr
	}
	if m.Total.Metrics[workload.Completed] == 0 && !findCapacity {
		note := "no request completed"
		if errs := m.Total.Errors; len(errs) > 0 {
			note += " (" + report.FormatErrors(errs) + ")"
		}
		return errors.New(note)
	}
	return nil
}

// apiKey is the API key of an OpenAI-compatible server: FRONTIER_API_KEY, else
// OPENAI_API_KEY. It is sent, never printed.
func apiKey(c *cli) string {
	if key := c.getenv("FRONTIER_API_KEY"); key != "" {
		return key
	}
	return c.getenv("OPENAI_API_KEY")
}
