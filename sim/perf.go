package sim

import (
	"math"

	"github.com/frontier-llm/frontier/hw"
)

// moeTileSizes are the row tiles (BLOCK_SIZE_M) of the grouped GEMMs, by the tokens each
// expert gets: vLLM's tuned fused-MoE configurations (vllm/model_executor/layers/fused_moe/
// configs, e.g. E=8,N=3584,device_name=NVIDIA_A100-SXM4-80GB.json, Mixtral's two of eight
// experts) use 16 rows up to 48 tokens (12 an expert), 32 at 64 to 128 (16 to 32 an expert),
// 64 at 256 to 1,536 and 128 from 2,048 (512 an expert); Marlin's MoE kernel takes the
// smallest of its block sizes that holds an expert's mean share (fused_marlin_moe).
var moeTileSizes = [...]float64{16, 32, 64, 128}

// The step-time model's fitted constants. They are global: the same for every SKU, whose own
// numbers (achieved bandwidth and GEMM throughput, kernel floor, launch cost, all-reduce
// latency) come from microbenchmarks in hw.Achieved. Each is set from section 5 of the vLLM
// reference as noted, expertComputeShare from the validation set; the leave-one-SKU-out and
// leave-one-source-out validations refit hostOverheadS, shapeShare and expertComputeShare
// without the SKU or source they score.
const (
	// hostOverheadS is the host time per engine step with CUDA graphs (scheduling, input
	// preparation, sampling, output processing), before async scheduling hides half of it:
	// section 5.1's 6.44 ms intercept (Llama-3.1-8B BF16, one H100 SXM, concurrency 1,
	// vLLM v0.19.1, where async scheduling is on by default) leaves 0.98 ms once the weights
	// stream at the H100's achieved bandwidth and every kernel takes its floor, which is
	// the half async scheduling leaves visible.
	hostOverheadS = 1.96e-3
	// shapeShare is the share of a GEMM sweep's best rate that serving's linear layers and
	// attention reach when compute-bound (skinny and odd shapes, epilogues, the work between
	// GEMMs): the largest value that keeps every offline ceiling of section 5.3 (FP8) unmet
	// while section 5.2's older-engine throughputs (BF16) are still met.
	shapeShare = 0.75
	// expertComputeShare is the share of the dense GEMM rate (tensor peak × the GEMM sweep's
	// share × shapeShare) that the routed experts' grouped GEMMs reach once their token groups
	// are padded to the kernel's row tile. vLLM's fused-MoE Triton kernel runs Mixtral-8x7B's
	// experts at TP 2 on an H100 at 0.68 of the sweep's BF16 rate with 384 tokens per expert,
	// padded rows counted (benchmark_moe, vllm-project/vllm#24700: 1,123 µs for 1,536 tokens),
	// 0.9 of shapeShare's; the serving runs of the validation set, which section 5 of the
	// reference lacks, ask for less, and it is fitted to their MoE points (docs/sim.md).
	expertComputeShare = 0.5
	// kvReadShare is the share of the copy bandwidth attention reaches while reading a paged
	// KV cache: the geometric mean of what section 5.1's two slopes imply (4.37e-5 ms per
	// context token with BF16 KV, 2.37e-5 with FP8 KV) on the H100's measured bandwidth.
	kvReadShare = 0.96
)

