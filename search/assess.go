package search

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/frontier-llm/frontier/engine"
	"github.com/frontier-llm/frontier/hw"
	"github.com/frontier-llm/frontier/plan"
	"github.com/frontier-llm/frontier/quality"
	"github.com/frontier-llm/frontier/record"
	"github.com/frontier-llm/frontier/sim"
	"github.com/frontier-llm/frontier/workload"
)

// Depth says how far an assessment goes.
type Depth int

const (
	// ThroughMemory runs the rules and the memory model only: the pre-screen, which answers
	// in microseconds.
	ThroughMemory Depth = iota
	// Full runs the performance model on the plan's workloads and judges the result as a
	// study judges a measured trial: SLOs, checks, quality gates, objectives.
	Full
)

// Assessment is what the offline model says of one configuration.
type Assessment struct {
	// Trial is the configuration judged as a study records it: Config, GPUs, State (empty
	// when the rules and the memory model passed it and the assessment went no further),
	// Reason, Violations, failure class and message, measurement, quality and objectives.
	Trial record.Trial
	// Covered is false when the offline model does not cover the configuration (an engine
	// it does not model, an architecture or a SKU it does not know): only the rules were
	// checked, and Note says why.
	Covered bool
	Note    string
	// SKU is the configuration's GPU, when the catalog knows it.
	SKU hw.SKU
	// Startup is what the memory model computed (KV cache tokens, concurrency), when it ran
	// and the engine would start.
	Startup *sim.Startup
	// HostMemory is set when the configuration does not start for want of the host's RAM:
	// the pinned CPU tier of the KV cache (kv_offloading_size, each data-parallel engine its
	// own) is more than the SKU's host has.
	HostMemory bool
	// out is what the model observed, as a study's evaluator reports it; nil when the rules
	// rejected the configuration or the model does not cover it.
	out *outcome
}

// Rejected reports whether the rules or the memory model rejected the configuration.
func (a *Assessment) Rejected() bool {
	return len(a.Trial.Violations) > 0 && (a.Trial.Violations[0].Kind == record.ViolationRule ||
		a.Trial.Violations[0].Kind == record.ViolationPreScreen)
}

// Assessor judges configurations of one plan on the offline model: the plan's rules, then
// the memory model (would the engine start), then the performance model on the plan's
// workloads, then the verdict a study gives a measured trial. Every command that judges a
// configuration without launching an engine goes through it: apply's pre-screen, apply
// --estimate, plan's pre-screen, estimate, and the report's estimated sensitivity.
type Assessor struct {
	p *plan.Plan
	// arch is the model's architecture; hasArch is false when the plan names none the
	// simulator knows, and noModel then says why.
	arch    sim.Arch
	hasArch bool
	noModel string
	seed    uint64
	// quality is loaded once, on the first full assessment of a plan with quality gates;
	// Assess may be called from several goroutines.
	qualityOnce sync.Once
	quality     *simQuality
	qualityErr  error
}

// NewAssessor prepares the assessment of p's configurations. It fails only on a plan whose
// model architecture is named but cannot be read (a bad config.json, an unknown catalog
// name): a plan that names none is assessed by its rules alone.
func NewAssessor(p *plan.Plan) (*Assessor, error) {
	a := &Assessor{p: p, seed: uint64(p.WorkloadSeed())}
	if !engine.MustLookup(p.Engine.Kind).OfflineModel {
		a.noModel = fmt.Sprintf("the offline model does not cover engine %q", p.Engine.Kind)
		return a, nil
	}
	arch, ok, err := ResolveArch(p)
	if err != nil {
		return nil, err
	}
	if !ok {
		a.noModel = "the plan names no model architecture: set model.architecture or model.config_json"
		return a, nil
	}
	a.arch, a.hasArch = arch, true
	return a, nil
}

// Arch is the model architecture the assessor uses; ok is false when it has none.
func (a *Assessor) Arch() (sim.Arch, bool) { return a.arch, a.hasArch }

// NoModel says why the offline model does not cover the plan, or "" when it does.
func (a *Assessor) NoModel() string { return a.noModel }

