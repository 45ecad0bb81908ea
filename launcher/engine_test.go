package launcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/frontier-llm/frontier/hw"
	"github.com/frontier-llm/frontier/redact"
)

// standinSpec is a spec whose engine "vllm" runs the vLLM stand-in (vLLM cannot run here).
func standinSpec(t *testing.T, args ...string) Spec {
	t.Helper()
	return Spec{
		Command:        []string{standinBin, "serve"},
		Args:           args,
		Model:          "org/model-8b",
		MaxModelLen:    4096,
		Settings:       []Setting{{"max_num_seqs", int64(32)}, {"enable_prefix_caching", false}, {"quantization", "none"}},
		GPUs:           hw.VirtualGPUs(hw.SKU{Name: "l4", Display: "NVIDIA L4", MemoryGiB: 24}, 2),
		Env:            map[string]string{"HF_TOKEN": "hf_secret_value", "HF_HUB_OFFLINE": "1"},
		LogPath:        filepath.Join(t.TempDir(), "trial-1.log"),
		StartupTimeout: 20 * time.Second,
	}
}

func newTestEngine(t *testing.T, opts Options) Engine {
	t.Helper()
	if opts.GracePeriod == 0 {
		opts.GracePeriod = 2 * time.Second
	}
	opts.Environ = []string{"PATH=" + os.Getenv("PATH")}
	e, err := New(KindVLLM, opts)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestStartServeStop(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, Options{})
	spec := standinSpec(t)
	inst, err := e.Start(context.Background(), spec)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	pid := inst.(*openAIInstance).proc.Pid()

	// It serves the model on loopback.
	resp, err := http.Get(inst.URL() + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"org/model-8b"`) || inst.ServedModel() != "org/model-8b" {
		t.Errorf("served %q as %q", body, inst.ServedModel())
	}
	if !strings.HasPrefix(inst.URL(), "http://127.0.0.1:") {
		t.Errorf("URL %q is not on loopback", inst.URL())
	}
	if diff := cmp.Diff(Capacity{KVCacheTokens: 425424, MaxConcurrency: 6.49}, inst.Capacity()); diff != "" {
		t.Errorf("Capacity (-want +got):\n%s", diff)
	}

	prov := inst.Provenance()
	wantProv := Provenance{
		Engine:        "vllm",
		EngineVersion: "0.13.0+standin",
		Command: append([]string{standinBin, "serve", "org/model-8b", "--max-num-seqs", "32", "--no-enable-prefix-caching",
			"--max-model-len", "4096", "--served-model-name", "org/model-8b", "--host", "127.0.0.1", "--port"}, prov.Command[len(prov.Command)-1]),
		Env: map[string]string{"HF_TOKEN": redact.Placeholder, "HF_HUB_OFFLINE": "1",
			"CUDA_VISIBLE_DEVICES": "0,1", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"},
		GPUNames: []string{"NVIDIA L4", "NVIDIA L4"},
		GPUUUIDs: []string{"virtual-l4-0", "virtual-l4-1"},
		Host:     launchHost(),
	}
	if diff := cmp.Diff(wantProv, prov); diff != "" {
		t.Errorf("Provenance (-want +got):\n%s", diff)
	}

	// The engine got the slot's GPUs and the plan's environment.
	log, _ := os.ReadFile(spec.LogPath)
	if !strings.Contains(string(log), "CUDA_VISIBLE_DEVICES=0,1") {
		t.Errorf("engine did not see CUDA_VISIBLE_DEVICES=0,1:\n%s", log)
	}
	if !strings.HasPrefix(string(log), "# frontier: engine vllm (0.13.0+standin)") {
		t.Errorf("log lacks the header:\n%s", log)
	}
	if strings.Contains(string(log), "hf_secret_value") {
		t.Errorf("the secret reached the log:\n%s", log)
	}

	if err := inst.Stop(context.Background()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := inst.Stop(context.Background()); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	select {
	case <-inst.Exited():
	default:
		t.Error("Exited not closed after Stop")
	}
	if f := Failure(inst); f != nil {
		t.Errorf("Failure after Stop = %v, want nil", f)
	}
	assertNoProcesses(t, pid)
}

func TestStartFailures(t *testing.T) {
	t.Parallel()
	const kvMsg = "ValueError: To serve at least one request with the models's max seq len (131072), (16.00 GiB KV cache is needed, which is larger than the available KV cache memory (4.50 GiB). Based on the available memory, the estimated maximum model length is 36864. Try increasing gpu_memory_utilization or decreasing max_model_len when initializing the engine."
	tests := []struct {
		name    string
		args    []string
		timeout time.Duration
		want    LaunchError // compared on Class, Message and EstimatedMaxModelLen
		maxTook time.Duration
	}{
		{
			name:    "KV cache too small",
			args:    []string{"--fault-spawn-child", "--fault-message", "(EngineCore_DP0 pid=9) ERROR 12-19 10:00:01 [core.py:708] " + kvMsg},
			timeout: 20 * time.Second,
			want:    LaunchError{Class: FailKVCacheTooSmall, Message: kvMsg, EstimatedMaxModelLen: 36864},
			maxTook: 15 * time.Second,
		},
		{
			name:    "invalid flags",
			args:    []string{"--fault-message", "vllm serve: error: unrecognized arguments: --frobnicate"},
			timeout: 20 * time.Second,
			want:    LaunchError{Class: FailInvalidArgs, Message: "vllm serve: error: unrecognized arguments: --frobnicate"},
			maxTook: 15 * time.Second,
		},
		{
			name:    "a lingering server after the engine core died is not waited for",
			args:    []string{"--fault-spawn-child", "--fault-linger", "--fault-message", "(EngineCore_DP0 pid=9) ERROR 12-19 10:00:01 [core.py:708] " + kvMsg},
			timeout: time.Minute,
			want:    LaunchError{Class: FailKVCacheTooSmall, Message: kvMsg, EstimatedMaxModelLen: 36864},
			maxTook: 10 * time.Second,
		},
		{
			name:    "hung start is killed at its timeout",
			args:    []string{"--fault-spawn-child", "--fault-hang-startup", "--fault-ignore-term"},
			timeout: 1500 * time.Millisecond,
			want: LaunchError{Class: FailStartupTimeout,
				Message: "not ready within the startup timeout of 1.5s; last log line: INFO loading the model"},
			maxTook: 1500*time.Millisecond + 2*time.Second + 3*time.Second, // timeout + grace + slack
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newTestEngine(t, Options{GracePeriod: 2 * time.Second})
			spec := standinSpec(t, tc.args...)
			spec.StartupTimeout = tc.timeout
			start := time.Now()
			inst, err := e.Start(context.Background(), spec)
			took := time.Since(start)
			if err == nil {
				inst.Stop(context.Background())
				t.Fatal("Start succeeded")
			}
			var le *LaunchError
			if !errors.As(err, &le) {
				t.Fatalf("Start = %v, want a *LaunchError", err)
			}
			got := LaunchError{Class: le.Class, Message: le.Message, EstimatedMaxModelLen: le.EstimatedMaxModelLen}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("LaunchError (-want +got):\n%s", diff)
			}
			if le.LogPath != spec.LogPath {
				t.Errorf("LogPath = %q, want %q", le.LogPath, spec.LogPath)
			}
			if took > tc.maxTook {
				t.Errorf("Start took %s, want at most %s", took, tc.maxTook)
			}
			assertNoneOfLogRunning(t, spec.LogPath)
		})
	}
}

func TestCapacityFromMetricsWhenTheLogHasNone(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, Options{})
	spec := standinSpec(t, "--fault-no-capacity-log")
	inst, err := e.Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	defer assertNoProcesses(t, inst.(*openAIInstance).proc.Pid())
	defer inst.Stop(context.Background())
	// The stand-in's vllm:cache_config_info: 26589 blocks of 16 tokens.
	want := Capacity{KVCacheTokens: 425424, MaxConcurrency: 425424.0 / 4096}
	if diff := cmp.Diff(want, inst.Capacity()); diff != "" {
		t.Errorf("Capacity (-want +got):\n%s", diff)
	}
}

func TestStartPortTaken(t *testing.T) {
	t.Parallel()
	// A port another program holds, without SO_REUSEPORT.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() }) // after the parallel subtests
	taken := l.Addr().(*net.TCPAddr).Port

	t.Run("every port taken", func(t *testing.T) {
		t.Parallel()
		e := newTestEngine(t, Options{Port: func() (int, error) { return taken, nil }})
		spec := standinSpec(t)
		_, err := e.Start(context.Background(), spec)
		var le *LaunchError
		if !errors.As(err, &le) || le.Class != FailPortTaken || !strings.Contains(le.Message, "address already in use") {
			t.Fatalf("Start = %v, want a port_taken LaunchError with the engine's message", err)
		}
		assertNoneOfLogRunning(t, spec.LogPath)
	})
	t.Run("a fresh port after a taken one", func(t *testing.T) {
		t.Parallel()
		calls := 0
		e := newTestEngine(t, Options{Port: func() (int, error) {
			calls++
			if calls == 1 {
				return taken, nil
			}
			return FreePort()
		}})
		inst, err := e.Start(context.Background(), standinSpec(t))
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
		defer assertNoProcesses(t, inst.(*openAIInstance).proc.Pid())
		defer inst.Stop(context.Background())
		if calls != 2 {
			t.Errorf("ports picked: %d, want 2", calls)
		}
	})
}

func TestStartCancelledLeavesNothing(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, Options{})
	spec := standinSpec(t, "--fault-spawn-child", "--fault-hang-startup")
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		waitForLogT(spec.LogPath, "loading the model", 10*time.Second)
		cancel()
	}()
	_, err := e.Start(ctx, spec)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Start = %v, want context.Canceled", err)
	}
	assertNoneOfLogRunning(t, spec.LogPath)
}

func TestCrashAfterReadyIsAFailure(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, Options{})
	inst, err := e.Start(context.Background(), standinSpec(t))
	if err != nil {
		t.Fatal(err)
	}
	p := inst.(*openAIInstance).proc
	defer assertNoProcesses(t, p.Pid())
	defer inst.Stop(context.Background())
	if f := Failure(inst); f != nil {
		t.Fatalf("Failure while running = %v", f)
	}
	// Something outside frontier kills the engine mid-trial.
	if err := signalGroup(p.Pid(), 9); err != nil {
		t.Fatal(err)
	}
	select {
	case <-inst.Exited():
	case <-time.After(5 * time.Second):
		t.Fatal("Exited not closed after the engine died")
	}
	f := Failure(inst)
	if want := fmt.Sprintf("the engine (pid %d) exited with signal KILL", p.Pid()); f == nil || f.Class != FailCrash || f.Message != want {
		t.Fatalf("Failure = %v, want a crash saying %q and nothing from the log, which knows nothing of the kill", f, want)
	}
}

func TestStartMissingProgramIsTheStudysError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		command []string
		want    error
	}{
		{"not on PATH", []string{"vllm-not-installed-here", "serve"}, exec.ErrNotFound},
		{"no such file", []string{filepath.Join(t.TempDir(), "vllm"), "serve"}, fs.ErrNotExist},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newTestEngine(t, Options{})
			spec := standinSpec(t)
			spec.Command = tc.command
			_, err := e.Start(context.Background(), spec)
			var le *LaunchError
			if !errors.Is(err, tc.want) || errors.As(err, &le) {
				t.Errorf("Start = %v, want a plain error wrapping %v", err, tc.want)
			}
		})
	}
}

func TestNewKinds(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{KindVLLM, KindSim, KindOllama} {
		e, err := New(kind, Options{FrontierBinary: "/bin/frontier"})
		if err != nil {
			t.Errorf("New(%q): %v", kind, err)
			continue
		}
		if e.Name() != kind {
			t.Errorf("New(%q).Name() = %q", kind, e.Name())
		}
	}
	if _, err := New("tgi", Options{}); err == nil {
		t.Error(`New("tgi") succeeded`)
	}
}

// assertNoneOfLogRunning checks that the engine whose log is at path, and everything in its
// process group, is gone: the stand-in logs its pid, which is the group's id.
func assertNoneOfLogRunning(t *testing.T, path string) {
	t.Helper()
	b, _ := os.ReadFile(path)
	for _, line := range strings.Split(string(b), "\n") {
		if _, after, ok := strings.Cut(line, "(APIServer pid="); ok {
			pidStr, _, _ := strings.Cut(after, ")")
			var pid int
			for _, c := range pidStr {
				pid = pid*10 + int(c-'0')
			}
			assertNoProcesses(t, pid)
			if child := strings.Index(string(b), "child pid "); child >= 0 {
				assertNoProcesses(t, childPID(t, path))
			}
			return
		}
	}
	t.Fatalf("no pid in the log %s:\n%s", path, b)
}

func waitForLogT(path, s string, d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if b, _ := os.ReadFile(path); strings.Contains(string(b), s) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRedactionGoesByMeaning checks that a flag whose name merely contains TOKEN keeps its
// value in provenance and in the log, while a value the plan declares secret (a sensitive
// variable) is hidden in both, as are the secrets of the environment.
func TestRedactionGoesByMeaning(t *testing.T) {
	t.Parallel()
	e := newTestEngine(t, Options{})
	spec := standinSpec(t, "--long-prefill-token-threshold", "1024", "--chat-template", "s3cret-template")
	spec.SecretValues = []string{"s3cret-template"}
	inst, err := e.Start(context.Background(), spec)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer inst.Stop(context.Background())
	cmd := strings.Join(inst.Provenance().Command, " ")
	if !strings.Contains(cmd, "--long-prefill-token-threshold 1024") || !strings.Contains(cmd, "--chat-template REDACTED") {
		t.Errorf("provenance command = %s; want the threshold kept and the template redacted", cmd)
	}
	if err := inst.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	log, err := os.ReadFile(spec.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--long-prefill-token-threshold 1024", "'long_prefill_token_threshold': '1024'", "'max_model_len': '4096'", "'chat_template': 'REDACTED'"} {
		if !strings.Contains(string(log), want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	for _, secret := range []string{"s3cret-template", "hf_secret_value"} {
		if strings.Contains(string(log), secret) {
			t.Errorf("log shows the secret %q:\n%s", secret, log)
		}
	}
}

// TestVersionProbeIsBounded: an engine program whose --version hangs delays the first launch
// by Options.VersionTimeout at most, leaves no probe running, and the log says the version is
// unknown and why. The program is a script that stands in for a broken installation and
// otherwise runs the vLLM stand-in.
func TestVersionProbeIsBounded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := filepath.Join(dir, "vllm")
	pidFile := filepath.Join(dir, "probe.pid")
	body := "#!/bin/sh\nif [ \"$1\" = --version ]; then echo $$ > " + pidFile + "; exec sleep 300; fi\nexec " + standinBin + " \"$@\"\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	e := newTestEngine(t, Options{VersionTimeout: 500 * time.Millisecond})
	spec := standinSpec(t)
	spec.Command = []string{script, "serve"}
	start := time.Now()
	inst, err := e.Start(context.Background(), spec)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	took := time.Since(start)
	_ = inst.Stop(context.Background())
	if took > 8*time.Second {
		t.Errorf("Start took %v with a version probe bounded to 500ms", took)
	}
	raw, _ := os.ReadFile(pidFile)
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatalf("the probe did not run: %q", raw)
	}
	if alive(pid) {
		t.Errorf("the hanging version probe %d is still running", pid)
	}
	log, _ := os.ReadFile(spec.LogPath)
	want := "# note: preflight: " + script + " --version gave no answer within 500ms"
	if !strings.Contains(string(log), want) || !strings.Contains(string(log), "the version is unknown") {
		t.Errorf("the log does not say %q:\n%s", want, firstLine(string(log)))
	}
}
