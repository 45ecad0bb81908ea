package launcher

import (
	"bufio"
	"context"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/frontier-llm/frontier/engine"
	"github.com/ollama/ollama/api"

	"github.com/frontier-llm/frontier/redact"
)

// Failure classes of the ollama adapter, beside those of launcher.go.
const (
	// FailInvalidModel is a model file the engine cannot read or load (not a GGUF, truncated,
	// an architecture it does not know).
	FailInvalidModel FailureClass = "invalid_model"
	// FailModelNotFound is a model name the engine does not have installed.
	FailModelNotFound FailureClass = "model_not_found"
)

// ollamaEnvKnob is the OLLAMA_* environment variable of a knob that is a server setting, or
// "". A knob named ollama_<x> becomes OLLAMA_<X> as well, so any server setting can be searched.
func ollamaEnvKnob(name string) string {
	if strings.HasPrefix(name, "ollama_") {
		return strings.ToUpper(name)
	}
	return map[string]string{
		"num_parallel":      "OLLAMA_NUM_PARALLEL",
		"max_queue":         "OLLAMA_MAX_QUEUE",
		"kv_cache_type":     "OLLAMA_KV_CACHE_TYPE",
		"flash_attention":   "OLLAMA_FLASH_ATTENTION",
		"sched_spread":      "OLLAMA_SCHED_SPREAD",
		"gpu_overhead":      "OLLAMA_GPU_OVERHEAD",
		"multiuser_cache":   "OLLAMA_MULTIUSER_CACHE",
		"max_loaded_models": "OLLAMA_MAX_LOADED_MODELS",
	}[name]
}

// ollamaKVCacheTypes are the values OLLAMA_KV_CACHE_TYPE accepts.
func ollamaKVCacheTypes() []string { return []string{"f16", "q8_0", "q4_0"} }

// OllamaConfig is what a trial's settings mean to Ollama: server environment, model
// parameters and the quantisation of the created model.
type OllamaConfig struct {
	// Env holds the OLLAMA_* variables of `ollama serve`.
	Env map[string]string
	// Parameters are the model's parameters (Modelfile PARAMETER lines), typed as Ollama
	// wants them. Load-time options (num_ctx, num_batch, num_thread, num_gpu) belong here:
	// changing them per request reloads the runner.
	Parameters map[string]any
	// Quantize is the type of `ollama create --quantize` (q8_0, q4_K_M, ...); "" for none.
	Quantize string
}

// OllamaSettings maps a Spec's knob settings to Ollama. num_parallel, max_queue,
// kv_cache_type, flash_attention (and any ollama_<x>) are server variables; a quantised
// kv_cache_type turns flash attention on, without which Ollama ignores it; quantization (or
// quantize) is the created model's quantisation, "none" for none; every other knob is a model
// parameter (num_ctx, num_batch, num_thread, num_gpu, ...), checked against Ollama's list.
// Spec.MaxModelLen is num_ctx unless a knob sets it. Errors are *LaunchError of class
// FailInvalidArgs.
func OllamaSettings(spec Spec) (OllamaConfig, error) {
	cfg := OllamaConfig{Env: map[string]string{}, Parameters: map[string]any{}}
	invalid := func(format string, a ...any) (OllamaConfig, error) {
		msg := fmt.Sprintf(format, a...)
		return OllamaConfig{}, &LaunchError{Class: FailInvalidArgs, Message: msg, Err: errors.New(msg)}
	}
	var flash *bool
	kvType := ""
	raw := map[string][]string{}
	for _, s := range spec.Settings {
		v := settingString(s.Value)
		switch name := s.Name; {
		case name == "quantization" || name == "quantize":
			if v != "none" && v != "" {
				cfg.Quantize = v
			}
		case name == "kv_cache_type":
			if !slices.Contains(ollamaKVCacheTypes(), v) {
				return invalid("kv_cache_type %q is not one of %s", v, strings.Join(ollamaKVCacheTypes(), ", "))
			}
			kvType = v
			cfg.Env[ollamaEnvKnob(name)] = v
		case name == "flash_attention":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return invalid("flash_attention %q is not a boolean", v)
			}
			flash = &b
			cfg.Env[ollamaEnvKnob(name)] = strconv.FormatBool(b)
		case name == "num_parallel" || name == "max_queue" || name == "max_loaded_models":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return invalid("%s %q is not a whole number of at least 1", name, v)
			}
			cfg.Env[ollamaEnvKnob(name)] = strconv.Itoa(n)
		case ollamaEnvKnob(name) != "":
			cfg.Env[ollamaEnvKnob(name)] = v
		default:
			raw[name] = []string{v}
		}
	}
	if kvType != "" {
		if flash != nil && !*flash && kvType != "f16" {
			return invalid("kv_cache_type %q needs flash_attention: Ollama ignores a quantised KV cache without it", kvType)
		}
		if flash == nil && kvType != "f16" {
			cfg.Env["OLLAMA_FLASH_ATTENTION"] = "true"
		}
	}
	if _, ok := raw["num_ctx"]; !ok && spec.MaxModelLen > 0 {
		raw["num_ctx"] = []string{strconv.Itoa(spec.MaxModelLen)}
	}
	for _, name := range slices.Sorted(maps.Keys(raw)) {
		p, err := api.FormatParams(map[string][]string{name: raw[name]})
		if err != nil {
			return invalid("knob %s = %s: %v (Ollama's model parameters are num_ctx, num_batch, num_thread, num_gpu, ...; its server settings are num_parallel, max_queue, kv_cache_type, flash_attention)", name, raw[name][0], err)
		}
		maps.Copy(cfg.Parameters, p)
	}
	return cfg, nil
}

