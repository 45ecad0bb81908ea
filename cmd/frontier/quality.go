package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/frontier-llm/frontier/plan"
	"github.com/frontier-llm/frontier/quality"
)

// apiKeyEnv names the environment variables that may hold the API key of an
// OpenAI-compatible server, first found first used. The key is sent, never printed.
var apiKeyEnv = [...]string{"FRONTIER_API_KEY", "OPENAI_API_KEY"}

func cmdQuality(ctx context.Context, c *cli, args []string) int {
	usage := func(w io.Writer) {
		fmt.Fprintln(w, "usage: frontier quality score --scorer NAME --references FILE --candidates FILE [--json]")
		fmt.Fprintln(w, "       frontier quality run PLAN --url URL [--model NAME] [--baseline-url URL] [--json]")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "  score  score answers offline against references")
		fmt.Fprintln(w, "  run    run a plan's evaluation sets against a running server")
	}
	if len(args) == 0 {
		usage(c.stderr)
		return exitInvalid
	}
	switch args[0] {
	case "score":
		return cmdQualityScore(ctx, c, args[1:])
	case "run":
		return cmdQualityRun(ctx, c, args[1:])
	case "-h", "-help", "--help", "help":
		usage(c.stdout)
		return exitOK
	}
	fmt.Fprintf(c.stderr, "frontier quality: unknown subcommand %q\n\n", args[0])
	usage(c.stderr)
	return exitInvalid
}

// qualityResult is one scored set, as `frontier quality --json` writes it. Its keys are
// those of a trial's quality scores in `frontier report --format json`.
type qualityResult struct {
	Scorer    string              `json:"scorer"`
	Score     float64             `json:"score"`
	Baseline  *float64            `json:"baseline,omitempty"`
	Passed    *bool               `json:"passed,omitempty"`
	Reason    string              `json:"reason,omitempty"`
	IDs       []string            `json:"ids"`
	Items     []float64           `json:"items"`
	Errors    []quality.ItemError `json:"errors,omitempty"`
	Simulated bool                `json:"simulated,omitempty"`
}

func resultOf(o *quality.Outcome) qualityResult {
	return qualityResult{Scorer: o.Scorer, Score: o.Score, IDs: o.IDs, Items: o.Items, Errors: o.Errors, Simulated: o.Simulated}
}

