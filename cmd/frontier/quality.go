package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/frontier-llm/frontier/plan"
	"github.com/frontier-llm/frontier/quality"
)

func cmdQuality(ctx context.Context, c *cli, args []string) error {
	usage := func(w io.Writer) {
		fmt.Fprintln(w, "usage: frontier quality score --scorer NAME --references FILE --candidates FILE [--json]")
		fmt.Fprintln(w, "       frontier quality run PLAN --url URL [--model NAME] [--baseline-url URL] [--json]")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "  score  score answers offline against references")
		fmt.Fprintln(w, "  run    run a plan's evaluation sets against a running server")
	}
	if len(args) == 0 {
		usage(c.stderr)
		return silent(exitInvalid)
	}
	switch args[0] {
	case "score":
		return as("frontier quality score", cmdQualityScore(ctx, c, args[1:]))
	case "run":
		return as("frontier quality run", cmdQualityRun(ctx, c, args[1:]))
	case "-h", "-help", "--help", "help":
		usage(c.stdout)
		return nil
	}
	fmt.Fprintf(c.stderr, "frontier quality: unknown subcommand %q\n\n", args[0])
	usage(c.stderr)
	return silent(exitInvalid)
}

func cmdQualityScore(ctx context.Context, c *cli, args []string) error {
	fs := flag.NewFlagSet("frontier quality score", flag.ContinueOnError)
	fs.SetOutput(helpOutput(c, args))
	scorer := fs.String("scorer", "", "the scorer: "+strings.Join(quality.Scorers(), ", "))
	refsPath := fs.String("references", "", "the references, one a line: plain text, or JSONL (a .jsonl `FILE`) with \"text\" and optional \"contains\", \"regex\", \"json\"")
	candsPath := fs.String("candidates", "", "the answers to score, one a line: plain text, or JSONL (a .jsonl `FILE`) with \"text\"")
	asJSON := fs.Bool("json", false, "write JSON: the corpus \"score\" and the per-item \"items\"")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: frontier quality score --scorer NAME --references FILE --candidates FILE [--json]")
		fmt.Fprintln(fs.Output(), "\nScores answers offline, on 0..1: line i of the candidates against line i of the references.")
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) != 0:
		fmt.Fprintf(c.stderr, "frontier quality score: unexpected argument %q\n", pos[0])
		fs.Usage()
		return silent(exitInvalid)
	case *scorer == "":
		return invalidf("--scorer is required; one of %s", strings.Join(quality.Scorers(), ", "))
	case *candsPath == "":
		return invalidf("--candidates is required")
	case *refsPath == "" && *scorer != quality.ScorerJSONValid && *scorer != quality.ScorerJudge && quality.IsScorer(*scorer):
		return invalidf("--references is required for scorer %s", *scorer)
	}
	o, err := quality.ScoreFiles(ctx, *scorer, *refsPath, *candsPath)
	switch {
	case err != nil && ctx.Err() != nil:
		return runtimef("interrupted: %w", err)
	case err != nil:
		return invalid(err)
	}
	if *asJSON {
		return writeJSON(c, quality.ResultOf(o))
	}
	fmt.Fprintf(c.stdout, "%s %.4f (%s)\n", o.Scorer, o.Score, count(len(o.Items), "item"))
	for i, s := range o.Items {
		fmt.Fprintf(c.stdout, "  %-12s %.4f\n", o.IDs[i], s)
	}
	return nil
}

func cmdQualityRun(ctx context.Context, c *cli, args []string) error {
	fs := flag.NewFlagSet("frontier quality run", flag.ContinueOnError)
	fs.SetOutput(helpOutput(c, args))
	var pf planFlags
	pf.register(fs)
	url := fs.String("url", "", "base `URL` of the OpenAI-compatible server to evaluate, e.g. http://127.0.0.1:8000")
	model := fs.String("model", "", "the served model `NAME` (default: the plan's model name)")
	baselineURL := fs.String("baseline-url", "", "base `URL` of a server running the baseline configuration, for max_drop and baseline_agreement")
	asJSON := fs.Bool("json", false, "write JSON: each quality block's score, baseline, passed, reason and items")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: frontier quality run PLAN --url URL [--model NAME] [--baseline-url URL] [--json] [-var NAME=VALUE]...")
		fmt.Fprintln(fs.Output(), "\nRuns each quality block of a plan against a running server, greedy with a fixed seed,")
		fmt.Fprintln(fs.Output(), "and gates the scores. Exits 3 when a gate fails. The API key, if any, is read from")
		fmt.Fprintln(fs.Output(), "FRONTIER_API_KEY or OPENAI_API_KEY.")
		fs.PrintDefaults()
	}
	arg, err := parseOneArg(fs, args)
	if err != nil {
		return err
	}
	if *url == "" {
		return invalidf("--url is required")
	}
	p, err := pf.load(c, arg)
	if err != nil {
		return err
	}
	if len(p.Quality) == 0 {
		return invalidf("%s has no quality block", arg)
	}
	sets, err := quality.LoadGateSets(p.Quality, *baselineURL != "")
	if err != nil {
		return invalid(err)
	}
	if *model == "" {
		*model = p.Model.Name
	}
	key := apiKey(c)
	gen := quality.NewHTTPGenerator(*url, *model, nil, key)
	var base quality.Generator
	if *baselineURL != "" {
		base = quality.NewHTTPGenerator(*baselineURL, *model, nil, key)
	}
	results := map[string]quality.Result{}
	failed := false
	for i, g := range p.Quality {
		res, err := quality.RunGate(ctx, g, sets[i], gen, base)
		if err != nil {
			return err
		}
		failed = failed || res.Passed != nil && !*res.Passed
		results[g.Name] = res
		if !*asJSON {
			writeQualityLine(c.stdout, g, res)
		}
	}
	if *asJSON {
		if err := writeJSON(c, map[string]any{"quality": results}); err != nil {
			return err
		}
	}
	if failed {
		return silent(exitNoFeasible)
	}
	return nil
}

// writeQualityLine writes one quality block's result for people.
func writeQualityLine(w io.Writer, g plan.QualityGate, r quality.Result) {
	fmt.Fprintf(w, "%s: %s %.4f (%s)", g.Name, r.Scorer, r.Score, count(len(r.Items), "item"))
	if r.Baseline != nil {
		fmt.Fprintf(w, ", baseline %.4f", *r.Baseline)
	}
	switch {
	case r.Passed == nil:
		fmt.Fprint(w, ", no gate")
	case *r.Passed:
		fmt.Fprint(w, ", passed")
	default:
		fmt.Fprintf(w, ", FAILED: %s", r.Reason)
	}
	fmt.Fprintln(w)
	if g.MaxDrop != nil && r.Baseline == nil {
		fmt.Fprintf(w, "  max_drop not checked: no --baseline-url\n")
	}
	if len(r.Errors) > 0 {
		fmt.Fprintf(w, "  %s not scored:\n", count(len(r.Errors), "item"))
		for _, e := range r.Errors {
			fmt.Fprintf(w, "    %s: %s\n", e.ID, e.Error)
		}
	}
}
