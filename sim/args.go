package sim

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	engines "github.com/frontier-llm/frontier/engine"
	"github.com/frontier-llm/frontier/hw"
	"github.com/frontier-llm/frontier/vllm"
)

// ServeArgs is a parsed `frontier sim serve` command line: the simulator's own flags (--sku,
// --architecture, --vllm-version and the --fault-* flags), then vLLM's `vllm serve`
// arguments, parsed by the emulated version's argparse.
type ServeArgs struct {
	Model           string
	ServedModelName string
	SKU             string
	Architecture    string
	// VLLMVersion is the vLLM release line the server emulates ("0.22"); --vllm-version,
	// default vllm.Current.
	VLLMVersion string
	// VersionWarning says that --vllm-version named no modelled line and which one stands in
	// for it (vllm.Version.Warning); the server logs it.
	VersionWarning string
	Host           string
	Port           int
	// Settings are the engine options given, by snake_case name, typed as the version's
	// argparse converts them (int64, float64, string, bool): ConfigFromSettings reads them.
	Settings map[string]any
	// Other lists the vLLM flags given that the simulator accepts without modelling them,
	// with their values, as command-line arguments.
	Other  []string
	Faults Faults
	// LoadTime is how long loading the weights takes (--load-time DUR); LoadTimeAuto
	// (--load-time auto) derives it from the weights' size instead (see LoadDuration). Both
	// unset, the server loads at once, so tests that start it many times stay fast.
	LoadTime     time.Duration
	LoadTimeAuto bool
}

// Faults are the failures the simulated server can inject, for tests of what drives it.
type Faults struct {
	CrashAfter      int           // exit once this many requests have finished (0: never)
	HangStartup     bool          // never finish starting
	SlowStart       time.Duration // extra startup time
	StartupOOM      bool          // fail at startup with CUDA out of memory while loading weights
	ErrorBursts     []ErrorBurst  // answer some requests with an HTTP error
	MalformedStream float64       // fraction of streams that send a malformed chunk and stop
	StallAfter      int           // streams stop sending after this many tokens, keeping the connection open (0: never)
	BindPort        int           // bind this port instead of --port, e.g. one another program holds (0: --port)
}

// ErrorBurst answers Count requests, from the From-th received (counting from 1), with HTTP
// Status.
type ErrorBurst struct {
	Status int
	From   int
	Count  int
}

// modelledKnobs are the vLLM options the engine models (ConfigFromSettings reads them).
var modelledKnobs = map[string]bool{
	"max_model_len": true, "max_num_seqs": true, "max_num_batched_tokens": true, "gpu_memory_utilization": true,
	"tensor_parallel_size": true, "pipeline_parallel_size": true, "data_parallel_size": true, "quantization": true,
	"kv_cache_dtype": true, "block_size": true, "long_prefill_token_threshold": true, "max_num_partial_prefills": true,
	"max_long_partial_prefills": true, "kv_cache_memory_bytes": true, "num_gpu_blocks_override": true, "stream_interval": true,
	"enable_chunked_prefill": true, "enable_prefix_caching": true, "enforce_eager": true, "async_scheduling": true,
	"performance_mode": true, "kv_offloading_size": true, "kv_offloading_backend": true,
}

// ownFlags are `frontier sim serve`'s own flags, which are not vLLM's: they are taken out
// of the command line before the emulated argparse sees it. true: the flag takes a value.
var ownFlags = engines.SimFlags()

// ServeVersion is what `frontier sim serve --version` prints: the version of the vLLM line
// that --vllm-version (default vllm.Current) names, as the emulated server reports it.
func ServeVersion(version string) (string, error) {
	v, err := vllm.Lookup(version)
	if err != nil {
		return "", fmt.Errorf("--vllm-version: %w", err)
	}
	return presentedVersion(v.Name), nil
}

