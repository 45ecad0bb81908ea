package launcher

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/frontier-llm/frontier/engine"
	"github.com/frontier-llm/frontier/hw"
	"github.com/frontier-llm/frontier/hw/nvml"
	"github.com/frontier-llm/frontier/redact"
	"github.com/frontier-llm/frontier/vllm"
)

// Engine kinds New knows.
const (
	KindVLLM   = "vllm"
	KindSim    = "sim"
	KindOllama = "ollama"
)

// Defaults of the adapters.
const (
	// DefaultMemoryReleaseTimeout applies when Options.MemoryReleaseTimeout is zero.
	DefaultMemoryReleaseTimeout = 2 * time.Minute
	// portAttempts is how often Start tries a fresh port when the last one was taken.
	portAttempts = 3
	// logTailBytes is how much of the end of an engine's log is read to classify a failure.
	logTailBytes = 64 << 10
	// logHeadBytes is how much of an engine's log is read for its capacity lines.
	logHeadBytes = 4 << 20
)

// New returns the engine adapter of kind: "vllm", "sim" or "ollama".
func New(kind string, opts Options) (Engine, error) {
	switch kind {
	case KindVLLM:
		return newOpenAIEngine(KindVLLM, opts), nil
	case KindSim:
		if opts.FrontierBinary == "" {
			exe, err := os.Executable()
			if err != nil {
				return nil, fmt.Errorf("engine sim: find the frontier binary: %w", err)
			}
			opts.FrontierBinary = exe
		}
		return newOpenAIEngine(KindSim, opts), nil
	case KindOllama:
		return NewOllama(opts), nil
	}
	return nil, fmt.Errorf("unknown engine %q: want vllm, sim or ollama", kind)
}

// openAIEngine is the adapter for vLLM and for the simulated vLLM, which share flags,
// endpoints, log lines and failure messages.
type openAIEngine struct {
	kind string
	opts Options

	mu       sync.Mutex
	versions map[string]string // program -> its --version output
	// versionNotes says, per program, why its version is unknown; it goes into every log.
	versionNotes map[string]string
	// hostModels are the installed vLLM's flag models, by command (UseHostModel).
	hostModels map[string]*vllm.Version
	driver     string
	detected   bool // driver was looked up
}

func newOpenAIEngine(kind string, opts Options) *openAIEngine {
	if opts.GracePeriod <= 0 {
		opts.GracePeriod = DefaultGracePeriod
	}
	if opts.MemoryReleaseTimeout <= 0 {
		opts.MemoryReleaseTimeout = DefaultMemoryReleaseTimeout
	}
	if opts.VersionTimeout <= 0 {
		opts.VersionTimeout = DefaultVersionTimeout
	}
	return &openAIEngine{kind: kind, opts: opts, versions: map[string]string{}, versionNotes: map[string]string{},
		hostModels: map[string]*vllm.Version{}}
}

// Name is the engine kind.
func (e *openAIEngine) Name() string { return e.kind }

// command is the engine's command before the model: the plan's, or the adapter's default.
func (e *openAIEngine) command(spec Spec) []string {
	if len(spec.Command) > 0 {
		return spec.Command
	}
	if e.kind == KindSim {
		return []string{e.opts.FrontierBinary, "sim", "serve"}
	}
	return []string{"vllm", "serve"}
}

// vllmVersion is the vLLM line whose argparse the command line is built for: the installed
// version found by the preflight or `--version`, else the plan's engine.version, else the
// current line. A version frontier does not model falls back the same way.
func vllmVersion(installed, planned string) *vllm.Version {
	installed, _, _ = strings.Cut(strings.TrimSpace(installed), "+") // "0.13.0+cu129"
	for _, v := range []string{installed, planned, vllm.Current} {
		if v == "" {
			continue
		}
		if ver, err := vllm.Lookup(v); err == nil {
			return ver
		}
	}
	return nil
}

