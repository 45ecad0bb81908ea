package launcher

import (
	"context"
	"time"

	"github.com/frontier-llm/frontier/hw"
	"github.com/frontier-llm/frontier/record"
	"github.com/frontier-llm/frontier/redact"
)

// Setting is one knob value handed to an engine, in the plan's declaration order (for vLLM,
// a vllm.Setting, which vllm.KnobArgs maps to flags).
type Setting struct {
	Name  string
	Value any // int64, float64, string or bool
}

// Spec is everything needed to start one engine instance for one trial.
type Spec struct {
	Command        []string // the engine's command; empty means the adapter's default
	Args           []string // extra arguments from the plan
	Env            map[string]string
	Model          string // what the engine loads and serves
	Architecture   string // catalog architecture (sim)
	ConfigJSON     string // local HF config.json (sim)
	GGUF           string // local GGUF file (ollama)
	MaxModelLen    int
	SKU            string // GPU SKU (sim, and checks against NVML)
	Settings       []Setting
	GPUs           []hw.GPU // the slot; GPU indices go to CUDA_VISIBLE_DEVICES
	LogPath        string   // the engine's stdout and stderr go here
	WorkDir        string   // scratch folder for the instance (ollama models, ...)
	StartupTimeout time.Duration
	// SecretEnv names environment variables whose values are redacted in provenance.
	SecretEnv []string
	// Version is the vLLM release line the plan is written for (engine.version); empty means
	// the current line. The version the engine reports wins when frontier models it.
	Version string
	// ModelAsFlag passes the model as --model MODEL instead of positionally, and NoHostFlag
	// leaves out --host, for vLLM-compatible servers with another command line.
	ModelAsFlag, NoHostFlag bool
	// Role is the instance's part in a prefill/decode disaggregated deployment (RolePrefill
	// or RoleDecode; see WithKVTransfer): its command line gets vLLM's NixlConnector with the
	// kv_role that the vLLM line the flags are built for documents for the role. Empty for a
	// single engine.
	Role string
	// SecretValues are values the plan declares secret (those of sensitive variables),
	// wherever they appear in Args or Env: they are redacted in provenance and in the log.
	SecretValues []string
}

// secrets returns the secret values of one launch of spec: the plan's declared ones, those
// of secret variables in env and environ, and those of secret flags in argv.
func (s Spec) secrets(argv []string, env map[string]string, environ []string) []string {
	return redact.Values(argv, env, environ, s.SecretEnv, s.SecretValues)
}

// Capacity is what the engine reported about itself at startup.
type Capacity = record.Capacity

// Provenance records exactly what was launched, with secrets redacted.
type Provenance = record.Launch

// Instance is a running engine that serves requests.
type Instance interface {
	// URL is the base URL, e.g. "http://127.0.0.1:41234".
	URL() string
	// ServedModel is the model name to put in requests.
	ServedModel() string
	// RequestOptions are extra fields every request must carry (Ollama's options), or nil.
	RequestOptions() map[string]any
	Capacity() Capacity
	Provenance() Provenance
	// Exited is closed when the engine's process has exited.
	Exited() <-chan struct{}
	// Stop terminates the engine's process group: SIGTERM, a grace period, SIGKILL. Safe to
	// call more than once.
	Stop(ctx context.Context) error
}

// Engine starts instances of one kind of engine.
type Engine interface {
	// Name is the plan's engine kind: vllm, sim or ollama.
	Name() string
	// Start launches an instance and returns once it serves the model, or fails with a
	// *LaunchError. Start is all-or-nothing: on error nothing is left running. An engine
	// program that cannot be found fails every trial alike, so it is a plain error instead,
	// wrapping exec.ErrNotFound or fs.ErrNotExist.
	Start(ctx context.Context, spec Spec) (Instance, error)
}

// FailureClass classifies why an engine did not start or died; the classes are the study
// record's.
type FailureClass = record.FailureClass

// Failure classes.
const (
	FailWeightsOOM      = record.FailWeightsOOM
	FailKVCacheTooSmall = record.FailKVCacheTooSmall
	FailInvalidArgs     = record.FailInvalidArgs
	FailUnsupported     = record.FailUnsupported
	FailCrash           = record.FailCrash
	FailStartupTimeout  = record.FailStartupTimeout
	FailPortTaken       = record.FailPortTaken
	FailOOM             = record.FailOOM
	FailGPUBusy         = record.FailGPUBusy
	FailOther           = record.FailOther
	FailUnknown         = record.FailUnknown
)

// LaunchError is a failed launch, with the engine's own message.
type LaunchError struct {
	Class   FailureClass
	Message string // the engine's own message, e.g. the ValueError line
	LogPath string
	Err     error
	// EstimatedMaxModelLen is the longest max_model_len the engine says would fit, when the
	// KV cache is too small for the one asked (FailKVCacheTooSmall), else 0.
	EstimatedMaxModelLen int
}

func (e *LaunchError) Error() string {
	if e.Message != "" {
		return string(e.Class) + ": " + e.Message
	}
	if e.Err != nil {
		return string(e.Class) + ": " + e.Err.Error()
	}
	return string(e.Class)
}

func (e *LaunchError) Unwrap() error { return e.Err }

// Options configure the engine adapters.
type Options struct {
	// FrontierBinary is the path of the frontier executable, which serves the simulator
	// (`frontier sim serve`). Empty means os.Executable().
	FrontierBinary string
	// GracePeriod is how long Stop waits after SIGTERM before SIGKILL; 0 means 10s.
	GracePeriod time.Duration
	// Environ is the environment engines inherit before Spec.Env; nil means os.Environ().
	Environ []string
	// Driver is the NVIDIA driver version recorded in provenance; empty means NVML's, read
	// once per Engine when a slot has real GPUs.
	Driver string
	// MemoryReleaseTimeout bounds how long Stop waits for the slot's GPU memory to be
	// released after the engine exited; 0 means DefaultMemoryReleaseTimeout.
	MemoryReleaseTimeout time.Duration
	// Port picks the port of each instance; nil means FreePort.
	Port func() (int, error)
	// VersionTimeout bounds the engine program's `--version`, asked once per program before
	// its first launch; 0 means DefaultVersionTimeout. A program that does not answer in
	// time is launched with its version unknown, and its logs say so.
	VersionTimeout time.Duration
}

// DefaultVersionTimeout is Options.VersionTimeout when it is zero: long enough for vLLM to
// import itself on a cold page cache.
const DefaultVersionTimeout = 20 * time.Second
