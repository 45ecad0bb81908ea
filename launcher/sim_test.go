package launcher

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/frontier-llm/frontier/hw"
	"github.com/frontier-llm/frontier/vllm"
)

// These tests launch `frontier sim serve`, the simulated vLLM, as a real subprocess: through
// an engine "vllm" whose command runs the simulator (as a plan can do on a machine without
// GPUs), and through the sim adapter. The GPUs are virtual: this machine has none.

func needFrontier(t *testing.T) {
	t.Helper()
	if frontierBin == "" {
		t.Fatalf("the frontier binary did not build:\n%s", frontierBuild)
	}
}

// simAsVLLM is a spec for engine "vllm" whose command runs the simulator on one L4.
func simAsVLLM(t *testing.T, model, arch string, maxModelLen int, extra ...string) Spec {
	t.Helper()
	return Spec{
		Command:        []string{frontierBin, "sim", "serve"},
		Args:           append([]string{"--sku", "l4", "--architecture", arch}, extra...),
		Model:          model,
		MaxModelLen:    maxModelLen,
		Settings:       []Setting{{"max_num_seqs", int64(16)}, {"gpu_memory_utilization", 0.9}},
		GPUs:           hw.VirtualGPUs(hw.SKU{Name: "l4", Display: "NVIDIA L4", MemoryGiB: 24}, 1),
		LogPath:        filepath.Join(t.TempDir(), "trial.log"),
		StartupTimeout: 30 * time.Second,
	}
}

// simPID reads the pid the simulator logs as its API server's, which leads its group.
func simPID(t *testing.T, logPath string) int {
	t.Helper()
	b, _ := os.ReadFile(logPath)
	_, after, ok := strings.Cut(string(b), "(APIServer pid=")
	if !ok {
		t.Fatalf("no API server pid in %s:\n%s", logPath, b)
	}
	var pid int
	if _, err := fmt.Sscanf(after, "%d)", &pid); err != nil {
		t.Fatalf("no API server pid in %s: %v", logPath, err)
	}
	return pid
}

func TestSimulatorAsVLLMLaunchesServesAndStops(t *testing.T) {
	t.Parallel()
	needFrontier(t)
	e := newTestEngine(t, Options{})
	spec := simAsVLLM(t, "meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b", 4096)
	inst, err := e.Start(context.Background(), spec)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	pid := simPID(t, spec.LogPath)

	c := inst.Capacity()
	if c.KVCacheTokens <= 0 || c.MaxConcurrency <= 0 {
		t.Errorf("Capacity = %+v, want the simulator's KV-cache size and concurrency", c)
	}
	// `frontier --version` has no version line: `frontier sim serve --version` answers the
	// emulated line.
	if got := inst.Provenance().EngineVersion; got != vllm.Current+".0" {
		t.Errorf("EngineVersion = %q, want the emulated line %s.0", got, vllm.Current)
	}
	// A request is answered.
	if err := OpenAIProbe(nil, inst.URL(), spec.Model)(context.Background()); err != nil {
		t.Errorf("probe after Start: %v", err)
	}
	if err := inst.Stop(context.Background()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	assertNoProcesses(t, pid)
}

func TestSimulatorFailuresAreClassified(t *testing.T) {
	t.Parallel()
	needFrontier(t)
	tests := []struct {
		name      string
		spec      func(t *testing.T) Spec
		wantClass FailureClass
		// wantMessage is the start of the engine's own message.
		wantMessage string
		wantLen     int
	}{
		{
			name: "70B on one L4: the weights do not fit",
			spec: func(t *testing.T) Spec {
				return simAsVLLM(t, "meta-llama/Llama-3.1-70B-Instruct", "llama-3.1-70b", 8192)
			},
			wantClass:   FailWeightsOOM,
			wantMessage: "Failed to load model - not enough GPU memory. Try lowering --gpu-memory-utilization to free memory for weights, increasing --tensor-parallel-size, or using --quantization.",
		},
		{
			name: "8B at 128k on one L4: the KV cache is too small",
			spec: func(t *testing.T) Spec {
				return simAsVLLM(t, "meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b", 131072)
			},
			wantClass:   FailKVCacheTooSmall,
			wantMessage: "ValueError: To serve at least one request with the models's max seq len (131072)",
			wantLen:     -1, // some positive length below 131072
		},
		{
			name: "an invalid combination of flags",
			spec: func(t *testing.T) Spec {
				s := simAsVLLM(t, "meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b", 8192)
				s.Settings = append(s.Settings, Setting{"max_num_batched_tokens", int64(8)})
				return s
			},
			wantClass:   FailInvalidArgs,
			wantMessage: "ValueError: max_num_batched_tokens (8) must be greater than or equal to max_num_seqs (16).",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newTestEngine(t, Options{})
			spec := tc.spec(t)
			_, err := e.Start(context.Background(), spec)
			var le *LaunchError
			if !errors.As(err, &le) {
				t.Fatalf("Start = %v, want a *LaunchError", err)
			}
			if diff := cmp.Diff(tc.wantClass, le.Class); diff != "" {
				t.Errorf("class (-want +got):\n%s\nmessage: %s", diff, le.Message)
			}
			if !strings.HasPrefix(le.Message, tc.wantMessage) {
				t.Errorf("message = %q, want it to start with %q", le.Message, tc.wantMessage)
			}
			switch {
			case tc.wantLen < 0 && (le.EstimatedMaxModelLen <= 0 || le.EstimatedMaxModelLen >= spec.MaxModelLen):
				t.Errorf("EstimatedMaxModelLen = %d, want between 0 and %d", le.EstimatedMaxModelLen, spec.MaxModelLen)
			case tc.wantLen >= 0 && le.EstimatedMaxModelLen != tc.wantLen:
				t.Errorf("EstimatedMaxModelLen = %d, want %d", le.EstimatedMaxModelLen, tc.wantLen)
			}
			assertNoProcesses(t, simPID(t, spec.LogPath))
		})
	}
}