// Argv is the complete command line that starts the engine for spec on port.
func (e *openAIEngine) Argv(spec Spec, port int) ([]string, error) {
	return e.argv(spec, port, "")
}

// argv builds the command line with booleans as the installed version (if known) parses them.
func (e *openAIEngine) argv(spec Spec, port int, installed string) ([]string, error) {
	argv := append([]string{}, e.command(spec)...)
	if spec.ModelAsFlag {
		argv = append(argv, "--model", spec.Model)
	} else {
		argv = append(argv, spec.Model)
	}
	if e.kind == KindSim {
		if spec.SKU != "" && !hasSetting(spec.Settings, "sku") {
			argv = append(argv, "--sku", spec.SKU)
		}
		// --architecture takes a catalog entry or a Hugging Face config.json.
		if spec.Architecture != "" {
			argv = append(argv, "--architecture", spec.Architecture)
		} else if spec.ConfigJSON != "" {
			argv = append(argv, "--architecture", spec.ConfigJSON)
		}
	}
	argv = append(argv, spec.Args...)
	// The host's own flag model when the preflight read one, else the table of its line.
	model := e.hostModel(e.command(spec))
	if model == nil {
		model = vllmVersion(installed, spec.Version)
	}
	if spec.Role != "" {
		argv = append(argv, "--kv-transfer-config", kvTransferConfig(model, spec.Role))
	}
	flags, err := VLLMFlags(model, spec.Settings)
	if err != nil {
		return nil, err
	}
	argv = append(argv, flags...)
	if spec.MaxModelLen > 0 && !hasSetting(spec.Settings, "max_model_len") {
		argv = append(argv, "--max-model-len", strconv.Itoa(spec.MaxModelLen))
	}
	argv = append(argv, "--served-model-name", spec.Model)
	if !spec.NoHostFlag {
		argv = append(argv, "--host", "127.0.0.1")
	}
	return append(argv, "--port", strconv.Itoa(port)), nil
}

func hasSetting(settings []Setting, name string) bool {
	for _, s := range settings {
		if s.Name == name {
			return true
		}
	}
	return false
}

// VLLMFlags turns knob settings into vLLM flags, in order: vllm.KnobArgs, the one mapping
// the launcher and the exports share (a setting x_y is --x-y VALUE; booleans as version v's
// argparse takes them; quantization "none" and kv_offloading_size 0 pass no flag).
func VLLMFlags(ver *vllm.Version, settings []Setting) ([]string, error) {
	vs := make([]vllm.Setting, len(settings))
	for i, s := range settings {
		vs[i] = vllm.Setting(s)
	}
	return vllm.KnobArgs(ver, vs)
}

// Env is the engine's environment beyond the inherited one: the plan's variables, and
// CUDA_VISIBLE_DEVICES from the slot (with CUDA_DEVICE_ORDER=PCI_BUS_ID, so that CUDA numbers
// the GPUs as NVML does) unless the slot is empty.
func Env(spec Spec) map[string]string {
	env := make(map[string]string, len(spec.Env)+2)
	for k, v := range spec.Env {
		env[k] = v
	}
	if len(spec.GPUs) > 0 {
		ids := make([]string, len(spec.GPUs))
		for i, g := range spec.GPUs {
			ids[i] = strconv.Itoa(g.Index)
		}
		env["CUDA_VISIBLE_DEVICES"] = strings.Join(ids, ",")
		if _, ok := env["CUDA_DEVICE_ORDER"]; !ok {
			env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
		}
	}
	return env
}