// settingString renders a knob value as Ollama reads it.
func settingString(v any) string {
	switch v := v.(type) {
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1e15 {
			return strconv.FormatInt(int64(v), 10)
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	case nil:
		return ""
	default:
		return fmt.Sprint(v)
	}
}

// OllamaModelfile renders a Modelfile that creates the model of cfg from from (a GGUF path
// or an installed model): the same model `ollama create NAME -f Modelfile` makes, with
// `--quantize cfg.Quantize` when set.
func OllamaModelfile(from string, cfg OllamaConfig) string {
	var b strings.Builder
	fmt.Fprintf(&b, "FROM %s\n", from)
	for _, name := range slices.Sorted(maps.Keys(cfg.Parameters)) {
		switch v := cfg.Parameters[name].(type) {
		case []string:
			for _, s := range v {
				fmt.Fprintf(&b, "PARAMETER %s %s\n", name, strconv.Quote(s))
			}
		default:
			fmt.Fprintf(&b, "PARAMETER %s %v\n", name, v)
		}
	}
	if cfg.Quantize != "" {
		fmt.Fprintf(&b, "# ollama create NAME -f Modelfile --quantize %s\n", cfg.Quantize)
	}
	return b.String()
}

// OllamaBinaryEnv names the environment variable that gives the ollama executable when the
// plan's engine block has no command.
const OllamaBinaryEnv = "FRONTIER_OLLAMA"

// ollamaCachedBinary is where scripts/ollama.sh builds Ollama, relative to the repository.
const ollamaCachedBinary = ".cache/ollama/bin/ollama"

// ollamaCommand is the command that runs the server: spec.Command (with "serve" added when
// it is not there, so the plan's command may name just the executable), then spec.Args. A
// command that is the bare name "ollama", or none, means ollama from $FRONTIER_OLLAMA, the
// PATH, or .cache/ollama/bin/ollama under the current folder, in that order.
func ollamaCommand(opts Options, spec Spec) ([]string, error) {
	argv := slices.Clone(spec.Command)
	if len(argv) == 0 || argv[0] == "ollama" {
		bin := ollamaLookupEnv(ollamaEnviron(opts), OllamaBinaryEnv)
		if bin == "" {
			if p, err := exec.LookPath("ollama"); err == nil {
				bin = p
			}
		}
		if bin == "" {
			if st, err := os.Stat(ollamaCachedBinary); err == nil && !st.IsDir() {
				bin, _ = filepath.Abs(ollamaCachedBinary)
			}
		}
		if bin == "" {
			return nil, fmt.Errorf("no ollama executable: put ollama on the PATH, set %s, build it with scripts/ollama.sh, or set the engine's command", OllamaBinaryEnv)
		}
		if len(argv) == 0 {
			argv = []string{bin}
		}
		argv[0] = bin
	}
	if !slices.Contains(argv[1:], "serve") {
		argv = append(argv, "serve")
	}
	return slices.Concat(argv, spec.Args), nil
}

// ollamaEngine runs `ollama serve`.
type ollamaEngine struct {
	opts Options
}

// NewOllama returns the engine that runs a real `ollama serve` on 127.0.0.1 for each trial,
// with its own models folder, and serves either a local GGUF (Spec.GGUF) as a model created
// with the trial's parameters and quantisation, or an installed model (Spec.Model).
func NewOllama(opts Options) Engine { return &ollamaEngine{opts: opts} }

// ollamaEnviron is the environment engines inherit: Options.Environ, or frontier's own.
func ollamaEnviron(opts Options) []string {
	if opts.Environ != nil {
		return opts.Environ
	}
	return os.Environ()
}

// ollamaLookupEnv is the value of key in environ, the last one when it is there twice.
func ollamaLookupEnv(environ []string, key string) string {
	for i := len(environ) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(environ[i], "="); ok && k == key {
			return v
		}
	}
	return ""
}

