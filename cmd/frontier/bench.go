package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter"

	"github.com/frontier-llm/frontier/workload"
)

// benchFlags are the flags of frontier bench.
type benchFlags struct {
	url, model, endpoint, metricsURL string
	requests, warmup, concurrency    int
	rate                             float64
	inputTokens, outputTokens        int
	prefixTokens                     int
	dataset                          string
	tokenIDs                         bool
	timeout                          time.Duration
	planFile, workloadName           string
	findCapacity                     bool
	seed                             uint64
	asJSON                           bool
	plan                             planFlags
}

func cmdBench(ctx context.Context, c *cli, args []string) int {
	fs := flag.NewFlagSet("frontier bench", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	var f benchFlags
	fs.StringVar(&f.url, "url", "", "base `URL` of the OpenAI-compatible server, e.g. http://127.0.0.1:8000")
	fs.StringVar(&f.model, "model", "", "model `NAME` to put in requests (default: the plan's model)")
	fs.StringVar(&f.endpoint, "endpoint", "", "completions or chat (default completions)")
	fs.IntVar(&f.requests, "requests", 100, "measured requests `N`")
	fs.IntVar(&f.warmup, "warmup", 0, "warm-up requests `N`, sent first and not measured")
	fs.Float64Var(&f.rate, "rate", 0, "Poisson arrivals at `R` requests a second")
	fs.IntVar(&f.concurrency, "concurrency", 0, "closed loop with `N` requests in flight")
	fs.IntVar(&f.inputTokens, "input-tokens", 256, "prompt length in tokens `N`")
	fs.IntVar(&f.outputTokens, "output-tokens", 128, "output length in tokens `N` (max_tokens)")
	fs.IntVar(&f.prefixTokens, "prefix-tokens", 0, "leading prompt tokens `N` shared by every request")
	fs.StringVar(&f.dataset, "dataset", "", "prompts from a JSONL or ShareGPT JSON `FILE` instead of synthetic ones")
	fs.BoolVar(&f.tokenIDs, "token-ids", false, "send synthetic prompts as token ids with ignore_eos, for exact lengths (vLLM, frontier sim)")
	fs.DurationVar(&f.timeout, "timeout", 0, "per-request timeout (0: none)")
	fs.StringVar(&f.metricsURL, "metrics-url", "", "Prometheus `URL` to scrape during the run (default: URL/metrics; \"off\" for none)")
	fs.StringVar(&f.planFile, "plan", "", "take the workload classes from a plan `FILE`")
	fs.StringVar(&f.workloadName, "workload", "", "with --plan, only the workload class `NAME`")
	fs.BoolVar(&f.findCapacity, "find-capacity", false, "search the highest Poisson rate that meets each class's SLO, from --rate or the plan's rate")
	fs.Uint64Var(&f.seed, "seed", 0, "seed of the requests `S`")
	fs.BoolVar(&f.asJSON, "json", false, "print the measurement as JSON")
	f.plan.register(fs)
	fs.Usage = func() {
		fmt.Fprintln(c.stderr, "usage: frontier bench --url URL --model NAME [--endpoint completions|chat] [--requests N] [--warmup N]")
		fmt.Fprintln(c.stderr, "       [--rate R | --concurrency N] [--input-tokens N] [--output-tokens N] [--token-ids]")
		fmt.Fprintln(c.stderr, "       [--plan PLAN [--workload NAME]] [--find-capacity] [--seed S] [--json]")
		fmt.Fprintln(c.stderr, "\nMeasures an OpenAI-compatible server with streaming requests. The API key, if any, comes")
		fmt.Fprintln(c.stderr, "from FRONTIER_API_KEY or OPENAI_API_KEY. Server errors are counted, not fatal.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return exitForFlagError(err)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(c.stderr, "frontier bench: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return exitInvalid
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })

	classes, model, msg := f.classes(c, set)
	if msg != "" {
		if msg != "-" {
			fmt.Fprintf(c.stderr, "frontier bench: %s\n", msg)
		}
		return exitInvalid
	}
	if f.url == "" {
		fmt.Fprintln(c.stderr, "frontier bench: --url is required")
		return exitInvalid
	}
	if f.model != "" {
		model = f.model
	}
	if model == "" {
		fmt.Fprintln(c.stderr, "frontier bench: --model is required")
		return exitInvalid
	}
	target, msg := f.target(c, model)
	if msg != "" {
		fmt.Fprintf(c.stderr, "frontier bench: %s\n", msg)
		return exitInvalid
	}
	// Load every class's requests first: a bad dataset is invalid input, found before any
	// request is sent.
	for _, cl := range classes {
		if _, err := workload.Load(cl, f.seed); err != nil {
			fmt.Fprintf(c.stderr, "frontier bench: %v\n", err)
			return exitInvalid
		}
	}

	var m *workload.Measurement
	var runErr error
	if f.findCapacity {
		m, runErr = benchCapacity(ctx, target, classes, f.seed, c.stderr)
	} else {
		var res *workload.RunResult
		res, runErr = workload.Run(ctx, target, classes, workload.RunOptions{Seed: f.seed})
		if res != nil {
			m = res.Measurement
		}
	}
	if m != nil {
		var err error
		if f.asJSON {
			err = writeMeasurementJSON(c.stdout, m)
		} else {
			err = writeMeasurementTable(c.stdout, m, classes)
		}
		if err != nil {
			fmt.Fprintf(c.stderr, "frontier bench: %v\n", err)
			return exitRuntime
		}
	}
	if runErr != nil {
		fmt.Fprintf(c.stderr, "frontier bench: %v\n", runErr)
		return exitRuntime
	}
	if m.Total.Metrics[workload.Completed] == 0 && !f.findCapacity {
		note := "no request completed"
		if errs := m.Total.Errors; len(errs) > 0 {
			note += " (" + formatErrors(errs) + ")"
		}
		fmt.Fprintf(c.stderr, "frontier bench: %s\n", note)
		return exitRuntime
	}
	return exitOK
}

// classes builds the workload classes from the plan or the flags, and the plan's model.
// It returns a message for invalid input ("-" when already printed).
func (f *benchFlags) classes(c *cli, set map[string]bool) ([]workload.Class, string, string) {
	if set["rate"] && set["concurrency"] {
		return nil, "", "--rate and --concurrency cannot be used together"
	}
	if set["workload"] && f.planFile == "" {
		return nil, "", "--workload needs --plan"
	}
	for name, v := range map[string]int{"requests": f.requests, "input-tokens": f.inputTokens, "output-tokens": f.outputTokens} {
		if v < 1 {
			return nil, "", fmt.Sprintf("--%s is %d; it must be at least 1", name, v)
		}
	}
	switch {
	case f.warmup < 0:
		return nil, "", "--warmup must not be negative"
	case f.rate < 0 || math.IsNaN(f.rate) || math.IsInf(f.rate, 0):
		return nil, "", "--rate must be a positive number of requests a second"
	case set["rate"] && f.rate == 0:
		return nil, "", "--rate must be a positive number of requests a second"
	case f.concurrency < 0 || set["concurrency"] && f.concurrency == 0:
		return nil, "", "--concurrency must be at least 1"
	case f.prefixTokens < 0 || f.prefixTokens >= f.inputTokens && set["prefix-tokens"]:
		return nil, "", "--prefix-tokens must be below --input-tokens"
	case f.endpoint != "" && f.endpoint != workload.EndpointCompletions && f.endpoint != workload.EndpointChat:
		return nil, "", fmt.Sprintf("--endpoint %q: want completions or chat", f.endpoint)
	}
	if f.planFile == "" {
		cl := workload.Class{
			Name: "bench", Requests: f.requests, Warmup: f.warmup,
			InputTokens:  workload.Dist{Kind: workload.DistFixed, A: float64(f.inputTokens)},
			OutputTokens: workload.Dist{Kind: workload.DistFixed, A: float64(f.outputTokens)},
			PrefixTokens: f.prefixTokens, Endpoint: f.endpoint, Timeout: f.timeout,
			Arrival: workload.Arrival{Kind: workload.ArrivalImmediate},
		}
		if f.dataset != "" {
			cl.Dataset = f.dataset
			if !set["output-tokens"] {
				cl.OutputTokens = workload.Dist{}
			}
		}
		f.applyArrival(&cl, set)
		return []workload.Class{cl}, "", ""
	}
	p, code := f.plan.load(c, f.planFile)
	if code != exitOK {
		return nil, "", "-"
	}
	classes := p.Workloads
	if f.workloadName != "" {
		i := slices.IndexFunc(classes, func(cl workload.Class) bool { return cl.Name == f.workloadName })
		if i < 0 {
			names := make([]string, len(classes))
			for j, cl := range classes {
				names[j] = cl.Name
			}
			return nil, "", fmt.Sprintf("%s has no workload %q; it has %s", f.planFile, f.workloadName, strings.Join(names, ", "))
		}
		classes = classes[i : i+1]
	}
	if len(classes) == 0 {
		return nil, "", f.planFile + " has no workload block"
	}
	// Flags given explicitly override the plan's classes.
	for i := range classes {
		cl := &classes[i]
		if set["requests"] {
			cl.Requests = f.requests
		}
		if set["warmup"] {
			cl.Warmup = f.warmup
		}
		if set["input-tokens"] {
			cl.InputTokens = workload.Dist{Kind: workload.DistFixed, A: float64(f.inputTokens)}
		}
		if set["output-tokens"] {
			cl.OutputTokens = workload.Dist{Kind: workload.DistFixed, A: float64(f.outputTokens)}
		}
		if set["endpoint"] {
			cl.Endpoint = f.endpoint
		}
		if set["timeout"] {
			cl.Timeout = f.timeout
		}
		if set["dataset"] {
			cl.Dataset = f.dataset
		}
		f.applyArrival(cl, set)
	}
	return classes, p.Model.Name, ""
}

func (f *benchFlags) applyArrival(cl *workload.Class, set map[string]bool) {
	switch {
	case set["rate"]:
		cl.Arrival = workload.Arrival{Kind: workload.ArrivalPoisson, Rate: f.rate}
	case set["concurrency"]:
		cl.Arrival = workload.Arrival{Kind: workload.ArrivalConcurrency, Concurrency: f.concurrency}
	}
}

// target builds the server target; the API key comes from the environment.
func (f *benchFlags) target(c *cli, model string) (workload.Target, string) {
	u, err := url.Parse(f.url)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return workload.Target{}, fmt.Sprintf("--url %q: want http://HOST:PORT or https://HOST:PORT", f.url)
	}
	t := workload.Target{URL: f.url, Model: model, Endpoint: f.endpoint, TokenIDs: f.tokenIDs}
	t.APIKey = c.getenv("FRONTIER_API_KEY")
	if t.APIKey == "" {
		t.APIKey = c.getenv("OPENAI_API_KEY")
	}
	switch f.metricsURL {
	case "off":
	case "":
		base := strings.TrimSuffix(strings.TrimRight(f.url, "/"), "/v1")
		t.MetricsURL = base + "/metrics"
	default:
		t.MetricsURL = f.metricsURL
	}
	return t, ""
}