func cmdQualityScore(ctx context.Context, c *cli, args []string) int {
	fs := flag.NewFlagSet("frontier quality score", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	scorer := fs.String("scorer", "", "the scorer: "+strings.Join(quality.Scorers(), ", "))
	refsPath := fs.String("references", "", "the references, one a line: plain text, or JSONL (a .jsonl `FILE`) with \"text\" and optional \"contains\", \"regex\", \"json\"")
	candsPath := fs.String("candidates", "", "the answers to score, one a line: plain text, or JSONL (a .jsonl `FILE`) with \"text\"")
	asJSON := fs.Bool("json", false, "write JSON: the corpus \"score\" and the per-item \"items\"")
	fs.Usage = func() {
		fmt.Fprintln(c.stderr, "usage: frontier quality score --scorer NAME --references FILE --candidates FILE [--json]")
		fmt.Fprintln(c.stderr, "\nScores answers offline, on 0..1: line i of the candidates against line i of the references.")
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return exitForFlagError(err)
	}
	if len(pos) != 0 {
		fmt.Fprintf(c.stderr, "frontier quality score: unexpected argument %q\n", pos[0])
		fs.Usage()
		return exitInvalid
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(c.stderr, "frontier quality score: "+format+"\n", a...)
		return exitInvalid
	}
	switch {
	case *scorer == "":
		return fail("--scorer is required; one of %s", strings.Join(quality.Scorers(), ", "))
	case !quality.IsScorer(*scorer):
		return fail("unknown scorer %q; one of %s", *scorer, strings.Join(quality.Scorers(), ", "))
	case *scorer == quality.ScorerJudge:
		return fail("the judge needs each item's question; use 'frontier quality run' with a plan")
	case *candsPath == "":
		return fail("--candidates is required")
	case *refsPath == "" && *scorer != quality.ScorerJSONValid:
		return fail("--references is required for scorer %s", *scorer)
	}
	cands, err := readTextLines(*candsPath)
	if err != nil {
		return fail("%v", err)
	}
	items := make([]quality.Item, len(cands))
	for i, l := range cands {
		items[i] = quality.Item{ID: l.id, Prompt: "-", JSON: *scorer == quality.ScorerJSONValid, Source: l.source}
	}
	var baseline []string
	if *refsPath != "" {
		refs, err := readTextLines(*refsPath)
		if err != nil {
			return fail("%v", err)
		}
		if len(refs) != len(cands) {
			return fail("%d candidates in %s for %d references in %s; want one candidate a reference", len(cands), *candsPath, len(refs), *refsPath)
		}
		for i, r := range refs {
			items[i] = quality.Item{ID: r.id, Prompt: "-", Reference: r.text, Contains: r.contains, Regex: r.regex,
				JSON: r.json || *scorer == quality.ScorerJSONValid, Source: r.source}
			baseline = append(baseline, r.text)
		}
	}
	outputs := make([]string, len(cands))
	for i, l := range cands {
		outputs[i] = l.text
	}
	if *scorer != quality.ScorerBaselineAgreement {
		baseline = nil
	}
	o, err := quality.Score(ctx, plan.QualityGate{Scorer: *scorer}, items, outputs, baseline)
	if err != nil {
		return fail("%v", err)
	}
	res := resultOf(o)
	if *asJSON {
		return writeJSON(c, "frontier quality score", res)
	}
	fmt.Fprintf(c.stdout, "%s %.4f (%s)\n", o.Scorer, o.Score, count(len(o.Items), "item"))
	for i, s := range o.Items {
		fmt.Fprintf(c.stdout, "  %-12s %.4f\n", o.IDs[i], s)
	}
	return exitOK
}

func writeJSON(c *cli, who string, v any) int {
	enc := json.NewEncoder(c.stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		fmt.Fprintf(c.stderr, "%s: %v\n", who, err)
		return exitRuntime
	}
	return exitOK
}

// textLine is one line of a references or candidates file.
type textLine struct {
	id, source, text string
	contains         []string
	regex            string
	json             bool
}

// readTextLines reads a file of texts: JSONL when its name ends in .jsonl (objects with
// "text", or "reference", and for references optional "id", "contains", "regex" and
// "json"), plain text otherwise, one text a line (a final newline ends the last line; it
// does not start another).
func readTextLines(path string) ([]textLine, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	jsonl := strings.EqualFold(filepath.Ext(path), ".jsonl")
	var out []textLine
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSuffix(sc.Text(), "\r")
		src := fmt.Sprintf("%s:%d", path, n)
		if !jsonl {
			out = append(out, textLine{id: strconv.Itoa(n), source: src, text: line})
			continue
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		var obj struct {
			ID        json.RawMessage `json:"id"`
			Text      *string         `json:"text"`
			Reference *string         `json:"reference"`
			Contains  json.RawMessage `json:"contains"`
			Regex     string          `json:"regex"`
			JSON      bool            `json:"json"`
		}
		if err := json.Unmarshal([]byte(line), &obj); err != nil {
			return nil, fmt.Errorf("%s: %w", src, err)
		}
		tl := textLine{id: strconv.Itoa(len(out) + 1), source: src, regex: obj.Regex, json: obj.JSON}
		switch {
		case obj.Text != nil:
			tl.text = *obj.Text
		case obj.Reference != nil:
			tl.text = *obj.Reference
		default:
			return nil, fmt.Errorf("%s: no \"text\" field", src)
		}
		if len(obj.ID) > 0 && string(obj.ID) != "null" {
			var id string
			if json.Unmarshal(obj.ID, &id) != nil {
				id = string(obj.ID) // a number
			}
			tl.id = id
		}
		if len(obj.Contains) > 0 {
			var list []string
			if json.Unmarshal(obj.Contains, &list) != nil {
				var one string
				if err := json.Unmarshal(obj.Contains, &one); err != nil {
					return nil, fmt.Errorf("%s: \"contains\" is %s; want a list of strings", src, obj.Contains)
				}
				list = []string{one}
			}
			tl.contains = list
		}
		out = append(out, tl)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no lines", path)
	}
	return out, nil
}

func cmdQualityRun(ctx context.Context, c *cli, args []string) int {
	fs := flag.NewFlagSet("frontier quality run", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	var pf planFlags
	pf.register(fs)
	url := fs.String("url", "", "base `URL` of the OpenAI-compatible server to evaluate, e.g. http://127.0.0.1:8000")
	model := fs.String("model", "", "the served model `NAME` (default: the plan's model name)")
	baselineURL := fs.String("baseline-url", "", "base `URL` of a server running the baseline configuration, for max_drop and baseline_agreement")
	asJSON := fs.Bool("json", false, "write JSON: each quality block's score, baseline, passed, reason and items")
	fs.Usage = func() {
		fmt.Fprintln(c.stderr, "usage: frontier quality run PLAN --url URL [--model NAME] [--baseline-url URL] [--json] [-var NAME=VALUE]...")
		fmt.Fprintln(c.stderr, "\nRuns each quality block of a plan against a running server, greedy with a fixed seed,")
		fmt.Fprintln(c.stderr, "and gates the scores. Exits 3 when a gate fails. The API key, if any, is read from")
		fmt.Fprintln(c.stderr, "FRONTIER_API_KEY or OPENAI_API_KEY.")
		fs.PrintDefaults()
	}
	arg, code, ok := parseOneArg(fs, args)
	if !ok {
		return code
	}
	var err error
	const who = "frontier quality run"
	if *url == "" {
		fmt.Fprintf(c.stderr, "%s: --url is required\n", who)
		return exitInvalid
	}
	p, code := pf.load(c, arg)
	if p == nil {
		return code
	}
	if len(p.Quality) == 0 {
		fmt.Fprintf(c.stderr, "%s: %s has no quality block\n", who, arg)
		return exitInvalid
	}
	sets := make([][]quality.Item, len(p.Quality))
	for i, g := range p.Quality {
		if g.Scorer == quality.ScorerBaselineAgreement && *baselineURL == "" {
			fmt.Fprintf(c.stderr, "%s: quality %q uses baseline_agreement, which needs --baseline-url (a server running the baseline configuration)\n", who, g.Name)
			return exitInvalid
		}
		items, err := quality.LoadSet(g.Dataset)
		if err == nil {
			err = quality.CheckItems(g.Scorer, items)
		}
		if err != nil {
			fmt.Fprintf(c.stderr, "%s: quality %q: %v\n", who, g.Name, err)
			return exitInvalid
		}
		sets[i] = items
	}
	if *model == "" {
		*model = p.Model.Name
	}
	key := ""
	for _, k := range apiKeyEnv {
		if key = c.getenv(k); key != "" {
			break
		}
	}
	gen := quality.NewHTTPGenerator(*url, *model, nil, key)
	results := map[string]qualityResult{}
	failed := false
	for i, g := range p.Quality {
		var base *quality.Outcome
		if *baselineURL != "" {
			base, err = quality.Evaluate(ctx, g, sets[i], quality.NewHTTPGenerator(*baselineURL, *model, nil, key), nil)
			if err != nil {
				fmt.Fprintf(c.stderr, "%s: the baseline: %v\n", who, err)
				return exitRuntime
			}
		}
		o, err := quality.Evaluate(ctx, g, sets[i], gen, base)
		if err != nil {
			fmt.Fprintf(c.stderr, "%s: %v\n", who, err)
			return exitRuntime
		}
		res := resultOf(o)
		gate := g
		baseScore := 0.0
		if base != nil {
			baseScore = base.Score
			res.Baseline = &baseScore
		} else {
			gate.MaxDrop = nil // no baseline measured: only min can be checked
		}
		passed, reason := quality.Gate(gate, o.Score, baseScore)
		if g.MaxDrop != nil || g.Min != nil {
			res.Passed, res.Reason = &passed, reason
		}
		failed = failed || !passed
		results[g.Name] = res
		if !*asJSON {
			writeQualityLine(c.stdout, g, res, base == nil)
		}
	}
	if *asJSON {
		if code := writeJSON(c, who, map[string]any{"quality": results}); code != exitOK {
			return code
		}
	}
	if failed {
		return exitNoFeasible
	}
	return exitOK
}

// writeQualityLine writes one quality block's result for people.
func writeQualityLine(w io.Writer, g plan.QualityGate, r qualityResult, noBaseline bool) {
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
	if g.MaxDrop != nil && noBaseline {
		fmt.Fprintf(w, "  max_drop not checked: no --baseline-url\n")
	}
	if len(r.Errors) > 0 {
		fmt.Fprintf(w, "  %s not scored:\n", count(len(r.Errors), "item"))
		for _, e := range r.Errors {
			fmt.Fprintf(w, "    %s: %s\n", e.ID, e.Error)
		}
	}
}