// machineName is the machine's name, or "" when it cannot be read.
func machineName() string {
	h, _ := os.Hostname()
	return h
}

// Name is "ollama".
func (e *ollamaEngine) Name() string { return "ollama" }

// ollamaPortAttempts is how often Start tries a fresh port when another process took the one
// it picked: that race says nothing about the configuration.
const ollamaPortAttempts = 3

// ollamaWarmupTokens is how many tokens the warm-up generation asks for.
const ollamaWarmupTokens = 4

// Start launches `ollama serve`, creates the model, waits until /v1/models lists it and a
// warm-up generation has loaded the runner, and returns the instance.
func (e *ollamaEngine) Start(ctx context.Context, spec Spec) (Instance, error) {
	cfg, err := OllamaSettings(spec)
	if err != nil {
		return nil, err
	}
	argv, err := ollamaCommand(e.opts, spec)
	if err != nil {
		return nil, &LaunchError{Class: FailInvalidArgs, Message: err.Error(), Err: err}
	}
	if spec.GGUF == "" && spec.Model == "" {
		err := errors.New("the ollama engine needs a model: a GGUF file (model.gguf) or an installed model's name")
		return nil, &LaunchError{Class: FailInvalidArgs, Message: err.Error(), Err: err}
	}
	if spec.GGUF != "" {
		if err := checkGGUF(spec.GGUF); err != nil {
			return nil, &LaunchError{Class: FailInvalidModel, Message: err.Error(), Err: err}
		}
	}
	timeout := spec.StartupTimeout
	if timeout <= 0 {
		timeout = engine.MustLookup(engine.Ollama).StartupTimeout
	}
	deadline := time.Now().Add(timeout)

	work := spec.WorkDir
	var ownWork bool
	if work == "" {
		if work, err = os.MkdirTemp("", "frontier-ollama-*"); err != nil {
			return nil, &LaunchError{Class: FailOther, Err: fmt.Errorf("ollama work folder: %w", err)}
		}
		ownWork = true
	}
	in := &ollamaInstance{spec: spec, cfg: cfg, grace: e.opts.GracePeriod, environ: ollamaEnviron(e.opts), pickPort: e.opts.Port}
	if ownWork {
		in.cleanup = append(in.cleanup, work)
	}
	env := map[string]string{
		"OLLAMA_KEEP_ALIVE":        "-1", // the runner stays loaded for the whole trial
		"OLLAMA_MAX_LOADED_MODELS": "1",
		"OLLAMA_NOPRUNE":           "true",
	}
	if spec.GGUF != "" {
		models := filepath.Join(work, "ollama-models")
		if err := os.MkdirAll(models, 0o755); err != nil {
			in.removeFiles()
			return nil, &LaunchError{Class: FailOther, Err: fmt.Errorf("ollama models folder: %w", err)}
		}
		in.cleanup = append(in.cleanup, models)
		env["OLLAMA_MODELS"] = models
	}
	maps.Copy(env, Env(spec)) // the plan's variables and the slot's CUDA_VISIBLE_DEVICES
	maps.Copy(env, cfg.Env)

	in.env = env
	for attempt := 1; ; attempt++ {
		err = in.serve(ctx, argv, env, deadline)
		var le *LaunchError
		if err == nil || !errors.As(err, &le) || le.Class != FailPortTaken || attempt == ollamaPortAttempts {
			break
		}
	}
	if err == nil {
		err = in.prepare(ctx, deadline)
	}
	if err != nil {
		in.abort()
		return nil, err
	}
	return in, nil
}