// benchCapacity finds each class's capacity and returns, per class, the measurement at the
// highest rate that met the SLO (or the last one tried) with capacity_rps added. Each
// measurement is reported on progress as it ends.
func benchCapacity(ctx context.Context, t workload.Target, classes []workload.Class, seed uint64, progress io.Writer) (*workload.Measurement, error) {
	out := &workload.Measurement{Workloads: map[string]*workload.Result{}, Total: &workload.Result{Metrics: map[string]float64{}}}
	for _, cl := range classes {
		var best *workload.Result
		bestRate := -1.0
		// Start from the class's rate, else at a rate that sends its requests in about 10 s.
		start := cl.Arrival.Rate
		if start <= 0 || cl.Arrival.Kind == workload.ArrivalConcurrency {
			start = math.Max(1, float64(cl.Requests)/10)
		}
		capacity, err := workload.FindCapacity(ctx, t, cl, workload.CapacityOptions{Seed: seed, Start: start, Observe: func(rate float64, m *workload.Measurement, ok bool) {
			r := m.Workloads[cl.Name]
			if r == nil {
				return
			}
			verdict := "missed the SLO"
			if ok {
				verdict = "met the SLO"
			}
			fmt.Fprintf(progress, "workload %q at %.4g req/s: %s (%.1f%% of requests within the per-request bounds)\n",
				cl.Name, rate, verdict, 100*workload.Attainment(r))
			if ok && rate > bestRate || best == nil {
				best, bestRate = r, rate
			}
		}})
		if err != nil {
			return nil, err
		}
		if best == nil {
			best = &workload.Result{Metrics: map[string]float64{}}
		}
		best.Metrics[workload.CapacityRPS] = capacity
		out.Workloads[cl.Name] = best
	}
	if len(classes) == 1 {
		out.Total = out.Workloads[classes[0].Name]
	}
	return out, nil
}