func TestSimulatorHungStartIsKilledAtItsTimeout(t *testing.T) {
	t.Parallel()
	needFrontier(t)
	e := newTestEngine(t, Options{GracePeriod: time.Second})
	spec := simAsVLLM(t, "meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b", 4096, "--fault-hang-startup")
	spec.StartupTimeout = 2 * time.Second
	start := time.Now()
	_, err := e.Start(context.Background(), spec)
	took := time.Since(start)
	var le *LaunchError
	if !errors.As(err, &le) || le.Class != FailStartupTimeout {
		t.Fatalf("Start = %v, want a startup_timeout LaunchError", err)
	}
	if took < 2*time.Second || took > 2*time.Second+time.Second+3*time.Second {
		t.Errorf("Start took %s, want the 2s timeout plus at most the 1s grace and some slack", took)
	}
	assertNoProcesses(t, simPID(t, spec.LogPath))
}

func TestSimAdapterLaunchesTheSimulator(t *testing.T) {
	t.Parallel()
	needFrontier(t)
	e, err := New(KindSim, Options{FrontierBinary: frontierBin, GracePeriod: 2 * time.Second,
		Environ: []string{"PATH=" + os.Getenv("PATH")}})
	if err != nil {
		t.Fatal(err)
	}
	spec := Spec{
		Model:        "meta-llama/Llama-3.1-8B-Instruct",
		Architecture: "llama-3.1-8b",
		SKU:          "l4",
		MaxModelLen:  4096,
		Settings:     []Setting{{"sku", "h100-sxm"}, {"max_num_seqs", int64(64)}},
		GPUs:         hw.VirtualGPUs(hw.SKU{Name: "h100-sxm", MemoryGiB: 80}, 1),
		LogPath:      filepath.Join(t.TempDir(), "trial.log"),
	}
	inst, err := e.Start(context.Background(), spec)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	pid := simPID(t, spec.LogPath)
	defer assertNoProcesses(t, pid)
	defer inst.Stop(context.Background())
	log, _ := os.ReadFile(spec.LogPath)
	if !strings.Contains(string(log), "simulated by frontier on h100-sxm") {
		t.Errorf("the sku knob did not reach the simulator:\n%s", log)
	}
	if inst.Provenance().Engine != "sim" {
		t.Errorf("Provenance().Engine = %q, want sim", inst.Provenance().Engine)
	}
}