// checkGGUF reports whether path is a readable file that starts like a GGUF.
func checkGGUF(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("model file: %w", err)
	}
	defer f.Close()
	magic := make([]byte, 4)
	if _, err := io.ReadFull(f, magic); err != nil || string(magic) != "GGUF" {
		return fmt.Errorf("model file %s is not a GGUF file (it does not start with \"GGUF\")", path)
	}
	return nil
}

// ollamaInstance is a running `ollama serve` with its model created and loaded.
type ollamaInstance struct {
	spec    Spec
	cfg     OllamaConfig
	grace   time.Duration
	environ []string          // frontier's environment, which the server inherits
	env     map[string]string // the server's own variables, OLLAMA_HOST aside
	proc    *Process
	bin     string // the executable, for its version
	url     string
	client  *api.Client
	model   string   // the served model's name, as /v1/models lists it
	derived bool     // model was created from an installed model and is deleted on Stop
	cleanup []string // folders removed on Stop
	cap     Capacity
	prov    Provenance
	// pickPort picks the server's port (Options.Port); nil means FreePort.
	pickPort func() (int, error)

	stopOnce sync.Once
	stopErr  error
}

// serve starts `ollama serve` on a fresh port and waits until it answers.
func (in *ollamaInstance) serve(ctx context.Context, argv []string, env map[string]string, deadline time.Time) error {
	pick := in.pickPort
	if pick == nil {
		pick = FreePort
	}
	port, err := pick()
	if err != nil {
		return &LaunchError{Class: FailOther, Err: err}
	}
	host := "127.0.0.1:" + strconv.Itoa(port)
	env = maps.Clone(env)
	env["OLLAMA_HOST"] = host
	in.url = "http://" + host
	base, err := url.Parse(in.url)
	if err != nil {
		return &LaunchError{Class: FailOther, Err: err}
	}
	in.client = api.NewClient(base, LoopbackClient())

	secrets := in.spec.secrets(argv, env, in.environ)
	redacted := redact.Env(env, in.spec.SecretEnv)
	header := "# " + strings.Join(redact.Argv(argv, secrets), " ") + "\n"
	for _, k := range slices.Sorted(maps.Keys(redacted)) {
		header += "# " + k + "=" + redacted[k] + "\n"
	}
	proc, err := StartProcess(ctx, ProcessConfig{
		Argv:        argv,
		Env:         envList(ollamaBaseEnv(in.environ), env),
		Dir:         in.spec.WorkDir,
		LogPath:     in.spec.LogPath,
		LogHeader:   header,
		GracePeriod: in.grace,
		Redact:      secrets,
	})
	if err != nil {
		class := FailOther
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) {
			class = FailInvalidArgs
		}
		return &LaunchError{Class: class, Message: err.Error(), LogPath: in.spec.LogPath, Err: err}
	}
	in.proc = proc
	in.bin = argv[0]
	if p, err := exec.LookPath(argv[0]); err == nil {
		in.bin = p
	}
	in.prov = Provenance{
		Engine:  "ollama",
		Command: redact.Argv(argv, secrets),
		Env:     redacted,
		Host:    machineName(),
	}
	for _, g := range in.spec.GPUs {
		in.prov.GPUNames = append(in.prov.GPUNames, g.Name)
		in.prov.GPUUUIDs = append(in.prov.GPUUUIDs, g.UUID)
	}

	probe := func(ctx context.Context) error {
		_, err := in.client.Version(ctx)
		return err
	}
	if err := WaitReady(ctx, proc, time.Until(deadline), probe); err != nil {
		le := in.failure(err)
		if le.Class == FailPortTaken {
			_ = proc.Stop(context.WithoutCancel(ctx))
			in.proc = nil
		}
		return le
	}
	return nil
}

// ollamaBaseEnv is frontier's environment without the OLLAMA_* variables, so that a trial
// runs with its own settings only, except OLLAMA_MODELS where an installed model is served.
func ollamaBaseEnv(environ []string) []string {
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "OLLAMA_") && k != "OLLAMA_MODELS" {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// prepare creates the model, checks that /v1/models lists it, loads it with a warm-up
// generation and reads the capacity and version.
func (in *ollamaInstance) prepare(ctx context.Context, deadline time.Time) error {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	// The process dying ends every request at once.
	go func() {
		select {
		case <-in.proc.Exited():
			cancel()
		case <-ctx.Done():
		}
	}()
	steps := []func(context.Context) error{in.createModel, in.checkListed, in.warmUp}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			return in.failure(err)
		}
	}
	if err := in.checkWarnings(); err != nil {
		return err
	}
	in.cap = ollamaCapacity(in.proc.LogTail(1 << 20))
	in.prov.EngineVersion = in.version(ctx)
	return nil
}

