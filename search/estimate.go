package search

import (
	"context"
	"runtime"
	"sync"

	"github.com/frontier-llm/frontier/plan"
	"github.com/frontier-llm/frontier/record"
	"github.com/frontier-llm/frontier/sim"
	"github.com/frontier-llm/frontier/workload"
)

// Estimate is one configuration's full assessment on the offline model, as `frontier
// estimate --json` prints it: the measurement JSON with the configuration, or the reason
// there is none.
// CPUTier is what an estimate says of a configuration's KV offloading: the tier each engine
// core keeps in pinned host memory and the link its blocks move over.
type CPUTier struct {
	Backend string `json:"backend"`
	// Tokens is the KV the tier holds, per engine core.
	Tokens int `json:"tokens"`
	// PinnedHostGiB is the host memory pinned by every engine core together.
	PinnedHostGiB float64 `json:"pinned_host_gib"`
	// Link is how each GPU reaches host memory (hw.Host.Link), LinkGBs what a copy moves over
	// it per second in one direction, HostMemoryGiB the reference host's RAM.
	Link          string  `json:"link"`
	LinkGBs       float64 `json:"link_gbs"`
	HostMemoryGiB float64 `json:"host_memory_gib"`
}

type Estimate struct {
	Config map[string]any `json:"config"`
	*workload.Measurement
	SKU           string  `json:"sku"`
	GPUs          int     `json:"gpus"`
	KVCacheTokens int     `json:"kv_cache_tokens,omitempty"`
	MaxConcurr    float64 `json:"max_concurrency,omitempty"`
	// CPUTier is the KV offloading tier of each engine core, when the configuration has one.
	CPUTier *CPUTier `json:"cpu_tier,omitempty"`
	// Rejected names the plan rule the configuration breaks, with its message.
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
	// Confidence is how sure the model is on this SKU for the plan's model: its error on
	// published measurements of the model's family (dense or a mixture of experts) on the
	// SKU, scored leaving the SKU out (docs/sim.md, sim.ConfidenceOf), graded "unvalidated"
	// when there are none; nil when no published measurement of the SKU was there at all.
	Confidence *sim.SKUConfidence `json:"confidence"`
	// OtherConfidence is the SKU's score over the other family's measurements, when the
	// model's own family has none on it.
	OtherConfidence *sim.SKUConfidence `json:"other_confidence,omitempty"`
	// StartupWave says how much of the time to first token comes from the requests sent at
	// the start of a closed-loop or all-at-once class; absent when no class starts that way.
	StartupWave *workload.StartupWave `json:"startup_wave,omitempty"`
}

// EstimateAll assesses every configuration in full on the offline model, on as many
// goroutines as GOMAXPROCS, and returns the estimates in the order of configs. It stops at
// the first error.
func EstimateAll(ctx context.Context, as *Assessor, configs []plan.Config) ([]Estimate, error) {
	out := make([]Estimate, len(configs))
	errs := make([]error, len(configs))
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(runtime.GOMAXPROCS(0), max(len(configs), 1)) {
		wg.Go(func() {
			for i := range next {
				out[i], errs[i] = estimate(ctx, as, configs[i])
			}
		})
	}
	for i := range configs {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func estimate(ctx context.Context, as *Assessor, cfg plan.Config) (Estimate, error) {
	a, err := as.Assess(ctx, cfg, Full)
	if err != nil {
		return Estimate{}, err
	}
	t := a.Trial
	out := Estimate{Config: t.Config, SKU: a.SKU.Name, GPUs: t.GPUs, FailureClass: string(t.FailureClass),
		EngineMessage: t.EngineMessage, State: string(t.State), Reason: t.Reason, SimulatedAll: true}
	if a.Rejected() && t.Violations[0].Kind == record.ViolationRule {
		out.Rejected = t.Violations[0].Metric + ": " + t.Violations[0].Message
	}
	out.StartupWave = t.StartupWave
	arch, hasArch := as.Arch()
	if cs := sim.ConfidenceOf(a.SKU.Name, arch, hasArch); cs[0].Level != "unvalidated" || len(cs) > 1 {
		out.Confidence = &cs[0]
		if len(cs) > 1 {
			out.OtherConfidence = &cs[1]
		}
	}
	if a.Startup != nil {
		out.KVCacheTokens, out.MaxConcurr = a.Startup.KVCacheTokens, a.Startup.MaxConcurrency
		if st := a.Startup; st.CPUBlocks > 0 {
			out.CPUTier = &CPUTier{Backend: st.OffloadBackend, Tokens: st.CPUBlocks * st.Config.BlockSize, PinnedHostGiB: st.PinnedHostGiB,
				Link: a.SKU.Host.Link, LinkGBs: a.SKU.HostLinkBytesPerSecond() / 1e9, HostMemoryGiB: a.SKU.Host.MemoryGiB}
		}
	}
	if t.Total != nil {
		out.Measurement = &workload.Measurement{Workloads: t.Workloads, Total: t.Total, Series: t.Series, Simulated: true, StartupWave: t.StartupWave}
	}
	return out, nil
}