// Start launches the engine for spec and returns once it serves spec.Model, or fails with a
// *LaunchError. A taken port is retried with a fresh one, twice. An engine program that
// cannot be found is a plain error wrapping exec.ErrNotFound or fs.ErrNotExist.
func (e *openAIEngine) Start(ctx context.Context, spec Spec) (Instance, error) {
	if spec.Model == "" {
		return nil, &LaunchError{Class: FailInvalidArgs, Message: "no model to serve"}
	}
	if _, err := VLLMFlags(nil, spec.Settings); err != nil {
		return nil, &LaunchError{Class: FailInvalidArgs, Message: err.Error(), Err: err}
	}
	// A missing engine program fails every trial alike: that is the study's error, not a
	// configuration's, so it is not a *LaunchError.
	program := e.command(spec)[0]
	if _, err := exec.LookPath(program); err != nil {
		return nil, fmt.Errorf("engine %s: %w; install it, or set command in the engine block", e.kind, err)
	}
	version := e.version(ctx, program, spec)
	var err error
	for attempt := 0; attempt < portAttempts; attempt++ {
		var inst Instance
		inst, err = e.start(ctx, spec, version)
		var le *LaunchError
		if err == nil || !errors.As(err, &le) || le.Class != FailPortTaken {
			return inst, err
		}
	}
	return nil, err
}

// start is one attempt of Start.
func (e *openAIEngine) start(ctx context.Context, spec Spec, version string) (Instance, error) {
	pick := e.opts.Port
	if pick == nil {
		pick = FreePort
	}
	port, err := pick()
	if err != nil {
		return nil, &LaunchError{Class: FailOther, Err: err}
	}
	argv, err := e.argv(spec, port, version)
	if err != nil {
		return nil, &LaunchError{Class: FailInvalidArgs, Message: err.Error(), Err: err}
	}
	env := Env(spec)
	// vLLM reads its API key from VLLM_API_KEY as well as --api-key: the environment keeps
	// it out of the process table, where any user of the host could read it.
	argv, key := moveAPIKey(argv, env)
	if key == "" {
		key = envValue(e.environ(), env, "VLLM_API_KEY")
	}
	secrets := spec.secrets(argv, env, e.environ())
	if key != "" {
		secrets = append(secrets, key)
	}
	prov := Provenance{
		Engine:        e.kind,
		EngineVersion: version,
		Command:       redact.Argv(argv, secrets),
		Env:           redact.Env(env, spec.SecretEnv),
		Driver:        e.driverFor(spec.GPUs),
		Host:          launchHost(),
	}
	for _, g := range spec.GPUs {
		prov.GPUNames = append(prov.GPUNames, g.Name)
		prov.GPUUUIDs = append(prov.GPUUUIDs, g.UUID)
	}
	p, err := StartProcess(ctx, ProcessConfig{
		Argv:        argv,
		Env:         envList(e.environ(), env),
		Dir:         spec.WorkDir,
		LogPath:     spec.LogPath,
		LogHeader:   logHeader(prov, e.versionNote(argv[0])),
		GracePeriod: e.opts.GracePeriod,
		Redact:      secrets,
	})
	if err != nil {
		return nil, &LaunchError{Class: FailOther, Message: err.Error(), LogPath: spec.LogPath, Err: err}
	}
	inst := &openAIInstance{
		proc:        p,
		url:         fmt.Sprintf("http://127.0.0.1:%d", port),
		model:       spec.Model,
		gpus:        spec.GPUs,
		prov:        prov,
		releaseWait: e.opts.MemoryReleaseTimeout,
		maxModelLen: maxModelLen(spec),
		apiKey:      key,
	}
	timeout := spec.StartupTimeout
	if timeout <= 0 {
		timeout = engine.MustLookup(e.kind).StartupTimeout
	}
	client := LoopbackClient()
	probe := failFast(p, openAIProbe(client, inst.url, spec.Model, key))
	if err := WaitReady(ctx, p, timeout, probe); err != nil {
		// All-or-nothing: nothing stays running, and the GPUs are released, before returning.
		stopErr := inst.Stop(context.WithoutCancel(ctx))
		return nil, launchFailure(err, p, timeout, stopErr)
	}
	log := p.LogHead(logHeadBytes)
	if c, ok := ParseCapacityLog(log); ok {
		inst.capacity = c
	} else {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		inst.capacity, _ = scrapeCapacity(sctx, client, inst.url, inst.maxModelLen)
		cancel()
	}
	return inst, nil
}