// First-principles constants: kernel counts of one transformer layer as vLLM runs it (with
// torch.compile's fusions), and how async scheduling hides host time.
const (
	// gemmKernels are the linear layers of a grouped-query layer: QKV, output, gate-up and
	// down projections.
	gemmKernels = 4
	// mlaGEMMKernels are the extra matrix products of multi-head latent attention: the query
	// and latent down-projections, the query up-projection, and the two per-head products
	// that fold the latent into keys and out of values (W_UK, W_UV), beside the output
	// projection, in place of QKV.
	mlaGEMMKernels = 3
	// smallKernels are a layer's kernels whose work is tiny at small batch: two fused
	// residual-add norms, the rotary embedding, the KV-cache write and the activation.
	smallKernels = 5
	// mlaSmallKernels are MLA's extra norms (query and latent) and the split-KV combine.
	mlaSmallKernels = 3
	// fp8QuantKernels quantise activations to FP8 before the GEMMs not fed by a fused norm.
	fp8QuantKernels = 2
	// moeKernels are the routing kernels of a mixture-of-experts layer outside the
	// fused-experts call (moeCallFloors): the router GEMM.
	moeKernels = 1
	// moeCallFloors is the fixed time of one fused-experts call (top-k, the token-to-expert
	// alignment, the two grouped GEMMs, the activation and the weighted sum), in kernel floors:
	// vLLM's benchmark_moe on an H100 (vllm-project/vllm#24700, inside a CUDA graph) times
	// Mixtral-8x7B's experts at TP 2 at 144 µs for one token and 483 µs for 64, and
	// Qwen3-30B-A3B's FP8 experts at 40 and 262 µs: a line through each pair of points meets
	// zero bytes at 31 and 25 µs, 10 to 12 floors of 2.5 µs.
	moeCallFloors = 11
	// expertStreamShare is the share of the achieved copy bandwidth at which the fused-experts
	// kernel streams the touched experts' weights, and expertFloors the fixed time each touched
	// expert adds to a call, in kernel floors. From the same benchmark_moe runs: the time per
	// additionally touched expert is 56.5 µs for one of Mixtral's 176 MB expert slices (3.12
	// TB/s, above the H100's achieved 3.02: a share of 1 with nothing fixed), 1.88 µs for one
	// of Qwen3-30B-A3B's 4.7 MB FP8 experts on an H100 (1.56 µs of streaming and 0.32 fixed),
	// and 0.90 µs for one of Qwen3-235B-A22B's 2.4 MB block-FP8 slices at TP 8 on an H200
	// (sglang's tuning run of the same kernel, sgl-project/sglang#11730, default configuration:
	// 31.7 µs for one token, 125 µs for 32; 0.55 µs of streaming and 0.35 fixed). 0.33 µs is
	// 0.13 of the 2.5 µs floor.
	expertStreamShare = 1.0
	expertFloors      = 0.13
	// deepGEMMRows is the row alignment of DeepGEMM's grouped FP8 GEMM (its m-grouped contiguous
	// layout, get_mk_alignment_for_contiguous_layout): vLLM runs a block-FP8 checkpoint's
	// experts through it on Hopper only for a step of at least that many tokens, whose every
	// expert's rows it pads to a multiple of it, and through its Triton kernel below
	// (TritonOrDeepGemmExperts; _valid_deep_gemm_shape also needs the expert's width and the
	// hidden size to be multiples of it).
	deepGEMMRows = 128
	// deepGEMMOffTP is the tensor-parallel size from which vLLM from v0.12 leaves DeepGEMM out
	// of the fused experts by default (get_fp8_moe_backend; vllm-project/vllm#29346: Triton's
	// experts are faster for DeepSeek-V3 at TP 8 on Hopper and Blackwell).
	deepGEMMOffTP = 8
	// rocmTritonMoEShare is the speed of vLLM's default fused-experts kernel on ROCm (Triton;
	// AITER's kernels only with VLLM_ROCM_USE_AITER=1, off by default in vllm/envs.py) as a
	// share of what the SKU's achieved rates give: AMD measures AITER's block-scale fused MoE
	// at up to 3 times it on MI300X ("AITER: AI Tensor Engine For ROCm",
	// rocm.blogs.amd.com), and the achieved rates are hipBLASLt's and a copy's.
	rocmTritonMoEShare = 1.0 / 3
	// sharedExpertKernels run the shared experts beside the routed ones: gate-up, activation,
	// down and the add.
	sharedExpertKernels = 4
	// blockFP8GEMMUs is the shortest time of one block-scaled FP8 linear layer (128×128 weight
	// blocks, the DeepSeek-V3 and MiniMax checkpoints) at decode sizes on an NVIDIA GPU, in
	// µs: vLLM's kernel times DeepSeek-V3's tensor-parallel shapes at 14.5 µs (N=3072, K=1536)
	// and 20.6 µs (N=512, K=7168) from 1 to 128 tokens (sgl-project/sglang#5820, the "vllm"
	// column), and its fused latent down-projection (N=2112, K=7168) on an H100 at 23.3 µs
	// (Triton) and 33.9 µs (CUTLASS) for one token (vllm-project/vllm#23280): a few MB of
	// weights that stream in 1 to 5 µs. The median of the four, 22 µs, is taken.
	blockFP8GEMMUs = 22
	// meshPeers is the number of other GPUs each GPU of an eight-GPU full mesh (MI300X's
	// xGMI) has a direct link to.
	meshPeers = 7
	// stepKernels run once per step: embedding, final norm, LM head, sampling.
	stepKernels = 6
	// asyncOverlap is the share of the host overhead hidden by --async-scheduling, which
	// prepares the next step while the GPU runs the current one.
	asyncOverlap = 0.5
)

