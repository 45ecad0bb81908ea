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
// their snake_case names. A zero MaxNumSeqs or MaxNumBatchedTokens means "not set" unless
// Given names the option, and a zero MaxModelLen the model's own length: vLLM's defaults for
// the GPU and the model are filled in by Resolve, and the values vLLM's config classes
// refuse (max_num_seqs 0 among them) are refused by CheckStartup.
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
	// KVOffloadingSize is --kv-offloading-size, GiB of pinned host memory for a CPU tier of
	// the KV cache (0: none); KVOffloadingBackend is --kv-offloading-backend ("" is the
	// line's default). See offload.go.
	KVOffloadingSize    float64 `json:"kv_offloading_size,omitempty"`
	KVOffloadingBackend string  `json:"kv_offloading_backend,omitempty"`
	// PerformanceMode is --performance-mode (v0.17+): "throughput" doubles the batch
	// defaults; "" is balanced.
	PerformanceMode string `json:"performance_mode,omitempty"`
	// VLLMVersion is the vLLM release line whose defaults and memory accounting apply
	// ("" is vllm.Current).
	VLLMVersion string `json:"vllm_version,omitempty"`
	// Ignored lists the options that were given but do not change the model, sorted.
	Ignored []string `json:"ignored,omitempty"`
	// Given lists the modelled options that were set (by their snake_case names, sorted), so
	// that an option set to 0, which vLLM refuses or reads as given, is told from one left
	// unset, which takes vLLM's default.
	Given []string `json:"-"`
}

// given reports whether the option was set.
func (c EngineConfig) given(option string) bool {
	_, ok := slices.BinarySearch(c.Given, option)
	return ok
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
	if c.BlockSize == 0 && !c.given("block_size") {
		c.BlockSize = 16
	}
	defTokens, defSeqs, ok := c.Version().BatchDefaults(GPUClassOf(sku), vllm.APIServer, c.PerformanceMode)
	if !ok {
		defTokens, defSeqs, _ = c.Version().BatchDefaults(GPUClassOf(sku), vllm.APIServer, "")
	}
	// As vLLM's "is None": a value given, 0 or negative included, is kept for the config
	// classes to refuse (see CheckStartup).
	seqsSet := c.MaxNumSeqs != 0 || c.given("max_num_seqs")
	tokensSet := c.MaxNumBatchedTokens != 0 || c.given("max_num_batched_tokens")
	if !seqsSet {
		c.MaxNumSeqs = defSeqs
	}
	if !tokensSet {
		t := defTokens
		if !c.EnableChunkedPrefill {
			t = max(maxLen, t)
		}
		// Python's integers do not overflow: max_num_seqs 2^63-1 gives t here, and vLLM then
		// refuses max_num_batched_tokens < max_num_seqs.
		c.MaxNumBatchedTokens = min(satMul(c.MaxNumSeqs, maxLen), t)
	}
	if !seqsSet {
		c.MaxNumSeqs = min(c.MaxNumSeqs, c.MaxNumBatchedTokens)
	}
	return c
}

// satMul is a*b, held at the int range's ends instead of overflowing.
func satMul(a, b int) int {
	if a == 0 || b == 0 {
		return 0
	}
	p := a * b
	if p/b != a || (a == -1 && b == math.MinInt) || (b == -1 && a == math.MinInt) {
		if (a < 0) != (b < 0) {
			return math.MinInt
		}
		return math.MaxInt
	}
	return p
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
	slices.Sort(c.Given)
	c.Given = slices.Compact(c.Given)
	return c, nil
}

