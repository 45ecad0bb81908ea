package launcher

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/ollama/ollama/api"

	"github.com/frontier-llm/frontier/hw"
	"github.com/frontier-llm/frontier/testmodel"
)

func TestOllamaSettings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		spec     Spec
		want     OllamaConfig
		wantFail string // a substring of the FailInvalidArgs message; "" for success
	}{
		{
			name: "server settings become variables and model options parameters",
			spec: Spec{Settings: []Setting{
				{"num_parallel", int64(4)}, {"max_queue", int64(16)}, {"num_ctx", int64(1024)},
				{"num_batch", int64(64)}, {"num_thread", int64(1)}, {"num_gpu", int64(0)},
			}},
			want: OllamaConfig{
				Env:        map[string]string{"OLLAMA_NUM_PARALLEL": "4", "OLLAMA_MAX_QUEUE": "16"},
				Parameters: map[string]any{"num_ctx": int64(1024), "num_batch": int64(64), "num_thread": int64(1), "num_gpu": int64(0)},
			},
		},
		{
			name: "a quantised KV cache turns flash attention on",
			spec: Spec{Settings: []Setting{{"kv_cache_type", "q8_0"}}},
			want: OllamaConfig{
				Env:        map[string]string{"OLLAMA_KV_CACHE_TYPE": "q8_0", "OLLAMA_FLASH_ATTENTION": "true"},
				Parameters: map[string]any{},
			},
		},
		{
			name: "an f16 KV cache is Ollama's default and needs no flash attention",
			spec: Spec{Settings: []Setting{{"kv_cache_type", "f16"}}},
			want: OllamaConfig{
				Env:        map[string]string{"OLLAMA_KV_CACHE_TYPE": "f16"},
				Parameters: map[string]any{},
			},
		},
		{
			name: "an explicit flash_attention wins",
			spec: Spec{Settings: []Setting{{"flash_attention", false}, {"kv_cache_type", "f16"}}},
			want: OllamaConfig{
				Env:        map[string]string{"OLLAMA_KV_CACHE_TYPE": "f16", "OLLAMA_FLASH_ATTENTION": "false"},
				Parameters: map[string]any{},
			},
		},
		{
			name:     "a quantised KV cache without flash attention is refused",
			spec:     Spec{Settings: []Setting{{"kv_cache_type", "q4_0"}, {"flash_attention", false}}},
			wantFail: `kv_cache_type "q4_0" needs flash_attention`,
		},
		{
			name:     "an unknown KV cache type is refused",
			spec:     Spec{Settings: []Setting{{"kv_cache_type", "fp8"}}},
			wantFail: `kv_cache_type "fp8" is not one of f16, q8_0, q4_0`,
		},
		{
			name: "quantization none creates the model as it is",
			spec: Spec{Settings: []Setting{{"quantization", "none"}}},
			want: OllamaConfig{Env: map[string]string{}, Parameters: map[string]any{}},
		},
		{
			name: "quantization names ollama create's type; max_model_len is num_ctx",
			spec: Spec{MaxModelLen: 512, Settings: []Setting{{"quantization", "q8_0"}}},
			want: OllamaConfig{Env: map[string]string{}, Parameters: map[string]any{"num_ctx": int64(512)}, Quantize: "q8_0"},
		},
		{
			name: "a num_ctx knob wins over max_model_len; floats that are whole are integers",
			spec: Spec{MaxModelLen: 512, Settings: []Setting{{"num_ctx", float64(2048)}, {"temperature", 0.5}}},
			want: OllamaConfig{Env: map[string]string{}, Parameters: map[string]any{"num_ctx": int64(2048), "temperature": float32(0.5)}},
		},
		{
			name: "ollama_ knobs are server variables",
			spec: Spec{Settings: []Setting{{"ollama_sched_spread", true}, {"ollama_load_timeout", "10m"}}},
			want: OllamaConfig{
				Env:        map[string]string{"OLLAMA_SCHED_SPREAD": "true", "OLLAMA_LOAD_TIMEOUT": "10m"},
				Parameters: map[string]any{},
			},
		},
		{
			name:     "num_parallel must be at least 1",
			spec:     Spec{Settings: []Setting{{"num_parallel", int64(0)}}},
			wantFail: `num_parallel "0" is not a whole number of at least 1`,
		},
		{
			name:     "an unknown knob is refused before anything starts",
			spec:     Spec{Settings: []Setting{{"max_num_seqs", int64(8)}}},
			wantFail: "knob max_num_seqs = 8: unknown parameter 'max_num_seqs'",
		},
		{
			name:     "a parameter of the wrong type is refused",
			spec:     Spec{Settings: []Setting{{"num_ctx", "lots"}}},
			wantFail: "knob num_ctx = lots: invalid int value",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := OllamaSettings(tt.spec)
			if tt.wantFail != "" {
				var le *LaunchError
				if !errors.As(err, &le) || le.Class != FailInvalidArgs || !strings.Contains(le.Message, tt.wantFail) {
					t.Fatalf("OllamaSettings() error = %v, want %s containing %q", err, FailInvalidArgs, tt.wantFail)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("OllamaSettings() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOllamaModelfile(t *testing.T) {
	t.Parallel()
	cfg := OllamaConfig{
		Parameters: map[string]any{"num_thread": 1, "num_ctx": 512, "stop": []string{"</s>", "\n\n"}},
		Quantize:   "q8_0",
	}
	want := `FROM /models/tiny.gguf
PARAMETER num_ctx 512
PARAMETER num_thread 1
PARAMETER stop "</s>"
PARAMETER stop "\n\n"
# ollama create NAME -f Modelfile --quantize q8_0
`
	if diff := cmp.Diff(want, OllamaModelfile("/models/tiny.gguf", cfg)); diff != "" {
		t.Errorf("OllamaModelfile() (-want +got):\n%s", diff)
	}
}

// ollamaFailure is what ClassifyOllama returns.
type ollamaFailure struct {
	Class   FailureClass
	Message string
}

func TestClassifyOllama(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		errMsg string
		log    string
		want   ollamaFailure
	}{
		{
			name: "port taken",
			log:  "Error: listen tcp 127.0.0.1:41234: bind: address already in use\n",
			want: ollamaFailure{FailPortTaken, "Error: listen tcp 127.0.0.1:41234: bind: address already in use"},
		},
		{
			name:   "not enough memory for the weights",
			errMsg: "model requires more system memory (70.2 GiB) than is available (31.0 GiB)",
			want:   ollamaFailure{FailWeightsOOM, "model requires more system memory (70.2 GiB) than is available (31.0 GiB)"},
		},
		{
			name:   "runner cannot load the model",
			errMsg: "llama runner process has terminated: error loading model: missing tensor 'output_norm.weight'",
			want:   ollamaFailure{FailInvalidModel, "llama runner process has terminated: error loading model: missing tensor 'output_norm.weight'"},
		},
		{
			name:   "runner died",
			errMsg: "llama runner process has terminated: signal: killed",
			want:   ollamaFailure{FailCrash, "llama runner process has terminated: signal: killed"},
		},
		{
			name:   "model not installed",
			errMsg: `model "nosuch:latest" not found, try pulling it first`,
			want:   ollamaFailure{FailModelNotFound, `model "nosuch:latest" not found, try pulling it first`},
		},
		{
			name: "unknown message: the last line",
			log:  "time=2026-01-01T00:00:00.000Z level=INFO source=routes.go:1 msg=\"Listening on 127.0.0.1:1\"\npanic: something odd\n",
			want: ollamaFailure{FailCrash, "panic: something odd"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			class, message := ClassifyOllama(tt.errMsg, tt.log)
			if diff := cmp.Diff(tt.want, ollamaFailure{class, message}); diff != "" {
				t.Errorf("ClassifyOllama() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOllamaCapacityFromLog(t *testing.T) {
	t.Parallel()
	log := `time=2026-12-02T11:19:10.284Z level=INFO source=server.go:405 msg="starting llama server" cmd="/bin/ollama runner --model /m/blobs/sha256-eb --ctx-size 2048 --batch-size 512 --threads 1 --no-mmap --parallel 4 --port 42207"
time=2026-12-02T11:19:10.300Z level=INFO source=runner.go:1 msg="starting go runner"
`
	want := Capacity{KVCacheTokens: 2048, MaxConcurrency: 4}
	if diff := cmp.Diff(want, ollamaCapacity(log)); diff != "" {
		t.Errorf("ollamaCapacity() (-want +got):\n%s", diff)
	}
}

func TestOllamaModelName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		spec Spec
		want string
	}{
		{"the plan's name", Spec{Model: "tiny", GGUF: "/m/tiny.gguf"}, "tiny:latest"},
		{"a tagged name", Spec{Model: "tiny:q8", GGUF: "/m/tiny.gguf"}, "tiny:q8"},
		{"no name: the file's", Spec{GGUF: "/m/My Model.gguf"}, "frontier-my-model:latest"},
		{"a name Ollama refuses: the file's", Spec{Model: "org/model@x", GGUF: "/m/tiny.gguf"}, "frontier-tiny:latest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := ollamaModelName(tt.spec); got != tt.want {
				t.Errorf("ollamaModelName() = %q, want %q", got, tt.want)
			}
		})
	}
}

// ollamaBin is the ollama executable for the tests that run a real server: $FRONTIER_OLLAMA,
// or the build of scripts/ollama.sh. Without one those tests are skipped, except under CI,
// where they fail.
func ollamaBin(t *testing.T) string {
	t.Helper()
	bin := os.Getenv(OllamaBinaryEnv)
	if bin == "" {
		bin = filepath.Join("..", ollamaCachedBinary)
	}
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("no ollama at %s (set %s or run scripts/ollama.sh): %v", bin, OllamaBinaryEnv, err)
		}
		t.Skipf("no ollama at %s: run scripts/ollama.sh or set %s", bin, OllamaBinaryEnv)
	}
	abs, err := filepath.Abs(bin)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// tinyModel writes the default test model into a temporary folder.
func tinyModel(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	if err := testmodel.WriteFile(path, testmodel.Config{}); err != nil {
		t.Fatal(err)
	}
	return path
}

// ollamaSpec is a Spec for the tiny model on one thread.
func ollamaSpec(t *testing.T, bin, gguf string, settings ...Setting) Spec {
	t.Helper()
	dir := t.TempDir()
	return Spec{
		Command:        []string{bin, "serve"},
		Model:          "tiny",
		GGUF:           gguf,
		Settings:       append([]Setting{{"num_thread", int64(1)}}, settings...),
		LogPath:        filepath.Join(dir, "ollama.log"),
		WorkDir:        dir,
		StartupTimeout: time.Minute,
	}
}

func startOllama(t *testing.T, spec Spec) Instance {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	inst, err := NewOllama(Options{GracePeriod: 5 * time.Second}).Start(ctx, spec)
	if err != nil {
		log, _ := os.ReadFile(spec.LogPath)
		t.Fatalf("Start: %v\nlog:\n%s", err, log)
	}
	t.Cleanup(func() { _ = inst.Stop(context.Background()) })
	return inst
}

// streamResult is what one streamed completion gave.
type streamResult struct {
	ttft   time.Duration
	chunks int
	usage  int // completion tokens from the usage chunk
}

// streamCompletion sends one streaming /v1/completions request and times its first token.
func streamCompletion(ctx context.Context, inst Instance, prompt string, maxTokens int) (streamResult, error) {
	body, _ := json.Marshal(map[string]any{
		"model": inst.ServedModel(), "prompt": prompt, "max_tokens": maxTokens, "stream": true,
		"stream_options": map[string]any{"include_usage": true}, "temperature": 0, // as workload sends
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, inst.URL()+"/v1/completions", bytes.NewReader(body))
	if err != nil {
		return streamResult{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := LoopbackClient().Do(req)
	if err != nil {
		return streamResult{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return streamResult{}, fmt.Errorf("POST /v1/completions: %s", resp.Status)
	}
	var r streamResult
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var chunk struct {
			Choices []struct {
				Text string `json:"text"`
			} `json:"choices"`
			Usage *struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			return r, fmt.Errorf("chunk %q: %w", data, err)
		}
		if len(chunk.Choices) > 0 && chunk.Choices[0].Text != "" {
			if r.chunks == 0 {
				r.ttft = time.Since(start)
			}
			r.chunks++
		}
		if chunk.Usage != nil {
			r.usage = chunk.Usage.CompletionTokens
		}
	}
	return r, sc.Err()
}

func TestOllamaServesTheTestModel(t *testing.T) {
	t.Parallel()
	bin := ollamaBin(t)
	spec := ollamaSpec(t, bin, tinyModel(t), Setting{"num_parallel", int64(2)}, Setting{"num_ctx", int64(256)})
	// The slot's GPU is recorded and handed to Ollama, whose CPU-only build ignores it.
	spec.GPUs = []hw.GPU{{Index: 1, UUID: "GPU-test-1", Name: "NVIDIA H100 80GB HBM3"}}
	inst := startOllama(t, spec)

	if !strings.HasPrefix(inst.URL(), "http://127.0.0.1:") {
		t.Errorf("URL() = %q, want http://127.0.0.1:PORT", inst.URL())
	}
	got := map[string]any{
		"model":         inst.ServedModel(),
		"options":       inst.RequestOptions(),
		"capacity":      inst.Capacity(),
		"engine":        inst.Provenance().Engine,
		"version":       inst.Provenance().EngineVersion,
		"command":       inst.Provenance().Command,
		"num_parallel":  inst.Provenance().Env["OLLAMA_NUM_PARALLEL"],
		"keep_alive":    inst.Provenance().Env["OLLAMA_KEEP_ALIVE"],
		"models folder": inst.Provenance().Env["OLLAMA_MODELS"],
		"cuda devices":  inst.Provenance().Env["CUDA_VISIBLE_DEVICES"],
		"gpu uuids":     inst.Provenance().GPUUUIDs,
	}
	want := map[string]any{
		"model":         "tiny:latest",
		"options":       map[string]any(nil),
		"capacity":      Capacity{KVCacheTokens: 512, MaxConcurrency: 2},
		"engine":        "ollama",
		"version":       "0.6.5",
		"command":       []string{bin, "serve"},
		"num_parallel":  "2",
		"keep_alive":    "-1",
		"models folder": filepath.Join(spec.WorkDir, "ollama-models"),
		"cuda devices":  "1",
		"gpu uuids":     []string{"GPU-test-1"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("instance (-want +got):\n%s", diff)
	}

	// The warm-up loaded the runner: a request streams its tokens up to the limit, the
	// random model never ending early.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := streamCompletion(ctx, inst, "the quick brown fox jumps over the lazy dog", 40)
	if err != nil {
		t.Fatal(err)
	}
	if r.usage != 40 || r.chunks < 20 {
		t.Errorf("streamed %d chunks with %d completion tokens, want 40 tokens", r.chunks, r.usage)
	}
	modelfile, err := os.ReadFile(filepath.Join(spec.WorkDir, "Modelfile"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "FROM " + spec.GGUF + "\nPARAMETER num_ctx 256\nPARAMETER num_thread 1\n"; string(modelfile) != want {
		t.Errorf("Modelfile:\n%s\nwant:\n%s", modelfile, want)
	}

	// Stop ends the whole process group (server and runner) and removes the models folder;
	// a second Stop is harmless.
	if f := Failure(inst); f != nil {
		t.Errorf("Failure() of a running server = %v, want nil", f)
	}
	pgid := inst.(*ollamaInstance).proc.Pid()
	if err := inst.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := inst.Stop(context.Background()); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	if left := groupMembers(t, pgid); len(left) > 0 {
		t.Errorf("processes left in the group after Stop: %v", left)
	}
	if _, err := os.Stat(filepath.Join(spec.WorkDir, "ollama-models")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("models folder still there after Stop: %v", err)
	}
	select {
	case <-inst.Exited():
	default:
		t.Error("Exited() not closed after Stop")
	}
	if f := Failure(inst); f != nil {
		t.Errorf("Failure() after Stop = %v, want nil", f)
	}
}

func TestOllamaFailureAfterACrash(t *testing.T) {
	t.Parallel()
	inst := startOllama(t, ollamaSpec(t, ollamaBin(t), tinyModel(t)))
	pid := inst.(*ollamaInstance).proc.Pid()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-inst.Exited():
	case <-time.After(10 * time.Second):
		t.Fatal("Exited() not closed 10s after the server was killed")
	}
	f := Failure(inst)
	if f == nil || f.Class != FailCrash || f.LogPath == "" {
		t.Errorf("Failure() = %#v, want a crash with the log's path", f)
	}
}

func TestOllamaQuantisedModel(t *testing.T) {
	t.Parallel()
	bin := ollamaBin(t)
	spec := ollamaSpec(t, bin, tinyModel(t), Setting{"quantization", "q8_0"}, Setting{"kv_cache_type", "f16"})
	inst := startOllama(t, spec)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := streamCompletion(ctx, inst, "hello", 10)
	if err != nil {
		t.Fatal(err)
	}
	if r.usage != 10 {
		t.Errorf("completion tokens = %d, want 10", r.usage)
	}
	log, err := os.ReadFile(spec.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	if want := "OLLAMA_KV_CACHE_TYPE:f16"; !bytes.Contains(log, []byte(want)) {
		t.Errorf("log lacks %q", want)
	}
	show, err := inst.(*ollamaInstance).client.Show(ctx, &api.ShowRequest{Model: inst.ServedModel()})
	if err != nil {
		t.Fatal(err)
	}
	if got := show.Details.QuantizationLevel; got != "Q8_0" {
		t.Errorf("served model's quantization = %q, want Q8_0", got)
	}
}

func TestOllamaStartFailures(t *testing.T) {
	t.Parallel()
	bin := ollamaBin(t)
	good := tinyModel(t)
	dir := t.TempDir()
	notGGUF := filepath.Join(dir, "text.gguf")
	truncated := filepath.Join(dir, "truncated.gguf")
	whole, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(notGGUF, []byte("this is not a model\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(truncated, whole[:len(whole)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		spec    func(Spec) Spec
		class   FailureClass
		message string // a substring of the LaunchError's Message
	}{
		{
			name:    "a file that is not a GGUF",
			spec:    func(s Spec) Spec { s.GGUF = notGGUF; return s },
			class:   FailInvalidModel,
			message: "is not a GGUF file",
		},
		{
			name:    "a truncated GGUF",
			spec:    func(s Spec) Spec { s.GGUF = truncated; return s },
			class:   FailInvalidModel,
			message: "error loading model",
		},
		{
			name: "a model that is not installed",
			spec: func(s Spec) Spec {
				s.GGUF = ""
				s.Model = "nosuch"
				s.Env = map[string]string{"OLLAMA_MODELS": s.WorkDir}
				return s
			},
			class:   FailModelNotFound,
			message: `model "nosuch" is not installed`,
		},
		{
			name:    "a quantisation Ollama does not know",
			spec:    func(s Spec) Spec { s.Settings = append(s.Settings, Setting{"quantization", "q9_9"}); return s },
			class:   FailUnsupported,
			message: "unknown fileType: Q9_9",
		},
		{
			name:    "a server that exits at once",
			spec:    func(s Spec) Spec { s.Command = []string{bin, "no-such-subcommand"}; return s },
			class:   FailCrash,
			message: "unknown command",
		},
		{
			name:    "an executable that does not exist",
			spec:    func(s Spec) Spec { s.Command = []string{filepath.Join(dir, "no-ollama"), "serve"}; return s },
			class:   FailInvalidArgs,
			message: "no-ollama",
		},
		{
			// The CPU-only build of scripts/ollama.sh cannot run flash attention, without which
			// Ollama silently keeps an f16 cache: the trial must not be measured as q8_0.
			name:    "a quantised KV cache on a CPU",
			spec:    func(s Spec) Spec { s.Settings = append(s.Settings, Setting{"kv_cache_type", "q8_0"}); return s },
			class:   FailUnsupported,
			message: "flash attention enabled but not supported by gpu",
		},
		{
			name:  "not ready in time",
			spec:  func(s Spec) Spec { s.StartupTimeout = time.Millisecond; return s },
			class: FailStartupTimeout,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			spec := tt.spec(ollamaSpec(t, bin, good))
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			inst, err := NewOllama(Options{GracePeriod: 2 * time.Second}).Start(ctx, spec)
			if err == nil {
				inst.Stop(context.Background())
				t.Fatal("Start succeeded")
			}
			var le *LaunchError
			if !errors.As(err, &le) {
				t.Fatalf("Start error %v is not a *LaunchError", err)
			}
			if le.Class != tt.class || !strings.Contains(le.Message, tt.message) {
				log, _ := os.ReadFile(spec.LogPath)
				t.Errorf("Start error = %s: %q, want %s with %q\nlog:\n%s", le.Class, le.Message, tt.class, tt.message, log)
			}
			if _, err := os.Stat(filepath.Join(spec.WorkDir, "ollama-models")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("models folder left behind: %v", err)
			}
		})
	}
}

// TestOllamaNumParallelLowersTTFT measures, on the real engine, what a study of
// examples/ollama-cpu.hcl measures: with 8 streams in flight, 4 parallel slots start
// requests sooner than 1, whose requests wait in Ollama's queue behind whole generations.
// The requests are of mixed lengths, as real ones are: each round sends 2 long ones, then 6
// short ones. Both servers run at once and take turns, round by round, so that whatever else
// the machine is doing weighs on both alike; the medians of all their TTFTs are compared.
//
// With lengths all equal, the difference is small on this tiny model: a batch of 4 costs a
// CPU thread nearly 4 single steps (the weights fit in cache, so batching saves no memory
// traffic) and attention spans the 4 sequences' shared cache, so the queue is what differs.
func TestOllamaNumParallelLowersTTFT(t *testing.T) {
	bin := ollamaBin(t)
	gguf := tinyModel(t)
	const rounds = 5
	lengths := []int{ttftLong, ttftLong, ttftShort, ttftShort, ttftShort, ttftShort, ttftShort, ttftShort}
	parallel := []int64{1, 4}
	insts := make([]Instance, len(parallel))
	for i, n := range parallel {
		insts[i] = startOllama(t, ollamaSpec(t, bin, gguf, Setting{"num_parallel", n}, Setting{"num_ctx", int64(512)}))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ttfts := make([][]time.Duration, len(parallel))
	for round := range rounds {
		for i, inst := range insts {
			got, err := concurrentTTFTs(ctx, inst, lengths, round)
			if err != nil {
				t.Fatalf("num_parallel %d: %v", parallel[i], err)
			}
			ttfts[i] = append(ttfts[i], got...)
		}
	}
	medians := make([]time.Duration, len(parallel))
	for i, d := range ttfts {
		slices.Sort(d)
		medians[i] = (d[len(d)/2-1] + d[len(d)/2]) / 2
		t.Logf("num_parallel %d: median TTFT %v of %d requests (min %v, max %v)", parallel[i], medians[i], len(d), d[0], d[len(d)-1])
	}
	if medians[1] >= medians[0] {
		t.Errorf("median TTFT with num_parallel 4 = %v, not lower than with num_parallel 1 = %v", medians[1], medians[0])
	}
}

// Output lengths of the requests of TestOllamaNumParallelLowersTTFT.
const (
	ttftLong  = 400
	ttftShort = 8
)

// concurrentTTFTs sends one streaming request per entry of maxTokens, at once except that
// the first ones get a head start of a few milliseconds, and returns their TTFTs.
func concurrentTTFTs(ctx context.Context, inst Instance, maxTokens []int, round int) ([]time.Duration, error) {
	var (
		mu    sync.Mutex
		wg    sync.WaitGroup
		errs  []error
		ttfts []time.Duration
	)
	for i, n := range maxTokens {
		if i > 0 && n != maxTokens[i-1] {
			time.Sleep(20 * time.Millisecond) // let the server queue the earlier ones first
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			prompt := fmt.Sprintf("request %d of round %d: the quick brown fox jumps over the lazy dog", i, round)
			r, err := streamCompletion(ctx, inst, prompt, n)
			mu.Lock()
			defer mu.Unlock()
			if err == nil && r.usage != n {
				err = fmt.Errorf("%d completion tokens, want %d", r.usage, n)
			}
			if err != nil {
				errs = append(errs, err)
				return
			}
			ttfts = append(ttfts, r.ttft)
		}()
	}
	wg.Wait()
	return ttfts, errors.Join(errs...)
}

func TestOllamaCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "ollama-build")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	opts := Options{Environ: []string{"PATH=" + dir, OllamaBinaryEnv + "=" + bin}}
	tests := []struct {
		name string
		spec Spec
		want []string
	}{
		{"no command: $FRONTIER_OLLAMA serve", Spec{}, []string{bin, "serve"}},
		{"the bare name: $FRONTIER_OLLAMA serve", Spec{Command: []string{"ollama"}}, []string{bin, "serve"}},
		{"an executable: serve is added", Spec{Command: []string{"/opt/ollama/bin/ollama"}}, []string{"/opt/ollama/bin/ollama", "serve"}},
		{"a full command stays", Spec{Command: []string{"/opt/ollama", "serve"}, Args: []string{"--x"}}, []string{"/opt/ollama", "serve", "--x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ollamaCommand(opts, tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ollamaCommand() (-want +got):\n%s", diff)
			}
		})
	}
}