// createModel creates the served model: from the GGUF, or derived from the installed model
// when the trial has parameters or a quantisation; otherwise the installed model is served
// as it is.
func (in *ollamaInstance) createModel(ctx context.Context) error {
	if in.spec.GGUF != "" {
		in.model = ollamaModelName(in.spec)
		modelfile := OllamaModelfile(in.spec.GGUF, in.cfg)
		if in.spec.WorkDir != "" {
			// Beside the log, for whoever wants to recreate the model by hand.
			_ = os.WriteFile(filepath.Join(in.spec.WorkDir, "Modelfile"), []byte(modelfile), 0o644)
		}
		digest, err := in.uploadBlob(ctx, in.spec.GGUF)
		if err != nil {
			return err
		}
		return in.create(ctx, &api.CreateRequest{
			Model:      in.model,
			Files:      map[string]string{filepath.Base(in.spec.GGUF): digest},
			Parameters: in.cfg.Parameters,
			Quantize:   in.cfg.Quantize,
		})
	}
	_, err := in.client.Show(ctx, &api.ShowRequest{Model: in.spec.Model})
	if err != nil {
		var se api.StatusError
		if errors.As(err, &se) && se.StatusCode == http.StatusNotFound {
			msg := fmt.Sprintf("model %q is not installed in this Ollama (pull it, or give model.gguf)", in.spec.Model)
			return &LaunchError{Class: FailModelNotFound, Message: msg, Err: err}
		}
		return fmt.Errorf("show model %s: %w", in.spec.Model, err)
	}
	if len(in.cfg.Parameters) == 0 && in.cfg.Quantize == "" {
		in.model = ollamaTagged(in.spec.Model)
		return nil
	}
	in.model = ollamaTagged(ollamaDerivedName(in.spec.Model, in.cfg))
	in.derived = true
	return in.create(ctx, &api.CreateRequest{
		Model:      in.model,
		From:       in.spec.Model,
		Parameters: in.cfg.Parameters,
		Quantize:   in.cfg.Quantize,
	})
}

// uploadBlob sends the file at path to the server's blob store and returns its digest.
func (in *ollamaInstance) uploadBlob(ctx context.Context, path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("model file: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("model file %s: %w", path, err)
	}
	digest := "sha256:" + hex.EncodeToString(h.Sum(nil))
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", fmt.Errorf("model file %s: %w", path, err)
	}
	if err := in.client.CreateBlob(ctx, digest, f); err != nil {
		return "", fmt.Errorf("upload %s: %w", path, err)
	}
	return digest, nil
}

// create runs /api/create and classifies Ollama's refusal.
func (in *ollamaInstance) create(ctx context.Context, req *api.CreateRequest) error {
	err := in.client.Create(ctx, req, func(api.ProgressResponse) error { return nil })
	if err == nil {
		return nil
	}
	msg := err.Error()
	var se api.StatusError
	if errors.As(err, &se) && se.ErrorMessage != "" {
		msg = se.ErrorMessage
	}
	if ctx.Err() != nil {
		return fmt.Errorf("create model %s: %w", req.Model, err)
	}
	class := FailInvalidModel
	switch {
	case strings.Contains(msg, "quantiz") || strings.Contains(msg, "unknown fileType"):
		class = FailUnsupported
	case strings.Contains(msg, "not found"):
		class = FailModelNotFound
	case strings.Contains(msg, "parameter") || strings.Contains(msg, "invalid model name"):
		class = FailInvalidArgs
	}
	return &LaunchError{Class: class, Message: "create model " + req.Model + ": " + msg, Err: err}
}

// checkListed checks that the OpenAI-compatible endpoint lists the model.
func (in *ollamaInstance) checkListed(ctx context.Context) error {
	var models struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := getOK(ctx, LoopbackClient(), in.url+"/v1/models", "", &models); err != nil {
		return err
	}
	var ids []string
	for _, m := range models.Data {
		if m.ID == in.model {
			return nil
		}
		ids = append(ids, m.ID)
	}
	return fmt.Errorf("/v1/models lists %q, not %q", ids, in.model)
}

