package sim

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/frontier-llm/frontier/hw"
	"github.com/frontier-llm/frontier/vllm"
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
	EnableExpertParallel      bool    `json:"enable_expert_parallel"`
	AsyncScheduling           bool    `json:"async_scheduling"`
	BlockSize                 int     `json:"block_size"`
	LongPrefillTokenThreshold int     `json:"long_prefill_token_threshold"`
	MaxNumPartialPrefills     int     `json:"max_num_partial_prefills"`
	MaxLongPartialPrefills    int     `json:"max_long_partial_prefills"`
	KVCacheMemoryBytes        int64   `json:"kv_cache_memory_bytes,omitempty"`
	NumGPUBlocksOverride      int     `json:"num_gpu_blocks_override,omitempty"`
	StreamInterval            int     `json:"stream_interval"`
	// PerformanceMode is --performance-mode (v0.17+): "throughput" doubles the batch
	// defaults; "" is balanced.
	PerformanceMode string `json:"performance_mode,omitempty"`
	// VLLMVersion is the vLLM release line whose defaults and memory accounting apply
	// ("" is vllm.Current).
	VLLMVersion string `json:"vllm_version,omitempty"`
	// Ignored lists the options that were given but do not change the model, sorted.
	Ignored []string `json:"ignored,omitempty"`
}

// DefaultConfig returns the current vLLM line's defaults for `vllm serve` (DefaultConfigFor
// of vllm.Current), before the GPU-dependent batch defaults are resolved.
func DefaultConfig() EngineConfig {
	v, err := vllm.Lookup(vllm.Current)
	if err != nil {
		panic(err) // the current line is always modelled
	}
	return DefaultConfigFor(v)
}

// DefaultConfigFor returns a vLLM version's defaults for `vllm serve`, read from package
// vllm, before the GPU-dependent batch defaults are resolved.
func DefaultConfigFor(v *vllm.Version) EngineConfig {
	num := func(knob string, fallback int) int {
		if d, ok := v.Default(knob, vllm.GPUUnknown); ok {
			if n, ok := d.(int64); ok {
				return int(n)
			}
		}
		return fallback
	}
	flag := func(knob string) bool {
		d, _ := v.Default(knob, vllm.GPUUnknown)
		b, _ := d.(bool)
		return b
	}
	return EngineConfig{
		GPUMemoryUtilization:   v.DefaultGPUMemoryUtilization(),
		TensorParallelSize:     num("tensor_parallel_size", 1),
		PipelineParallelSize:   num("pipeline_parallel_size", 1),
		DataParallelSize:       num("data_parallel_size", 1),
		KVCacheDType:           "auto",
		EnableChunkedPrefill:   flag("enable_chunked_prefill"),
		EnablePrefixCaching:    flag("enable_prefix_caching"),
		EnforceEager:           flag("enforce_eager"),
		AsyncScheduling:        v.AsyncSchedulingDefault(),
		BlockSize:              num("block_size", 16),
		MaxNumPartialPrefills:  num("max_num_partial_prefills", 1),
		MaxLongPartialPrefills: num("max_long_partial_prefills", 1),
		StreamInterval:         num("stream_interval", 1),
		VLLMVersion:            v.Name,
	}
}

// Version returns the vLLM release line the configuration follows.
func (c EngineConfig) Version() *vllm.Version {
	name := c.VLLMVersion
	if name == "" {
		name = vllm.Current
	}
	v, err := vllm.Lookup(name)
	if err != nil {
		v, _ = vllm.Lookup(vllm.Current)
	}
	return v
}

// GPUs returns how many GPUs the configuration occupies: tensor × pipeline × data parallel.
func (c EngineConfig) GPUs() int {
	return max(c.TensorParallelSize, 1) * max(c.PipelineParallelSize, 1) * max(c.DataParallelSize, 1)
}

