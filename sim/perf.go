package sim

import (
	"math"

	"github.com/frontier-llm/frontier/hw"
)

// Efficiency factors of the step-time model. They are the only fitted numbers; each is set
// from section 5 of the vLLM reference (published measurements) as noted, nowhere else.
const (
	// etaWeights is the fraction of peak memory bandwidth reached while streaming weights.
	// With stepOverheadS it reproduces the intercept of section 5.1 (6.44 ms per token for
	// Llama-3.1-8B BF16 on one H100 SXM at concurrency 1); 0.80 sits in the 70-85% band the
	// same measurements imply, and the overhead takes the rest of the intercept.
	etaWeights = 0.80
	// stepOverheadS is the host time per engine step with CUDA graphs (scheduling, input
	// preparation, sampling, output processing): the rest of section 5.1's intercept.
	stepOverheadS = 0.84e-3
	// etaKV is the fraction of peak bandwidth reached while attention reads the KV cache:
	// the geometric mean of what section 5.1's two slopes imply (4.37e-5 ms per context token
	// with BF16 KV, 2.37e-5 with FP8 KV, against 3.91e-5 and 1.96e-5 at peak).
	etaKV = 0.86
	// etaGEMM is the fraction of peak 16-bit tensor throughput reached by the linear layers
	// and attention when compute-bound (prefill, large batches): set so that section 5.2's
	// older-engine throughputs (BF16) are met.
	etaGEMM = 0.60
	// etaGEMM8 is the same for 8-bit (FP8, INT8) linear layers, whose kernels reach a
	// smaller share of their doubled peak: set so that section 5.3's offline ceilings
	// (TensorRT-LLM, FP8) are not exceeded.
	etaGEMM8 = 0.45
)

// First-principles constants that are not fitted.
const (
	// eagerPerLayerS is the extra kernel-launch time per layer and step without CUDA graphs
	// (--enforce-eager): about ten kernels per transformer layer at a few microseconds each.
	eagerPerLayerS = 40e-6
	// asyncOverlap is the share of the host overhead hidden by --async-scheduling, which
	// prepares the next step while the GPU runs the current one.
	asyncOverlap = 0.5
	// Collective latency of one all-reduce, and the share of the link's one-way bandwidth a
	// ring all-reduce reaches.
	allReduceLatencyNVLinkS = 5e-6
	allReduceLatencyPCIeS   = 25e-6
	etaLink                 = 0.8
)

// perfModel turns one engine step into its duration on a SKU. It is built once per
// configuration; step is O(1).
type perfModel struct {
	layers      float64 // per pipeline stage
	pp          float64
	tp          float64
	hidden      float64
	heads       float64 // per rank
	headDim     float64
	kvPerToken  float64 // KV bytes per token per layer per rank
	denseLinear float64 // linear params per layer (attention + active MLP)
	attnLinear  float64
	expertBytes float64 // bytes of one expert's MLP per layer per rank; 0 when dense
	experts     float64
	activeExp   float64
	nonExpBytes float64 // bytes read per layer per rank other than expert MLPs
	lmHead      float64 // LM head params (hidden × vocab)
	lmHeadBytes float64 // per rank
	bw          float64 // bytes/s
	gemmRate    float64 // effective FLOP/s for the linear layers
	attnRate    float64 // effective FLOP/s for attention
	overheadS   float64
	allReduceS  float64 // latency of one all-reduce
	linkBW      float64 // bytes/s one way
}

