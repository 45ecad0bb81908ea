package sim

import (
	"errors"
	"strings"
	"testing"

	"github.com/frontier-llm/frontier/hw"
	"github.com/frontier-llm/frontier/vllm"
)

// serveOutcome runs a `frontier sim serve` command line through what the server does before
// it serves: vLLM's argparse (ParseServeArgs), the engine config (ConfigFromSettings) and
// vLLM's startup checks (CheckStartup), for Llama 3.1 8B on an H100. It returns "starts", or
// the class and message of the refusal.
func serveOutcome(t *testing.T, args ...string) (class, message string, st Startup) {
	t.Helper()
	sa, err := ParseServeArgs(append([]string{"meta-llama/Llama-3.1-8B-Instruct"}, args...))
	var ae *vllm.ArgError
	if errors.As(err, &ae) {
		return "argparse", ae.Error(), Startup{}
	}
	if err != nil {
		t.Fatalf("ParseServeArgs(%q): %v", args, err)
	}
	settings := map[string]any{"vllm_version": sa.VLLMVersion}
	for k, v := range sa.Settings {
		settings[k] = v
	}
	cfg, err := ConfigFromSettings(settings, 0)
	if err != nil {
		t.Fatalf("ConfigFromSettings(%v): %v", settings, err)
	}
	arch, _ := LookupArch("llama-3.1-8b")
	sku, _ := hw.LookupSKU("h100-sxm")
	st, err = CheckStartup(arch, sku, cfg)
	var se *StartupError
	if errors.As(err, &se) {
		return se.Class, se.Message, Startup{}
	}
	if err != nil {
		t.Fatal(err)
	}
	return "starts", "", st
}