// ResolveArch is the plan's model architecture for the simulator: model.config_json, else
// the catalog's model.architecture, else a catalog entry named like model.name. ok is false
// when the plan names none. With a real engine, a catalog architecture stands for the one
// checkpoint model.name serves, so a method that needs a quantised checkpoint is refused as
// vLLM would refuse it, instead of assuming that checkpoint as sim serve does.
func ResolveArch(p *plan.Plan) (sim.Arch, bool, error) {
	switch {
	case p.Model.ConfigJSON != "":
		a, err := sim.ArchFromConfigJSON(p.Model.ConfigJSON)
		if err != nil {
			return sim.Arch{}, false, err
		}
		return a, true, nil
	case p.Model.Architecture != "":
		a, ok := sim.LookupArch(p.Model.Architecture)
		if !ok {
			return sim.Arch{}, false, fmt.Errorf("model architecture %q is not in the simulator's catalog; want one of %s, or model.config_json",
				p.Model.Architecture, strings.Join(sim.ArchNames(), ", "))
		}
		a.Catalog = engine.MustLookup(p.Engine.Kind).Simulated
		return a, true, nil
	}
	if a, ok := sim.LookupArch(p.Model.Name); ok {
		a.Catalog = engine.MustLookup(p.Engine.Kind).Simulated
		return a, true, nil
	}
	return sim.Arch{}, false, nil
}

// SKUFor is the configuration's GPU from the catalog: the "sku" knob, else the plan's.
func SKUFor(p *plan.Plan, cfg plan.Config) (hw.SKU, bool) {
	return hw.LookupSKU(cfg.SKU(p.Hardware.SKU))
}

// Assess judges one configuration as deep as depth says. seed is the workload's request
// sample (and the simulator's); the run's measurement differs between runs of one seed only
// through run.
func (a *Assessor) Assess(ctx context.Context, cfg plan.Config, depth Depth) (*Assessment, error) {
	return a.assess(ctx, cfg, depth, a.seed)
}

