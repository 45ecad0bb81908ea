package sim

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/frontier-llm/frontier/hw"
)

const gib = 1 << 30

// Memory-model constants. They are sizes of things vLLM allocates besides weights,
// activations and the KV cache, from vLLM's own startup logs (reference section 3.1).
const (
	// nonTorchGiB is the memory outside PyTorch's allocator that grows during vLLM's profile
	// run (cuBLAS workspaces, NCCL and custom all-reduce buffers with TP > 1).
	nonTorchGiB   = 0.25
	nonTorchTPGiB = 0.25
	// cudaContextGiB is the CUDA context and the process's fixed allocations, outside the
	// gpu_memory_utilization budget.
	cudaContextGiB = 0.5
	// graphBaseGiB and graphPerLayerGiB size the CUDA graphs captured after the KV cache is
	// allocated (outside the budget up to vLLM v0.20): about 0.5 to 1 GiB.
	graphBaseGiB     = 0.2
	graphPerLayerGiB = 0.01
	// nodeGPUs is how many GPUs one simulated node has.
	nodeGPUs = 8
)

// samplerBytesPerLogit is the memory the profile run's sampler pass holds at its peak per
// (sequence, vocabulary entry) of its max_num_seqs dummy requests
// (GPUModelRunner._dummy_sampler_run, vllm/v1/worker/gpu_model_runner.py, whose dummy
// sampling metadata is neither all greedy nor all random): the BF16 logits of
// compute_logits, which the caller keeps (2 bytes); Sampler.forward's FP32 copy,
// logits.to(torch.float32) (4; temperature divides it in place); the FP32 probabilities of
// TopKTopPSampler.forward_native's softmax (4); and random_sample's exponential draws,
// q = torch.empty_like(probs) (4), vllm/v1/sample/ops/topk_topp_sampler.py.
const samplerBytesPerLogit = 2 + 4 + 4 + 4

// Failure classes of a startup: the same strings as the launcher's FailureClass values
// (package sim does not import launcher, which may use sim).
const (
	ClassWeightsOOM      = "weights_oom"
	ClassKVCacheTooSmall = "kv_cache_too_small"
	ClassInvalidArgs     = "invalid_args"
	ClassUnsupported     = "unsupported"
	// ClassOOM is CUDA running out of memory after the weights were loaded (here: capturing
	// CUDA graphs beside a gpu_memory_utilization close to 1).
	ClassOOM = "oom"
)

// StartupError is a configuration vLLM would refuse or fail to start with: Class is one of
// the launcher's failure classes, Message vLLM's own message.
type StartupError struct {
	Class   string
	Message string
	// APIServer is set for a refusal that vLLM raises in the API server process while it
	// builds the engine config (a config class's pydantic ValidationError), before any
	// engine core starts; the server logs it as that process's traceback.
	APIServer bool
	// HostMemory is set for a refusal for want of the host's RAM (the pinned buffer of
	// kv_offloading_size), not the GPU's memory.
	HostMemory bool
}

func (e *StartupError) Error() string { return e.Class + ": " + e.Message }