// writeMeasurementJSON prints the DESIGN's measurement JSON.
func writeMeasurementJSON(w io.Writer, m *workload.Measurement) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(m); err != nil {
		return fmt.Errorf("writing the measurement: %w", err)
	}
	return nil
}

// writeMeasurementTable prints one row per metric, one column per class and the total.
func writeMeasurementTable(w io.Writer, m *workload.Measurement, classes []workload.Class) error {
	var names []string
	for _, cl := range classes {
		if m.Workloads[cl.Name] != nil {
			names = append(names, cl.Name)
		}
	}
	for _, n := range slices.Sorted(maps.Keys(m.Workloads)) {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	results := make([]*workload.Result, 0, len(names)+1)
	header := []any{"metric"}
	for _, n := range names {
		results = append(results, m.Workloads[n])
		header = append(header, n)
	}
	// One class and the total are the same but for the engine's metrics (queue, KV cache,
	// preemptions, prefix cache), which only the total carries.
	showTotal := len(names) != 1
	for k := range m.Total.Metrics {
		if len(names) == 1 && !hasMetric(m.Workloads[names[0]], k) {
			showTotal = true
		}
	}
	if showTotal {
		results = append(results, m.Total)
		header = append(header, "total")
	}
	t := tablewriter.NewWriter(w)
	t.Header(header...)
	var rows [][]string
	for _, metric := range workload.MetricNames() {
		row := []string{metric}
		has := false
		for _, r := range results {
			v, ok := r.Metrics[metric]
			if !ok {
				row = append(row, "-")
				continue
			}
			has = true
			row = append(row, formatMetric(metric, v))
		}
		if has {
			rows = append(rows, row)
		}
	}
	if err := t.Bulk(rows); err != nil {
		return fmt.Errorf("writing the table: %w", err)
	}
	if err := t.Render(); err != nil {
		return fmt.Errorf("writing the table: %w", err)
	}
	if errs := m.Total.Errors; len(errs) > 0 {
		if _, err := fmt.Fprintf(w, "errors: %s\n", formatErrors(errs)); err != nil {
			return err
		}
	}
	return nil
}

func hasMetric(r *workload.Result, name string) bool {
	_, ok := r.Metrics[name]
	return ok
}

func formatMetric(name string, v float64) string {
	switch name {
	case workload.Completed, workload.Failed, workload.Cancelled, workload.Preemptions:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case workload.ErrorRate, workload.KVCacheUsageMax, workload.PrefixCacheHitRate:
		return strconv.FormatFloat(v, 'f', 4, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

func formatErrors(errs map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(errs)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, errs[k]))
	}
	return strings.Join(parts, " ")
}
