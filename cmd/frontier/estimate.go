package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/frontier-llm/frontier/plan"
	"github.com/frontier-llm/frontier/record"
	"github.com/frontier-llm/frontier/search"
	"github.com/frontier-llm/frontier/workload"
)

const simulatedNote = "SIMULATED: every number below comes from frontier's performance model of vLLM, not from a measurement."

// estimateTrial is one configuration's estimate: the measurement JSON plus its config, or
// the reason it has none.
type estimateTrial struct {
	Config map[string]any `json:"config"`
	*workload.Measurement
	SKU           string  `json:"sku"`
	GPUs          int     `json:"gpus"`
	KVCacheTokens int     `json:"kv_cache_tokens,omitempty"`
	MaxConcurr    float64 `json:"max_concurrency,omitempty"`
	// Rejected names the plan rule the configuration breaks.
	Rejected string `json:"rejected,omitempty"`
	// FailureClass and EngineMessage say why the configuration would not start.
	FailureClass  string `json:"failure_class,omitempty"`
	EngineMessage string `json:"engine_message,omitempty"`
	// State and Reason are the verdict a study would record: complete when every SLO, check
	// and gate is met.
	State  string `json:"state,omitempty"`
	Reason string `json:"reason,omitempty"`
	// SimulatedAll is always true; it stays set when there is no measurement.
	SimulatedAll bool `json:"simulated"`
}

func cmdEstimate(ctx context.Context, c *cli, args []string) int {
	fs := flag.NewFlagSet("frontier estimate", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	var pf planFlags
	pf.register(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	all := fs.Bool("all", false, "estimate every configuration of the plan's grid")
	var knobs stringsFlag
	fs.Var(&knobs, "knob", "set a knob (or any vLLM option) for the estimate, `NAME=VALUE` (repeatable)")
	fs.Usage = func() {
		fmt.Fprintln(c.stderr, "usage: frontier estimate PLAN [--json] [--knob NAME=VALUE]... [--all] [-var NAME=VALUE]... [-var-file FILE]...")
		fmt.Fprintln(c.stderr, "\nRuns the plan's workloads on the offline performance model of vLLM, without HTTP: one")
		fmt.Fprintln(c.stderr, "configuration (knobs with one value, or set with --knob), or the whole grid with --all.")
		fmt.Fprintln(c.stderr, "Every number it prints is simulated.")
		fs.PrintDefaults()
	}
	arg, code, ok := parseOneArg(fs, args)
	if !ok {
		return code
	}
	p, code := pf.loadAndWarn(c, arg, "frontier estimate")
	if p == nil {
		return code
	}
	as, err := search.NewAssessor(p)
	if err == nil && as.NoModel() != "" {
		err = errors.New(as.NoModel())
	}
	if err != nil {
		fmt.Fprintf(c.stderr, "frontier estimate: %v\n", err)
		return exitInvalid
	}
	overrides, err := parseKnobOverrides(p, knobs)
	if err != nil {
		fmt.Fprintf(c.stderr, "frontier estimate: %v\n", err)
		return exitInvalid
	}
	var configs []plan.Config
	if *all {
		if n := gridSize(p, overrides); n > maxEstimateGrid {
			fmt.Fprintf(c.stderr, "frontier estimate --all: the grid has %d configurations, more than %d; fix some knobs with --knob NAME=VALUE\n", n, maxEstimateGrid)
			return exitInvalid
		}
		grid, err := p.Grid()
		if err != nil {
			fmt.Fprintf(c.stderr, "frontier estimate --all: %v\n", err)
			return exitInvalid
		}
		seen := map[string]bool{}
		for _, cfg := range grid {
			for k, v := range overrides {
				cfg[k] = v
			}
			if key := cfg.String(); !seen[key] {
				seen[key] = true
				configs = append(configs, cfg)
			}
		}
	} else {
		cfg, err := singleConfig(p, overrides)
		if err != nil {
			fmt.Fprintf(c.stderr, "frontier estimate: %v\n", err)
			return exitInvalid
		}
		configs = []plan.Config{cfg}
	}
	for _, cfg := range configs {
		if _, ok := search.SKUFor(p, cfg); !ok {
			fmt.Fprintf(c.stderr, "frontier estimate: GPU SKU %q is not in the catalog; set hardware.sku or a sku knob to one of %s\n",
				cfg.SKU(p.Hardware.SKU), strings.Join(skuNames(), ", "))
			return exitInvalid
		}
	}

	trials := make([]estimateTrial, len(configs))
	errs := make([]error, len(configs))
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				trials[i], errs[i] = estimateOne(ctx, as, configs[i])
			}
		}()
	}
	for i := range configs {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			fmt.Fprintf(c.stderr, "frontier estimate: %v\n", err)
			return exitRuntime
		}
	}

	if *asJSON {
		enc := json.NewEncoder(c.stdout)
		enc.SetIndent("", "  ")
		if *all {
			err = enc.Encode(struct {
				Simulated bool            `json:"simulated"`
				Trials    []estimateTrial `json:"trials"`
			}{true, trials})
		} else {
			err = enc.Encode(trials[0])
		}
	} else if *all {
		err = writeEstimateTable(c.stdout, p, trials)
	} else {
		err = writeEstimate(c.stdout, p, trials[0])
	}
	if err != nil {
		fmt.Fprintf(c.stderr, "frontier estimate: %v\n", err)
		return exitRuntime
	}
	if !*all && trials[0].Measurement == nil {
		return exitRuntime
	}
	return exitOK
}