// Startup is what the memory model says about a configuration that starts: the numbers vLLM
// logs at startup, per GPU where vLLM reports them per GPU.
type Startup struct {
	Config        EngineConfig `json:"config"`          // resolved
	WeightsGiB    float64      `json:"weights_gib"`     // per GPU
	ActivationGiB float64      `json:"activation_gib"`  // profile-run peak plus non-torch memory, per GPU
	KVCacheGiB    float64      `json:"kv_cache_gib"`    // "Available KV cache memory", per GPU
	CUDAGraphGiB  float64      `json:"cuda_graph_gib"`  // per GPU; inside the budget from vLLM v0.21
	KVCacheTokens int          `json:"kv_cache_tokens"` // "GPU KV cache size: N tokens"
	NumGPUBlocks  int          `json:"num_gpu_blocks"`
	// ProfiledBlocks is the blocks the profile left room for, when num_gpu_blocks_override
	// set NumGPUBlocks instead; 0 without the override.
	ProfiledBlocks int     `json:"profiled_num_gpu_blocks,omitempty"`
	MaxConcurrency float64 `json:"max_concurrency"` // for max_model_len tokens per request
	WeightBytes    float64 `json:"weight_bytes"`    // bytes per weight element of the quantised linear layers
	// DenseWeightBytes is the bytes per weight element of the linear layers the method
	// leaves unquantised: WeightBytes, except for MXFP4, which quantises only the routed
	// experts (attention and shared layers stay in 16 bits).
	DenseWeightBytes float64  `json:"dense_weight_bytes"`
	KVElemBytes      float64  `json:"kv_elem_bytes"` // bytes per KV element
	FP8Compute       bool     `json:"fp8_compute"`   // linear layers run on FP8 tensor cores
	INT8Compute      bool     `json:"int8_compute"`  // linear layers run on INT8 tensor cores
	GPUs             int      `json:"gpus"`
	Warnings         []string `json:"warnings,omitempty"`
	// AssumedCheckpoint is set when a catalog architecture is served with a method that needs
	// a quantised checkpoint: the checkpoint the simulator takes to be served, e.g.
	// "llama-3.1-8b quantised with awq".
	AssumedCheckpoint string  `json:"assumed_checkpoint,omitempty"`
	UsableMemoryGiB   float64 `json:"usable_memory_gib"` // total × gpu_memory_utilization
	// SlidingWindow is the window of the model's sliding-window layers when vLLM's hybrid KV
	// cache manager gives them their own KV cache groups (0 otherwise); KVFullGroups and
	// KVWindowGroups count the groups of full-attention and sliding-window layers. A block of
	// NumGPUBlocks serves one group: a request holds, in each full-attention group, a block
	// per block_size tokens and, in each sliding-window group, only the blocks its window
	// covers.
	SlidingWindow  int `json:"sliding_window,omitempty"`
	KVFullGroups   int `json:"kv_full_groups,omitempty"`
	KVWindowGroups int `json:"kv_window_groups,omitempty"`
	// MoEBackend is the MXFP4 MoE kernel vLLM picks on this GPU for an MXFP4 checkpoint
	// (MXFP4Marlin, MXFP4Triton, MXFP4FlashInferBF16); its weight layout sets WeightsGiB.
	MoEBackend string `json:"moe_backend,omitempty"`
	// The CPU tier of the KV cache (kv_offloading_size; offload.go): its backend and blocks,
	// the bytes of one block on one GPU, and the host memory the deployment pins (every
	// data-parallel engine its own).
	OffloadBackend    string  `json:"offload_backend,omitempty"`
	CPUBlocks         int     `json:"cpu_blocks,omitempty"`
	OffloadBlockBytes float64 `json:"offload_block_bytes,omitempty"`
	PinnedHostGiB     float64 `json:"pinned_host_gib,omitempty"`
}

// kvGroups is how vLLM V1's KV cache manager lays out a model's KV cache
// (vllm/v1/core/kv_cache_utils.py, _get_kv_cache_groups_uniform_page_size and
// get_kv_cache_config_from_groups): layers of one attention kind are split into groups of
// equal size, the size being the smaller kind's layer count (the larger's when it has fewer
// than 1.5 times as many); all groups draw on one pool of blocks, and a pool block holds one
// page in one layer of every group slot, so its bytes are a page times the layers per group.
// A model whose layers all attend alike has one group of all its layers.
type kvGroups struct {
	window      int // sliding window in tokens; 0 without sliding-window groups
	full        int // groups of full-attention layers
	sliding     int // groups of sliding-window layers
	stageLayers int // layers per group on the heaviest pipeline stage
}

