package sim

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/frontier-llm/frontier/hw"
)

func mustArch(t testing.TB, name string) Arch {
	t.Helper()
	a, ok := LookupArch(name)
	if !ok {
		t.Fatalf("no architecture %q", name)
	}
	return a
}

func mustSKU(t testing.TB, name string) hw.SKU {
	t.Helper()
	s, ok := hw.LookupSKU(name)
	if !ok {
		t.Fatalf("no SKU %q", name)
	}
	return s
}

func TestCheckStartupFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		arch, sku string
		set       func(c *EngineConfig)
		class     string
		message   string // a substring of vLLM's message
	}{
		{"405B weights do not fit on one H100", "llama-3.1-405b", "h100-sxm", func(c *EngineConfig) {}, ClassWeightsOOM, "Failed to load model - not enough GPU memory"},
		{"70B leaves no KV cache on an H200 at 0.5", "llama-3.1-70b", "h200", func(c *EngineConfig) { c.GPUMemoryUtilization = 0.5 }, ClassKVCacheTooSmall, "No available memory for the cache blocks"},
		{"full context does not fit", "llama-3.1-8b", "l4", func(c *EngineConfig) {}, ClassKVCacheTooSmall, "estimated maximum model length is"},
		{"TP does not divide the heads", "qwen2.5-7b", "h100-sxm", func(c *EngineConfig) { c.TensorParallelSize = 8 }, ClassInvalidArgs, "Total number of attention heads (28) must be divisible by tensor parallel size (8)."},
		{"budget below max_num_seqs", "llama-3.1-8b", "h100-sxm", func(c *EngineConfig) { c.MaxNumSeqs, c.MaxNumBatchedTokens, c.MaxModelLen = 512, 256, 8192 }, ClassInvalidArgs, "max_num_batched_tokens (256) must be greater than or equal to max_num_seqs (512)."},
		{"chunked prefill off with a small budget", "llama-3.1-8b", "h100-sxm", func(c *EngineConfig) {
			c.EnableChunkedPrefill, c.MaxNumBatchedTokens, c.MaxModelLen = false, 4096, 8192
		}, ClassInvalidArgs, "max_num_batched_tokens (4096) is smaller than max_model_len (8192)"},
		{"max_model_len above the model's", "llama-2-70b", "h200", func(c *EngineConfig) { c.MaxModelLen = 8192 }, ClassInvalidArgs, "User-specified max_model_len (8192) is greater than the derived max_model_len"},
		{"partial prefills", "llama-3.1-8b", "h100-sxm", func(c *EngineConfig) { c.MaxNumPartialPrefills = 2 }, ClassUnsupported, "Concurrent Partial Prefill is not supported"},
		{"unknown quantization", "llama-3.1-8b", "h100-sxm", func(c *EngineConfig) { c.Quantization = "int3" }, ClassUnsupported, "Unknown quantization method: int3"},
		{"bad kv cache dtype", "llama-3.1-8b", "h100-sxm", func(c *EngineConfig) { c.KVCacheDType = "int4" }, ClassInvalidArgs, "invalid choice: 'int4'"},
		{"utilization above one", "llama-3.1-8b", "h100-sxm", func(c *EngineConfig) { c.GPUMemoryUtilization = 1.2 }, ClassInvalidArgs, "gpu_memory_utilization"},
		{"CUDA graphs beside a full budget", "llama-3.1-8b", "h100-sxm", func(c *EngineConfig) { c.GPUMemoryUtilization, c.MaxModelLen, c.VLLMVersion = 0.999, 8192, "0.13" }, ClassOOM, "CUDA out of memory"},
		{"world size above a node", "llama-3.1-405b", "h100-sxm", func(c *EngineConfig) { c.TensorParallelSize, c.PipelineParallelSize = 8, 2 }, ClassInvalidArgs, "World size (16) is larger than the number of available GPUs (8)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := DefaultConfig()
			tt.set(&c)
			_, err := CheckStartup(mustArch(t, tt.arch), mustSKU(t, tt.sku), c)
			var se *StartupError
			if !errors.As(err, &se) {
				t.Fatalf("CheckStartup = %v, want a *StartupError", err)
			}
			if se.Class != tt.class || !strings.Contains(se.Message, tt.message) {
				t.Errorf("CheckStartup = %s: %s\nwant %s with %q", se.Class, se.Message, tt.class, tt.message)
			}
		})
	}
}