// Resolve fills in what vLLM derives at startup when the user did not set it: max_model_len
// from the architecture ("auto", -1, is left for CheckStartup, which knows the memory), and
// max_num_seqs and max_num_batched_tokens from the GPU (vllm.Version.BatchDefaults for the
// API server: 8192 tokens and 1024 sequences on GPUs with at least 70 GiB that are not A100s,
// 2048 and 256 elsewhere, doubled by --performance-mode throughput), then the same
// post-processing as vLLM.
func (c EngineConfig) Resolve(arch Arch, sku hw.SKU) EngineConfig {
	if c.MaxModelLen == 0 || c.MaxModelLen < -1 {
		c.MaxModelLen = arch.MaxPositions
	}
	maxLen := c.MaxModelLen
	if maxLen == -1 {
		maxLen = arch.MaxPositions
	}
	if c.BlockSize <= 0 {
		c.BlockSize = 16
	}
	defTokens, defSeqs, ok := c.Version().BatchDefaults(GPUClassOf(sku), vllm.APIServer, c.PerformanceMode)
	if !ok {
		defTokens, defSeqs, _ = c.Version().BatchDefaults(GPUClassOf(sku), vllm.APIServer, "")
	}
	seqsSet, tokensSet := c.MaxNumSeqs > 0, c.MaxNumBatchedTokens > 0
	if !seqsSet {
		c.MaxNumSeqs = defSeqs
	}
	if !tokensSet {
		t := defTokens
		if !c.EnableChunkedPrefill {
			t = max(maxLen, t)
		}
		c.MaxNumBatchedTokens = int(min(int64(c.MaxNumSeqs)*int64(maxLen), int64(t)))
	}
	if !seqsSet {
		c.MaxNumSeqs = min(c.MaxNumSeqs, c.MaxNumBatchedTokens)
	}
	return c
}

// GPUClassOf classifies a catalog SKU as vLLM's batch defaults do.
func GPUClassOf(sku hw.SKU) vllm.GPUClass {
	return vllm.ClassifyGPU(sku.Name+" "+sku.Display, sku.MemoryGiB)
}

// ConfigFromSettings builds a configuration from knob settings (vLLM option names in
// snake_case; "-" is accepted for "_"; values int64, int, float64, string or bool) on top of
// the defaults of the vLLM line a "vllm_version" setting names (else vllm.Current).
// maxModelLen is the plan's max_model_len (0: the model's own), which a
// max_model_len setting overrides. Options the model does not use are accepted and listed in
// Ignored.
func ConfigFromSettings(settings map[string]any, maxModelLen int) (EngineConfig, error) {
	c := DefaultConfig()
	if raw, ok := settings["vllm_version"]; ok {
		name, err := asString(raw)
		if err != nil {
			return EngineConfig{}, fmt.Errorf("option vllm_version: %w", err)
		}
		v, err := vllm.Lookup(name)
		if err != nil {
			return EngineConfig{}, fmt.Errorf("option vllm_version: %w", err)
		}
		c = DefaultConfigFor(v)
	}
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
	sort.Strings(c.Ignored)
	return c, nil
}

// set assigns one option.
func (c *EngineConfig) set(name string, v any) error {
	key := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(name)), "-", "_")
	var err error
	switch key {
	case "sku":
		c.SKU, err = asString(v)
	case "vllm_version":
		return nil // applied first, by ConfigFromSettings
	case "performance_mode":
		c.PerformanceMode, err = asString(v)
		if err == nil && !slices.Contains([]string{"balanced", "interactivity", "throughput"}, c.PerformanceMode) {
			err = fmt.Errorf("want balanced, interactivity or throughput, got %q", c.PerformanceMode)
		}
	case "max_model_len":
		if s, ok := v.(string); ok && strings.TrimSpace(s) == "auto" {
			c.MaxModelLen = -1
			break
		}
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
	case "enable_expert_parallel":
		c.EnableExpertParallel, err = asBool(v)
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
		c.Ignored = append(c.Ignored, key) // sorted once all are set
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

// ParseHumanInt parses an integer the way vLLM's human_readable_int does ("8k", "8K",
// "25.6k"); see vllm.ParseHumanInt.
func ParseHumanInt(s string) (int64, error) { return vllm.ParseHumanInt(s) }