// The OpenAI-compatible API server's own time per request, outside the engine steps (docs/sim.md,
// "Step-time model"): what vllm serve adds to what an offline LLM.generate() run measures.
const (
	// apiInS is the time from a request reaching the server to the engine core seeing it:
	// HTTP parsing, the chat template, tokenisation and the ZeroMQ hand-off to the engine
	// core. Tokenising a 131-token chat prompt was measured at 1.3 to 2.8 ms
	// (tenstorrent/tt-inference-server#2173); the template and the IPC hop add about as much
	// again.
	apiInS = 3e-3
	// apiOutS is the time from the engine producing a token to the client reading it:
	// detokenisation, the server-sent-event framing and the HTTP response. vllm bench serve's
	// TTFT exceeds the server's own vllm:time_to_first_token_seconds by 8.4 to 12.2 ms
	// across the completions, chat and responses endpoints (vllm-project/vllm#54628).
	apiOutS = 10e-3
)

// physics is the fitted part of the model, separate so that the validation can refit it.
type physics struct {
	hostS  float64 // host overhead per step
	shape  float64 // shapeShare
	expert float64 // expertComputeShare
	// expertParallel forces vLLM's --enable-expert-parallel on, whatever the configuration
	// says (the tests of the expert-parallel step cost use it).
	expertParallel bool
	// apiIn and apiOut are the API server's time per request before the engine sees it and
	// after each token leaves it; both 0 for an offline run (LLM.generate, benchmark_latency).
	apiIn, apiOut float64
}

var defaultPhysics = physics{hostS: hostOverheadS, shape: shapeShare, expert: expertComputeShare, apiIn: apiInS, apiOut: apiOutS}