// maxEstimateGrid is the largest grid `frontier estimate --all` runs.
const maxEstimateGrid = 50000

// gridSize is the number of configurations of the grid once the overridden knobs are fixed;
// 0 when a knob is continuous (Grid says why).
func gridSize(p *plan.Plan, overrides plan.Config) int {
	n := 1
	for _, k := range p.Knobs {
		if _, ok := overrides[k.Name]; ok {
			continue
		}
		size, ok := k.Size()
		if !ok {
			return 0
		}
		if size > 0 && n > math.MaxInt/size {
			return math.MaxInt
		}
		n *= size
	}
	return n
}

// parseKnobOverrides reads --knob NAME=VALUE flags, typed by the plan's knob of that name
// (or, for other vLLM options, as a number, a boolean or a string).
func parseKnobOverrides(p *plan.Plan, flags []string) (plan.Config, error) {
	out := plan.Config{}
	for _, f := range flags {
		name, value, ok := strings.Cut(f, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, fmt.Errorf("--knob %q: want NAME=VALUE", f)
		}
		v, err := knobValue(p.Knob(name), value)
		if err != nil {
			return nil, fmt.Errorf("--knob %s: %w", name, err)
		}
		out[name] = v
	}
	return out, nil
}

func knobValue(k *plan.Knob, s string) (plan.Value, error) {
	s = strings.TrimSpace(s)
	if k == nil {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return n, nil
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return f, nil
		}
		if b, err := strconv.ParseBool(s); err == nil {
			return b, nil
		}
		return s, nil
	}
	switch k.Kind {
	case plan.KnobInt:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("want a whole number, got %q", s)
		}
		return n, nil
	case plan.KnobFloat:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("want a number, got %q", s)
		}
		return f, nil
	}
	var names []string
	for _, v := range k.Values {
		if fmt.Sprint(v) == s {
			return v, nil
		}
		names = append(names, fmt.Sprint(v))
	}
	return nil, fmt.Errorf("want one of %s, got %q", strings.Join(names, ", "), s)
}

// singleConfig builds the one configuration to estimate: overrides, then knobs with a single
// value; every other knob needs an override.
func singleConfig(p *plan.Plan, overrides plan.Config) (plan.Config, error) {
	cfg := plan.Config{}
	var missing []string
	for _, k := range p.Knobs {
		if v, ok := overrides[k.Name]; ok {
			cfg[k.Name] = v
			continue
		}
		if n, ok := k.Size(); ok && n == 1 {
			pts, _ := k.Points()
			cfg[k.Name] = pts[0]
			continue
		}
		missing = append(missing, k.Name)
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("knobs with more than one value need one for an estimate: %s (set them with --knob NAME=VALUE, or estimate every configuration with --all)", strings.Join(missing, ", "))
	}
	for k, v := range overrides {
		cfg[k] = v
	}
	return cfg, nil
}

// estimateOne runs the offline assessment on one configuration, in full.
func estimateOne(ctx context.Context, as *search.Assessor, cfg plan.Config) (estimateTrial, error) {
	a, err := as.Assess(ctx, cfg, search.Full)
	if err != nil {
		return estimateTrial{}, err
	}
	t := a.Trial
	out := estimateTrial{Config: t.Config, SKU: a.SKU.Name, GPUs: t.GPUs, FailureClass: string(t.FailureClass),
		EngineMessage: t.EngineMessage, State: string(t.State), Reason: t.Reason, SimulatedAll: true}
	if a.Rejected() && t.Violations[0].Kind == record.ViolationRule {
		out.Rejected = t.Violations[0].Metric + ": " + t.Violations[0].Message
	}
	if a.Startup != nil {
		out.KVCacheTokens, out.MaxConcurr = a.Startup.KVCacheTokens, a.Startup.MaxConcurrency
	}
	if t.Total != nil {
		out.Measurement = &workload.Measurement{Workloads: t.Workloads, Total: t.Total, Series: t.Series, Simulated: true}
	}
	return out, nil
}

