package search

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/frontier-llm/frontier/engine"
	"github.com/frontier-llm/frontier/hw"
	"github.com/frontier-llm/frontier/hw/nvml"
	"github.com/frontier-llm/frontier/launcher"
	"github.com/frontier-llm/frontier/plan"
	"github.com/frontier-llm/frontier/quality"
	"github.com/frontier-llm/frontier/workload"
)

// live runs trials on launched engines: pre-screen, GPUs, launch, workload, quality, stop.
type live struct {
	r     *runner
	p     *plan.Plan
	eng   launcher.Engine
	alloc *hw.Allocator
	// desc is what the engine can do.
	desc engine.Description
	// cpu is true when the engine runs with no GPU (Ollama on the CPU).
	cpu bool

	items map[string][]quality.Item
	// baseline outcomes per gate, measured once per process (sim: the answer model).
	baseMu   sync.Mutex
	baseline map[string]*quality.Outcome
}

// newLive prepares the engine adapter and the GPU allocator, and says how many trials may
// run at once without sharing a GPU.
func newLive(ctx context.Context, r *runner) (evaluator, int, error) {
	p := r.p
	eng, err := launcher.New(p.Engine.Kind, launcher.Options{FrontierBinary: r.opts.FrontierBinary, GracePeriod: r.opts.GracePeriod})
	if err != nil {
		return nil, 0, err
	}
	l := &live{r: r, p: p, eng: eng, baseline: map[string]*quality.Outcome{}}
	sel := hw.Selection{All: p.Hardware.GPUs.All, Count: p.Hardware.GPUs.Count, Indices: p.Hardware.GPUs.Indices}
	var gpus []hw.GPU
	desc := engine.MustLookup(p.Engine.Kind)
	l.desc = desc
	if desc.VLLMCompatible && !desc.Simulated {
		// Ask the installed vLLM which flags it takes before any GPU time is spent.
		r.prog.linef("preflight: asking %s for its version and flags (each probe bounded to %s)",
			strings.Join(orDefault(p.Engine.Command, []string{"vllm", "serve"}), " "), launcher.DefaultProbeTimeout)
		pf, err := launcher.PreflightWith(ctx, launcher.PreflightConfig{Command: p.Engine.Command, Knobs: preflightSettings(p),
			Args: preflightArgs(p), Env: p.Engine.Env, Compatible: p.Engine.ModelAsFlag || p.Engine.NoHostFlag, Planned: p.Engine.Version})
		if err != nil {
			return nil, 0, err
		}
		for _, w := range pf.Warnings {
			r.prog.linef("preflight: warning: %s", w)
		}
		launcher.UseHostModel(eng, p.Engine.Command, pf.Model)
		r.prog.linef("preflight: %s takes every knob and argument of the plan", pf.Version)
	}
	switch {
	case desc.Simulated:
		sku, ok := hw.LookupSKU(p.Hardware.SKU)
		if !ok {
			return nil, 0, fmt.Errorf("engine sim needs hardware.sku from the catalog; %q is unknown", p.Hardware.SKU)
		}
		n := sel.Count
		if len(sel.Indices) > 0 {
			n = len(sel.Indices)
		}
		if n <= 0 {
			n = 8
		}
		gpus = hw.VirtualGPUs(sku, n)
	default:
		inv := nvml.Detect()
		var notes []string
		gpus, notes, err = hw.Resolve(sel, inv, desc.NeedsGPU)
		for _, n := range notes {
			r.prog.linef("%s", n)
		}
		if err != nil && desc.NeedsGPU {
			return nil, 0, fmt.Errorf("hardware: %w", err)
		}
		if len(gpus) == 0 && desc.CPUOnly {
			// On the CPU (Ollama with gpus = 0): one slot, so trials take turns, and engine time is not
			// GPU time.
			gpus = []hw.GPU{{Index: 0, Name: "cpu", Virtual: true}}
			l.cpu = true
		}
	}
	l.alloc = hw.NewAllocator(gpus, hw.AllocOptions{AllowBusy: p.Hardware.AllowBusy})
	for _, n := range l.alloc.Notes() {
		r.prog.linef("%s", n)
	}
	if len(l.alloc.Usable()) == 0 {
		return nil, 0, errors.New("no usable GPU for the study")
	}
	slots := max(1, l.alloc.Slots(minGPUs(p)))
	workers := slots
	if r.opts.Parallel > 0 {
		workers = min(r.opts.Parallel, slots)
	}
	if len(p.Quality) > 0 {
		l.items = map[string][]quality.Item{}
		for _, g := range p.Quality {
			items, err := quality.LoadSet(g.Dataset)
			if err != nil {
				return nil, 0, fmt.Errorf("quality %q: %w", g.Name, err)
			}
			l.items[g.Name] = items
		}
	}
	return l, workers, nil
}