// TestServeRefusesValuesVLLMRefuses checks that a value vLLM takes as given is not read as
// "unset": each is refused where vLLM refuses it (argparse, a config class's pydantic range,
// a ValueError of the startup checks) with vLLM's message, or taken where vLLM takes it.
func TestServeRefusesValuesVLLMRefuses(t *testing.T) {
	t.Parallel()
	const schedulerBoth = "pydantic_core._pydantic_core.ValidationError: 2 validation errors for SchedulerConfig\n" +
		"max_num_batched_tokens\n  Input should be greater than or equal to 1 [type=greater_than_equal, input_value=%s, input_type=int]\n" +
		"max_num_seqs\n  Input should be greater than or equal to 1 [type=greater_than_equal, input_value=%s, input_type=int]"
	tests := []struct {
		name  string
		args  []string
		class string
		// message is vLLM's whole message for a refusal, else empty.
		message string
	}{
		// max_num_seqs given, max_num_batched_tokens derived as min(seqs × max_model_len, 8192).
		{"max_num_seqs 0", []string{"--max-num-seqs", "0"}, ClassInvalidArgs, fmtBoth(schedulerBoth, "0", "0")},
		{"max_num_seqs -5", []string{"--max-num-seqs", "-5"}, ClassInvalidArgs, fmtBoth(schedulerBoth, "-655360", "-5")},
		// max_num_batched_tokens given, max_num_seqs derived as min(1024, tokens).
		{"max_num_batched_tokens 0", []string{"--max-num-batched-tokens", "0"}, ClassInvalidArgs, fmtBoth(schedulerBoth, "0", "0")},
		{"max_num_seqs and max_num_batched_tokens -1 and 4096", []string{"--max-num-seqs", "-1", "--max-num-batched-tokens", "4096"}, ClassInvalidArgs,
			"pydantic_core._pydantic_core.ValidationError: 1 validation error for SchedulerConfig\n" +
				"max_num_seqs\n  Input should be greater than or equal to 1 [type=greater_than_equal, input_value=-1, input_type=int]"},
		{"max_num_seqs past what a derived value holds", []string{"--max-num-seqs", "9223372036854775807"}, ClassInvalidArgs,
			"ValueError: max_num_batched_tokens (8192) must be greater than or equal to max_num_seqs (9223372036854775807)."},
		{"block_size 0", []string{"--block-size", "0"}, ClassInvalidArgs,
			"pydantic_core._pydantic_core.ValidationError: 1 validation error for CacheConfig\n" +
				"block_size\n  Input should be greater than 0 [type=greater_than, input_value=0, input_type=int]"},
		{"block_size -16", []string{"--block-size", "-16"}, ClassInvalidArgs,
			"pydantic_core._pydantic_core.ValidationError: 1 validation error for CacheConfig\n" +
				"block_size\n  Input should be greater than 0 [type=greater_than, input_value=-16, input_type=int]"},
		{"block_size 0 on v0.13, whose argparse has the choices", []string{"--vllm-version", "0.13", "--block-size", "0"}, "argparse",
			"vllm serve: error: argument --block-size: invalid choice: 0 (choose from 1, 8, 16, 32, 64, 128, 256)"},
		{"block_size 24: any int to argparse, not a multiple of the attention kernels' 16", []string{"--block-size", "24"}, ClassInvalidArgs,
			"ValueError: No common block size for 24. "},
		{"block_size 48 on the current line", []string{"--block-size", "48"}, "starts", ""},
		{"block_size 48 on v0.13, whose argparse has the choices", []string{"--vllm-version", "0.13", "--block-size", "48"}, "argparse",
			"vllm serve: error: argument --block-size: invalid choice: 48 (choose from 1, 8, 16, 32, 64, 128, 256)"},
		{"stream_interval 0", []string{"--stream-interval", "0"}, ClassInvalidArgs,
			"pydantic_core._pydantic_core.ValidationError: 1 validation error for SchedulerConfig\n" +
				"stream_interval\n  Input should be greater than or equal to 1 [type=greater_than_equal, input_value=0, input_type=int]"},
		// num_gpu_blocks_override is int | None: 0 is an override, of no blocks.
		{"num_gpu_blocks_override 0", []string{"--num-gpu-blocks-override", "0"}, ClassKVCacheTooSmall,
			"ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine. See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."},
		{"num_gpu_blocks_override -3", []string{"--num-gpu-blocks-override", "-3"}, ClassKVCacheTooSmall,
			"ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine. See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."},
		// kv_cache_memory_bytes: gpu_worker.py reads it with "if kv_cache_memory_bytes := ...":
		// 0 is unset and the memory is profiled; a negative size is taken.
		{"kv_cache_memory_bytes 0 is unset, as in vLLM", []string{"--kv-cache-memory-bytes", "0"}, "starts", ""},
		{"kv_cache_memory_bytes -5", []string{"--kv-cache-memory-bytes", "-5"}, ClassKVCacheTooSmall,
			"ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine. See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."},
		// long_prefill_token_threshold is a plain int in SchedulerConfig, and the scheduler
		// caps a request's tokens only when 0 < threshold: -5 starts, with no cap.
		{"long_prefill_token_threshold -5 is no cap, as in vLLM", []string{"--long-prefill-token-threshold", "-5"}, "starts", ""},
		// Python's int(): single underscores between digits only.
		{"max_num_seqs _64_", []string{"--max-num-seqs", "_64_"}, "argparse", "vllm serve: error: argument --max-num-seqs: invalid int value: '_64_'"},
		{"max_num_seqs 6__4", []string{"--max-num-seqs", "6__4"}, "argparse", "vllm serve: error: argument --max-num-seqs: invalid int value: '6__4'"},
		{"max_num_seqs 6_4 is 64", []string{"--max-num-seqs", "6_4"}, "starts", ""},
		{"max_num_batched_tokens 8_192 is 8192", []string{"--max-num-batched-tokens", "8_192"}, "starts", ""},
		{"max_num_batched_tokens 8__192", []string{"--max-num-batched-tokens", "8__192"}, "argparse",
			"vllm serve: error: argument --max-num-batched-tokens: invalid human_readable_int value: '8__192'"},
		// --quantization takes any string; ModelConfig compares the name as given.
		{"quantization FP8", []string{"--quantization", "FP8"}, ClassUnsupported,
			"ValueError: Unknown quantization method: FP8. Must be one of ['" + strings.Join(currentQuantizationMethods(t), "', '") + "']."},
		{"quantization fp8", []string{"--quantization", "fp8"}, "starts", ""},
		// nargs "+" with "=": the flag takes the one value after "=".
		{"served_model_name=a b", []string{"--served-model-name=a", "b"}, "argparse", "vllm: error: unrecognized arguments: b"},
		// CacheConfig.gpu_memory_utilization: Field(gt=0, le=1); pydantic-core compares floats
		// with partial_cmp, so NaN breaks le first.
		{"gpu_memory_utilization nan", []string{"--gpu-memory-utilization", "nan"}, ClassInvalidArgs,
			"pydantic_core._pydantic_core.ValidationError: 1 validation error for CacheConfig\n" +
				"gpu_memory_utilization\n  Input should be less than or equal to 1 [type=less_than_equal, input_value=nan, input_type=float]"},
		{"gpu_memory_utilization 0", []string{"--gpu-memory-utilization", "0"}, ClassInvalidArgs,
			"pydantic_core._pydantic_core.ValidationError: 1 validation error for CacheConfig\n" +
				"gpu_memory_utilization\n  Input should be greater than 0 [type=greater_than, input_value=0.0, input_type=float]"},
		{"gpu_memory_utilization 1e400 is inf", []string{"--gpu-memory-utilization", "1e400"}, ClassInvalidArgs,
			"pydantic_core._pydantic_core.ValidationError: 1 validation error for CacheConfig\n" +
				"gpu_memory_utilization\n  Input should be less than or equal to 1 [type=less_than_equal, input_value=inf, input_type=float]"},
		{"gpu_memory_utilization 0x1p-1, which Go would read", []string{"--gpu-memory-utilization", "0x1p-1"}, "argparse",
			"vllm serve: error: argument --gpu-memory-utilization: invalid float value: '0x1p-1'"},
		{"gpu_memory_utilization 0.9_0 is 0.9", []string{"--gpu-memory-utilization", "0.9_0"}, "starts", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			class, message, _ := serveOutcome(t, tt.args...)
			if class != tt.class || message != tt.message {
				t.Errorf("sim serve %s:\n got %s: %q\nwant %s: %q", strings.Join(tt.args, " "), class, message, tt.class, tt.message)
			}
		})
	}
}