// TestAPIKeyTravelsByEnvironment: an --api-key in the engine args reaches the engine as
// VLLM_API_KEY, not on its command line (which every user of the host can read), and the
// readiness probe sends it, so an engine that enforces it becomes ready. An engine that
// enforces a key frontier does not know fails at once, saying 401.
func TestAPIKeyTravelsByEnvironment(t *testing.T) {
	t.Parallel()
	needFrontier(t)
	const key = "sk-launcher-test-key"
	e := newTestEngine(t, Options{FrontierBinary: frontierBin})
	spec := simAsVLLM(t, "m", "llama-3.1-8b", 4096, "--api-key", key)
	inst, err := e.Start(context.Background(), spec)
	if err != nil {
		t.Fatalf("Start with --api-key: %v", err)
	}
	pid := simPID(t, spec.LogPath)
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	environ, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	_ = inst.Stop(context.Background())
	if strings.Contains(string(cmdline), key) || strings.Contains(string(cmdline), "--api-key") {
		t.Errorf("the key is on the engine's command line: %q", cmdline)
	}
	if !strings.Contains(string(environ), "VLLM_API_KEY="+key) {
		t.Errorf("the engine's environment has no VLLM_API_KEY")
	}
	if APIKey(inst) != key {
		t.Errorf("APIKey(inst) = %q, want the engine's key", APIKey(inst))
	}

	// A key set where frontier cannot see it: a wrapper that exports another one.
	script := filepath.Join(t.TempDir(), "serve")
	body := "#!/bin/sh\nVLLM_API_KEY=another-key exec " + frontierBin + " sim serve \"$@\"\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	spec = simAsVLLM(t, "m", "llama-3.1-8b", 4096)
	spec.Command = []string{script}
	start := time.Now()
	_, err = e.Start(context.Background(), spec)
	var le *LaunchError
	if !errors.As(err, &le) || !strings.Contains(le.Message, "401 Unauthorized") {
		t.Fatalf("Start against an engine with an unknown key: %v, want a launch error that says 401", err)
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("the 401 took %v to end the start, want at once", took)
	}
}

// TestVLLMEngineOverSimulatorRunsTwoTrials: engine "vllm" with command = frontier sim serve,
// as a plan runs a vllm-engine study without a GPU: the preflight reads the simulator's
// --version and --help=all (argparse's layout), takes the plan's knobs and arguments (the
// simulator's own --sku among them), and two trials start, answer and stop.
func TestVLLMEngineOverSimulatorRunsTwoTrials(t *testing.T) {
	t.Parallel()
	needFrontier(t)
	spec := simAsVLLM(t, "meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b", 4096)
	spec.Settings = append(spec.Settings, Setting{"enable_prefix_caching", false}, Setting{"grpc", false})
	pf, err := PreflightWith(context.Background(), PreflightConfig{Command: spec.Command, Knobs: spec.Settings, Args: spec.Args})
	if err != nil {
		t.Fatalf("preflight over frontier sim serve: %v", err)
	}
	if pf.Version != vllm.Current+".0" || pf.Model == nil {
		t.Errorf("preflight version %q model %v, want the emulated %s.0 and its flag model", pf.Version, pf.Model, vllm.Current)
	}
	e := newTestEngine(t, Options{})
	UseHostModel(e, spec.Command, pf.Model)
	for trial := 1; trial <= 2; trial++ {
		spec.LogPath = filepath.Join(t.TempDir(), fmt.Sprintf("trial-%d.log", trial))
		inst, err := e.Start(context.Background(), spec)
		if err != nil {
			t.Fatalf("trial %d: Start: %v", trial, err)
		}
		if err := OpenAIProbe(nil, inst.URL(), spec.Model)(context.Background()); err != nil {
			t.Errorf("trial %d: probe: %v", trial, err)
		}
		if cmd := strings.Join(inst.Provenance().Command, " "); !strings.Contains(cmd, "--no-enable-prefix-caching") || strings.Contains(cmd, "grpc") {
			t.Errorf("trial %d: command %q, want it built from the simulator's flag model", trial, cmd)
		}
		if err := inst.Stop(context.Background()); err != nil {
			t.Errorf("trial %d: Stop: %v", trial, err)
		}
	}
}
