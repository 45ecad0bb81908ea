// Package engine describes the engines frontier drives: what each kind can do (GPUs or the
// CPU, vLLM's metrics, the offline performance model, exports), its default command and how
// long it may take to start. The plan, the launcher, the search and the report ask these
// capabilities instead of comparing engine names.
//
// It is a leaf: it knows nothing of how an engine is launched (package launcher) or measured.
package engine

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// Engine kinds, as a plan's engine block names them.
const (
	VLLM   = "vllm"
	Sim    = "sim"
	Ollama = "ollama"
)

// Description is what one kind of engine can do.
type Description struct {
	Kind string
	// DefaultCommand is the command the engine runs when the plan gives none; empty for the
	// simulated engine, which is frontier's own `frontier sim serve`.
	DefaultCommand []string
	// StartupTimeout is how long the engine may take to become ready when the plan does
	// not say.
	StartupTimeout time.Duration
	// Simulated is true when every number the engine serves comes from frontier's
	// performance model: it runs on the SKU's simulated GPUs, not on GPUs NVML sees, and its
	// answers to evaluation sets come from the simulator's answer model.
	Simulated bool
	// NeedsGPU is true when the engine cannot run without a GPU; CPUOnly is true when it
	// can run on the CPU alone (with gpus = 0).
	NeedsGPU bool
	CPUOnly  bool
	// VLLMCompatible is true for vLLM and engines that stand for it: `vllm serve` flags,
	// token-id prompts, vLLM's Prometheus metrics, and exports as `vllm serve` commands.
	VLLMCompatible bool
	// OfflineModel is true when frontier's offline performance model of vLLM covers the
	// engine: the memory pre-screen, `estimate`, `apply --estimate` and the search's prior.
	OfflineModel bool
	// OwnFlags are the flags the engine's command takes besides `vllm serve`'s, which the
	// plan's engine.args may give, each true when it takes a value: for the simulated engine,
	// `frontier sim serve`'s own.
	OwnFlags map[string]bool
}

var descriptions = []Description{
	{Kind: VLLM, DefaultCommand: []string{"vllm", "serve"}, StartupTimeout: 20 * time.Minute,
		NeedsGPU: true, VLLMCompatible: true, OfflineModel: true},
	{Kind: Sim, StartupTimeout: 2 * time.Minute, Simulated: true, VLLMCompatible: true, OfflineModel: true,
		OwnFlags: map[string]bool{"--sku": true, "--architecture": true, "--vllm-version": true, "--load-time": true,
			"--fault-crash-after": true, "--fault-hang-startup": false, "--fault-slow-start": true,
			"--fault-startup-oom": false, "--fault-error-burst": true, "--fault-malformed-stream": true,
			"--fault-stall-after": true, "--fault-bind-port": true}},
	{Kind: Ollama, DefaultCommand: []string{"ollama"}, StartupTimeout: 5 * time.Minute, CPUOnly: true},
}

// Kinds lists the engine kinds, in the order documentation lists them.
func Kinds() []string {
	out := make([]string, len(descriptions))
	for i, d := range descriptions {
		out[i] = d.Kind
	}
	return out
}

// Lookup returns the description of an engine kind.
func Lookup(kind string) (Description, bool) {
	i := slices.IndexFunc(descriptions, func(d Description) bool { return d.Kind == kind })
	if i < 0 {
		return Description{}, false
	}
	d := descriptions[i]
	d.DefaultCommand = slices.Clone(d.DefaultCommand)
	d.OwnFlags = maps.Clone(d.OwnFlags)
	return d, true
}

// MustLookup returns the description of a kind that a decoded plan or a stored study names;
// an unknown kind there is a bug, not bad input.
func MustLookup(kind string) Description {
	d, ok := Lookup(kind)
	if !ok {
		panic(fmt.Sprintf("engine: unknown kind %q", kind))
	}
	return d
}

// SimFlags are `frontier sim serve`'s own flags, which are not vLLM's, each with whether it
// takes a value: the simulator takes them out of its command line before the emulated
// argparse sees the rest, and an export of a trial the simulator measured leaves them out of
// the `vllm serve` command it writes.
func SimFlags() map[string]bool {
	return map[string]bool{
		"--sku": true, "--architecture": true, "--vllm-version": true, "--load-time": true,
		"--fault-crash-after": true, "--fault-hang-startup": false, "--fault-slow-start": true, "--fault-startup-oom": false,
		"--fault-error-burst": true, "--fault-malformed-stream": true, "--fault-stall-after": true, "--fault-bind-port": true,
	}
}