// minGPUs is the fewest GPUs any configuration of the plan needs.
func minGPUs(p *plan.Plan) int {
	n := 1
	for _, k := range p.Knobs {
		switch k.Name {
		case "tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size":
		default:
			continue
		}
		lo := k.Min
		if len(k.Values) > 0 {
			lo = 0
			for i, v := range k.Values {
				if f, ok := toFloat(v); ok && (i == 0 || f < lo) {
					lo = f
				}
			}
		}
		if lo >= 1 {
			n *= int(lo)
		}
	}
	return n
}

func (l *live) close() {}

func (l *live) evaluate(ctx context.Context, j job) (*outcome, error) {
	p := l.p
	gpus := j.config.GPUs()
	out := &outcome{gpus: gpus, simulated: l.desc.Simulated, cpu: l.cpu}

	// The memory pre-screen: no GPU time for a configuration the engine could not start.
	if as, err := l.r.assess.Assess(ctx, j.config, ThroughMemory); err == nil && as.Trial.PreScreened {
		return as.out, nil
	}

	// Data-parallel ranks, or a deployment's instances, each get a set of GPUs joined as well
	// as the host allows.
	groups, size := slotGroups(j.config, gpus)
	slot, err := l.alloc.AcquireGroups(ctx, groups, size)
	if errors.Is(err, hw.ErrTooFewGPUs) {
		out.failClass, out.failMessage = "too_few_gpus", err.Error()
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	defer l.alloc.Release(slot)

	name := fmt.Sprintf("trial-%d", j.number)
	if j.run > 0 {
		name = fmt.Sprintf("trial-%d-confirm-%d", j.number, j.run)
	}
	if err := os.MkdirAll(l.r.logDir, 0o755); err != nil {
		return nil, &launcher.HostIOError{Op: "create the log folder", Path: l.r.logDir, Err: err}
	}
	// The quality baseline is measured before this trial's engine starts, on the same GPUs.
	var base map[string]*quality.Outcome
	if len(p.Quality) > 0 {
		if base, err = l.baselines(ctx, j.config, slot); err != nil {
			if ctx.Err() != nil {
				return out, ctx.Err()
			}
			return nil, err
		}
	}
	workDir := filepath.Join(l.r.logDir, name+".work")
	if err := os.MkdirAll(workDir, 0o755); err != nil {
		return nil, &launcher.HostIOError{Op: "create the work folder", Path: workDir, Err: err}
	}
	defer os.RemoveAll(workDir)
	spec := LaunchSpec(l.p, j.config, slot, filepath.Join(l.r.logDir, name+".log"), workDir)
	t0 := time.Now()
	inst, err := l.start(ctx, j.config, slot, filepath.Join(l.r.logDir, name), workDir, spec)
	if err != nil {
		out.gpuSeconds = time.Since(t0).Seconds() * float64(gpus)
		if isHostIO(err) && ctx.Err() == nil {
			return nil, fmt.Errorf("launch: %w", err)
		}
		var le *launcher.LaunchError
		if errors.As(err, &le) && ctx.Err() == nil {
			out.failClass, out.failMessage = le.Class, le.Message
			if out.failMessage == "" && le.Err != nil {
				out.failMessage = le.Err.Error()
			}
			return out, nil
		}
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		return nil, fmt.Errorf("launch: %w", err)
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		_ = inst.Stop(sctx) // Stop reports what the engine said on its way out; the log has it
	}
	defer stop()
	prov := inst.Provenance()
	out.launch = &prov
	out.capacity = inst.Capacity()

	target := workload.Target{URL: inst.URL(), Model: inst.ServedModel(), Options: inst.RequestOptions(), APIKey: launcher.APIKey(inst)}
	if l.desc.VLLMCompatible {
		target.TokenIDs = true
		target.MetricsURL = launcher.MetricsURL(inst)
	}
	// An engine (an instance, the router) that dies ends the workload at once, not when its
	// schedule does: every request after it would fail against a closed port.
	wctx, wcancel := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		select {
		case <-inst.Exited():
			wcancel()
		case <-watched:
		}
	}()
	res, runErr := workload.Run(wctx, target, p.Workloads, workload.RunOptions{Seed: j.seed + uint64(j.run)*0x9e3779b97f4a7c15, EarlyStop: true})
	close(watched)
	wcancel()
	if logErr := launcher.LogError(inst); logErr != nil && ctx.Err() == nil {
		// The measurement may hold up, but the log that explains it does not, and the next
		// trial would meet the same disk: frontier's failure, measured again once fixed.
		stop()
		return nil, logErr
	}
	select {
	case <-inst.Exited():
		if ctx.Err() == nil {
			// Failure reads the log of an engine that exited on its own; after Stop it
			// has nothing to say, so ask first.
			le := launcher.Failure(inst)
			stop()
			out.exited = true
			out.gpuSeconds = time.Since(t0).Seconds() * float64(gpus)
			if le != nil {
				out.failClass, out.failMessage = le.Class, le.Message
			} else {
				out.failClass, out.failMessage = launcher.FailCrash, "the engine exited during the workload"
			}
			return out, nil
		}
	default:
	}
	if ctx.Err() != nil {
		stop()
		out.gpuSeconds = time.Since(t0).Seconds() * float64(gpus)
		return out, ctx.Err()
	}
	if runErr != nil {
		return nil, fmt.Errorf("workload: %w", runErr)
	}
	out.m = res.Measurement
	if out.m != nil && out.simulated {
		out.m.Simulated = true
	}
	if res.Pruned {
		out.pruned, out.pruneReason = true, res.PruneReason
		out.fullSeconds = l.r.prog.meanGPUSeconds()
	} else {
		gen, err := l.generator(ctx, inst, j.config)
		if err != nil {
			return nil, err
		}
		if gen != nil {
			out.quality, err = scoreQuality(ctx, p, l.items, base, gen)
			if err != nil {
				if ctx.Err() != nil {
					return out, ctx.Err()
				}
				return nil, err
			}
		}
	}
	stop()
	out.gpuSeconds = time.Since(t0).Seconds() * float64(gpus)
	return out, nil
}