// ServeHelp is what `frontier sim serve --help=all` (and --help) prints: the emulated line's
// `vllm serve` options in argparse's layout, then the simulator's own flags, so that the vllm
// engine's preflight can read it as it reads vLLM's.
func ServeHelp(version string) (string, error) {
	v, err := vllm.Lookup(version)
	if err != nil {
		return "", fmt.Errorf("--vllm-version: %w", err)
	}
	own := vllm.HelpGroup{Title: "frontier sim serve options"}
	for name, takes := range ownFlags {
		f := vllm.Flag{Name: name, Knob: strings.ReplaceAll(strings.TrimPrefix(name, "--"), "-", "_"), Kind: vllm.StoreTrue}
		if takes {
			f.Kind = vllm.Store
		}
		own.Flags = append(own.Flags, f)
	}
	own.Texts = map[string]string{
		"--sku":                    "the GPU SKU simulated, one of " + strings.Join(hw.SKUNames(), ", "),
		"--architecture":           "a catalog architecture (" + strings.Join(ArchNames(), ", ") + ") or a Hugging Face config.json",
		"--vllm-version":           "the vLLM release line emulated (default: " + vllm.Current + ")",
		"--load-time":              "auto, or how long loading the weights takes",
		"--fault-crash-after":      "exit once N requests have finished",
		"--fault-hang-startup":     "never finish starting",
		"--fault-slow-start":       "take DUR longer to start",
		"--fault-startup-oom":      "fail at startup with CUDA out of memory",
		"--fault-error-burst":      "STATUS:FROM:COUNT[,...]: answer those requests with STATUS",
		"--fault-malformed-stream": "a fraction of streams send a malformed chunk and stop",
		"--fault-stall-after":      "streams stop after N tokens without closing",
		"--fault-bind-port":        "bind port N instead of --port",
	}
	return v.Help("frontier sim serve MODEL --sku SKU [options] (vLLM "+presentedVersion(v.Name)+", simulated)", own), nil
}

// ParseServeArgs parses a `frontier sim serve` command line. The simulator's own flags come
// out first; the rest is parsed by the argparse of the vLLM version it emulates
// (--vllm-version, default vllm.Current), which refuses unknown flags and bad values with
// a *vllm.ArgError carrying vLLM's own usage line and message. vLLM flags the simulator does
// not model are accepted and listed in Other.
func ParseServeArgs(args []string) (ServeArgs, error) {
	a := ServeArgs{Port: 8000, Settings: map[string]any{}, VLLMVersion: vllm.Current}
	var rest []string
	for i := 0; i < len(args); i++ {
		arg := args[i]
		name, value, hasValue := strings.Cut(arg, "=")
		name = strings.ReplaceAll(name, "_", "-")
		takes, own := ownFlags[name]
		if !own || !strings.HasPrefix(arg, "--") {
			rest = append(rest, arg)
			continue
		}
		if !takes {
			if hasValue {
				return ServeArgs{}, fmt.Errorf("flag %s takes no value", name)
			}
		} else if !hasValue {
			if i+1 >= len(args) {
				return ServeArgs{}, fmt.Errorf("flag %s needs a value", name)
			}
			i++
			value = args[i]
		}
		var err error
		switch name {
		case "--sku":
			a.SKU = value
		case "--architecture":
			a.Architecture = value
		case "--vllm-version":
			a.VLLMVersion = value
		case "--load-time":
			err = a.setLoadTime(value)
		default:
			err = a.Faults.set(strings.ReplaceAll(strings.TrimPrefix(name, "--"), "-", "_"), value)
		}
		if err != nil {
			return ServeArgs{}, err
		}
	}
	v, err := vllm.Lookup(a.VLLMVersion)
	if err != nil {
		return ServeArgs{}, fmt.Errorf("--vllm-version: %w", err)
	}
	a.VLLMVersion, a.VersionWarning = v.Name, v.Warning
	parsed, err := v.ParseArgs(rest)
	if err != nil {
		return ServeArgs{}, err
	}
	a.Model = parsed.Model
	for _, k := range parsed.Order {
		val := parsed.Values[k]
		switch {
		case k == "model":
		case k == "host":
			a.Host, _ = val.(string)
		case k == "port":
			n, _ := val.(int64)
			if n < 0 || n > 65535 {
				return ServeArgs{}, fmt.Errorf("--port: want a port number, got %d", n)
			}
			a.Port = int(n)
		case k == "served_model_name":
			if names, ok := val.([]string); ok && len(names) > 0 {
				a.ServedModelName = names[0] // the first name is used in responses and metrics
			}
		case modelledKnobs[k]:
			a.Settings[k] = val
		default:
			a.Other = append(a.Other, renderFlag(v, k, val)...)
		}
	}
	if a.Model == "" {
		return ServeArgs{}, fmt.Errorf("No model specified! Please specify model either as a positional argument or in a config file.")
	}
	if a.ServedModelName == "" {
		a.ServedModelName = a.Model
	}
	return a, nil
}