// launchFailure turns WaitReady's error into a *LaunchError, reading the engine's log.
func launchFailure(err error, p *Process, timeout time.Duration, stopErr error) *LaunchError {
	le := &LaunchError{LogPath: p.LogPath(), Err: err}
	tail := p.LogTail(logTailBytes)
	c := ClassifyVLLMLog(tail)
	switch {
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		le.Class = FailOther
		le.Message = "interrupted while the engine was starting"
	case errors.Is(err, ErrUnauthorized):
		le.Class = FailOther
		le.Message = err.Error()
	case errors.Is(err, ErrStartupTimeout):
		le.Class = FailStartupTimeout
		le.Message = fmt.Sprintf("not ready within the startup timeout of %s", timeout)
		if last := lastMessage(strings.Split(tail, "\n")); last != "" {
			le.Message += "; last log line: " + last
		}
	default: // exited, or a fatal message in the log
		le.Class, le.Message, le.EstimatedMaxModelLen = c.Class, c.Message, c.EstimatedMaxModelLen
		if le.Message == "" {
			le.Message = fmt.Sprintf("exited with status %d and an empty log", p.ExitCode())
		}
	}
	if stopErr != nil {
		le.Err = errors.Join(err, stopErr)
	}
	if logErr := p.LogError(); logErr != nil {
		// The log the class was read from is incomplete: frontier's failure, not the engine's.
		le.Class, le.Message = FailOther, logErr.Error()
		le.Err = errors.Join(le.Err, logErr)
	}
	return le
}

// fatalLogRE matches the lines after which vLLM will not become ready, though its API server
// may linger.
var fatalLogRE = regexp.MustCompile(`Engine core initialization failed`)

// failFast wraps probe so that a fatal line in the log ends the wait at once.
func failFast(p *Process, probe ProbeFunc) ProbeFunc {
	return func(ctx context.Context) error {
		err := probe(ctx)
		if err == nil {
			return nil
		}
		if fatalLogRE.MatchString(p.LogTail(logTailBytes)) {
			return fmt.Errorf("%w: the log says the engine core failed", ErrFatal)
		}
		return err
	}
}

func maxModelLen(spec Spec) int {
	for _, s := range spec.Settings {
		if s.Name == "max_model_len" {
			switch v := s.Value.(type) {
			case int64:
				return int(v)
			case int:
				return v
			case float64:
				return int(v)
			}
		}
	}
	return spec.MaxModelLen
}

func (e *openAIEngine) environ() []string {
	if e.opts.Environ != nil {
		return e.opts.Environ
	}
	return os.Environ()
}

// version finds the engine's version once per program, as the preflight does: the first
// line that starts with MAJOR.MINOR in `PROGRAM --version`, else in `COMMAND --version`
// (engine sim: the first line of `frontier --version`).
// The probes are bounded by Options.VersionTimeout and, like an engine, die with frontier (the
// kernel's parent-death signal) and take their process group with them when they end. A probe
// that fails or does not answer in time leaves the version unknown, with a note for the logs;
// so does a version newer than frontier's newest table, with the line that stands in for it.
func (e *openAIEngine) version(ctx context.Context, program string, spec Spec) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if v, ok := e.versions[program]; ok {
		return v
	}
	command := slices.Clone(e.command(spec))
	command[0] = program
	environ := envList(e.environ(), spec.Env)
	var v string
	var err error
	if e.kind == KindSim {
		// The simulator's provenance is frontier's own version ("frontier 0.1.0").
		var out string
		out, err = probe(ctx, []string{program, "--version"}, environ, e.opts.VersionTimeout)
		v, _, _ = strings.Cut(strings.TrimSpace(out), "\n")
	} else {
		v, _, err = probeVersion(ctx, command, environ, e.opts.VersionTimeout)
	}
	switch {
	case ctx.Err() != nil:
		return "" // interrupted: neither a version nor a fact about the program
	case err != nil:
		e.versionNotes[program] = fmt.Sprintf("%v; the version is unknown", err)
	case e.kind == KindVLLM:
		if ver := vllmVersion(v, ""); ver != nil && ver.Warning != "" {
			e.versionNotes[program] = ver.Warning
		}
	}
	e.versions[program] = v
	return v
}