func fmtBoth(format, tokens, seqs string) string {
	return strings.Replace(strings.Replace(format, "%s", tokens, 1), "%s", seqs, 1)
}

// TestZeroKVCacheMemoryBytesIsUnset checks the one 0 that vLLM does read as unset: the
// server starts with the KV cache the profile leaves, as with no flag.
func TestZeroKVCacheMemoryBytesIsUnset(t *testing.T) {
	t.Parallel()
	_, _, none := serveOutcome(t)
	_, _, zero := serveOutcome(t, "--kv-cache-memory-bytes", "0")
	if none.KVCacheTokens == 0 || zero.KVCacheTokens != none.KVCacheTokens {
		t.Errorf("KV cache tokens: %d with --kv-cache-memory-bytes 0, %d without; want the same, above 0", zero.KVCacheTokens, none.KVCacheTokens)
	}
	_, _, seqs := serveOutcome(t, "--max-num-seqs", "6_4")
	if seqs.Config.MaxNumSeqs != 64 {
		t.Errorf("--max-num-seqs 6_4: max_num_seqs %d, want 64", seqs.Config.MaxNumSeqs)
	}
}

// TestPlanSettingsMeetTheSameRanges checks that a plan's knob value, which reaches the
// engine config without argparse, meets the same ranges as the command line.
func TestPlanSettingsMeetTheSameRanges(t *testing.T) {
	t.Parallel()
	arch, _ := LookupArch("llama-3.1-8b")
	sku, _ := hw.LookupSKU("h100-sxm")
	tests := []struct {
		name     string
		settings map[string]any
		class    string
	}{
		{"max_num_seqs 0", map[string]any{"max_num_seqs": int64(0)}, ClassInvalidArgs},
		{"max_num_seqs -5", map[string]any{"max_num_seqs": int64(-5)}, ClassInvalidArgs},
		{"max_num_seqs 16", map[string]any{"max_num_seqs": int64(16)}, ""},
		{"stream_interval 0.0", map[string]any{"stream_interval": 0.0}, ClassInvalidArgs},
		{"block_size 0", map[string]any{"block_size": int64(0)}, ClassInvalidArgs},
		{"gpu_memory_utilization NaN as text", map[string]any{"gpu_memory_utilization": "NaN"}, ClassInvalidArgs},
		{"kv_cache_dtype FP8 keeps its case", map[string]any{"kv_cache_dtype": "FP8"}, ClassInvalidArgs},
		{"quantization FP8 keeps its case", map[string]any{"quantization": "FP8"}, ClassUnsupported},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := ConfigFromSettings(tt.settings, 4096)
			if err != nil {
				t.Fatal(err)
			}
			_, err = CheckStartup(arch, sku, cfg)
			got := ""
			var se *StartupError
			if errors.As(err, &se) {
				got = se.Class
			} else if err != nil {
				t.Fatal(err)
			}
			if got != tt.class {
				t.Errorf("CheckStartup(%v) class %q (%v), want %q", tt.settings, got, err, tt.class)
			}
		})
	}
}

func TestSatMulHoldsAtTheEnds(t *testing.T) {
	t.Parallel()
	const maxInt, minInt = int(^uint(0) >> 1), -int(^uint(0)>>1) - 1
	tests := []struct {
		name       string
		a, b, want int
	}{
		{"small", 64, 4096, 262144},
		{"negative", -5, 131072, -655360},
		{"zero", 0, maxInt, 0},
		{"past the top", maxInt, 131072, maxInt},
		{"past the bottom", minInt / 2, 3, minInt},
		{"two negatives past the top", minInt, -1, maxInt},
		{"minus one times the bottom", -1, minInt, maxInt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := satMul(tt.a, tt.b); got != tt.want {
				t.Errorf("satMul(%d, %d) = %d, want %d", tt.a, tt.b, got, tt.want)
			}
		})
	}
}

// currentQuantizationMethods is what the current vLLM line's table lists for --quantization,
// the methods the simulator takes by default.
func currentQuantizationMethods(t *testing.T) []string {
	v, err := vllm.Lookup(vllm.Current)
	if err != nil {
		t.Fatal(err)
	}
	f, ok := v.Flag("--quantization")
	if !ok || len(f.Valid) == 0 {
		t.Fatalf("the %s table lists no --quantization methods", vllm.Current)
	}
	return f.Valid
}