// perfModel turns one engine step into its duration on a SKU. It is built once per
// configuration; step is O(1).
type perfModel struct {
	layers      float64 // per pipeline stage
	pp          float64
	tp          float64
	hidden      float64
	heads       float64 // per rank
	pairFLOPs   float64 // attention FLOPs per query-key pair per head
	kvPerToken  float64 // KV bytes per token per layer per rank
	denseLinear float64 // linear params per average layer (attention + active MLP)
	expLinear   float64 // of which in routed experts
	expertComp  float64 // expertComputeShare: the grouped GEMMs' share of the dense GEMM rate
	expertRate  float64 // achieved bytes/s the fused-experts kernel streams expert weights at
	expertGEMM  float64 // FLOP/s of the grouped GEMMs (before expertComp)
	expertBytes float64 // bytes of one routed expert in a MoE layer on a rank holding it
	expertSlice float64 // parameters of one routed expert in a MoE layer on a rank holding it
	pairBytes   float64 // activation bytes one token-expert pair moves through the fused-experts call
	moeCallS    float64 // fixed time of one fused-experts call
	// deepGEMM is the FLOP/s of the grouped GEMMs (before expertComp) when DeepGEMM runs the
	// experts of a step of at least deepGEMMRows tokens; 0 where vLLM does not use it.
	deepGEMM    float64
	expertWidth float64 // each routed expert's intermediate width on a rank holding it
	experts     float64 // routed experts; 0 when dense
	activeExp   float64
	epRanks     float64 // ranks the experts are spread over with expert parallelism; 0 without
	moeShare    float64 // share of layers with experts
	nonExpBytes float64 // bytes read per layer per rank other than routed experts
	lmHead      float64 // LM head params (hidden × vocab)
	lmHeadBytes float64 // per rank
	wRate       float64 // achieved bytes/s streaming weights
	kvRate      float64 // achieved bytes/s reading the KV cache
	gemmRate    float64 // effective FLOP/s for the linear layers
	attnRate    float64 // effective FLOP/s for attention
	swShare     float64 // share of layers attending over a sliding window
	floorS      float64 // shortest kernel in a replayed graph
	launchS     float64 // host launch cost per kernel; 0 with graphs
	layerGEMMs  float64 // GEMM kernels per layer
	// blockGEMMs are the block-scaled FP8 linear layers among a layer's GEMMs outside the
	// routed experts, each taking at least blockFloorS; 0 without block-FP8 weights.
	blockGEMMs  float64
	blockFloorS float64
	layerSmall  float64 // small kernels per layer
	layerKerns  float64 // all kernels per layer (for launch-bound eager steps)
	hostS       float64
	apiIn       float64 // API server time before a request reaches the engine
	apiOut      float64 // API server time from a token to the client
	allReduceS  float64 // latency of one all-reduce
	linkBW      float64 // achieved bytes/s one way
}

func newPerfModel(arch Arch, sku hw.SKU, st Startup) *perfModel {
	return newPerfModelWith(arch, sku, st, defaultPhysics)
}