// set assigns one option and notes it in Given. A value is kept as given, 0 and negative
// numbers included, whatever vLLM makes of it: vLLM's range checks are CheckStartup's, on
// the values vLLM builds its config classes with. Names of methods and dtypes keep their
// case, as vLLM's comparisons do ("FP8" is not "fp8").
func (c *EngineConfig) set(name string, v any) error {
	key := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(name)), "-", "_")
	switch key {
	case "tp", "gpus":
		key = "tensor_parallel_size"
	case "pp":
		key = "pipeline_parallel_size"
	case "dp":
		key = "data_parallel_size"
	case "q":
		key = "quantization"
	}
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
	case "tensor_parallel_size":
		c.TensorParallelSize, err = asInt(v)
	case "pipeline_parallel_size":
		c.PipelineParallelSize, err = asInt(v)
	case "data_parallel_size":
		c.DataParallelSize, err = asInt(v)
	case "quantization":
		var s string
		s, err = asString(v)
		if s == "None" || s == "none" || s == "null" {
			s = "" // argparse's optional_type reads "None" as None; plans write none or null
		}
		c.Quantization = s
	case "kv_cache_dtype":
		c.KVCacheDType, err = asString(v)
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
	case "kv_offloading_size":
		// 0 is no offloading: a plan's kv_offloading_size = 0 passes no flag.
		c.KVOffloadingSize, err = asFloat(v)
	case "kv_offloading_backend":
		c.KVOffloadingBackend, err = asString(v)
	default:
		c.Ignored = append(c.Ignored, key) // sorted once all are set
		return nil
	}
	if err != nil {
		return fmt.Errorf("option %s: %w", key, err)
	}
	if key != "sku" {
		c.Given = append(c.Given, key) // sorted once all are set
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
		if x < math.MinInt64 || x >= math.MaxInt64 {
			return 0, fmt.Errorf("want a whole number within 64 bits, got %v", x)
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
		f, err := vllm.PyFloat(x)
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

// fieldBound is one pydantic Field constraint: op is "le", "lt", "ge" or "gt".
type fieldBound struct {
	op    string
	limit float64
}

// fieldRule is the range a vLLM config class declares for one of its fields (a pydantic
// Field with ge, gt or le), and the value of the configuration it is checked on.
type fieldRule struct {
	class, field string
	bounds       []fieldBound // in the order pydantic-core checks them: le, lt, ge, gt
	value        func(EngineConfig) any
}

// fieldRules are the ranges of vLLM's config classes that the modelled options meet, in the
// order vLLM builds the classes in create_engine_config (CacheConfig, then SchedulerConfig)
// and, within a class, the order it declares its fields (vllm/config/cache.py,
// vllm/config/scheduler.py). Options without a range are not here:
// long_prefill_token_threshold is a plain int (the scheduler caps a request's tokens only
// when 0 < threshold), num_gpu_blocks_override and kv_cache_memory_bytes are int | None
// (what 0 and negative values do is the memory model's, in CheckStartup).
var fieldRules = []fieldRule{
	{"CacheConfig", "block_size", []fieldBound{{"gt", 0}}, func(c EngineConfig) any { return c.BlockSize }},
	{"CacheConfig", "gpu_memory_utilization", []fieldBound{{"le", 1}, {"gt", 0}}, func(c EngineConfig) any { return c.GPUMemoryUtilization }},
	{"SchedulerConfig", "max_num_batched_tokens", []fieldBound{{"ge", 1}}, func(c EngineConfig) any { return c.MaxNumBatchedTokens }},
	{"SchedulerConfig", "max_num_seqs", []fieldBound{{"ge", 1}}, func(c EngineConfig) any { return c.MaxNumSeqs }},
	{"SchedulerConfig", "stream_interval", []fieldBound{{"ge", 1}}, func(c EngineConfig) any { return c.StreamInterval }},
}

// checkFieldRanges checks a resolved configuration against fieldRules as pydantic does when
// vLLM builds its config classes: the first class with a value out of range fails with
// pydantic's ValidationError, which lists every field of that class that is out of range,
// each by its first broken bound.
func checkFieldRanges(c EngineConfig) *StartupError {
	var lines []string
	class, count := "", 0
	for _, r := range fieldRules {
		if count > 0 && r.class != class {
			break
		}
		msg, ok := r.check(r.value(c))
		if ok {
			continue
		}
		class = r.class
		count++
		lines = append(lines, r.field, "  "+msg)
	}
	if count == 0 {
		return nil
	}
	noun := "error"
	if count > 1 {
		noun = "errors"
	}
	head := fmt.Sprintf("pydantic_core._pydantic_core.ValidationError: %d validation %s for %s", count, noun, class)
	return &StartupError{Class: ClassInvalidArgs, Message: strings.Join(append([]string{head}, lines...), "\n"), APIServer: true}
}

// check returns pydantic's message for the first bound v breaks. A NaN breaks every bound,
// as pydantic-core compares floats with partial_cmp.
func (r fieldRule) check(v any) (string, bool) {
	var f float64
	var shown, typ string
	switch x := v.(type) {
	case int:
		f, shown, typ = float64(x), strconv.Itoa(x), "int"
	case float64:
		f, shown, typ = x, pyFloatRepr(x), "float"
	}
	for _, b := range r.bounds {
		var ok bool
		var want, kind string
		switch b.op {
		case "le":
			ok, want, kind = f <= b.limit, "less than or equal to", "less_than_equal"
		case "lt":
			ok, want, kind = f < b.limit, "less than", "less_than"
		case "ge":
			ok, want, kind = f >= b.limit, "greater than or equal to", "greater_than_equal"
		case "gt":
			ok, want, kind = f > b.limit, "greater than", "greater_than"
		}
		if !ok {
			return fmt.Sprintf("Input should be %s %s [type=%s, input_value=%s, input_type=%s]",
				want, strconv.FormatFloat(b.limit, 'g', -1, 64), kind, shown, typ), false
		}
	}
	return "", true
}

// pyFloatRepr writes a float as Python's repr does: the shortest digits that read back,
// positional from 1e-4 up to 1e16 with at least one decimal ("0.0", "1.5"), else with an
// exponent of at least two digits ("1e-05", "1e+16"); "nan", "inf" and "-inf".
func pyFloatRepr(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64)
	exp, _ := strconv.Atoi(e[strings.IndexByte(e, 'e')+1:])
	if f != 0 && (exp < -4 || exp >= 16) {
		return e
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}