// LaunchSpec is the launch of configuration cfg of plan p on a slot of GPUs: the plan's
// engine settings and the configuration's knobs in declaration order (the sku pseudo-knob
// is no engine option), as a study launches a trial.
func LaunchSpec(p *plan.Plan, cfg plan.Config, slot []hw.GPU, logPath, workDir string) launcher.Spec {
	var settings []launcher.Setting
	for _, k := range p.Knobs {
		if plan.IsPseudoKnob(k.Name) {
			continue
		}
		if v, ok := cfg[k.Name]; ok {
			settings = append(settings, launcher.Setting{Name: k.Name, Value: v})
		}
	}
	return launcher.Spec{
		Command: p.Engine.Command, Args: p.Engine.Args, Env: p.Engine.Env, Model: p.Model.Name,
		Architecture: p.Model.Architecture, ConfigJSON: p.Model.ConfigJSON, GGUF: p.Model.GGUF,
		MaxModelLen: p.Model.MaxModelLen, SKU: cfg.SKU(p.Hardware.SKU), Settings: settings, GPUs: slot,
		LogPath: logPath, WorkDir: workDir, StartupTimeout: p.Engine.StartupTimeout, SecretEnv: p.Engine.SecretEnv,
		SecretValues: p.SensitiveValues(), Version: p.Engine.Version, ModelAsFlag: p.Engine.ModelAsFlag, NoHostFlag: p.Engine.NoHostFlag,
	}
}