func newPerfModelWith(arch Arch, sku hw.SKU, st Startup, ph physics) *perfModel {
	c := st.Config
	a := sku.Achieved
	tp, pp := float64(c.TensorParallelSize), float64(c.PipelineParallelSize)
	m := &perfModel{
		layers: math.Ceil(float64(arch.Layers) / pp),
		pp:     pp,
		tp:     tp,
		hidden: float64(arch.Hidden),
		heads:  float64(arch.Heads) / tp,
		wRate:  sku.BandwidthGBs * 1e9 * a.MemShare,
		floorS: a.KernelFloorUs * 1e-6,
	}
	m.kvRate = m.wRate * kvReadShare
	m.swShare = arch.slidingShare()
	m.kvPerToken = arch.kvPerTokenLayer(tp) * st.KVElemBytes
	m.pairFLOPs = 4 * float64(arch.HeadDim)
	if arch.mla() {
		// Prefill expands the latent into per-head keys (nope + rope) and values.
		v := float64(arch.VHeadDim)
		if v == 0 {
			v = float64(arch.HeadDim - arch.RopeDim)
		}
		m.pairFLOPs = 2*float64(arch.HeadDim) + 2*v
	}
	m.denseLinear = arch.attnParams() + arch.mlpParams(arch.activeExperts())
	m.layerGEMMs, m.layerSmall = gemmKernels, smallKernels
	if arch.mla() {
		m.layerGEMMs += mlaGEMMKernels
		m.layerSmall += mlaSmallKernels
	}
	if arch.QKNorm {
		m.layerSmall += 2
	}
	if arch.Experts > 1 {
		m.experts = float64(arch.Experts)
		m.activeExp = float64(arch.activeExperts())
		m.moeShare = arch.moeShare()
		m.expLinear = m.activeExp * arch.expertParams() * m.moeShare
		m.expertComp = ph.expert
		m.expertSlice = arch.expertParams() / tp
		m.expertWidth = float64(arch.FFN) / tp
		if (ph.expertParallel || c.EnableExpertParallel) && tp > 1 {
			// vLLM places whole experts on the TP×DP ranks instead of slicing every one.
			m.epRanks = tp
			m.expertSlice *= tp
			m.expertWidth *= tp
		}
		m.expertBytes = m.expertSlice * st.WeightBytes
		// fused_experts writes each pair's gate-up output (2·width) and reads it back, writes
		// and reads the activation's output (width) and the down projection's (hidden), all in
		// BF16, before the weighted sum folds the pairs into their tokens.
		m.pairBytes = 2 * 2 * (3*m.expertWidth + float64(arch.Hidden))
		m.moeCallS = moeCallFloors * m.floorS
		m.nonExpBytes = ((arch.attnParams()+arch.alwaysMLPParams())*st.DenseWeightBytes + arch.routerParams()*2) / tp
		m.layerSmall += (moeKernels + sharedExpertKernels*math.Min(float64(arch.SharedExperts), 1)) * m.moeShare
	} else {
		m.nonExpBytes = (arch.attnParams() + arch.mlpParams(1)) * st.DenseWeightBytes / tp
	}
	m.lmHead = arch.embedParams()
	m.lmHeadBytes = m.lmHead * 2 / tp

	bf16 := sku.BF16TFLOPS * 1e12 * a.BF16Share * ph.shape
	m.gemmRate, m.attnRate = bf16, bf16
	q := c.Quantization
	if q == "" {
		q = arch.QuantMethod
	}
	switch {
	case st.FP8Compute:
		m.gemmRate = sku.FP8TFLOPS * 1e12 * a.FP8Share * ph.shape
		m.layerSmall += fp8QuantKernels
	case st.INT8Compute:
		share := a.FP8Share
		if share == 0 {
			share = a.BF16Share
		}
		m.gemmRate = sku.INT8TOPS * 1e12 * share * ph.shape
	case q == "modelopt_fp4" && sku.FP4TFLOPS > 0:
		// NVFP4 quantises activations too (W4A4): the GEMMs run on FP4 tensor cores. MXFP4
		// (gpt-oss) does not: vLLM's default MXFP4 MoE backends take BF16 activations
		// (FlashInfer's TRT-LLM kernel on Blackwell, Triton on Hopper and ROCm, Marlin below
		// SM90; get_mxfp4_backend), so the experts' 4-bit weights are widened and multiplied
		// on BF16 tensor cores.
		m.gemmRate = sku.FP4TFLOPS * 1e12 * a.FP4Share * ph.shape
	}
	if st.KVElemBytes == 1 && sku.FP8TFLOPS > 0 {
		// An FP8 KV cache is attended with FP8 tensor cores (FlashAttention 3, FlashInfer).
		m.attnRate = sku.FP8TFLOPS * 1e12 * a.FP8Share * ph.shape
	}
	m.expertRate, m.expertGEMM = m.wRate*expertStreamShare, m.gemmRate
	switch {
	case sku.Vendor == "amd":
		m.expertRate *= rocmTritonMoEShare
		m.expertGEMM *= rocmTritonMoEShare
	case m.experts > 0 && st.FP8Compute && sku.Vendor == "nvidia" && sku.ComputeCapability < 10:
		// vLLM's default FP8 experts on Hopper and Ada are its Triton fused-MoE kernel
		// (get_fp8_moe_backend: FlashInfer only when asked for, Marlin below compute
		// capability 8.9), whose FP8 tiles run at about the BF16 tensor rate: tuned for the
		// same shape on an H200 it is 10 to 17% faster in FP8 than in BF16
		// (vllm-project/vllm#35457), where the FP8 tensor rate is twice BF16's. A block-FP8
		// checkpoint's experts go through DeepGEMM instead on Hopper below TP 8, at the FP8
		// rate, for the steps it takes. Blackwell keeps the FP8 rate: no measurement of the
		// Triton kernel's FP8 there was found.
		m.expertGEMM = bf16
		if arch.QuantMethod == "fp8" && sku.ComputeCapability == 9 && c.TensorParallelSize < deepGEMMOffTP &&
			math.Mod(m.expertWidth, deepGEMMRows) == 0 && arch.Hidden%deepGEMMRows == 0 {
			m.deepGEMM = m.gemmRate
		}
	}
	if st.FP8Compute && arch.QuantMethod == "fp8" && sku.Vendor == "nvidia" {
		// A block-FP8 checkpoint: the attention projections in FP8 (MLA's fused latent
		// down-projection, query up-projection and output; QKV and output otherwise, the
		// per-head latent products staying BF16), the shared experts' two and the dense
		// layers' MLP.
		m.blockGEMMs = 2
		if arch.mla() {
			m.blockGEMMs = 3
		}
		if m.experts > 0 {
			m.blockGEMMs += 2 * math.Min(float64(arch.SharedExperts), 1) * m.moeShare
			m.blockGEMMs += 2 * (1 - m.moeShare)
		} else {
			m.blockGEMMs += 2
		}
		m.blockFloorS = blockFP8GEMMUs * 1e-6
	}
	m.layerKerns = m.layerGEMMs + 1 + m.layerSmall
	m.hostS = ph.hostS
	m.apiIn, m.apiOut = ph.apiIn, ph.apiOut
	if c.AsyncScheduling {
		m.hostS *= 1 - asyncOverlap
	}
	if c.EnforceEager {
		m.launchS = a.LaunchUs * 1e-6
	}
	if c.TensorParallelSize > 1 {
		m.allReduceS = a.AllReduceUs * 1e-6
		m.linkBW = sku.InterconnectGBs / 2 * 1e9 * a.LinkShare
		if sku.Interconnect == "infinity-fabric" {
			// A full mesh of direct links, one to each of the node's other seven GPUs: a
			// group of TP GPUs reduces over its TP−1 links each, not the GPU's whole fabric
			// as through a switch.
			m.linkBW *= math.Min(float64(c.TensorParallelSize-1)/meshPeers, 1)
		}
	}
	return m
}

