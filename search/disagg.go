package search

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/frontier-llm/frontier/hw"
	"github.com/frontier-llm/frontier/launcher"
	"github.com/frontier-llm/frontier/plan"
	"github.com/frontier-llm/frontier/sim"
	"github.com/frontier-llm/frontier/vllm"
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

// deploymentConflict says why cfg cannot be deployed as its knobs ask, or "" when it can. vLLM
// has one KV connector per instance: kv_offloading_size sets --kv-transfer-config's connector
// to the offloading one (OffloadingConnector, or LMCache's), replacing the NixlConnector a
// disaggregated instance needs (vllm/config/vllm.py, _post_init_kv_transfer_config), so the
// two are not combined.
func deploymentConflict(cfg plan.Config) string {
	if !cfg.Disaggregation().Enabled() {
		return ""
	}
	if size, ok := toFloat(cfg["kv_offloading_size"]); ok && size > 0 {
		return fmt.Sprintf("disaggregation = %q with kv_offloading_size = %g: vLLM's KV offloading replaces the instances' NixlConnector with its own connector, so a disaggregated deployment does not offload", cfg.Disaggregation(), size)
	}
	return ""
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

// slotGroups is how a trial's GPUs are acquired: one group per data-parallel rank, or one
// per instance of a disaggregated deployment when every instance has as many GPUs (else one
// group of all of them, cut in instance order), each joined as well as the host allows.
func slotGroups(cfg plan.Config, gpus int) (groups, size int) {
	if d := cfg.Disaggregation(); d.Enabled() {
		if pre, dec := cfg.InstanceGPUs(true), cfg.InstanceGPUs(false); pre == dec {
			return d.Prefill + d.Decode, pre
		}
		return 1, gpus
	}
	if f, ok := toFloat(cfg["data_parallel_size"]); ok && f >= 1 && gpus%int(f) == 0 {
		return int(f), gpus / int(f)
	}
	return 1, gpus
}

// start launches a trial's engine on its slot: one instance from spec, or every instance of
// a disaggregated deployment, each on its own GPUs of the slot (prefill instances first)
// with its role's tensor_parallel_size, its own log (NAME-prefill-0.log, ...) and vLLM's
// NixlConnector, behind the plan's router (engine.router, else frontier's own).
func (l *live) start(ctx context.Context, cfg plan.Config, slot []hw.GPU, logBase, workDir string, spec launcher.Spec) (launcher.Instance, error) {
	d := cfg.Disaggregation()
	if !d.Enabled() {
		return l.eng.Start(ctx, spec)
	}
	var dep launcher.Deployment
	next := 0
	for role, n := range []int{d.Prefill, d.Decode} {
		prefill := role == 0
		name, per, tp := launcher.RoleDecode, cfg.InstanceGPUs(false), cfg.RoleTP(false)
		if prefill {
			name, per, tp = launcher.RolePrefill, cfg.InstanceGPUs(true), cfg.RoleTP(true)
		}
		for i := range n {
			s := spec
			s.GPUs = slot[next : next+per]
			next += per
			s.LogPath = fmt.Sprintf("%s-%s-%d.log", logBase, name, i)
			s.WorkDir = filepath.Join(workDir, fmt.Sprintf("%s-%d", name, i))
			if err := os.MkdirAll(s.WorkDir, 0o755); err != nil {
				return nil, &launcher.HostIOError{Op: "create the work folder", Path: s.WorkDir, Err: err}
			}
			s.Settings = withSetting(spec.Settings, "tensor_parallel_size", int64(tp))
			port, err := launcher.FreePort()
			if err != nil {
				return nil, &launcher.LaunchError{Class: launcher.FailOther, Err: err}
			}
			s = launcher.WithKVTransfer(s, name, port)
			if prefill {
				dep.Prefill = append(dep.Prefill, s)
			} else {
				dep.Decode = append(dep.Decode, s)
			}
		}
	}
	dep.Router = launcher.RouterSpec{Command: l.p.Engine.Router, FrontierBinary: l.r.opts.FrontierBinary, Env: l.p.Engine.Env,
		LogPath: logBase + "-router.log", GracePeriod: l.r.opts.GracePeriod}
	return launcher.StartDeployment(ctx, l.eng, dep)
}

// withSetting is settings with name set to v: in its place when there, else last.
func withSetting(settings []launcher.Setting, name string, v any) []launcher.Setting {
	out := append([]launcher.Setting{}, settings...)
	for i := range out {
		if out[i].Name == name {
			out[i].Value = v
			return out
		}
	}
	return append(out, launcher.Setting{Name: name, Value: v})
}

// preflightArgs are the engine arguments the preflight checks against the installed vLLM:
// the plan's, and --kv-transfer-config when a trial may be disaggregated, so that a vLLM
// without it fails before any GPU time is spent.
func preflightArgs(p *plan.Plan) []string {
	k := p.Knob(plan.DisaggregationKnob)
	if k == nil {
		return p.Engine.Args
	}
	for _, v := range k.Values {
		if s, _ := v.(string); s != "" && s != "none" {
			return append(append([]string{}, p.Engine.Args...), "--kv-transfer-config", preflightKVTransferConfig(p.Engine.Version))
		}
	}
	return p.Engine.Args
}

// preflightKVTransferConfig is a --kv-transfer-config for the preflight to check: the prefill
// instance's on the plan's vLLM line (the current line when it names none).
func preflightKVTransferConfig(version string) string {
	v, err := vllm.Lookup(version)
	if err != nil {
		v, _ = vllm.Lookup(vllm.Current)
	}
	return v.KVTransferConfig(true)
}
