package pressure

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/frontier-llm/frontier/engine"
	"github.com/frontier-llm/frontier/hw"
	"github.com/frontier-llm/frontier/hw/nvml"
	"github.com/frontier-llm/frontier/launcher"
	"github.com/frontier-llm/frontier/plan"
	"github.com/frontier-llm/frontier/search"
	"github.com/frontier-llm/frontier/workload"
)

// Server is the engine the experiments drive: one frontier started (and may kill and
// restart), or one at a URL the user gave, which the experiments only send requests to.
type Server struct {
	// Target is where requests go.
	Target workload.Target
	// Engine is the engine kind the figures come from; Simulated is true for the simulator.
	Engine    string
	Simulated bool

	eng  launcher.Engine // nil for a server at a URL
	spec launcher.Spec
	inst launcher.Instance
}

// AtURL is a server frontier did not start: the experiments send it requests but never
// restart it.
func AtURL(t workload.Target, engineKind string) *Server {
	return &Server{Target: t, Engine: engineKind}
}

// LaunchOptions tune Launch.
type LaunchOptions struct {
	// FrontierBinary serves the simulator; empty means os.Executable().
	FrontierBinary string
	// GracePeriod is how long a stop waits after SIGTERM; 0 means the launcher's default.
	GracePeriod time.Duration
	// LogPath receives the engine's output; WorkDir is its scratch folder.
	LogPath, WorkDir string
	// GPUs is the slot to run on; nil means one found for the plan (virtual GPUs for the
	// simulator, none for Ollama on the CPU, the first free ones NVML lists otherwise).
	GPUs []hw.GPU
}

// Launch starts the plan's engine with configuration cfg on loopback, on a port that stays
// the same across restarts, and returns once it serves the model.
func Launch(ctx context.Context, p *plan.Plan, cfg plan.Config, o LaunchOptions) (*Server, error) {
	if d := cfg.Disaggregation(); d.Enabled() {
		// Its restarts would be of several processes, which this server does not model.
		return nil, fmt.Errorf("configuration %s is a disaggregated deployment (%s): pressure starts and restarts one engine instance; pick an aggregated configuration, or run the deployment yourself and give frontier pressure its router with --url", cfg, d)
	}
	port, err := launcher.FreePort()
	if err != nil {
		return nil, err
	}
	eng, err := launcher.New(p.Engine.Kind, launcher.Options{
		FrontierBinary: o.FrontierBinary, GracePeriod: o.GracePeriod,
		Port: func() (int, error) { return port, nil },
	})
	if err != nil {
		return nil, err
	}
	desc := engine.MustLookup(p.Engine.Kind)
	gpus := o.GPUs
	if gpus == nil {
		if gpus, err = slot(p, cfg, desc); err != nil {
			return nil, err
		}
	}
	s := &Server{Engine: p.Engine.Kind, Simulated: desc.Simulated, eng: eng, spec: search.LaunchSpec(p, cfg, gpus, o.LogPath, o.WorkDir)}
	if desc.Simulated && !hasFlag(s.spec.Args, "--load-time") {
		// The simulator loads at once unless told otherwise; under pressure its (re)start
		// costs what reading the model's weights costs, so a restart's time to ready is not
		// a simulator's artefact. A plan's own --load-time wins.
		s.spec.Args = append(append([]string(nil), s.spec.Args...), "--load-time", "auto")
	}
	inst, err := eng.Start(ctx, s.spec)
	if err != nil {
		return nil, fmt.Errorf("launch: %w", err)
	}
	s.inst = inst
	s.Target = workload.Target{URL: inst.URL(), Model: inst.ServedModel(), Options: inst.RequestOptions(), APIKey: launcher.APIKey(inst)}
	if desc.VLLMCompatible {
		s.Target.TokenIDs = true
		s.Target.MetricsURL = inst.URL() + "/metrics"
	}
	return s, nil
}

// hasFlag reports whether args hold flag, alone or as flag=value.
func hasFlag(args []string, flag string) bool {
	for _, a := range args {
		if a == flag || strings.HasPrefix(a, flag+"=") {
			return true
		}
	}
	return false
}

// slot finds GPUs for cfg: virtual ones of the plan's SKU for the simulator, NVML's first
// free ones otherwise, none for an engine that runs on the CPU.
func slot(p *plan.Plan, cfg plan.Config, desc engine.Description) ([]hw.GPU, error) {
	n := max(cfg.GPUs(), 1)
	if desc.Simulated {
		sku, ok := hw.LookupSKU(cfg.SKU(p.Hardware.SKU))
		if !ok {
			return nil, fmt.Errorf("engine sim needs hardware.sku from the catalog; %q is unknown", cfg.SKU(p.Hardware.SKU))
		}
		return hw.VirtualGPUs(sku, n), nil
	}
	if !desc.NeedsGPU {
		return nil, nil
	}
	sel := hw.Selection{All: p.Hardware.GPUs.All, Count: p.Hardware.GPUs.Count, Indices: p.Hardware.GPUs.Indices}
	gpus, _, err := hw.Resolve(sel, nvml.Detect(), true)
	if err != nil {
		return nil, fmt.Errorf("hardware: %w", err)
	}
	if len(gpus) < n {
		return nil, fmt.Errorf("hardware: the configuration needs %d GPUs and the plan's selection has %d", n, len(gpus))
	}
	return gpus[:n], nil
}

// CanRestart reports whether frontier started the engine, so it may kill and restart it.
func (s *Server) CanRestart() bool { return s.eng != nil && s.inst != nil }

// pider is an instance that knows its process (group) id.
type pider interface{ Pid() int }

// Kill sends SIGKILL to the engine's whole process group, as a crash would, and waits until
// it has exited.
func (s *Server) Kill(ctx context.Context) error {
	if !s.CanRestart() {
		return errors.New("the engine was not started by frontier, so it cannot be killed")
	}
	pp, ok := s.inst.(pider)
	if !ok || pp.Pid() <= 0 {
		return fmt.Errorf("the %s engine does not expose its process group", s.Engine)
	}
	if err := syscall.Kill(-pp.Pid(), syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill the engine's process group %d: %w", pp.Pid(), err)
	}
	select {
	case <-s.inst.Exited():
	case <-ctx.Done():
		return ctx.Err()
	}
	// Stop after the exit collects what is left: the log, the work folder, GPU memory.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	_ = s.inst.Stop(sctx) // the engine was killed on purpose; what it says on the way out is moot
	return nil
}

// Restart starts the engine again with the same configuration on the same port and returns
// once it serves the model.
func (s *Server) Restart(ctx context.Context) error {
	if s.eng == nil {
		return errors.New("the engine was not started by frontier, so it cannot be restarted")
	}
	inst, err := s.eng.Start(ctx, s.spec)
	if err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	s.inst = inst
	if inst.URL() != s.Target.URL {
		// The port was taken in between; later experiments follow the engine.
		s.Target.URL = inst.URL()
		if s.Target.MetricsURL != "" {
			s.Target.MetricsURL = inst.URL() + "/metrics"
		}
	}
	return nil
}

// Close stops the engine frontier started, if any: SIGTERM to its group, a grace period,
// SIGKILL. It is safe to call more than once.
func (s *Server) Close(ctx context.Context) error {
	if s.inst == nil {
		return nil
	}
	return s.inst.Stop(ctx)
}

// Exited is closed when the engine's process has exited; nil for a server at a URL.
func (s *Server) Exited() <-chan struct{} {
	if s.inst == nil {
		return nil
	}
	return s.inst.Exited()
}