// stepLoad is what one engine step computes.
type stepLoad struct {
	tokens  int     // tokens scheduled (prefill chunks and decodes)
	samples int     // sequences that sample a token
	kvRead  float64 // Σ over sequences of (context before + new tokens): KV tokens attended
	attn    float64 // Σ over sequences of new × (context before + (new+1)/2): query-key pairs
	// The same in a sliding-window layer, where a query attends to the window's last tokens
	// only: keys read and query-key pairs.
	swKVRead float64
	swAttn   float64
}

// windowPairs is the number of query-key pairs of n new tokens after c cached ones in a
// layer whose queries each attend to at most the last w positions, their own included.
func windowPairs(c, n, w int) float64 {
	cf, nf, wf := float64(c), float64(n), float64(w)
	switch {
	case c+n <= w:
		return nf * (cf + (nf+1)/2)
	case c >= w:
		return nf * wf
	}
	// Queries at positions c+1 … w see every earlier token; the rest see w.
	return (wf*(wf+1)-cf*(cf+1))/2 + (cf+nf-wf)*wf
}

// attention is one layer's attention time: its KV read or its QKᵀ and PV products, at
// least one kernel floor.
func (m *perfModel) attention(kvRead, pairs float64) float64 {
	return math.Max(math.Max(kvRead*m.kvPerToken/m.kvRate, pairs*m.heads*m.pairFLOPs/m.attnRate), m.floorS)
}