// versionNote is why program's version is unknown, or "".
func (e *openAIEngine) versionNote(program string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.versionNotes[program]
}

// moveAPIKey takes a single --api-key value out of argv and puts it into env as
// VLLM_API_KEY, which vLLM reads instead; it returns the new argv and the key. Several keys
// (vLLM takes a list) cannot go into the one variable: argv is left as it is and the first
// key is returned.
func moveAPIKey(argv []string, env map[string]string) ([]string, string) {
	for i := 0; i < len(argv); i++ {
		a := argv[i]
		switch {
		case strings.HasPrefix(a, "--api-key="):
			key := strings.TrimPrefix(a, "--api-key=")
			env["VLLM_API_KEY"] = key
			return append(argv[:i:i], argv[i+1:]...), key
		case a == "--api-key" && i+1 < len(argv):
			key := argv[i+1]
			if i+2 < len(argv) && !strings.HasPrefix(argv[i+2], "-") {
				return argv, key // a list of keys
			}
			env["VLLM_API_KEY"] = key
			return append(argv[:i:i], argv[i+2:]...), key
		}
	}
	return argv, ""
}

// envValue is the value of name in env, else in environ ("KEY=value"), else "".
func envValue(environ []string, env map[string]string, name string) string {
	if v, ok := env[name]; ok {
		return v
	}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v
		}
	}
	return ""
}

// driverFor is the NVIDIA driver version for provenance: Options.Driver, or NVML's, looked
// up once, when the slot has real GPUs.
func (e *openAIEngine) driverFor(gpus []hw.GPU) string {
	if e.opts.Driver != "" {
		return e.opts.Driver
	}
	real := false
	for _, g := range gpus {
		real = real || (!g.Virtual && g.UUID != "")
	}
	if !real {
		return ""
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.detected {
		e.driver = nvml.Detect().DriverVersion
		e.detected = true
	}
	return e.driver
}

// launchHost is this host's name for provenance, or "" when the kernel will not say.
func launchHost() string {
	h, err := os.Hostname()
	if err != nil {
		return ""
	}
	return h
}

// logHeader is written at the top of an engine's log: what was launched, secrets redacted,
// and note, when not empty, on a line of its own.
func logHeader(p Provenance, note string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# frontier: engine %s", p.Engine)
	if p.EngineVersion != "" {
		fmt.Fprintf(&b, " (%s)", p.EngineVersion)
	}
	fmt.Fprintf(&b, " on %s\n", p.Host)
	if note != "" {
		fmt.Fprintf(&b, "# note: %s\n", note)
	}
	fmt.Fprintf(&b, "# command: %s\n", shellQuote(p.Command))
	keys := make([]string, 0, len(p.Env))
	for k := range p.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "# env: %s=%s\n", k, p.Env[k])
	}
	for i := range p.GPUUUIDs {
		fmt.Fprintf(&b, "# gpu: %s %s\n", p.GPUNames[i], p.GPUUUIDs[i])
	}
	b.WriteString("\n")
	return b.String()
}

// shellQuote renders argv for a person to read or paste into a shell. It is never executed.
func shellQuote(argv []string) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=,@+%", r))
		}) < 0 {
			parts[i] = a
			continue
		}
		parts[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(parts, " ")
}

// openAIInstance is a running vLLM or simulated vLLM.
type openAIInstance struct {
	proc        *Process
	url         string
	model       string
	gpus        []hw.GPU
	prov        Provenance
	capacity    Capacity
	maxModelLen int
	releaseWait time.Duration
	apiKey      string

	stopOnce sync.Once
	stopErr  error
}

