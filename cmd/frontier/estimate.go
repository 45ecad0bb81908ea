package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/frontier-llm/frontier/hw"
	"github.com/frontier-llm/frontier/plan"
	"github.com/frontier-llm/frontier/search"
	"github.com/frontier-llm/frontier/workload"
)

const simulatedNote = "SIMULATED: every number below comes from frontier's performance model of vLLM, not from a measurement."

func cmdEstimate(ctx context.Context, c *cli, args []string) error {
	fs := flag.NewFlagSet("frontier estimate", flag.ContinueOnError)
	fs.SetOutput(helpOutput(c, args))
	var pf planFlags
	pf.register(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	all := fs.Bool("all", false, "estimate every configuration of the plan's grid")
	var knobs stringsFlag
	fs.Var(&knobs, "knob", "set a knob (or any vLLM option) for the estimate, `NAME=VALUE` (repeatable)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: frontier estimate PLAN [--json] [--knob NAME=VALUE]... [--all] [-var NAME=VALUE]... [-var-file FILE]...")
		fmt.Fprintln(fs.Output(), "\nRuns the plan's workloads on the offline performance model of vLLM, without HTTP: one")
		fmt.Fprintln(fs.Output(), "configuration (knobs with one value, or set with --knob), or the whole grid with --all.")
		fmt.Fprintln(fs.Output(), "Every number it prints is simulated.")
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
	as, err := search.NewAssessor(p)
	if err == nil && as.NoModel() != "" {
		err = errors.New(as.NoModel())
	}
	if err != nil {
		return invalid(err)
	}
	overrides, err := p.ParseKnobOverrides(knobs)
	if err != nil {
		return invalid(err)
	}
	var configs []plan.Config
	if *all {
		if n := p.GridSizeWith(overrides); n > maxEstimateGrid {
			return invalidf("--all: the grid has %d configurations, more than %d; fix some knobs with --knob NAME=VALUE", n, maxEstimateGrid)
		}
		if configs, err = p.GridWith(overrides); err != nil {
			return invalidf("--all: %w", err)
		}
	} else {
		cfg, err := p.SingleConfig(overrides)
		if err != nil {
			return invalid(err)
		}
		configs = []plan.Config{cfg}
	}
	for _, cfg := range configs {
		if _, ok := search.SKUFor(p, cfg); !ok {
			return invalidf("GPU SKU %q is not in the catalog; set hardware.sku or a sku knob to one of %s",
				cfg.SKU(p.Hardware.SKU), strings.Join(hw.SKUNames(), ", "))
		}
	}
	trials, err := search.EstimateAll(ctx, as, configs)
	switch {
	case err != nil:
		return err
	case *asJSON && *all:
		err = writeJSON(c, struct {
			Simulated bool              `json:"simulated"`
			Trials    []search.Estimate `json:"trials"`
		}{true, trials})
	case *asJSON:
		err = writeJSON(c, trials[0])
	case *all:
		err = writeEstimateTable(c.stdout, p, trials)
	default:
		err = writeEstimate(c.stdout, p, trials[0])
	}
	if err == nil && !*all && trials[0].Measurement == nil {
		return silent(exitRuntime)
	}
	return err
}

// maxEstimateGrid is the largest grid `frontier estimate --all` runs.
const maxEstimateGrid = 50000

func writeEstimate(w io.Writer, p *plan.Plan, t search.Estimate) error {
	ew := &errWriter{w: w}
	ew.printf("%s\n\n", simulatedNote)
	ew.printf("model     %s (%s)\n", p.Model.Name, p.Model.Architecture)
	ew.printf("hardware  %d x %s\n", t.GPUs, t.SKU)
	switch c := t.Confidence; {
	case c == nil:
		ew.printf("model confidence on %s: unvalidated: no published measurement of this GPU was there to check the model against\n", t.SKU)
	case c.Points == 0:
		ew.printf("model confidence on %s: %s\n", c.Subject(), c.Summary())
	default:
		ew.printf("model confidence on %s: %s, SKU left out of the fit\n", c.Subject(), c.Summary())
	}
	if c := t.OtherConfidence; c != nil {
		ew.printf("model confidence on %s over its other published measurements: %s, SKU left out of the fit\n", c.SKU, c.Summary())
	}
	ew.printf("config    %s\n", plan.Config(t.Config).String())
	switch {
	case t.Rejected != "":
		ew.printf("\nrejected by rule %s\n", t.Rejected)
		return ew.err
	case t.FailureClass != "":
		ew.printf("\nwould not start (%s):\n%s\n", t.FailureClass, t.EngineMessage)
		return ew.err
	}
	ew.printf("KV cache  %s tokens (%.2fx max_model_len)\n", groupThousands(t.KVCacheTokens), t.MaxConcurr)
	if c := t.CPUTier; c != nil {
		ew.printf("CPU tier  %s tokens per engine core (%s), %.0f GiB of host memory pinned of %.0f, over %s at %.1f GB/s a direction\n",
			groupThousands(c.Tokens), c.Backend, c.PinnedHostGiB, c.HostMemoryGiB, c.Link, c.LinkGBs)
	}
	ew.printf("\n")
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
	if x, ok := m[workload.KVTransferMeanMs]; ok {
		ew.printf("KV transfer from prefill to decode instance: %.2f ms mean, %.1f%% of the mean time to first token\n", x, 100*m[workload.KVTransferTTFTShare])
	}
	if w := t.StartupWave; w != nil {
		ew.printf("start-up wave: %d requests sent at once at the start have a mean TTFT of %.1f ms (the rest %.1f ms): %.0f%% of all time to first token\n",
			w.Requests, w.TTFTMeanMs, w.RestTTFTMeanMs, 100*w.Share)
	}
	return ew.err
}

func writeEstimateTable(w io.Writer, p *plan.Plan, trials []search.Estimate) error {
	ew := &errWriter{w: w}
	ew.printf("%s\n\n", simulatedNote)
	ew.printf("%s (%s): %d configurations\n\n", p.Model.Name, p.Model.Architecture, len(trials))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tconfig\tGPUs\tout tok/s\tTTFT p99 ms\tTPOT p99 ms\tE2E p50 ms\tcost/M out\tconfidence\tnote")
	for i, t := range trials {
		if t.Measurement == nil {
			note := t.Rejected
			if note == "" {
				note = t.FailureClass + ": " + firstLine(t.EngineMessage)
			}
			fmt.Fprintf(tw, "%d\t%s\t%d\t-\t-\t-\t-\t-\t-\t%s\n", i, plan.Config(t.Config).String(), t.GPUs, note)
			continue
		}
		m := t.Total.Metrics
		cost := "-"
		if v, ok := m[workload.CostPerMillionOutput]; ok {
			cost = fmt.Sprintf("%.3f", v)
		}
		level := "unvalidated"
		if t.Confidence != nil {
			level = t.Confidence.Level
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%.0f\t%.1f\t%.1f\t%.0f\t%s\t%s\t\n", i, plan.Config(t.Config).String(), t.GPUs,
			m[workload.OutputTokenThroughput], m["ttft_p99_ms"], m["tpot_p99_ms"], m["e2e_p50_ms"], cost, level)
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

// errWriter keeps the first write error, so rendering reads as a list of prints.
type errWriter struct {
	w   io.Writer
	err error
}

func (ew *errWriter) printf(format string, args ...any) {
	if ew.err == nil {
		_, ew.err = fmt.Fprintf(ew.w, format, args...)
	}
}