// warmUp generates a few tokens, which loads the runner with the model's parameters, so that
// the first measured request does not pay for it.
func (in *ollamaInstance) warmUp(ctx context.Context) error {
	stream := false
	req := &api.GenerateRequest{
		Model:     in.model,
		Prompt:    "warm up",
		Stream:    &stream,
		KeepAlive: &api.Duration{Duration: -1},
		Options:   map[string]any{"num_predict": ollamaWarmupTokens},
	}
	err := in.client.Generate(ctx, req, func(api.GenerateResponse) error { return nil })
	if err != nil {
		return fmt.Errorf("warm-up generation: %w", err)
	}
	return nil
}

// checkWarnings fails the start when Ollama ignored a setting the trial asked for: measuring
// on would record a configuration that did not run. Ollama 0.6 runs flash attention, and so
// a quantised KV cache, only on GPUs.
func (in *ollamaInstance) checkWarnings() error {
	var ignored []string
	if fa, _ := strconv.ParseBool(in.env["OLLAMA_FLASH_ATTENTION"]); fa {
		ignored = append(ignored, "flash attention enabled but not supported by")
	}
	if kv := in.env["OLLAMA_KV_CACHE_TYPE"]; kv != "" {
		// Logged with an empty type whenever flash attention runs without a cache type.
		ignored = append(ignored, "kv cache type not supported by model")
	}
	ignored = append(ignored, "quantized kv cache requested but flash attention disabled")
	log := in.proc.LogTail(1 << 20)
	for _, line := range strings.Split(log, "\n") {
		for _, w := range ignored {
			if strings.Contains(line, w) {
				msg := ollamaMessage(line)
				return &LaunchError{Class: FailUnsupported, Message: msg, LogPath: in.proc.LogPath(), Err: errors.New(msg)}
			}
		}
	}
	return nil
}

// version is the server's version; a server built with `go install` says 0.0.0, so then the
// module version recorded in the executable.
func (in *ollamaInstance) version(ctx context.Context) string {
	v, err := in.client.Version(ctx)
	if err == nil && v != "" && v != "0.0.0" {
		return v
	}
	if bi, err := buildinfo.ReadFile(in.bin); err == nil && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return strings.TrimPrefix(bi.Main.Version, "v")
	}
	return v
}

// ollamaPattern maps an Ollama message to a failure class.
type ollamaPattern struct {
	class FailureClass
	re    *regexp.Regexp
}

// ollamaPatterns classify Ollama's messages, in its log or in an API error, the specific first.
func ollamaPatterns() []ollamaPattern {
	p := func(class FailureClass, expr string) ollamaPattern {
		return ollamaPattern{class, regexp.MustCompile(expr)}
	}
	return []ollamaPattern{
		p(FailPortTaken, `(?i)address already in use`),
		p(FailWeightsOOM, `requires more system memory|out of memory|unable to allocate`),
		p(FailModelNotFound, `model ['"].*['"] not found|file does not exist`),
		p(FailInvalidModel, `error loading model|unknown model architecture|invalid file magic|not in GGUF format|unsupported model format|failed to load model`),
		p(FailCrash, `llama runner process has terminated|exit status|signal: `),
	}
}

// ClassifyOllama says why an Ollama server failed to start or to load its model, from an
// error message (of the API, or "") and the server's log, and returns Ollama's own words. A
// message no pattern knows is a FailCrash with errMsg, or the log's last error line.
func ClassifyOllama(errMsg, log string) (FailureClass, string) {
	lines := append([]string{errMsg}, strings.Split(log, "\n")...)
	for _, fp := range ollamaPatterns() {
		for _, line := range lines {
			if fp.re.MatchString(line) {
				return fp.class, ollamaMessage(line)
			}
		}
	}
	if errMsg != "" {
		return FailCrash, errMsg
	}
	return FailCrash, ollamaLastLine(log)
}

// ollamaLastLine is the log's last error line (Error:, panic:, level=ERROR), or its last line
// that is neither frontier's header nor an access log entry.
func ollamaLastLine(log string) string {
	lines := strings.Split(log, "\n")
	last := ""
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, "[GIN") {
			continue
		}
		if strings.HasPrefix(l, "Error:") || strings.HasPrefix(l, "panic:") || strings.Contains(l, "level=ERROR") {
			return ollamaMessage(l)
		}
		if last == "" {
			last = ollamaMessage(l)
		}
	}
	return last
}

