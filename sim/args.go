package sim

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ServeArgs is a parsed `frontier sim serve` command line: vLLM's `vllm serve` arguments
// plus the simulator's own (--sku, --architecture and the --fault-* flags).
type ServeArgs struct {
	Model           string
	ServedModelName string
	SKU             string
	Architecture    string
	Host            string
	Port            int
	// Settings are the engine options, by snake_case name, as strings (or true for a bare
	// boolean flag, false for --no-x): ConfigFromSettings reads them.
	Settings map[string]any
	// Other lists the vLLM flags the simulator accepts without modelling them, as given.
	Other  []string
	Faults Faults
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

// knobFlags are the vLLM options the engine models; boolKnobs are those that are booleans.
var boolKnobs = map[string]bool{
	"enable_chunked_prefill": true, "enable_prefix_caching": true, "enforce_eager": true, "async_scheduling": true,
}

var knobFlags = map[string]bool{
	"max_model_len": true, "max_num_seqs": true, "max_num_batched_tokens": true, "gpu_memory_utilization": true,
	"tensor_parallel_size": true, "pipeline_parallel_size": true, "data_parallel_size": true, "quantization": true,
	"kv_cache_dtype": true, "block_size": true, "long_prefill_token_threshold": true, "max_num_partial_prefills": true,
	"max_long_partial_prefills": true, "kv_cache_memory_bytes": true, "num_gpu_blocks_override": true, "stream_interval": true,
	"enable_chunked_prefill": true, "enable_prefix_caching": true, "enforce_eager": true, "async_scheduling": true,
}

// shortFlags are vLLM's short aliases.
var shortFlags = map[string]string{"tp": "tensor_parallel_size", "pp": "pipeline_parallel_size", "dp": "data_parallel_size", "q": "quantization"}

// ParseServeArgs parses `vllm serve` arguments the way vLLM does: the model as the first
// positional argument (or --model), "-" and "_" interchangeable in flag names, "--x=v" or
// "--x v", "--no-x" for a false boolean, human-readable integers ("8k"). vLLM flags the
// simulator does not model are accepted and kept in Other.
func ParseServeArgs(args []string) (ServeArgs, error) {
	a := ServeArgs{Port: 8000, Settings: map[string]any{}}
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if !strings.HasPrefix(arg, "-") || arg == "-" {
			if a.Model != "" {
				return ServeArgs{}, fmt.Errorf("unexpected argument %q: the model is already %q", arg, a.Model)
			}
			a.Model = arg
			continue
		}
		raw := strings.TrimLeft(arg, "-")
		name, value, hasValue := strings.Cut(raw, "=")
		name = strings.ReplaceAll(name, "-", "_")
		if long, ok := shortFlags[name]; ok && !strings.HasPrefix(arg, "--") {
			name = long
		}
		if strings.HasPrefix(arg, "-O") && !strings.HasPrefix(arg, "--") {
			a.Other = append(a.Other, arg)
			continue
		}
		// next takes the flag's value from "=v" or the next argument.
		next := func() (string, error) {
			if hasValue {
				return value, nil
			}
			if i+1 >= len(args) {
				return "", fmt.Errorf("flag %s needs a value", arg)
			}
			i++
			return args[i], nil
		}
		var err error
		switch {
		case name == "model":
			a.Model, err = next()
		case name == "served_model_name":
			a.ServedModelName, err = next()
			// vLLM takes one or more names; the first is used.
			for i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") && !hasValue {
				i++
			}
		case name == "sku":
			a.SKU, err = next()
		case name == "architecture":
			a.Architecture, err = next()
		case name == "host":
			a.Host, err = next()
		case name == "port":
			var v string
			if v, err = next(); err == nil {
				a.Port, err = strconv.Atoi(v)
				if err != nil || a.Port < 0 || a.Port > 65535 {
					err = fmt.Errorf("--port: want a port number, got %q", v)
				}
			}
		case strings.HasPrefix(name, "fault_"):
			err = a.Faults.set(name, next)
			if name == "fault_hang_startup" || name == "fault_startup_oom" {
				if hasValue {
					return ServeArgs{}, fmt.Errorf("flag --%s takes no value", strings.ReplaceAll(name, "_", "-"))
				}
			}
		case knobFlags[name]:
			if boolKnobs[name] && !hasValue {
				a.Settings[name] = true
				break
			}
			var v string
			if v, err = next(); err == nil {
				a.Settings[name] = v
			}
		case strings.HasPrefix(name, "no_") && boolKnobs[strings.TrimPrefix(name, "no_")]:
			a.Settings[strings.TrimPrefix(name, "no_")] = false
		default:
			// A flag the simulator does not model: keep it with its value, if it has one.
			a.Other = append(a.Other, arg)
			if !hasValue && !isBoolFlag(name) && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++
				a.Other = append(a.Other, args[i])
			}
		}
		if err != nil {
			return ServeArgs{}, err
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

// isBoolFlag reports whether a vLLM flag the simulator does not model takes no value.
func isBoolFlag(name string) bool {
	switch name {
	case "trust_remote_code", "disable_log_requests", "disable_log_stats", "enable_log_requests",
		"disable_fastapi_docs", "enable_prompt_tokens_details", "enable_force_include_usage",
		"enable_server_load_tracking", "disable_frontend_multiprocessing", "enable_auto_tool_choice",
		"disable_uvicorn_access_log", "enable_lora", "enable_sleep_mode", "kv_cache_metrics":
		return true
	}
	return strings.HasPrefix(name, "no_") || strings.HasPrefix(name, "enable_") || strings.HasPrefix(name, "disable_")
}

// set assigns one --fault-* flag.
func (f *Faults) set(name string, next func() (string, error)) error {
	flag := "--" + strings.ReplaceAll(name, "_", "-")
	switch name {
	case "fault_hang_startup":
		f.HangStartup = true
		return nil
	case "fault_startup_oom":
		f.StartupOOM = true
		return nil
	}
	v, err := next()
	if err != nil {
		return err
	}
	switch name {
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