// kvGroups lays out the KV cache of the first pipeline stage, of layersPerStage layers. A
// model whose every layer slides (Mistral 7B v0.1) is one group here, counted as full
// attention: an upper bound on its KV use.
func (a Arch) kvGroups(layersPerStage int) kvGroups {
	sw := a.slidingIn(a.Layers)
	full := a.Layers - sw
	if sw == 0 || full == 0 {
		return kvGroups{full: 1, stageLayers: layersPerStage}
	}
	size := min(sw, full)
	if big := max(sw, full); float64(big) < 1.5*float64(size) {
		size = big
	}
	g := kvGroups{window: a.SlidingWindow, full: ceilDiv(full, size), sliding: ceilDiv(sw, size)}
	// Each kind's layers are dealt round-robin over its groups, so a stage's share of a group
	// is the stage's layers of that kind over the kind's groups.
	swStage := a.slidingIn(layersPerStage)
	g.stageLayers = max(ceilDiv(layersPerStage-swStage, g.full), ceilDiv(swStage, g.sliding))
	return g
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// requestBlocks is the number of pool blocks vLLM reserves for one request of maxLen tokens
// when it checks that one fits and computes the maximum concurrency: a block per block_size
// tokens in each full-attention group, and in each sliding-window group the blocks of the
// window's last window−1 computed tokens plus a step's max_num_batched_tokens, one more for a
// window that starts inside a block (SlidingWindowSpec.max_memory_usage_bytes in
// vllm/v1/kv_cache_interface.py).
func (g kvGroups) requestBlocks(maxLen, blockSize, batchTokens int) int {
	n := g.full * ceilDiv(maxLen, blockSize)
	if g.sliding > 0 {
		n += g.sliding * (ceilDiv(min(g.window-1+batchTokens, maxLen), blockSize) + 1)
	}
	return n
}

// maxModelLen is the longest request, up to limit tokens, whose requestBlocks fit in blocks
// (vLLM's estimate of the maximum model length).
func (g kvGroups) maxModelLen(blocks, blockSize, batchTokens, limit int) int {
	lo, hi := 0, limit
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if g.requestBlocks(mid, blockSize, batchTokens) <= blocks {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// quantizationMethods are the methods the configuration's vLLM line takes for
// --quantization, as its flag table lists them (vllm/table.go); nil when the table lists none.
func quantizationMethods(c EngineConfig) []string {
	if f, ok := c.Version().Flag("--quantization"); ok {
		return f.Valid
	}
	return nil
}

// kvCacheDTypes are the values the configuration's vLLM line accepts for --kv-cache-dtype,
// from that line's flag table (the one home of the list).
func kvCacheDTypes(c EngineConfig) []string {
	if f, ok := c.Version().Flag("kv_cache_dtype"); ok {
		return f.Choices
	}
	return nil
}

// blockSizeChoices are the block sizes the configuration's vLLM line's argparse offers (v0.13
// and before: 1, 8, 16, 32, 64, 128, 256), nil where it takes any int.
func blockSizeChoices(c EngineConfig) []string {
	if f, ok := c.Version().Flag("block_size"); ok {
		return f.Choices
	}
	return nil
}

// kernelBlockMultiple is what the attention backends of grouped-query attention take as a
// KV block size on lines whose argparse takes any: a multiple of 16, either directly (their
// get_supported_kernel_block_sizes is MultipleOf(16)) or split into kernel blocks of 16 or
// 32 (ROCm's paged attention); select_common_block_size refuses the rest. The MLA backends
// each take their own sizes, which are not checked here.
const kernelBlockMultiple = 16

// kvElemBytes is the storage of one KV-cache element of a quantised dtype, from its bit
// width: 8-bit formats 1 byte; NVFP4 4 bits plus one FP8 scale per 16 elements; INT4 per
// token-head half a byte (its per-token-head scale is negligible beside the head); the
// TurboQuant formats their key and value bit widths averaged (k8v4: 8 and 4 bits).
var kvElemBytes = map[string]float64{
	"nvfp4": 4.5 / 8, "nvfp4_4over6": 4.5 / 8, "int4_per_token_head": 0.5,
	"turboquant_k8v4": 6.0 / 8, "turboquant_4bit_nc": 4.0 / 8, "turboquant_k3v4_nc": 3.5 / 8, "turboquant_3bit_nc": 3.0 / 8,
}

// quantScheme is how a quantisation method stores weights and computes.
type quantScheme struct {
	weightBytes float64 // per linear-layer weight element, scales included
	fp8         bool    // FP8 tensor cores (where the GPU has them)
	int8        bool    // INT8 tensor cores
	prequant    bool    // needs a checkpoint quantised with this method
	// expertsOnly: only the routed experts are quantised; every other linear layer keeps
	// 16-bit weights. vLLM's Mxfp4Config.get_quant_method
	// (vllm/model_executor/layers/quantization/mxfp4.py) gives FusedMoE layers the MXFP4
	// method and linear layers UnquantizedLinearMethod, and gpt-oss's checkpoint lists its
	// attention, router, embeddings and LM head in modules_to_not_convert.
	expertsOnly bool
}

func scheme(method string) (quantScheme, bool) {
	switch method {
	case "":
		return quantScheme{weightBytes: 2}, true
	case "fp8", "ptpc_fp8", "fbgemm_fp8", "modelopt":
		return quantScheme{weightBytes: 1, fp8: true}, true
	case "awq", "awq_marlin", "gptq", "gptq_marlin", "gptq_bitblas", "moe_wna16", "auto-round":
		// 4-bit weights with one 16-bit scale per group of 128.
		return quantScheme{weightBytes: 0.5 + 2.0/128, prequant: true}, true
	case "bitsandbytes", "hqq", "rtn":
		return quantScheme{weightBytes: 0.5 + 2.0/64}, true
	case "experts_int8":
		return quantScheme{weightBytes: 1, int8: true}, true
	case "compressed-tensors", "quark":
		return quantScheme{weightBytes: 1, fp8: true, prequant: true}, true
	case "mxfp4":
		return quantScheme{weightBytes: 0.5 + 1.0/32, prequant: true, expertsOnly: true}, true
	case "modelopt_fp4":
		return quantScheme{weightBytes: 0.5 + 1.0/32, prequant: true}, true
	}
	return quantScheme{}, false
}

// CheckStartup runs vLLM's startup checks and memory profile for a configuration on a SKU:
// the cross-flag validation, the weights per GPU, the activation peak of the profile run, the
// CUDA graphs, and the KV cache that gpu_memory_utilization leaves. A configuration that vLLM
// would refuse or fail to start returns a *StartupError with vLLM's message.
func CheckStartup(arch Arch, sku hw.SKU, cfg EngineConfig) (Startup, error) {
	if err := arch.validate(); err != nil {
		return Startup{}, &StartupError{Class: ClassInvalidArgs, Message: "ValueError: " + err.Error()}
	}
	derived := arch.MaxPositions
	c := cfg.Resolve(arch, sku)
	// --max-model-len auto (-1): the largest length that fits, up to the model's own.
	autoLen := c.MaxModelLen == -1
	if autoLen {
		c.MaxModelLen = derived
	}
	graphsInBudget := c.Version().GraphsInMemoryBudget()
	st := Startup{Config: c, GPUs: c.GPUs()}
	bad := func(class, format string, args ...any) (Startup, error) {
		return Startup{}, &StartupError{Class: class, Message: fmt.Sprintf(format, args...)}
	}

	// Argument validation, in the order vLLM meets it. The config classes' ranges come first
	// here, before the block sizes v0.13's argparse offered, so that block_size 0 reads as
	// the current line's CacheConfig refuses it (v0.13's own argparse refuses it earlier).
	if se := checkFieldRanges(c); se != nil {
		return Startup{}, se
	}
	if choices := kvCacheDTypes(c); choices != nil && !slices.Contains(choices, c.KVCacheDType) {
		return bad(ClassInvalidArgs, "vllm serve: error: argument --kv-cache-dtype: invalid choice: '%s' (choose from %s)", c.KVCacheDType, strings.Join(choices, ", "))
	}
	if choices := blockSizeChoices(c); choices != nil && !slices.Contains(choices, strconv.Itoa(c.BlockSize)) {
		return bad(ClassInvalidArgs, "vllm serve: error: argument --block-size: invalid choice: %d (choose from %s)", c.BlockSize, strings.Join(choices, ", "))
	}
	if c.TensorParallelSize < 1 || c.PipelineParallelSize < 1 || c.DataParallelSize < 1 || c.MaxModelLen < 1 {
		return bad(ClassInvalidArgs, "ValueError: tensor_parallel_size, pipeline_parallel_size, data_parallel_size and max_model_len must be positive (got %d, %d, %d, %d)",
			c.TensorParallelSize, c.PipelineParallelSize, c.DataParallelSize, c.MaxModelLen)
	}
	if _, err := offloadArgs(c); err != nil {
		return Startup{}, err
	}
	if c.MaxNumPartialPrefills != 1 || c.MaxLongPartialPrefills != 1 {
		return bad(ClassUnsupported, "NotImplementedError: Concurrent Partial Prefill is not supported. We recommend to remove Concurrent Partial Prefill from your config.")
	}
	if c.Version().LongPrefillThresholdBounded() && c.LongPrefillTokenThreshold > c.MaxModelLen {
		// From v0.28 the bound holds for every configuration, not only with partial prefills.
		return bad(ClassInvalidArgs, "ValueError: long_prefill_token_threshold (%d) cannot be greater than the max_model_len (%d).", c.LongPrefillTokenThreshold, c.MaxModelLen)
	}
	if c.MaxModelLen > derived {
		return bad(ClassInvalidArgs, "ValueError: User-specified max_model_len (%d) is greater than the derived max_model_len (max_position_embeddings=%d or model_max_length=None in model's config.json). To allow overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1. VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used with extreme caution. If the model uses relative position encoding (RoPE), positions exceeding derived_max_model_len lead to nan. If the model uses absolute position encoding, positions exceeding derived_max_model_len will cause a CUDA array out-of-bounds error.", c.MaxModelLen, derived)
	}
	if !c.EnableChunkedPrefill && c.MaxNumBatchedTokens < c.MaxModelLen {
		return bad(ClassInvalidArgs, "ValueError: max_num_batched_tokens (%d) is smaller than max_model_len (%d). This effectively limits the maximum sequence length to max_num_batched_tokens and makes vLLM reject longer sequences. Please increase max_num_batched_tokens or decrease max_model_len.", c.MaxNumBatchedTokens, c.MaxModelLen)
	}
	if c.MaxNumBatchedTokens < c.MaxNumSeqs {
		return bad(ClassInvalidArgs, "ValueError: max_num_batched_tokens (%d) must be greater than or equal to max_num_seqs (%d).", c.MaxNumBatchedTokens, c.MaxNumSeqs)
	}
	if arch.Heads%c.TensorParallelSize != 0 {
		return bad(ClassInvalidArgs, "ValueError: Total number of attention heads (%d) must be divisible by tensor parallel size (%d).", arch.Heads, c.TensorParallelSize)
	}
	if c.PipelineParallelSize > arch.Layers {
		return bad(ClassInvalidArgs, "ValueError: pipeline_parallel_size (%d) is larger than the number of hidden layers (%d).", c.PipelineParallelSize, arch.Layers)
	}
	if world := c.TensorParallelSize * c.PipelineParallelSize; world > nodeGPUs {
		return bad(ClassInvalidArgs, "ValueError: World size (%d) is larger than the number of available GPUs (%d) in this node. If this is intentional and you are using:\n- ray, set '--distributed-executor-backend ray'.\n- multiprocessing, set '--nnodes' and '--node-rank'.", world, nodeGPUs)
	}
	if gpus := c.TensorParallelSize * c.PipelineParallelSize * c.DataParallelSize; c.DataParallelSize > 1 && gpus > nodeGPUs {
		return bad(ClassInvalidArgs, "ValueError: data_parallel_size (%d) x world size (%d) = %d GPUs is larger than the number of available GPUs (%d) in this node; run the other ranks on other nodes with --data-parallel-size-local and --data-parallel-address.", c.DataParallelSize, c.TensorParallelSize*c.PipelineParallelSize, gpus, nodeGPUs)
	}

	// Quantisation.
	q := c.Quantization
	if q == "" && arch.QuantMethod != "" {
		q = arch.QuantMethod
	}
	if methods := quantizationMethods(c); c.Quantization != "" && methods != nil && !slices.Contains(methods, c.Quantization) {
		return bad(ClassUnsupported, "ValueError: Unknown quantization method: %s. Must be one of ['%s'].", c.Quantization, strings.Join(methods, "', '"))
	}
	if c.Quantization != "" && arch.QuantMethod != "" && !sameQuant(arch.QuantMethod, c.Quantization) {
		return bad(ClassUnsupported, "ValueError: Quantization method specified in the model config (%s) does not match the quantization method specified in the quantization argument (%s).", arch.QuantMethod, c.Quantization)
	}
	qs, ok := scheme(q)
	if !ok {
		return bad(ClassUnsupported, "The quantization method %s is not supported for the current GPU. Minimum capability: 75. Current capability: (simulated %s).", q, sku.Name)
	}
	if qs.prequant && arch.QuantMethod == "" {
		// vLLM refuses such a method on an unquantised checkpoint. A catalog architecture is a
		// model family, not a checkpoint: the what-if is the family's checkpoint quantised
		// with the method. A config.json is one checkpoint, and is refused as vLLM would.
		if !arch.Catalog {
			return bad(ClassUnsupported, "ValueError: Cannot find the config file for %s", q)
		}
		st.AssumedCheckpoint = arch.Name + " quantised with " + q
	}
	st.WeightBytes = qs.weightBytes
	st.DenseWeightBytes = qs.weightBytes
	if qs.expertsOnly {
		st.DenseWeightBytes = 2
	}
	st.FP8Compute = qs.fp8 && sku.FP8TFLOPS > 0
	st.INT8Compute = qs.int8 && sku.INT8TOPS > 0
	if qs.fp8 && sku.FP8TFLOPS == 0 {
		st.Warnings = append(st.Warnings, "Your GPU does not have native support for FP8 computation but FP8 quantization is being used. Weight-only FP8 compression will be used leveraging the Marlin kernel. This may degrade performance for compute-heavy workloads.")
	}
	switch c.KVCacheDType {
	case "auto", "bfloat16", "float16":
		st.KVElemBytes = 2
	case "fp8_ds_mla":
		if arch.mla() {
			st.KVElemBytes = 1
			break
		}
		return bad(ClassInvalidArgs, "ValueError: fp8_ds_mla kv-cache dtype is only supported for models with MLA (multi-head latent attention); %s uses grouped-query attention", arch.Name)
	default:
		st.KVElemBytes = 1
		if b, ok := kvElemBytes[c.KVCacheDType]; ok {
			st.KVElemBytes = b
		}
		st.Warnings = append(st.Warnings, "Using fp8 data type to store kv cache. It reduces the GPU memory footprint and boosts the performance. Meanwhile, it may cause accuracy drop without a proper scaling factor.")
	}

	// Weights per GPU: the heaviest pipeline stage, split across tensor-parallel ranks.
	tp, pp := float64(c.TensorParallelSize), float64(c.PipelineParallelSize)
	layersPerStage := math.Ceil(float64(arch.Layers) / pp)
	layerBytes := (arch.attnParams() + arch.mlpParams(arch.experts())) * qs.weightBytes
	if qs.expertsOnly {
		routed := arch.mlpParams(arch.experts()) - arch.alwaysMLPParams()
		if arch.Experts <= 1 {
			routed = 0 // a dense model has no FusedMoE layer to quantise
		}
		layerBytes = (arch.attnParams()+arch.mlpParams(arch.experts())-routed)*2 + routed*qs.weightBytes
		if routed > 0 && q == "mxfp4" {
			// The routed experts as the MXFP4 backend lays them out on each rank (padding,
			// FP32 biases, swizzled scales), times the ranks: the sum below divides by tp.
			l := mxfp4LayoutFor(sku)
			st.MoEBackend = l.backend
			width := ceilDiv(arch.FFN, c.TensorParallelSize)
			experts := routed / arch.expertParams()
			layerBytes += experts*l.expertBytes(arch.Hidden, width)*tp - routed*qs.weightBytes
		}
	}
	layerBytes += arch.routerParams() * 2
	embedBytes := arch.embedParams() * 2 // embeddings and the LM head stay in 16 bits
	stageEmbed := embedBytes * arch.embedCopies()
	if pp > 1 {
		stageEmbed = embedBytes
	}
	weights := (layersPerStage*layerBytes + stageEmbed) / tp
	st.WeightsGiB = weights / gib
	total := sku.MemoryGiB
	if st.WeightsGiB+cudaContextGiB > total {
		return bad(ClassWeightsOOM, "Failed to load model - not enough GPU memory. Try lowering --gpu-memory-utilization to free memory for weights, increasing --tensor-parallel-size, or using --quantization. See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more tips. (original error: CUDA out of memory. Tried to allocate %.2f GiB. GPU 0 has a total capacity of %.2f GiB of which %.2f GiB is free.)",
			layerBytes/tp/gib, total, math.Max(0, total-cudaContextGiB-st.WeightsGiB+layerBytes/tp/gib))
	}

	// Profile run: the activation peak of one forward pass over max_num_batched_tokens tokens,
	// and the sampler's logits for max_num_seqs sequences.
	tokens := float64(c.MaxNumBatchedTokens)
	h := float64(arch.Hidden)
	qkv := float64((arch.Heads+2*arch.KVHeads)*arch.HeadDim) / tp
	mlp := 3 * float64(arch.FFN) * float64(arch.activeExperts()) / tp
	act := tokens * 2 * (2*h + qkv + mlp)
	logits := float64(c.MaxNumSeqs) * float64(arch.Vocab) * samplerBytesPerLogit
	nonTorch := nonTorchGiB
	if c.TensorParallelSize > 1 {
		nonTorch += nonTorchTPGiB
	}
	st.ActivationGiB = (act+logits)/gib + nonTorch
	st.UsableMemoryGiB = total * c.GPUMemoryUtilization
	if !c.EnforceEager {
		st.CUDAGraphGiB = graphBaseGiB + graphPerLayerGiB*layersPerStage
	}

	// The KV cache: a pool of blocks, each one page (block_size tokens) in every layer of a
	// KV cache group (all the stage's layers unless sliding-window layers make groups).
	pageBytes := float64(c.BlockSize) * arch.kvPerTokenLayer(tp) * st.KVElemBytes
	g := arch.kvGroups(int(layersPerStage))
	layerPages := pageBytes * float64(g.stageLayers)
	st.SlidingWindow, st.KVFullGroups, st.KVWindowGroups = g.window, g.full, g.sliding
	kvBytes := (st.UsableMemoryGiB - st.WeightsGiB - st.ActivationGiB) * gib
	if graphsInBudget {
		// From vLLM v0.21 the graphs' memory is profiled and taken out of the budget.
		kvBytes -= st.CUDAGraphGiB * gib
	}
	if c.KVCacheMemoryBytes != 0 {
		// gpu_worker.py: "if kv_cache_memory_bytes := ...", so 0 is unset and a negative
		// value is taken, and leaves no memory.
		kvBytes = float64(c.KVCacheMemoryBytes)
	}
	noMemory := func() (Startup, error) {
		return bad(ClassKVCacheTooSmall, "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine. See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details.")
	}
	if kvBytes <= 0 {
		return noMemory()
	}
	blocks := int(kvBytes / layerPages)
	st.KVCacheGiB = kvBytes / gib // what the profile left, as "Available KV cache memory" logs it
	available := kvBytes
	if c.NumGPUBlocksOverride != 0 || c.given("num_gpu_blocks_override") {
		// vLLM plans against the override ("Overriding num_gpu_blocks=%d with
		// num_gpu_blocks_override=%d"): the pool, the check below and its message are the
		// override's blocks, whatever memory the profile left. The option is int | None, so
		// 0 is an override too, which leaves no memory for the cache blocks.
		st.ProfiledBlocks = blocks
		blocks = c.NumGPUBlocksOverride
		available = float64(blocks) * layerPages
		if available <= 0 {
			return noMemory()
		}
	}
	st.NumGPUBlocks = blocks
	// As vLLM logs it: the pool's blocks shared out among the groups.
	st.KVCacheTokens = blocks / (g.full + g.sliding) * c.BlockSize
	perReq := g.requestBlocks(c.MaxModelLen, c.BlockSize, c.MaxNumBatchedTokens)
	if blocks < perReq && autoLen && st.KVCacheTokens > 0 {
		c.MaxModelLen = g.maxModelLen(blocks, c.BlockSize, c.MaxNumBatchedTokens, c.MaxModelLen)
		st.Config.MaxModelLen = c.MaxModelLen
		perReq = g.requestBlocks(c.MaxModelLen, c.BlockSize, c.MaxNumBatchedTokens)
		st.Warnings = append(st.Warnings, fmt.Sprintf("max_model_len auto: reduced to %d tokens, the most the KV cache holds", c.MaxModelLen))
	}
	if blocks < perReq {
		needed := float64(perReq) * layerPages / gib
		return bad(ClassKVCacheTooSmall, "ValueError: To serve at least one request with the models's max seq len (%d), (%.2f GiB KV cache is needed, which is larger than the available KV cache memory (%.2f GiB). Based on the available memory, the estimated maximum model length is %d. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
			c.MaxModelLen, needed, available/gib, g.maxModelLen(blocks, c.BlockSize, c.MaxNumBatchedTokens, c.MaxModelLen))
	}
	st.MaxConcurrency = float64(blocks) / float64(perReq)
	if blockSizeChoices(c) == nil && !arch.mla() && c.BlockSize%kernelBlockMultiple != 0 {
		// Lines whose argparse takes any block size leave it to the attention backends
		// when the KV cache is set up (select_common_block_size in vllm/v1/worker/utils.py).
		return bad(ClassInvalidArgs, "ValueError: No common block size for %d. ", c.BlockSize)
	}
	if err := sizeOffload(c, sku, &st, layerPages, g.full); err != nil {
		return Startup{}, err
	}

	// Up to v0.20 CUDA graphs are captured after the KV cache, outside the budget.
	if free := total - st.UsableMemoryGiB - cudaContextGiB; !graphsInBudget && st.CUDAGraphGiB > free {
		return bad(ClassOOM, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate %.2f GiB. GPU 0 has a total capacity of %.2f GiB of which %.2f GiB is free. (while capturing CUDA graphs; lower gpu_memory_utilization or use --enforce-eager)",
			st.CUDAGraphGiB, total, math.Max(free, 0))
	}
	if !c.EnableChunkedPrefill {
		st.Warnings = append(st.Warnings, "This model does not officially support disabling chunked prefill. Disabling this manually may cause the engine to crash or produce incorrect outputs.")
	}
	return st, nil
}

// sameQuant reports whether vLLM accepts --quantization want on a checkpoint quantised with
// have (AWQ and GPTQ checkpoints also run with their Marlin kernels).
func sameQuant(have, want string) bool {
	have, want = strings.TrimSuffix(have, "_marlin"), strings.TrimSuffix(want, "_marlin")
	return have == want
}

// formatThousands writes n with comma separators, as vLLM's capacity log lines do.
func formatThousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// MXFP4 MoE backends, as vLLM's get_mxfp4_backend
// (vllm/model_executor/layers/quantization/mxfp4.py) picks them on the release lines the
// simulator models (v0.13 to current) with no environment variable set.
const (
	// MXFP4Marlin is the weight-only Marlin kernel: GPUs below compute capability 9.0
	// (Ampere, Ada), where triton_kernels is not supported.
	MXFP4Marlin = "marlin"
	// MXFP4Triton is OpenAI's triton_kernels matmul_ogs: Hopper (FlashInfer's SM90 path needs
	// VLLM_USE_FLASHINFER_MOE_MXFP4_BF16=1), and ROCm.
	MXFP4Triton = "triton"
	// MXFP4FlashInferBF16 is FlashInfer's TRT-LLM MoE with BF16 activations: Blackwell
	// (SM100) with FlashInfer, a dependency of vLLM's CUDA wheels.
	MXFP4FlashInferBF16 = "flashinfer_mxfp4_bf16"
)

// mxfp4Layout is how one MXFP4 backend holds a FusedMoE layer's experts once
// Mxfp4MoEMethod.create_weights and process_weights_after_loading have run.
type mxfp4Layout struct {
	backend     string
	hiddenAlign int     // hidden size rounded up to a multiple of this (1: unpadded)
	interAlign  int     // intermediate size per partition rounded up to a multiple of this
	scaleCopies float64 // copies of the 8-bit block scales kept on the GPU
	biasBytes   float64 // bytes per bias element
}

// mxfp4LayoutFor picks the backend for a SKU as get_mxfp4_backend does, from its vendor and
// CUDA compute capability, and its layout:
//   - Marlin (compute capability below 9.0; create_weights: "n % 256 == 0 and k % 128 ==
//     0"): the hidden size rounds up to 256 and the expert width to 128; biases stay BF16.
//   - Triton on CUDA (9.0 up to Blackwell): the expert width rounds up to 64, the hidden size
//     is kept; the biases become FP32 (w13_bias.to(torch.float32)), and _swizzle_mxfp4 makes
//     a swizzled copy of the scales for PrecisionConfig while layer.w13_weight_scale and
//     w2_weight_scale stay registered, so the scales are held twice (the values are not:
//     the unswizzled ones are deleted).
//   - Triton on ROCm: both sizes round up to get_padding_alignment() (128 before gfx950),
//     biases FP32; the scale layout is strided, counted once.
//   - FlashInfer on SM100 (10.0 and up): both sizes round up to 256; biases FP32; the
//     shuffled scales replace the loaded ones.
func mxfp4LayoutFor(sku hw.SKU) mxfp4Layout {
	switch {
	case sku.Vendor == "amd":
		return mxfp4Layout{backend: MXFP4Triton, hiddenAlign: 128, interAlign: 128, scaleCopies: 1, biasBytes: 4}
	case sku.ComputeCapability >= 10:
		return mxfp4Layout{backend: MXFP4FlashInferBF16, hiddenAlign: 256, interAlign: 256, scaleCopies: 1, biasBytes: 4}
	case sku.ComputeCapability >= 9:
		return mxfp4Layout{backend: MXFP4Triton, hiddenAlign: 1, interAlign: 64, scaleCopies: 2, biasBytes: 4}
	}
	return mxfp4Layout{backend: MXFP4Marlin, hiddenAlign: 256, interAlign: 128, scaleCopies: 1, biasBytes: 2}
}

func roundUp(n, m int) int { return ceilDiv(n, m) * m }

// expertBytes is the bytes of one expert on one tensor-parallel rank: the fused gate and up
// projection (2 × width × hidden) and the down projection (hidden × width) as 4-bit values
// with one 8-bit scale per 32, and their biases (2 × width + hidden).
func (l mxfp4Layout) expertBytes(hidden, width int) float64 {
	h, w := float64(roundUp(hidden, l.hiddenAlign)), float64(roundUp(width, l.interAlign))
	elems := 3 * h * w
	return elems*0.5 + elems/32*l.scaleCopies + (2*w+h)*l.biasBytes
}

// checkpointExpertBytes is expertBytes as the checkpoint stores it: unpadded, BF16 biases.
func checkpointExpertBytes(hidden, width int) float64 {
	return mxfp4Layout{hiddenAlign: 1, interAlign: 1, scaleCopies: 1, biasBytes: 2}.expertBytes(hidden, width)
}
