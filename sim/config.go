package sim

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/frontier-llm/frontier/hw"
)

// EngineConfig is one vLLM configuration: the `vllm serve` options the simulator models, by
// their snake_case names. A zero MaxNumSeqs, MaxNumBatchedTokens or MaxModelLen means "not
// set": vLLM's defaults for the GPU and the model are filled in by Resolve.
type EngineConfig struct {
	// SKU names the GPU from the catalog when the hardware itself is a knob ("sku"); empty
	// means the plan's or the command line's SKU.
	SKU                       string  `json:"sku,omitempty"`
	MaxModelLen               int     `json:"max_model_len"`
	MaxNumSeqs                int     `json:"max_num_seqs"`
	MaxNumBatchedTokens       int     `json:"max_num_batched_tokens"`
	GPUMemoryUtilization      float64 `json:"gpu_memory_utilization"`
	TensorParallelSize        int     `json:"tensor_parallel_size"`
	PipelineParallelSize      int     `json:"pipeline_parallel_size"`
	DataParallelSize          int     `json:"data_parallel_size"`
	Quantization              string  `json:"quantization,omitempty"` // "" is none
	KVCacheDType              string  `json:"kv_cache_dtype"`
	EnableChunkedPrefill      bool    `json:"enable_chunked_prefill"`
	EnablePrefixCaching       bool    `json:"enable_prefix_caching"`
	EnforceEager              bool    `json:"enforce_eager"`
	AsyncScheduling           bool    `json:"async_scheduling"`
	BlockSize                 int     `json:"block_size"`
	LongPrefillTokenThreshold int     `json:"long_prefill_token_threshold"`
	MaxNumPartialPrefills     int     `json:"max_num_partial_prefills"`
	MaxLongPartialPrefills    int     `json:"max_long_partial_prefills"`
	KVCacheMemoryBytes        int64   `json:"kv_cache_memory_bytes,omitempty"`
	NumGPUBlocksOverride      int     `json:"num_gpu_blocks_override,omitempty"`
	StreamInterval            int     `json:"stream_interval"`
	// Ignored lists the options that were given but do not change the model, sorted.
	Ignored []string `json:"ignored,omitempty"`
}

// DefaultConfig returns vLLM v0.13's defaults for `vllm serve`, before the GPU-dependent
// batch defaults are resolved.
func DefaultConfig() EngineConfig {
	return EngineConfig{
		GPUMemoryUtilization:  0.9,
		TensorParallelSize:    1,
		PipelineParallelSize:  1,
		DataParallelSize:      1,
		KVCacheDType:          "auto",
		EnableChunkedPrefill:  true,
		EnablePrefixCaching:   true,
		BlockSize:             16,
		MaxNumPartialPrefills: 1,
		// vLLM's field default; only its relation to MaxNumPartialPrefills is checked.
		MaxLongPartialPrefills: 1,
		StreamInterval:         1,
	}
}

// GPUs returns how many GPUs the configuration occupies: tensor × pipeline × data parallel.
func (c EngineConfig) GPUs() int {
	return max(c.TensorParallelSize, 1) * max(c.PipelineParallelSize, 1) * max(c.DataParallelSize, 1)
}

// Resolve fills in what vLLM derives at startup when the user did not set it: max_model_len
// from the architecture, and max_num_seqs and max_num_batched_tokens from the GPU (vLLM's
// EngineArgs.get_batch_defaults for the API server: 8192 tokens and 1024 sequences on GPUs
// with at least 70 GiB that are not A100s, 2048 and 256 elsewhere), then the same
// post-processing as vLLM.
func (c EngineConfig) Resolve(arch Arch, sku hw.SKU) EngineConfig {
	if c.MaxModelLen <= 0 {
		c.MaxModelLen = arch.MaxPositions
	}
	if c.BlockSize <= 0 {
		c.BlockSize = 16
	}
	defTokens, defSeqs := 2048, 256
	if sku.MemoryGiB >= 70 && !strings.Contains(strings.ToLower(sku.Name+sku.Display), "a100") {
		defTokens, defSeqs = 8192, 1024
	}
	seqsSet, tokensSet := c.MaxNumSeqs > 0, c.MaxNumBatchedTokens > 0
	if !seqsSet {
		c.MaxNumSeqs = defSeqs
	}
	if !tokensSet {
		t := defTokens
		if !c.EnableChunkedPrefill {
			t = max(c.MaxModelLen, t)
		}
		c.MaxNumBatchedTokens = int(min(int64(c.MaxNumSeqs)*int64(c.MaxModelLen), int64(t)))
	}
	if !seqsSet {
		c.MaxNumSeqs = min(c.MaxNumSeqs, c.MaxNumBatchedTokens)
	}
	return c
}

// ConfigFromSettings builds a configuration from knob settings (vLLM option names in
// snake_case; "-" is accepted for "_"; values int64, int, float64, string or bool) on top of
// DefaultConfig. maxModelLen is the plan's max_model_len (0: the model's own), which a
// max_model_len setting overrides. Options the model does not use are accepted and listed in
// Ignored.
func ConfigFromSettings(settings map[string]any, maxModelLen int) (EngineConfig, error) {
	c := DefaultConfig()
	c.MaxModelLen = maxModelLen
	names := make([]string, 0, len(settings))
	for k := range settings {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if err := c.set(k, settings[k]); err != nil {
			return EngineConfig{}, err
		}
	}
	return c, nil
}