// ollamaLogRE matches slog's text lines: time=... level=... source=... msg="..." and the rest.
var ollamaLogRE = regexp.MustCompile(`^time=\S+ level=\S+ source=\S+ (msg=)?`)

// ollamaMessage strips the log prefix of an Ollama log line.
func ollamaMessage(line string) string {
	line = strings.TrimSpace(ollamaLogRE.ReplaceAllString(strings.TrimSpace(line), ""))
	if len(line) > 2000 {
		line = line[:2000] + "..."
	}
	return line
}

// ollamaLogSettle bounds the wait for Ollama's log to show why a request of the start failed.
const ollamaLogSettle = time.Second

// failure turns an error of the start into a *LaunchError, classified from the error and the
// server's log.
func (in *ollamaInstance) failure(err error) *LaunchError {
	var le *LaunchError
	logPath := in.spec.LogPath
	var log string
	if in.proc != nil {
		logPath = in.proc.LogPath()
		if errors.Is(err, ErrExitedEarly) || in.exited() {
			// Let the log catch up with an exit that has just happened.
			<-in.proc.Exited()
		}
		log = in.proc.LogTail(64 << 10)
	}
	if errors.As(err, &le) {
		if le.LogPath == "" {
			le.LogPath = logPath
		}
		return le
	}
	switch {
	case errors.Is(err, ErrStartupTimeout) || errors.Is(err, context.DeadlineExceeded) && !in.exited():
		return &LaunchError{Class: FailStartupTimeout, Message: ollamaMessage(err.Error()), LogPath: logPath, Err: err}
	case errors.Is(err, context.Canceled) && !in.exited():
		return &LaunchError{Class: FailOther, Message: err.Error(), LogPath: logPath, Err: err}
	}
	msg := err.Error()
	var se api.StatusError
	if errors.As(err, &se) && se.ErrorMessage != "" {
		msg = se.ErrorMessage
	}
	if errors.Is(err, ErrExitedEarly) {
		msg = "" // the server's own words are in its log
	}
	class, message := ClassifyOllama(msg, log)
	if class == FailCrash && in.proc != nil && !in.exited() {
		// The server answered (a 500 from the warm-up) before its log caught up with what its
		// runner wrote about the failure: read the log again for a moment.
		for settle := time.Now().Add(ollamaLogSettle); class == FailCrash && time.Now().Before(settle); {
			time.Sleep(50 * time.Millisecond)
			log = in.proc.LogTail(64 << 10)
			class, message = ClassifyOllama(msg, log)
		}
	}
	if in.exited() && class == FailCrash && msg != "" {
		// A request cut short by the server's death: its log says why.
		_, message = ClassifyOllama("", log)
	}
	return &LaunchError{Class: class, Message: message, LogPath: logPath, Err: err}
}

func (in *ollamaInstance) exited() bool {
	if in.proc == nil {
		return false
	}
	select {
	case <-in.proc.Exited():
		return true
	default:
		return false
	}
}

// ollamaCapacityRE reads the runner's command line that Ollama logs when it loads a model.
var (
	ollamaCtxRE      = regexp.MustCompile(`--ctx-size (\d+)`)
	ollamaParallelRE = regexp.MustCompile(`--parallel (\d+)`)
)

// ollamaCapacity reads the runner's context size (tokens of KV cache, shared by its parallel
// slots) and parallel slots from the last "starting llama server" line of the log.
func ollamaCapacity(log string) Capacity {
	var c Capacity
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, "starting llama server") {
			continue
		}
		if m := ollamaCtxRE.FindStringSubmatch(line); m != nil {
			c.KVCacheTokens, _ = strconv.Atoi(m[1])
		}
		if m := ollamaParallelRE.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[1])
			c.MaxConcurrency = float64(n)
		}
	}
	return c
}

// ollamaModelName is the name of the model created from a GGUF: Spec.Model when it is a
// valid Ollama name, otherwise "frontier-" and the file's base name.
func ollamaModelName(spec Spec) string {
	name := spec.Model
	if name == "" || !ollamaNameRE.MatchString(name) {
		base := strings.TrimSuffix(filepath.Base(spec.GGUF), filepath.Ext(spec.GGUF))
		name = "frontier-" + strings.ToLower(ollamaBadChars.ReplaceAllString(base, "-"))
	}
	return ollamaTagged(name)
}