// step returns the duration of one engine step in seconds. Within a layer each kernel family
// takes the longer of its memory time and its compute time (a roofline per kernel) and at
// least the SKU's kernel floor per kernel; the families run one after the other, so their
// times add up, with the small kernels' floors and the tensor-parallel collectives. Without
// CUDA graphs a layer cannot go faster than the host launches its kernels. Layers times depth,
// pipeline stages one after another, the LM head and the host overhead make the step.
func (m *perfModel) step(l stepLoad) float64 {
	if l.tokens == 0 {
		return 0
	}
	t := float64(l.tokens)
	// Linear layers outside the routed experts: weights read once per step; 2 FLOPs per
	// parameter per token.
	memT := m.nonExpBytes / m.wRate
	compT := 2 * t * (m.denseLinear - m.expLinear) / m.tp / m.gemmRate
	gemms := m.layerGEMMs
	if m.experts > 0 {
		gemms -= 2 * m.moeShare // the MLP's two GEMMs are the fused-experts call's
	}
	linear := math.Max(math.Max(memT, compT), gemms*m.floorS+m.blockGEMMs*(m.blockFloorS-m.floorS))
	if m.experts > 0 {
		linear += m.moeShare * m.expertTime(t)
	}
	// Attention: KV read once per sequence; QKᵀ and PV per query-key pair per head.
	attn := m.attention(l.kvRead, l.attn)
	if m.swShare > 0 {
		// Sliding-window layers read and multiply only their window.
		attn = (1-m.swShare)*attn + m.swShare*m.attention(l.swKVRead, l.swAttn)
	}
	layer := linear + attn + m.layerSmall*m.floorS
	if m.tp > 1 {
		bytes := t * m.hidden * 2
		ar := m.allReduceS + 2*(m.tp-1)/m.tp*bytes/m.linkBW
		// With expert parallelism and one data-parallel rank every rank holds every token
		// after attention's all-reduce, so the dispatch moves nothing; each rank runs its
		// own experts on the tokens routed to them and the combine is the all-reduce a
		// sliced MoE layer ends with too (vLLM's FusedMoE without all-to-all kernels, which
		// it uses only with data parallelism).
		layer += 2 * ar
	}
	if m.launchS > 0 {
		layer = math.Max(layer, m.layerKerns*m.launchS)
	}
	// LM head for the sampling sequences only (last stage).
	head := math.Max(m.lmHeadBytes/m.wRate, 2*float64(l.samples)*m.lmHead/m.tp/m.gemmRate)
	fixed := stepKernels * math.Max(m.floorS, m.launchS)
	return layer*m.layers*m.pp + head + fixed + m.hostS
}

// expertTime is one MoE layer's routed experts on the busiest rank, for t tokens: the
// fused-experts call's fixed time, the longer of streaming the touched experts' weights (with
// a fixed time per touched expert) and
// their grouped GEMMs (each expert's token group padded to the row tile), and the pairs'
// activations through the call's intermediate buffers.
func (m *perfModel) expertTime(t float64) float64 {
	// Experts touched by t tokens, each choosing activeExp of experts at random.
	touched := m.experts * (1 - math.Pow(1-m.activeExp/m.experts, t))
	pairs := t * m.activeExp
	if m.epRanks > 0 {
		// Whole experts on each rank: the step waits for the busiest rank, about two
		// standard deviations above the mean of its share of the routed tokens.
		touched /= m.epRanks
		pairs /= m.epRanks
		imbalance := 1 + 2/math.Sqrt(math.Max(pairs, 1))
		touched = math.Min(touched*imbalance, m.experts/m.epRanks)
		pairs *= imbalance
	}
	stream := touched * (m.expertBytes/m.expertRate + expertFloors*m.floorS)
	// Each touched expert's token group is padded to the row tile, which vLLM sizes to the
	// tokens an expert gets: one tile for a group that fits it, half a tile on average beyond.
	perExpert := pairs / math.Max(touched, 1)
	tile, rate := moeTile(perExpert), m.expertGEMM
	if m.deepGEMM > 0 && t >= deepGEMMRows {
		// DeepGEMM pads every expert's rows to its alignment.
		tile, rate = deepGEMMRows, m.deepGEMM
	}
	rows := touched * math.Max(tile, perExpert+tile/2)
	gemm := 2 * rows * m.expertSlice / (rate * m.expertComp)
	return m.moeCallS + math.Max(stream, gemm) + pairs*m.pairBytes/m.wRate
}

// moeTile is the row tile (BLOCK_SIZE_M) of the fused-experts GEMMs for a mean of n tokens
// per touched expert: the smallest of 16, 32, 64 and 128 rows that holds them.
func moeTile(n float64) float64 {
	for _, m := range moeTileSizes {
		if n <= m {
			return m
		}
	}
	return moeTileSizes[len(moeTileSizes)-1]
}