// renderFlag writes a parsed option back as command-line arguments.
func renderFlag(v *vllm.Version, knob string, val any) []string {
	f, ok := v.Flag(knob)
	name := "--" + strings.ReplaceAll(knob, "_", "-")
	if ok {
		name = f.Name
	}
	switch x := val.(type) {
	case bool:
		return v.BoolArgs(knob, x)
	case []string:
		return append([]string{name}, x...)
	case map[string]any:
		b, _ := json.Marshal(x)
		return []string{name, string(b)}
	case float64:
		return []string{name, strconv.FormatFloat(x, 'g', -1, 64)}
	}
	return []string{name, fmt.Sprint(val)}
}

// set assigns one --fault-* flag.
func (f *Faults) set(name, v string) error {
	flag := "--" + strings.ReplaceAll(name, "_", "-")
	var err error
	switch name {
	case "fault_hang_startup":
		f.HangStartup = true
	case "fault_startup_oom":
		f.StartupOOM = true
	case "fault_crash_after":
		f.CrashAfter, err = strconv.Atoi(v)
		if err == nil && f.CrashAfter < 1 {
			err = fmt.Errorf("want at least 1")
		}
	case "fault_stall_after":
		f.StallAfter, err = strconv.Atoi(v)
		if err == nil && f.StallAfter < 1 {
			err = fmt.Errorf("want at least 1")
		}
	case "fault_bind_port":
		f.BindPort, err = strconv.Atoi(v)
		if err == nil && (f.BindPort < 1 || f.BindPort > 65535) {
			err = fmt.Errorf("want a port number")
		}
	case "fault_slow_start":
		f.SlowStart, err = time.ParseDuration(v)
	case "fault_malformed_stream":
		f.MalformedStream, err = strconv.ParseFloat(v, 64)
		if err == nil && (f.MalformedStream < 0 || f.MalformedStream > 1) {
			err = fmt.Errorf("want a fraction between 0 and 1")
		}
	case "fault_error_burst":
		f.ErrorBursts, err = ParseErrorBursts(v)
	default:
		return fmt.Errorf("unknown flag %s", flag)
	}
	if err != nil {
		return fmt.Errorf("%s %q: %w", flag, v, err)
	}
	return nil
}

// ParseErrorBursts parses --fault-error-burst: comma-separated STATUS:FROM:COUNT, e.g.
// "429:10:5,500:40:2" answers requests 10 to 14 with 429 and 40 and 41 with 500 (requests
// counted from 1 in the order they arrive).
func ParseErrorBursts(spec string) ([]ErrorBurst, error) {
	var out []ErrorBurst
	for _, part := range strings.Split(spec, ",") {
		f := strings.Split(strings.TrimSpace(part), ":")
		if len(f) != 3 {
			return nil, fmt.Errorf("want STATUS:FROM:COUNT, got %q", part)
		}
		var b ErrorBurst
		var err error
		if b.Status, err = strconv.Atoi(f[0]); err != nil || b.Status < 400 || b.Status > 599 {
			return nil, fmt.Errorf("want an HTTP error status (400-599), got %q", f[0])
		}
		if b.From, err = strconv.Atoi(f[1]); err != nil || b.From < 1 {
			return nil, fmt.Errorf("want a request number from 1, got %q", f[1])
		}
		if b.Count, err = strconv.Atoi(f[2]); err != nil || b.Count < 1 {
			return nil, fmt.Errorf("want a count of at least 1, got %q", f[2])
		}
		out = append(out, b)
	}
	return out, nil
}

// status returns the HTTP error status for the n-th request (from 1), or 0.
func (f *Faults) status(n int) int {
	for _, b := range f.ErrorBursts {
		if n >= b.From && n < b.From+b.Count {
			return b.Status
		}
	}
	return 0
}