func newPerfModel(arch Arch, sku hw.SKU, st Startup) *perfModel {
	c := st.Config
	tp, pp := float64(c.TensorParallelSize), float64(c.PipelineParallelSize)
	m := &perfModel{
		layers:  math.Ceil(float64(arch.Layers) / pp),
		pp:      pp,
		tp:      tp,
		hidden:  float64(arch.Hidden),
		heads:   float64(arch.Heads) / tp,
		headDim: float64(arch.HeadDim),
		bw:      sku.BandwidthGBs * 1e9,
	}
	kvRank := float64(arch.KVHeads) / math.Min(tp, float64(arch.KVHeads))
	m.kvPerToken = 2 * kvRank * m.headDim * st.KVElemBytes
	m.attnLinear = arch.attnParams()
	m.denseLinear = arch.attnParams() + arch.mlpParams(arch.activeExperts())
	if arch.Experts > 1 {
		m.experts = float64(arch.Experts)
		m.activeExp = float64(arch.activeExperts())
		m.expertBytes = arch.mlpParams(1) * st.WeightBytes / tp
		m.nonExpBytes = (arch.attnParams()*st.WeightBytes + arch.routerParams()*2) / tp
	} else {
		m.nonExpBytes = (arch.attnParams() + arch.mlpParams(1)) * st.WeightBytes / tp
	}
	m.lmHead = arch.embedParams()
	m.lmHeadBytes = m.lmHead * 2 / tp
	m.gemmRate = sku.BF16TFLOPS * 1e12 * etaGEMM
	switch {
	case st.FP8Compute:
		m.gemmRate = sku.FP8TFLOPS * 1e12 * etaGEMM8
	case st.INT8Compute:
		m.gemmRate = sku.INT8TOPS * 1e12 * etaGEMM8
	}
	m.attnRate = sku.BF16TFLOPS * 1e12 * etaGEMM
	m.overheadS = stepOverheadS
	if c.AsyncScheduling {
		m.overheadS *= 1 - asyncOverlap
	}
	if c.EnforceEager {
		m.overheadS += eagerPerLayerS * float64(arch.Layers)
	}
	if c.TensorParallelSize > 1 {
		m.allReduceS = allReduceLatencyNVLinkS
		if sku.Interconnect == "pcie" {
			m.allReduceS = allReduceLatencyPCIeS
		}
		m.linkBW = sku.InterconnectGBs / 2 * 1e9 * etaLink
	}
	return m
}

// stepLoad is what one engine step computes.
type stepLoad struct {
	tokens  int     // tokens scheduled (prefill chunks and decodes)
	samples int     // sequences that sample a token
	kvRead  float64 // Σ over sequences of (context before + new tokens): KV tokens attended
	attn    float64 // Σ over sequences of new × (context before + (new+1)/2): query-key pairs
}

// step returns the duration of one engine step in seconds. Each kernel family takes the
// longer of its memory time and its compute time (a roofline per kernel); the families run
// one after the other, so their times add up; tensor-parallel all-reduces and the host
// overhead add to that; pipeline stages run one after the other.
func (m *perfModel) step(l stepLoad) float64 {
	if l.tokens == 0 {
		return 0
	}
	t := float64(l.tokens)
	// Linear layers: weights read once per step; 2 FLOPs per parameter per token.
	wBytes := m.nonExpBytes
	if m.experts > 0 {
		// Experts touched by t tokens, each choosing activeExp of experts at random.
		touched := m.experts * (1 - math.Pow(1-m.activeExp/m.experts, t))
		wBytes += touched * m.expertBytes
	}
	linFLOPs := 2 * t * m.denseLinear / m.tp
	linear := math.Max(wBytes/(m.bw*etaWeights), linFLOPs/m.gemmRate) * m.layers
	// LM head for the sampling sequences only (last stage).
	head := math.Max(m.lmHeadBytes/(m.bw*etaWeights), 2*float64(l.samples)*m.lmHead/m.tp/m.gemmRate)
	// Attention: KV read once per sequence; QK^T and PV are 4 FLOPs per query-key pair per
	// head dimension.
	attn := math.Max(l.kvRead*m.kvPerToken/(m.bw*etaKV), 4*l.attn*m.heads*m.headDim/m.attnRate) * m.layers
	comm := 0.0
	if m.tp > 1 {
		bytes := t * m.hidden * 2
		comm = 2 * m.layers * (m.allReduceS + 2*(m.tp-1)/m.tp*bytes/m.linkBW)
	}
	return (linear+attn+comm)*m.pp + head + m.overheadS
}