// generator answers the evaluation sets: the simulator's answer model for the sim engine,
// the running instance otherwise; nil when the plan has no quality gate.
func (l *live) generator(ctx context.Context, inst launcher.Instance, cfg plan.Config) (quality.Generator, error) {
	if len(l.p.Quality) == 0 {
		return nil, nil
	}
	if l.desc.Simulated {
		return simGenerator(l.p, cfg), nil
	}
	return quality.NewHTTPGenerator(inst.URL(), inst.ServedModel(), inst.RequestOptions(), launcher.APIKey(inst)), nil
}

// baselines returns each gate's baseline outcome: the one stored in the study, else measured
// once and stored (see baselineStore): with the simulator's answer model for the sim
// engine, otherwise on an instance of the baseline configuration (the trial's with the
// gate's baseline settings) started on this slot.
func (l *live) baselines(ctx context.Context, cfg plan.Config, slot []hw.GPU) (map[string]*quality.Outcome, error) {
	l.baseMu.Lock()
	defer l.baseMu.Unlock()
	for _, g := range l.p.Quality {
		if _, ok := l.baseline[g.Name]; ok || len(g.Baseline) == 0 {
			continue
		}
		if o, ok, err := l.r.storedBaseline(g.Name); err != nil {
			return nil, err
		} else if ok {
			l.baseline[g.Name] = o // measured by an earlier run or another worker
			continue
		}
		bcfg := plan.Config{}
		for k, v := range cfg {
			bcfg[k] = v
		}
		for k, v := range g.Baseline {
			bcfg[k] = v
		}
		var gen quality.Generator
		switch {
		case l.desc.Simulated:
			gen = simGenerator(l.p, bcfg)
		default:
			if bcfg.GPUs() > len(slot) {
				continue // the baseline does not fit this slot; a later trial's may
			}
			bdir := filepath.Join(l.r.logDir, "baseline.work")
			if err := os.MkdirAll(bdir, 0o755); err != nil {
				return nil, fmt.Errorf("work folder: %w", err)
			}
			binst, err := l.eng.Start(ctx, LaunchSpec(l.p, bcfg, slot[:bcfg.GPUs()], filepath.Join(l.r.logDir, "baseline-"+g.Name+".log"), bdir))
			if err != nil {
				return nil, fmt.Errorf("quality %q: start the baseline configuration: %w", g.Name, err)
			}
			o, err := quality.Evaluate(ctx, g, l.items[g.Name], quality.NewHTTPGenerator(binst.URL(), binst.ServedModel(), binst.RequestOptions(), launcher.APIKey(binst)), nil)
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
			_ = binst.Stop(sctx) // the outcome below says whether the baseline was measured
			cancel()
			if err != nil {
				return nil, err
			}
			if o, err = l.r.keepBaseline(g.Name, o); err != nil {
				return nil, err
			}
			l.baseline[g.Name] = o
			continue
		}
		o, err := quality.Evaluate(ctx, g, l.items[g.Name], gen, nil)
		if err != nil {
			return nil, err
		}
		if o, err = l.r.keepBaseline(g.Name, o); err != nil {
			return nil, err
		}
		l.baseline[g.Name] = o
	}
	out := make(map[string]*quality.Outcome, len(l.baseline))
	for k, v := range l.baseline {
		out[k] = v
	}
	return out, nil
}

// preflightSettings are the knob values the preflight checks: each knob once, a boolean knob
// once per value, since false may need a flag of its own (--no-x), and a string knob once per
// value, which must be one of the host's choices for its flag.
func preflightSettings(p *plan.Plan) []launcher.Setting {
	var out []launcher.Setting
	for _, k := range p.Knobs {
		if plan.IsPseudoKnob(k.Name) {
			continue // no flag of the engine
		}
		if len(k.Values) == 0 {
			out = append(out, launcher.Setting{Name: k.Name, Value: k.Min})
			continue
		}
		seen := map[any]bool{}
		for _, v := range k.Values {
			_, isBool := v.(bool)
			_, isString := v.(string)
			// Every boolean and every string value (the host checks them against its flags'
			// choices); one number stands for the rest.
			if ((isBool || isString) && !seen[v]) || len(seen) == 0 {
				out = append(out, launcher.Setting{Name: k.Name, Value: v})
			}
			seen[v] = true
		}
	}
	return out
}

// orDefault is xs, or def when xs is empty.
func orDefault(xs, def []string) []string {
	if len(xs) == 0 {
		return def
	}
	return xs
}