// set assigns one option.
func (c *EngineConfig) set(name string, v any) error {
	key := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(name)), "-", "_")
	var err error
	switch key {
	case "sku":
		c.SKU, err = asString(v)
	case "max_model_len":
		c.MaxModelLen, err = asInt(v)
	case "max_num_seqs":
		c.MaxNumSeqs, err = asInt(v)
	case "max_num_batched_tokens":
		c.MaxNumBatchedTokens, err = asInt(v)
	case "gpu_memory_utilization":
		c.GPUMemoryUtilization, err = asFloat(v)
	case "tensor_parallel_size", "tp", "gpus":
		c.TensorParallelSize, err = asInt(v)
	case "pipeline_parallel_size", "pp":
		c.PipelineParallelSize, err = asInt(v)
	case "data_parallel_size", "dp":
		c.DataParallelSize, err = asInt(v)
	case "quantization", "q":
		var s string
		s, err = asString(v)
		s = strings.ToLower(s)
		if s == "none" || s == "null" {
			s = ""
		}
		c.Quantization = s
	case "kv_cache_dtype":
		var s string
		s, err = asString(v)
		c.KVCacheDType = strings.ToLower(s)
	case "enable_chunked_prefill":
		c.EnableChunkedPrefill, err = asBool(v)
	case "enable_prefix_caching":
		c.EnablePrefixCaching, err = asBool(v)
	case "enforce_eager":
		c.EnforceEager, err = asBool(v)
	case "async_scheduling":
		c.AsyncScheduling, err = asBool(v)
	case "block_size":
		c.BlockSize, err = asInt(v)
	case "long_prefill_token_threshold":
		c.LongPrefillTokenThreshold, err = asInt(v)
	case "max_num_partial_prefills":
		c.MaxNumPartialPrefills, err = asInt(v)
	case "max_long_partial_prefills":
		c.MaxLongPartialPrefills, err = asInt(v)
	case "kv_cache_memory_bytes":
		var n int
		n, err = asInt(v)
		c.KVCacheMemoryBytes = int64(n)
	case "num_gpu_blocks_override":
		c.NumGPUBlocksOverride, err = asInt(v)
	case "stream_interval":
		c.StreamInterval, err = asInt(v)
	default:
		c.Ignored = append(c.Ignored, key)
		sort.Strings(c.Ignored)
		return nil
	}
	if err != nil {
		return fmt.Errorf("option %s: %w", key, err)
	}
	return nil
}

func asString(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case bool:
		return strconv.FormatBool(x), nil
	case int64, int, float64:
		return fmt.Sprint(x), nil
	}
	return "", fmt.Errorf("want a string, got %T", v)
}

func asInt(v any) (int, error) {
	switch x := v.(type) {
	case int:
		return x, nil
	case int64:
		return int(x), nil
	case float64:
		if x != math.Trunc(x) || math.IsInf(x, 0) || math.IsNaN(x) {
			return 0, fmt.Errorf("want a whole number, got %v", x)
		}
		return int(x), nil
	case string:
		n, err := ParseHumanInt(x)
		return int(n), err
	}
	return 0, fmt.Errorf("want a whole number, got %T", v)
}

func asFloat(v any) (float64, error) {
	switch x := v.(type) {
	case int:
		return float64(x), nil
	case int64:
		return float64(x), nil
	case float64:
		return x, nil
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		if err != nil {
			return 0, fmt.Errorf("want a number, got %q", x)
		}
		return f, nil
	}
	return 0, fmt.Errorf("want a number, got %T", v)
}

func asBool(v any) (bool, error) {
	switch x := v.(type) {
	case bool:
		return x, nil
	case string:
		b, err := strconv.ParseBool(strings.ToLower(strings.TrimSpace(x)))
		if err != nil {
			return false, fmt.Errorf("want true or false, got %q", x)
		}
		return b, nil
	case int64:
		return x != 0, nil
	case int:
		return x != 0, nil
	}
	return false, fmt.Errorf("want true or false, got %T", v)
}

// ParseHumanInt parses an integer the way vLLM's human_readable_int does: a plain integer,
// or a number with a decimal suffix (k=10^3, m=10^6, g=10^9, t=10^12; decimals allowed, e.g.
// "25.6k") or a binary suffix (K=2^10, M=2^20, G=2^30, T=2^40; whole numbers only).
func ParseHumanInt(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("want a whole number, got an empty string")
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	decimal := map[byte]float64{'k': 1e3, 'm': 1e6, 'g': 1e9, 't': 1e12}
	binary := map[byte]int64{'K': 1 << 10, 'M': 1 << 20, 'G': 1 << 30, 'T': 1 << 40}
	num, suf := s[:len(s)-1], s[len(s)-1]
	if mult, ok := decimal[suf]; ok {
		f, err := strconv.ParseFloat(num, 64)
		if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) || f*mult > math.MaxInt64/2 {
			return 0, fmt.Errorf("want a whole number such as 8192 or 8k, got %q", s)
		}
		return int64(f * mult), nil
	}
	if mult, ok := binary[suf]; ok {
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("decimals are not allowed with binary suffixes: %q", s)
		}
		if n < 0 || n > math.MaxInt64/mult {
			return 0, fmt.Errorf("out of range: %q", s)
		}
		return n * mult, nil
	}
	return 0, fmt.Errorf("want a whole number such as 8192 or 8k, got %q", s)
}