func (a *Assessor) assess(ctx context.Context, cfg plan.Config, depth Depth, seed uint64) (*Assessment, error) {
	p := a.p
	out := &Assessment{Trial: record.Trial{Config: map[string]any(cfg), GPUs: cfg.GPUs(), Simulated: true}}
	viol, err := p.CheckRules(cfg)
	if err != nil {
		return nil, err
	}
	if len(viol) > 0 {
		v := record.Violation{Kind: record.ViolationRule, Metric: viol[0].Rule, Message: viol[0].Message}
		out.Trial.State, out.Trial.Violations, out.Trial.Reason, out.Trial.Violation = record.StateInfeasible, []record.Violation{v}, v.String(), 1
		out.Covered = true
		return out, nil
	}
	if why := deploymentConflict(cfg); why != "" {
		out.Covered = true
		out.out = &outcome{prescreened: true, failClass: record.FailInvalidArgs, failMessage: why, simulated: true, gpus: out.Trial.GPUs}
		judge(p, &out.Trial, cfg, out.out)
		return out, nil
	}
	sku, hasSKU := SKUFor(p, cfg)
	out.SKU = sku
	switch {
	case a.noModel != "":
		out.Note = a.noModel
		return out, nil
	case !hasSKU:
		out.Note = fmt.Sprintf("GPU SKU %q is not in the catalog", cfg.SKU(p.Hardware.SKU))
		return out, nil
	}
	out.Covered = true
	settings := cfg.EngineSettings()
	if p.Engine.Version != "" {
		// The choice lists and defaults of the plan's vLLM line, not the newest one's.
		settings["vllm_version"] = p.Engine.Version
	}
	ecfg, err := sim.ConfigFromSettings(settings, p.Model.MaxModelLen)
	if err != nil {
		out.out = &outcome{failClass: record.FailInvalidArgs, failMessage: err.Error(), simulated: true, gpus: out.Trial.GPUs}
		judge(p, &out.Trial, cfg, out.out)
		return out, nil
	}
	ecfg.SKU = sku.Name
	out.Trial.GPUs = deploymentGPUs(cfg, ecfg)
	if have := planGPUs(p.Hardware.GPUs); have > 0 && out.Trial.GPUs > have {
		// The live run could not place it: hw's allocator refuses it as too_few_gpus.
		msg := fmt.Sprintf("the configuration needs %d GPUs and hardware.gpus gives the study %d", out.Trial.GPUs, have)
		out.out = &outcome{prescreened: true, failClass: "too_few_gpus", failMessage: msg, simulated: true, gpus: out.Trial.GPUs}
		judge(p, &out.Trial, cfg, out.out)
		return out, nil
	}
	st, err := checkStartup(a.arch, sku, ecfg, cfg)
	var se *sim.StartupError
	if errors.As(err, &se) {
		out.HostMemory = se.HostMemory
		out.out = &outcome{prescreened: true, failClass: record.FailureClass(se.Class), failMessage: se.Message, simulated: true, gpus: out.Trial.GPUs}
		judge(p, &out.Trial, cfg, out.out)
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	out.Startup = &st
	out.Trial.Capacity = record.Capacity{KVCacheTokens: st.KVCacheTokens, MaxConcurrency: st.MaxConcurrency}
	if depth == ThroughMemory {
		return out, nil
	}
	m, err := estimateDeployment(ctx, a.arch, sku, ecfg, cfg, p.Workloads, seed)
	if errors.As(err, &se) {
		out.out = &outcome{prescreened: true, failClass: record.FailureClass(se.Class), failMessage: se.Message, simulated: true, gpus: out.Trial.GPUs}
		judge(p, &out.Trial, cfg, out.out)
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("estimate %s: %w", cfg, err)
	}
	m.Simulated = true
	o := &outcome{m: m, simulated: true, gpus: out.Trial.GPUs, capacity: out.Trial.Capacity}
	out.out = o
	if d := m.Total.Metrics[workload.DurationS]; d > 0 {
		o.gpuSeconds = d * float64(o.gpus)
	}
	if len(p.Quality) > 0 {
		a.qualityOnce.Do(func() {
			if a.quality == nil { // a study's estimator sets it with the study's baselines
				a.quality, a.qualityErr = loadSimQuality(p, nil)
			}
		})
		if a.qualityErr != nil {
			return nil, a.qualityErr
		}
		if o.quality, err = a.quality.score(ctx, cfg); err != nil {
			return nil, err
		}
	}
	judge(p, &out.Trial, cfg, o)
	return out, nil
}

// simQuality scores quality gates with the simulator's answer model.
type simQuality struct {
	p        *plan.Plan
	items    map[string][]quality.Item
	baseline map[string]*quality.Outcome
}

// loadSimQuality reads the evaluation sets and scores each gate's baseline configuration with
// the simulator's answer model, once per study when keep stores baselines in it (nil: once
// per process).
func loadSimQuality(p *plan.Plan, keep baselineStore) (*simQuality, error) {
	q := &simQuality{p: p, items: map[string][]quality.Item{}, baseline: map[string]*quality.Outcome{}}
	for _, g := range p.Quality {
		items, err := quality.LoadSet(g.Dataset)
		if err != nil {
			return nil, fmt.Errorf("quality %q: %w", g.Name, err)
		}
		q.items[g.Name] = items
		if len(g.Baseline) == 0 {
			continue
		}
		if keep != nil {
			o, ok, err := keep.storedBaseline(g.Name)
			if err != nil {
				return nil, err
			}
			if ok {
				q.baseline[g.Name] = o
				continue
			}
		}
		o, err := quality.Evaluate(context.Background(), g, items, simGenerator(p, g.Baseline), nil)
		if err != nil {
			return nil, err
		}
		if keep != nil {
			if o, err = keep.keepBaseline(g.Name, o); err != nil {
				return nil, err
			}
		}
		q.baseline[g.Name] = o
	}
	return q, nil
}

// score evaluates every gate for cfg on the answer model.
func (q *simQuality) score(ctx context.Context, cfg plan.Config) (map[string]record.QualityScore, error) {
	return scoreQuality(ctx, q.p, q.items, q.baseline, simGenerator(q.p, cfg))
}

// planGPUs is how many GPUs hardware.gpus gives a study: a count or a list's length; 0 for
// "all", which only the host knows.
func planGPUs(g plan.GPUSelection) int {
	if len(g.Indices) > 0 {
		return len(g.Indices)
	}
	return g.Count
}
