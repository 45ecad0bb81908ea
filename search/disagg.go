package search

import (
	"context"

	"github.com/frontier-llm/frontier/hw"
	"github.com/frontier-llm/frontier/plan"
	"github.com/frontier-llm/frontier/sim"
	"github.com/frontier-llm/frontier/workload"
)

// simDisaggregation is cfg's prefill/decode deployment for the offline model, and whether
// cfg is disaggregated at all.
func simDisaggregation(cfg plan.Config) (sim.Disaggregation, bool) {
	d := cfg.Disaggregation()
	if !d.Enabled() {
		return sim.Disaggregation{}, false
	}
	return sim.Disaggregation{Prefill: d.Prefill, Decode: d.Decode, PrefillTP: cfg.RoleTP(true), DecodeTP: cfg.RoleTP(false)}, true
}

// deploymentGPUs is how many GPUs the engine configuration ecfg of cfg occupies: one
// instance's, or every instance's of a disaggregated deployment.
func deploymentGPUs(cfg plan.Config, ecfg sim.EngineConfig) int {
	if d, ok := simDisaggregation(cfg); ok {
		return d.GPUs(ecfg)
	}
	return ecfg.GPUs()
}

// checkStartup is the memory pre-screen of cfg: one instance's, or, disaggregated, the
// prefill role's and then the decode role's, whose KV cache holds the running requests (its
// startup is returned).
func checkStartup(arch sim.Arch, sku hw.SKU, ecfg sim.EngineConfig, cfg plan.Config) (sim.Startup, error) {
	d, ok := simDisaggregation(cfg)
	if !ok {
		return sim.CheckStartup(arch, sku, ecfg)
	}
	pre, dec := ecfg, ecfg
	pre.TensorParallelSize, dec.TensorParallelSize = d.PrefillTP, d.DecodeTP
	if _, err := sim.CheckStartup(arch, sku, pre); err != nil {
		return sim.Startup{}, err
	}
	return sim.CheckStartup(arch, sku, dec)
}

// estimateDeployment runs the offline model of cfg: sim.Estimate, or sim.EstimateDisaggregated.
func estimateDeployment(ctx context.Context, arch sim.Arch, sku hw.SKU, ecfg sim.EngineConfig, cfg plan.Config, classes []workload.Class, seed uint64) (*workload.Measurement, error) {
	if d, ok := simDisaggregation(cfg); ok {
		return sim.EstimateDisaggregated(ctx, arch, sku, ecfg, d, classes, seed)
	}
	return sim.Estimate(ctx, arch, sku, ecfg, classes, seed)
}