func TestCheckStartupCapacity(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		arch, sku  string
		set        func(c *EngineConfig)
		minTokens  int
		maxTokens  int
		minWeights float64
		maxWeights float64
	}{
		// vLLM logs about 15 GiB of weights and 440k-460k KV tokens for Llama-3.1-8B on an
		// H100 at 0.9.
		{"8B on H100", "llama-3.1-8b", "h100-sxm", func(c *EngineConfig) { c.MaxModelLen = 8192 }, 400_000, 480_000, 14.8, 15.1},
		{"FP8 KV doubles the tokens", "llama-3.1-8b", "h100-sxm", func(c *EngineConfig) { c.MaxModelLen, c.KVCacheDType = 8192, "fp8" }, 800_000, 960_000, 14.8, 15.1},
		{"FP8 weights halve the linear layers", "llama-3.1-8b", "h100-sxm", func(c *EngineConfig) { c.MaxModelLen, c.Quantization = 8192, "fp8" }, 450_000, 560_000, 8.0, 9.0},
		{"70B TP4", "llama-3.1-70b", "h100-sxm", func(c *EngineConfig) { c.MaxModelLen, c.TensorParallelSize = 8192, 4 }, 430_000, 520_000, 32, 34},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := DefaultConfig()
			tt.set(&c)
			st, err := CheckStartup(mustArch(t, tt.arch), mustSKU(t, tt.sku), c)
			if err != nil {
				t.Fatal(err)
			}
			if st.KVCacheTokens < tt.minTokens || st.KVCacheTokens > tt.maxTokens {
				t.Errorf("KV cache tokens = %d, want in [%d, %d]", st.KVCacheTokens, tt.minTokens, tt.maxTokens)
			}
			if st.WeightsGiB < tt.minWeights || st.WeightsGiB > tt.maxWeights {
				t.Errorf("weights = %.2f GiB, want in [%.1f, %.1f]", st.WeightsGiB, tt.minWeights, tt.maxWeights)
			}
			if want := float64(st.NumGPUBlocks) / float64((st.Config.MaxModelLen+15)/16); st.MaxConcurrency != want {
				t.Errorf("max concurrency = %v, want %v", st.MaxConcurrency, want)
			}
		})
	}
}

// llamaConfigJSON is Llama-3.1-8B's published config.json, in part, with quantization_config
// q (none when empty).
func llamaConfigJSON(q string) []byte {
	c := `{"model_type": "llama", "num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
		"num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256, "max_position_embeddings": 131072`
	if q != "" {
		c += `, "quantization_config": {"quant_method": "` + q + `", "bits": 4, "group_size": 128}`
	}
	return []byte(c + "}")
}