func writeEstimate(w io.Writer, p *plan.Plan, t estimateTrial) error {
	ew := &errWriter{w: w}
	ew.printf("%s\n\n", simulatedNote)
	ew.printf("model     %s (%s)\n", p.Model.Name, p.Model.Architecture)
	ew.printf("hardware  %d x %s\n", t.GPUs, t.SKU)
	ew.printf("config    %s\n", plan.Config(t.Config).String())
	switch {
	case t.Rejected != "":
		ew.printf("\nrejected by rule %s\n", t.Rejected)
		return ew.err
	case t.FailureClass != "":
		ew.printf("\nwould not start (%s):\n%s\n", t.FailureClass, t.EngineMessage)
		return ew.err
	}
	ew.printf("KV cache  %s tokens (%.2fx max_model_len)\n\n", groupThousands(t.KVCacheTokens), t.MaxConcurr)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\tcompleted\treq/s\tout tok/s\tTTFT p50 ms\tTTFT p99 ms\tTPOT p50 ms\tTPOT p99 ms\tE2E p50 ms\tqueue p99 ms\tgoodput\t")
	names := make([]string, 0, len(p.Workloads)+1)
	for _, wl := range p.Workloads {
		names = append(names, wl.Name)
	}
	row := func(name string, r *workload.Result) {
		m := r.Metrics
		fmt.Fprintf(tw, "%s\t%.0f\t%.2f\t%.0f\t%.1f\t%.1f\t%.1f\t%.1f\t%.0f\t%.1f\t%.2f\t\n", name, m[workload.Completed],
			m[workload.RequestThroughput], m[workload.OutputTokenThroughput], m["ttft_p50_ms"], m["ttft_p99_ms"],
			m["tpot_p50_ms"], m["tpot_p99_ms"], m["e2e_p50_ms"], m[workload.QueueP99Ms], m[workload.Goodput])
	}
	for _, n := range names {
		if r := t.Workloads[n]; r != nil {
			row(n, r)
		}
	}
	row("total", t.Total)
	if err := tw.Flush(); err != nil {
		return err
	}
	m := t.Total.Metrics
	ew.printf("\nKV cache usage max %.0f%%, preemptions %.0f, prefix cache hit rate %.0f%%", 100*m[workload.KVCacheUsageMax], m[workload.Preemptions], 100*m[workload.PrefixCacheHitRate])
	if cost, ok := m[workload.CostPerMillionOutput]; ok {
		ew.printf(", cost %.3f per million output tokens", cost)
	}
	ew.printf("\n")
	return ew.err
}

func writeEstimateTable(w io.Writer, p *plan.Plan, trials []estimateTrial) error {
	ew := &errWriter{w: w}
	ew.printf("%s\n\n", simulatedNote)
	ew.printf("%s (%s): %d configurations\n\n", p.Model.Name, p.Model.Architecture, len(trials))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tconfig\tGPUs\tout tok/s\tTTFT p99 ms\tTPOT p99 ms\tE2E p50 ms\tcost/M out\tnote")
	for i, t := range trials {
		if t.Measurement == nil {
			note := t.Rejected
			if note == "" {
				note = t.FailureClass + ": " + firstLine(t.EngineMessage)
			}
			fmt.Fprintf(tw, "%d\t%s\t%d\t-\t-\t-\t-\t-\t%s\n", i, plan.Config(t.Config).String(), t.GPUs, note)
			continue
		}
		m := t.Total.Metrics
		cost := "-"
		if v, ok := m[workload.CostPerMillionOutput]; ok {
			cost = fmt.Sprintf("%.3f", v)
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%.0f\t%.1f\t%.1f\t%.0f\t%s\t\n", i, plan.Config(t.Config).String(), t.GPUs,
			m[workload.OutputTokenThroughput], m["ttft_p99_ms"], m["tpot_p99_ms"], m["e2e_p50_ms"], cost)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return ew.err
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	if len(s) > 100 {
		return s[:100] + "..."
	}
	return s
}

// groupThousands writes n with comma separators.
func groupThousands(n int) string {
	s := strconv.Itoa(n)
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}