var (
	ollamaNameRE   = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._-]{0,79}(:[a-zA-Z0-9_][a-zA-Z0-9._-]{0,79})?$`)
	ollamaBadChars = regexp.MustCompile(`[^a-zA-Z0-9._-]+`)
)

// ollamaTagged adds Ollama's default tag to a name without one, as /v1/models lists it.
func ollamaTagged(name string) string {
	if i := strings.LastIndexByte(name, '/'); strings.Contains(name[i+1:], ":") {
		return name
	}
	return name + ":latest"
}

// ollamaDerivedName names the model derived from an installed one for a trial's parameters.
func ollamaDerivedName(model string, cfg OllamaConfig) string {
	h := sha256.New()
	fmt.Fprint(h, OllamaModelfile(model, cfg))
	base, _, _ := strings.Cut(model, ":")
	if i := strings.LastIndexByte(base, '/'); i >= 0 {
		base = base[i+1:]
	}
	return base + "-frontier-" + hex.EncodeToString(h.Sum(nil))[:12]
}

// abort stops whatever a failed Start left running.
func (in *ollamaInstance) abort() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = in.Stop(ctx)
}

// URL is the server's base URL.
func (in *ollamaInstance) URL() string { return in.url }

// ServedModel is the created (or installed) model's name.
func (in *ollamaInstance) ServedModel() string { return in.model }

// RequestOptions is nil: every load-time parameter is in the model, so requests need none.
func (in *ollamaInstance) RequestOptions() map[string]any { return nil }

// Capacity is the runner's context size and parallel slots.
func (in *ollamaInstance) Capacity() Capacity { return in.cap }

// Provenance is what was launched.
func (in *ollamaInstance) Provenance() Provenance { return in.prov }

// Exited is closed when `ollama serve` has exited.
func (in *ollamaInstance) Exited() <-chan struct{} { return in.proc.Exited() }

// Pid is the server's process id, which is also its process group id.
func (in *ollamaInstance) Pid() int { return in.proc.Pid() }

// LogPath is the server's log file.
func (in *ollamaInstance) LogPath() string { return in.proc.LogPath() }

// Modelfile renders the Modelfile of the served model.
func (in *ollamaInstance) Modelfile() string {
	from := in.spec.GGUF
	if from == "" {
		from = in.spec.Model
	}
	return OllamaModelfile(from, in.cfg)
}

// Failure says why the server exited on its own after it was ready, from its log, or nil
// while it runs and after Stop.
func (in *ollamaInstance) Failure() *LaunchError {
	if in.proc == nil || !in.exited() || in.proc.Stopped() {
		return nil
	}
	class, msg := ClassifyOllama("", in.proc.LogTail(64<<10))
	if class == FailPortTaken || class == FailInvalidArgs {
		class = FailCrash // a server that was ready did not fail on its port or flags
	}
	if msg == "" {
		msg = "ollama serve exited"
	}
	return &LaunchError{Class: class, Message: msg, LogPath: in.proc.LogPath(), Err: in.proc.ExitErr()}
}

// Stop deletes a model derived from an installed one, stops the server's process group and
// removes the instance's own models folder. It is safe to call more than once.
func (in *ollamaInstance) Stop(ctx context.Context) error {
	in.stopOnce.Do(func() {
		var errs []error
		if in.derived && in.proc != nil && !in.exited() {
			dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			if err := in.client.Delete(dctx, &api.DeleteRequest{Model: in.model}); err != nil {
				errs = append(errs, fmt.Errorf("delete model %s: %w", in.model, err))
			}
			cancel()
		}
		if in.proc != nil {
			if err := in.proc.Stop(ctx); err != nil {
				errs = append(errs, err)
			}
		}
		if err := in.removeFiles(); err != nil {
			errs = append(errs, err)
		}
		in.stopErr = errors.Join(errs...)
	})
	return in.stopErr
}

// removeFiles removes the instance's own folders.
func (in *ollamaInstance) removeFiles() error {
	var errs []error
	for _, dir := range in.cleanup {
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", dir, err))
		}
	}
	return errors.Join(errs...)
}

// Compile-time checks of the adapter's types.
var (
	_ Engine   = (*ollamaEngine)(nil)
	_ Instance = (*ollamaInstance)(nil)
)

// LogError is the first failure to write the server's log, or nil.
func (in *ollamaInstance) LogError() error {
	if in.proc == nil {
		return nil
	}
	return in.proc.LogError()
}