// TestCheckStartupQuantisedCheckpoints checks the rule for methods that need a quantised
// checkpoint: a catalog architecture stands for its family, so awq and gptq serve the
// family's quantised checkpoint (4-bit weights with group scales, about the 5.7 GB of the
// published Llama-3.1-8B AWQ INT4 checkpoint); a config.json is one checkpoint, and vLLM's
// refusals stand where the checkpoint says otherwise.
func TestCheckStartupQuantisedCheckpoints(t *testing.T) {
	t.Parallel()
	bf16, err := parseConfigJSON(llamaConfigJSON(""))
	if err != nil {
		t.Fatal(err)
	}
	awqCkpt, err := parseConfigJSON(llamaConfigJSON("awq"))
	if err != nil {
		t.Fatal(err)
	}
	catalog := mustArch(t, "llama-3.1-8b")
	for _, tt := range []struct {
		name       string
		arch       Arch
		q          string
		assumed    string // AssumedCheckpoint, when it starts
		refusal    string // a substring of vLLM's message, when it does not
		minW, maxW float64
	}{
		{"catalog awq serves the AWQ checkpoint", catalog, "awq", "llama-3.1-8b quantised with awq", "", 5.0, 5.6},
		{"catalog gptq serves the GPTQ checkpoint", catalog, "gptq_marlin", "llama-3.1-8b quantised with gptq_marlin", "", 5.0, 5.6},
		{"catalog fp8 quantises online", catalog, "fp8", "", "", 8.0, 9.0},
		{"bf16 config.json has no AWQ config", bf16, "awq", "", "Cannot find the config file for awq", 0, 0},
		{"AWQ config.json runs awq", awqCkpt, "awq", "", "", 5.0, 5.6},
		{"AWQ config.json refuses gptq", awqCkpt, "gptq", "", "does not match the quantization method specified in the quantization argument (gptq)", 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := DefaultConfig()
			c.MaxModelLen, c.Quantization = 8192, tt.q
			st, err := CheckStartup(tt.arch, mustSKU(t, "h100-sxm"), c)
			if tt.refusal != "" {
				var se *StartupError
				if !errors.As(err, &se) || se.Class != ClassUnsupported || !strings.Contains(se.Message, tt.refusal) {
					t.Fatalf("CheckStartup = %v, want %s with %q", err, ClassUnsupported, tt.refusal)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if st.AssumedCheckpoint != tt.assumed {
				t.Errorf("AssumedCheckpoint = %q, want %q", st.AssumedCheckpoint, tt.assumed)
			}
			if st.WeightsGiB < tt.minW || st.WeightsGiB > tt.maxW {
				t.Errorf("weights = %.2f GiB, want in [%.1f, %.1f]", st.WeightsGiB, tt.minW, tt.maxW)
			}
		})
	}
}

// From vLLM v0.21 CUDA-graph memory is inside the gpu_memory_utilization budget: the same
// configuration gets a smaller KV cache than on v0.13, and a budget close to 1 no longer
// runs out of memory while capturing graphs.
func TestCUDAGraphsInsideTheBudgetFromV021(t *testing.T) {
	t.Parallel()
	arch, sku := mustArch(t, "llama-3.1-8b"), mustSKU(t, "h100-sxm")
	kv := map[string]int{}
	for _, version := range []string{"0.13", "0.20", "0.21", "0.22"} {
		c := DefaultConfig()
		c.VLLMVersion, c.GPUMemoryUtilization, c.MaxModelLen = version, 0.9, 8192
		st, err := CheckStartup(arch, sku, c)
		if err != nil {
			t.Fatalf("v%s: %v", version, err)
		}
		kv[version] = st.KVCacheTokens
	}
	if kv["0.13"] != kv["0.20"] || kv["0.21"] != kv["0.22"] || kv["0.21"] >= kv["0.20"] {
		t.Errorf("KV cache tokens by version = %v; want v0.13 = v0.20 > v0.21 = v0.22", kv)
	}
	c := DefaultConfig()
	c.GPUMemoryUtilization, c.MaxModelLen = 0.999, 8192
	if _, err := CheckStartup(arch, sku, c); err != nil {
		t.Errorf("v0.22 with gpu_memory_utilization 0.999: %v, want a start (graphs are inside the budget)", err)
	}
}

// --max-model-len auto (-1) takes the largest length that fits: the model's own when the KV
// cache holds it, else what the cache holds, where a number would fail.
func TestMaxModelLenAuto(t *testing.T) {
	t.Parallel()
	c := DefaultConfig()
	c.MaxModelLen = -1
	st, err := CheckStartup(mustArch(t, "llama-3.1-8b"), mustSKU(t, "h100-sxm"), c)
	if err != nil {
		t.Fatal(err)
	}
	if want := mustArch(t, "llama-3.1-8b").MaxPositions; st.Config.MaxModelLen != want {
		t.Errorf("auto on an H100: max_model_len %d, want the model's %d", st.Config.MaxModelLen, want)
	}
	st, err = CheckStartup(mustArch(t, "llama-3.1-8b"), mustSKU(t, "l4"), c)
	if err != nil {
		t.Fatalf("auto on an L4: %v, want a start with a shorter length", err)
	}
	if st.Config.MaxModelLen <= 0 || st.Config.MaxModelLen > st.KVCacheTokens {
		t.Errorf("auto on an L4: max_model_len %d, KV cache %d tokens; want 0 < length <= cache", st.Config.MaxModelLen, st.KVCacheTokens)
	}
}

// TestMXFP4QuantisesOnlyTheRoutedExperts checks gpt-oss-120b's weights per GPU against its
// published shapes and each backend's layout in vLLM's Mxfp4MoEMethod
// (vllm/model_executor/layers/quantization/mxfp4.py): the MXFP4 method applies to the fused
// MoE experts only (4-bit values plus one 8-bit scale per 32, and their biases), while
// attention, router, embeddings and LM head load in BF16. The sums below are written out
// from config.json and the source's padding rules, independently of Arch and mxfp4Layout.
func TestMXFP4QuantisesOnlyTheRoutedExperts(t *testing.T) {
	t.Parallel()
	const (
		layers, hidden, ffn, experts = 36, 2880, 2880, 128
		heads, kvHeads, headDim      = 64, 8, 64
		vocab                        = 201088
	)
	attnParams := float64(layers * (hidden*heads*headDim + 2*hidden*kvHeads*headDim + heads*headDim*hidden))
	routerParams := float64(layers * hidden * experts)
	embedParams := float64(2 * vocab * hidden)
	dense := (attnParams + routerParams + embedParams) * 2
	// experts returns the routed experts' bytes with the hidden size h and expert width w
	// (gate_up: 2w × h, down: h × w), scales held `scales` times, biases of biasBytes.
	expertsBytes := func(h, w, scales, biasBytes float64) float64 {
		elems := 3 * h * w
		return layers * experts * (elems*0.5 + elems/32*scales + (2*w+h)*biasBytes)
	}
	cases := []struct {
		sku, backend string
		want         float64
		logged       string
	}{
		// Hopper: Triton; width 2,880 is already a multiple of 64; FP32 biases; the scales
		// twice (the registered parameter and _swizzle_mxfp4's copy).
		{"h100-sxm", MXFP4Triton, (dense + expertsBytes(2880, 2880, 2, 4)) / gib, "64.38 GiB logged by v0.14.1 (vllm-project/vllm#33155)"},
		// Ampere: Marlin; n % 256 and k % 128: hidden 2,880 -> 3,072, width 2,880 -> 2,944.
		{"a100-80gb", MXFP4Marlin, (dense + expertsBytes(3072, 2944, 1, 2)) / gib, "65.97 GiB logged with Marlin on an H100 by v0.10.1 (vllm-project/vllm#23278)"},
		// Blackwell: FlashInfer BF16; both sizes to multiples of 256.
		{"b200", MXFP4FlashInferBF16, (dense + expertsBytes(3072, 3072, 1, 4)) / gib, ""},
		// ROCm MI300X: Triton with get_padding_alignment() = 128: both to 2,944.
		{"mi300x", MXFP4Triton, (dense + expertsBytes(2944, 2944, 1, 4)) / gib, ""},
	}
	for _, tc := range cases {
		c := DefaultConfig()
		c.MaxModelLen = 32768
		st, err := CheckStartup(mustArch(t, "gpt-oss-120b"), mustSKU(t, tc.sku), c)
		if err != nil {
			t.Fatalf("%s: %v", tc.sku, err)
		}
		if st.MoEBackend != tc.backend {
			t.Errorf("%s: MXFP4 backend %q, want %q", tc.sku, st.MoEBackend, tc.backend)
		}
		if d := st.WeightsGiB/tc.want - 1; d > 0.005 || d < -0.005 {
			t.Errorf("%s: gpt-oss-120b weights %.2f GiB per GPU, want %.2f (%s)", tc.sku, st.WeightsGiB, tc.want, tc.logged)
		}
		if st.DenseWeightBytes != 2 || st.WeightBytes != 0.5+1.0/32 {
			t.Errorf("%s: bytes per weight: dense %v, experts %v; want 2 and 0.53125", tc.sku, st.DenseWeightBytes, st.WeightBytes)
		}
	}
}

// TestMXFP4TensorParallelPadsEachRank checks that the padding applies to each rank's slice of
// the expert width: at TP 2 on Marlin, 1,440 rounds up to 1,536 per rank (not 2,944 / 2).
func TestMXFP4TensorParallelPadsEachRank(t *testing.T) {
	t.Parallel()
	l := mxfp4LayoutFor(mustSKU(t, "a100-80gb"))
	got := l.expertBytes(2880, 1440)
	h, w := 3072.0, 1536.0
	want := 3*h*w*0.5 + 3*h*w/32 + (2*w+h)*2
	if got != want {
		t.Errorf("Marlin expert bytes at width 1,440: %v, want %v", got, want)
	}
	if ck := checkpointExpertBytes(2880, 1440); ck >= got {
		t.Errorf("checkpoint bytes %v not below Marlin's padded %v", ck, got)
	}
}

// TestSamplerPeakIsFourteenBytesPerLogit checks the profile run's sampler term: at
// max_num_seqs 1,024 and gpt-oss's 201,088-token vocabulary the BF16 logits, their FP32
// copy, the FP32 probabilities and the exponential draws hold 1,024 × 201,088 × 14 bytes.
func TestSamplerPeakIsFourteenBytesPerLogit(t *testing.T) {
	t.Parallel()
	arch, sku := mustArch(t, "gpt-oss-120b"), mustSKU(t, "h100-sxm")
	at := func(seqs int) float64 {
		c := DefaultConfig()
		c.MaxModelLen = 32768
		c.MaxNumSeqs = seqs
		c.MaxNumBatchedTokens = 8192
		st, err := CheckStartup(arch, sku, c)
		if err != nil {
			t.Fatal(err)
		}
		return st.ActivationGiB
	}
	got := (at(1024) - at(512)) * gib
	want := 512.0 * 201088 * (2 + 4 + 4 + 4)
	if d := got/want - 1; d > 1e-9 || d < -1e-9 {
		t.Errorf("512 more sequences add %.0f bytes to the profile peak, want %.0f", got, want)
	}
}

// TestBlocksOverrideIsWhatTheCheckPlansAgainst: with num_gpu_blocks_override vLLM sizes the
// pool, the one-request check and its message by the override's blocks, not by the memory
// the profile left; the profiled count is logged beside the override.
func TestBlocksOverrideIsWhatTheCheckPlansAgainst(t *testing.T) {
	t.Parallel()
	arch, sku := mustArch(t, "llama-3.1-8b"), mustSKU(t, "h100-sxm")
	c := DefaultConfig()
	c.MaxModelLen = 8192
	free, err := CheckStartup(arch, sku, c)
	if err != nil {
		t.Fatal(err)
	}
	// 100 blocks of 16 tokens hold 1,600 tokens: too few for one 8,192-token request.
	c.NumGPUBlocksOverride = 100
	_, err = CheckStartup(arch, sku, c)
	var se *StartupError
	if !errors.As(err, &se) || se.Class != ClassKVCacheTooSmall {
		t.Fatalf("CheckStartup with 100 blocks = %v, want %s", err, ClassKVCacheTooSmall)
	}
	pageGiB := 16 * arch.kvPerTokenLayer(1) * 2 * float64(arch.Layers) / gib
	want := fmt.Sprintf("larger than the available KV cache memory (%.2f GiB)", 100*pageGiB)
	if !strings.Contains(se.Message, want) || strings.Contains(se.Message, fmt.Sprintf("(%.2f GiB)", free.KVCacheGiB)) {
		t.Errorf("message %q\nwant the override's memory, %q, not the profile's %.2f GiB", se.Message, want, free.KVCacheGiB)
	}
	c.NumGPUBlocksOverride = 1000
	st, err := CheckStartup(arch, sku, c)
	if err != nil {
		t.Fatal(err)
	}
	if st.NumGPUBlocks != 1000 || st.ProfiledBlocks != free.NumGPUBlocks || st.KVCacheTokens != 16000 {
		t.Errorf("override 1000: blocks %d (profiled %d), tokens %d; want 1000 (profiled %d), 16000", st.NumGPUBlocks, st.ProfiledBlocks, st.KVCacheTokens, free.NumGPUBlocks)
	}
}