func (i *openAIInstance) URL() string                    { return i.url }
func (i *openAIInstance) ServedModel() string            { return i.model }
func (i *openAIInstance) RequestOptions() map[string]any { return nil }
func (i *openAIInstance) Capacity() Capacity             { return i.capacity }
func (i *openAIInstance) Provenance() Provenance         { return i.prov }
func (i *openAIInstance) Exited() <-chan struct{}        { return i.proc.Exited() }

// APIKey is the key the engine enforces, to be sent with every request, or "".
func (i *openAIInstance) APIKey() string { return i.apiKey }

// APIKey is the API key inst's engine enforces (its --api-key or VLLM_API_KEY), which every
// request to it must carry as a bearer token; "" when it enforces none or the adapter cannot
// tell.
func APIKey(inst Instance) string {
	if k, ok := inst.(interface{ APIKey() string }); ok {
		return k.APIKey()
	}
	return ""
}

// Pid is the engine's process id, which is also its process group id.
func (i *openAIInstance) Pid() int { return i.proc.Pid() }

// Stop stops the process group, then waits until the slot's GPU memory is released.
func (i *openAIInstance) Stop(ctx context.Context) error {
	i.stopOnce.Do(func() {
		err := i.proc.Stop(ctx)
		if werr := nvml.WaitMemoryReleased(ctx, i.gpus, i.releaseWait); werr != nil {
			err = errors.Join(err, werr)
		}
		i.stopErr = err
	})
	return i.stopErr
}

// Failure says why the engine exited on its own after it was ready, or nil while it runs or
// after Stop.
func (i *openAIInstance) Failure() *LaunchError {
	select {
	case <-i.proc.Exited():
	default:
		return nil
	}
	if i.proc.Stopped() {
		return nil
	}
	return diedFailure("the engine", i.proc, ClassifyVLLMLog)
}

// diedFailure says why the process p of a server that was ready exited on its own. Killed by
// a signal from outside (a user, the kernel's out-of-memory killer), it is "the engine (pid
// N) exited with signal KILL" and nothing more: nothing in the log is about the kill. After
// an exit status or a signal the program raises itself (SEGV, ABRT), it is the log's failure
// as classify reads it, else the log's last error line, else "... exited with status N".
func diedFailure(what string, p *Process, classify func(string) Classification) *LaunchError {
	status := p.ExitStatus()
	le := &LaunchError{Class: FailCrash, LogPath: p.LogPath(), Err: p.ExitErr(),
		Message: fmt.Sprintf("%s (pid %d) exited with %s", what, p.Pid(), status)}
	if strings.HasPrefix(status, "signal ") && !selfInflicted(status) {
		return le
	}
	tail := p.LogTail(logTailBytes)
	c := classify(tail)
	switch c.Class {
	case FailInvalidArgs, FailPortTaken:
		c.Class = FailCrash // a server that was ready did not fail on its flags
	case FailUnknown:
		// A server that was ready and exits without an exception has crashed: its last
		// error line says most.
		c.Class, c.Message = FailCrash, lastMessage(strings.Split(tail, "\n"))
		if c.Message == "" {
			return le
		}
	}
	le.Class, le.Message, le.EstimatedMaxModelLen = c.Class, c.Message, c.EstimatedMaxModelLen
	return le
}

// Failure says why inst's engine exited on its own after it became ready: a *LaunchError,
// usually FailCrash or an out-of-memory class, with the engine's last message. It is nil while
// the engine runs, after Stop, and for adapters that cannot tell.
func Failure(inst Instance) *LaunchError {
	if f, ok := inst.(interface{ Failure() *LaunchError }); ok {
		return f.Failure()
	}
	return nil
}

// The adapters implement the interfaces.
var (
	_ Engine   = (*openAIEngine)(nil)
	_ Instance = (*openAIInstance)(nil)
)

// LogError is the first failure to write the engine's log, or nil.
func (i *openAIInstance) LogError() error { return i.proc.LogError() }
