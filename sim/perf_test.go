package sim

import (
	"math"
	"testing"

	"github.com/frontier-llm/frontier/hw"
)

// perfFor builds the step model of a configuration that must start.
func perfFor(t *testing.T, archName, skuName string, set func(*EngineConfig), ph physics) *perfModel {
	t.Helper()
	arch, sku := mustArch(t, archName), mustSKU(t, skuName)
	cfg := DefaultConfig()
	cfg.MaxModelLen = 8192
	if set != nil {
		set(&cfg)
	}
	st, err := CheckStartup(arch, sku, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return newPerfModelWith(arch, sku, st, ph)
}

// decode is one decode step of b sequences with ctx tokens of context each.
func decodeLoad(b, ctx int) stepLoad {
	return stepLoad{tokens: b, samples: b, kvRead: float64(b * (ctx + 1)), attn: float64(b * (ctx + 1))}
}

func TestCatalogMoEParams(t *testing.T) {
	t.Parallel()
	// Published totals: DeepSeek-V3 671B, gpt-oss-120b 117B, gpt-oss-20b 21B, Qwen3-30B-A3B
	// 30.5B, Qwen3-8B 8.2B. Embeddings and norms make up the small differences.
	for _, tc := range []struct {
		arch string
		want float64
	}{{"deepseek-v3", 671e9}, {"gpt-oss-120b", 117e9}, {"gpt-oss-20b", 21e9}, {"qwen3-30b-a3b", 30.5e9}, {"qwen3-8b", 8.2e9}} {
		got := mustArch(t, tc.arch).Params()
		if math.Abs(got-tc.want)/tc.want > 0.03 {
			t.Errorf("%s: %.1fB parameters, published %.1fB", tc.arch, got/1e9, tc.want/1e9)
		}
	}
}

func TestMLAKVCacheIsOneLatent(t *testing.T) {
	t.Parallel()
	ds := mustArch(t, "deepseek-v3")
	// 61 layers × (512 + 64) elements × 2 bytes, the same on every rank.
	if got, want := ds.KVBytesPerToken(2), 61.0*576*2; got != want {
		t.Errorf("KV bytes per token = %v, want %v", got, want)
	}
	if ds.kvPerTokenLayer(8) != ds.kvPerTokenLayer(1) {
		t.Error("the MLA latent must not shrink with tensor parallelism")
	}
	st, err := CheckStartup(ds, mustSKU(t, "h200"), EngineConfig{TensorParallelSize: 8, KVCacheDType: "fp8_ds_mla",
		GPUMemoryUtilization: 0.9, PipelineParallelSize: 1, DataParallelSize: 1, BlockSize: 64, EnableChunkedPrefill: true,
		MaxNumPartialPrefills: 1, MaxLongPartialPrefills: 1, MaxModelLen: 32768, StreamInterval: 1})
	if err != nil {
		t.Fatalf("fp8_ds_mla on an MLA model: %v", err)
	}
	if st.KVElemBytes != 1 {
		t.Errorf("fp8_ds_mla element size %v, want 1", st.KVElemBytes)
	}
}

func TestParseConfigJSONReadsMLAAndSharedExperts(t *testing.T) {
	t.Parallel()
	a, err := parseConfigJSON([]byte(`{"model_type":"deepseek_v3","num_hidden_layers":61,"hidden_size":7168,
		"num_attention_heads":128,"num_key_value_heads":128,"intermediate_size":18432,"moe_intermediate_size":2048,
		"vocab_size":129280,"max_position_embeddings":163840,"n_routed_experts":256,"n_shared_experts":1,
		"num_experts_per_tok":8,"first_k_dense_replace":3,"kv_lora_rank":512,"q_lora_rank":1536,
		"qk_rope_head_dim":64,"qk_nope_head_dim":128,"v_head_dim":128}`))
	if err != nil {
		t.Fatal(err)
	}
	cat := mustArch(t, "deepseek-v3")
	if a.Params() != cat.Params() || a.KVBytesPerToken(1) != cat.KVBytesPerToken(1) || a.HeadDim != 192 || a.DenseFFN != 18432 {
		t.Errorf("config.json gives %+v; want the catalog's DeepSeek-V3 numbers", a)
	}
}

// TestKernelFloorsGrowWithDepthAndSharding: at batch 1 a step is not just weights over
// bandwidth; every layer's kernels take at least the floor and every TP all-reduce its
// latency, so sharding 70B eight ways does not make a step eight times shorter.
func TestKernelFloorsGrowWithDepthAndSharding(t *testing.T) {
	t.Parallel()
	tp1 := perfFor(t, "llama-3.1-8b", "h100-sxm", nil, defaultPhysics)
	roof := tp1.nonExpBytes * tp1.layers / tp1.wRate
	got := tp1.step(decodeLoad(1, 100)) - tp1.hostS
	floors := tp1.layers * (tp1.layerSmall + 1) * tp1.floorS
	if got < roof+floors {
		t.Errorf("8B batch-1 step %.3f ms below weights %.3f ms + floors %.3f ms", got*1e3, roof*1e3, floors*1e3)
	}
	fp8 := func(tp int) func(*EngineConfig) {
		return func(c *EngineConfig) { c.Quantization, c.TensorParallelSize = "fp8", tp }
	}
	one := perfFor(t, "llama-3.1-70b", "h200", fp8(1), defaultPhysics).step(decodeLoad(1, 100))
	eight := perfFor(t, "llama-3.1-70b", "h200", fp8(8), defaultPhysics).step(decodeLoad(1, 100))
	if ratio := one / eight; ratio > 4 || ratio < 1.5 {
		t.Errorf("70B batch-1 step TP1 %.2f ms, TP8 %.2f ms: speed-up %.1f, want between 1.5 and 4", one*1e3, eight*1e3, ratio)
	}
}

// TestFabricLatencyByInterconnect: the same sharded step costs more on a fabric with a
// slower small all-reduce, with everything else equal.
func TestFabricLatencyByInterconnect(t *testing.T) {
	t.Parallel()
	h100, mi := mustSKU(t, "h100-sxm"), mustSKU(t, "h100-pcie")
	mi2 := h100
	mi2.Achieved.AllReduceUs = mi.Achieved.AllReduceUs
	arch := mustArch(t, "llama-3.1-70b")
	cfg := DefaultConfig()
	cfg.MaxModelLen, cfg.TensorParallelSize = 8192, 4
	st, err := CheckStartup(arch, h100, cfg)
	if err != nil {
		t.Fatal(err)
	}
	nv := newPerfModelWith(arch, h100, st, defaultPhysics).step(decodeLoad(1, 100))
	xg := newPerfModelWith(arch, mi2, st, defaultPhysics).step(decodeLoad(1, 100))
	want := 2 * 80 * (mi.Achieved.AllReduceUs - h100.Achieved.AllReduceUs) * 1e-6
	if d := xg - nv; math.Abs(d-want) > 1e-9 {
		t.Errorf("slower all-reduce adds %.1f µs per step, want %.1f µs (2 per layer × 80 layers)", d*1e6, want*1e6)
	}
}

// TestEagerIsLaunchBound: without graphs a small-batch layer waits for the host to launch
// its kernels.
func TestEagerIsLaunchBound(t *testing.T) {
	t.Parallel()
	graph := perfFor(t, "llama-3.2-1b", "h100-sxm", nil, defaultPhysics)
	eager := perfFor(t, "llama-3.2-1b", "h100-sxm", func(c *EngineConfig) { c.EnforceEager = true }, defaultPhysics)
	g, e := graph.step(decodeLoad(1, 10)), eager.step(decodeLoad(1, 10))
	minEager := eager.layers*eager.layerKerns*eager.launchS + eager.hostS
	if e <= g || e < minEager {
		t.Errorf("eager step %.3f ms, graph %.3f ms; eager must be at least the launches %.3f ms", e*1e3, g*1e3, minEager*1e3)
	}
}

// TestPerSKURatesDiffer: the same step on MI300X and H200 differs by their measured shares,
// not only by their peaks.
func TestPerSKURatesDiffer(t *testing.T) {
	t.Parallel()
	h200 := perfFor(t, "llama-3.1-8b", "h200", nil, defaultPhysics)
	mi := perfFor(t, "llama-3.1-8b", "mi300x", nil, defaultPhysics)
	skuH, _ := hw.LookupSKU("h200")
	skuM, _ := hw.LookupSKU("mi300x")
	if got, want := mi.wRate/h200.wRate, skuM.BandwidthGBs*skuM.Achieved.MemShare/(skuH.BandwidthGBs*skuH.Achieved.MemShare); math.Abs(got-want) > 1e-12 {
		t.Errorf("bandwidth ratio %v, want %v", got, want)
	}
	if mi.gemmRate >= skuM.BF16TFLOPS*1e12*0.6 {
		t.Errorf("MI300X BF16 rate %.0f TFLOPS is above its measured share", mi.gemmRate/1e12)
	}
}

// TestExpertParallelWaitsForTheBusiestRank: with whole experts per rank
// (--enable-expert-parallel, read from the configuration) a rank runs only the token-expert
// pairs routed to its experts, so a long prefill step moves fewer activations than slicing
// every expert across the ranks, where every rank writes every pair's hidden-wide output; and
// the step waits for the busiest rank, above an even quarter of one GPU's expert work.
func TestExpertParallelWaitsForTheBusiestRank(t *testing.T) {
	t.Parallel()
	tp := func(c *EngineConfig) { c.TensorParallelSize = 4 }
	sliced := perfFor(t, "qwen3-30b-a3b", "h100-sxm", tp, defaultPhysics)
	ep := perfFor(t, "qwen3-30b-a3b", "h100-sxm", func(c *EngineConfig) {
		var err error
		if *c, err = ConfigFromSettings(map[string]any{"tensor_parallel_size": int64(4), "enable_expert_parallel": true}, c.MaxModelLen); err != nil {
			t.Fatal(err)
		}
	}, defaultPhysics)
	one := perfFor(t, "qwen3-30b-a3b", "h100-sxm", func(*EngineConfig) {}, defaultPhysics)
	load := stepLoad{tokens: 8192, samples: 1, kvRead: 8192, attn: 8192 * 4096}
	if a, b := sliced.step(load), ep.step(load); !(b < a) {
		t.Errorf("expert-parallel prefill step %.3f ms not below the sliced one %.3f ms at 8,192 tokens", b*1e3, a*1e3)
	}
	even := ep.moeCallS + (one.expertTime(16)-one.moeCallS)/4
	if got := ep.expertTime(16); !(got > even*1.05) {
		t.Errorf("expert-parallel rank's experts take %.1f µs at 16 tokens, not above an even quarter of one GPU's (%.1f µs)", got*1e6, even*1e6)
	}
}

// TestMeshAllReduceUsesOnlyTheGroupsLinks: on MI300X's full mesh a tensor-parallel group
// reduces over the direct links among its GPUs (TP−1 of each GPU's seven), so a large
// all-reduce at TP 2 runs on one seventh of the fabric; through NVSwitch every group has
// the whole fabric.
func TestMeshAllReduceUsesOnlyTheGroupsLinks(t *testing.T) {
	t.Parallel()
	arch := "llama-3.1-70b"
	for _, tc := range []struct {
		sku  string
		want float64 // linkBW at TP 2 over linkBW at TP 8
	}{{"mi300x", 1.0 / 7}, {"h100-sxm", 1}} {
		bw := map[int]float64{}
		for _, tp := range []int{2, 8} {
			bw[tp] = perfFor(t, arch, tc.sku, func(c *EngineConfig) { c.TensorParallelSize = tp }, defaultPhysics).linkBW
		}
		if got := bw[2] / bw[8]; math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: all-reduce bandwidth at TP 2 is %.3f of TP 8's, want %.3f", tc.sku, got, tc.want)
		}
	}
}

// TestMXFP4ComputesInBF16: gpt-oss's MXFP4 experts take BF16 activations under vLLM's default
// backends, so their GEMMs run at the BF16 rate even on a GPU with FP4 tensor cores; NVFP4
// (modelopt_fp4) quantises activations too and runs at the FP4 rate.
func TestMXFP4ComputesInBF16(t *testing.T) {
	t.Parallel()
	b200 := mustSKU(t, "b200")
	bf16 := b200.BF16TFLOPS * 1e12 * b200.Achieved.BF16Share * defaultPhysics.shape
	fp4 := b200.FP4TFLOPS * 1e12 * b200.Achieved.FP4Share * defaultPhysics.shape
	if m := perfFor(t, "gpt-oss-120b", "b200", nil, defaultPhysics); m.gemmRate != bf16 {
		t.Errorf("gpt-oss-120b (MXFP4) on B200: GEMM rate %.3g, want the BF16 rate %.3g", m.gemmRate, bf16)
	}
	if m := perfFor(t, "llama-3.1-8b", "b200", func(c *EngineConfig) { c.Quantization = "modelopt_fp4" }, defaultPhysics); m.gemmRate != fp4 {
		t.Errorf("Llama-3.1-8B NVFP4 on B200: GEMM rate %.3g, want the FP4 rate %.3g", m.gemmRate, fp4)
	}
}

// TestExpertTimeMatchesBenchmarkMoE: the fused-experts call as modelled reproduces the kernel
// times vLLM's benchmark_moe published on an H100 (vllm-project/vllm#24700, "Main"), the
// memory-bound side of which the constants were read from: Mixtral-8x7B's BF16 experts at
// TP 2 and Qwen3-30B-A3B's FP8 experts on one GPU, at 1 and 64 tokens. The experts' bytes
// stream at the dense bandwidth, not at a fraction of it.
func TestExpertTimeMatchesBenchmarkMoE(t *testing.T) {
	t.Parallel()
	mixtral := perfFor(t, "mixtral-8x7b", "h100-sxm", func(c *EngineConfig) { c.TensorParallelSize = 2 }, defaultPhysics)
	qwen := perfFor(t, "qwen3-30b-a3b", "h100-sxm", func(c *EngineConfig) { c.Quantization = "fp8" }, defaultPhysics)
	for _, tc := range []struct {
		name   string
		m      *perfModel
		tokens float64
		us     float64
	}{{"mixtral tp2", mixtral, 1, 144.03}, {"mixtral tp2", mixtral, 64, 483.14},
		{"qwen3-30b fp8", qwen, 1, 44.54}, {"qwen3-30b fp8", qwen, 64, 262.73}} {
		got := tc.m.expertTime(tc.tokens) * 1e6
		t.Logf("%s at %v tokens: %.1f µs modelled, benchmark_moe %.1f µs", tc.name, tc.tokens, got, tc.us)
		if math.Abs(got-tc.us)/tc.us > 0.15 {
			t.Errorf("%s at %v tokens: %.1f µs modelled, benchmark_moe %.1f µs", tc.name, tc.tokens, got, tc.us)
		}
	}
}

// TestMoETileFollowsTokensPerExpert: the grouped GEMMs' row tile is the one vLLM's tuned
// fused-MoE configuration for Mixtral-8x7B on an A100 picks (E=8,N=3584, two experts a token):
// 16 rows up to 48 tokens, 32 at 128, 64 at 256 and 128 from 2,048. At decode a touched
// expert's group is padded to one 16-row tile, not to the prefill tile of 64.
func TestMoETileFollowsTokensPerExpert(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ tokens, want float64 }{{1, 16}, {16, 16}, {48, 16}, {128, 32}, {256, 64}, {2048, 128}, {4096, 128}} {
		if got := moeTile(tc.tokens * 2 / 8); got != tc.want {
			t.Errorf("%v tokens (%v an expert): tile %v rows, the tuned configuration has %v", tc.tokens, tc.tokens*2/8, got, tc.want)
		}
	}
	m := perfFor(t, "gpt-oss-120b", "a100-80gb", nil, defaultPhysics)
	const tokens = 4
	touched := m.experts * (1 - math.Pow(1-m.activeExp/m.experts, tokens))
	stream := touched * (m.expertBytes/m.expertRate + expertFloors*m.floorS)
	gemm := 2 * touched * 16 * m.expertSlice / (m.expertGEMM * m.expertComp)
	pairs := tokens * m.activeExp
	want := m.moeCallS + math.Max(stream, gemm) + pairs*m.pairBytes/m.wRate
	if got := m.expertTime(tokens); math.Abs(got-want) > 1e-12 {
		t.Errorf("gpt-oss-120b on A100 at %d tokens: experts take %.1f µs, want %.1f µs (one 16-row tile per touched expert)", tokens, got*1e6, want*1e6)
	}
}

// TestFP8ExpertsRunAsVLLMPicksTheirKernel: FP8 experts on Hopper go through vLLM's Triton
// fused-MoE kernel at the BF16 tensor rate (vllm-project/vllm#35457: FP8 is 10-17% faster than
// BF16 there, not twice), a block-FP8 checkpoint's experts through DeepGEMM at the FP8 rate
// with 128-row tiles in steps of at least 128 tokens, and not at TP 8
// (vllm-project/vllm#29346); Blackwell's and A100's experts keep their rates.
func TestFP8ExpertsRunAsVLLMPicksTheirKernel(t *testing.T) {
	t.Parallel()
	h100 := mustSKU(t, "h100-sxm")
	bf16 := h100.BF16TFLOPS * 1e12 * h100.Achieved.BF16Share * defaultPhysics.shape
	fp8 := h100.FP8TFLOPS * 1e12 * h100.Achieved.FP8Share * defaultPhysics.shape
	tp := func(n int) func(*EngineConfig) { return func(c *EngineConfig) { c.TensorParallelSize = n } }
	for _, tc := range []struct {
		name             string
		m                *perfModel
		triton, deepGEMM float64
	}{
		{"block-FP8 Qwen3-235B at TP 4", perfFor(t, "qwen3-235b-a22b-fp8", "h100-sxm", tp(4), defaultPhysics), bf16, fp8},
		{"block-FP8 Qwen3-235B at TP 8", perfFor(t, "qwen3-235b-a22b-fp8", "h100-sxm", tp(8), defaultPhysics), bf16, 0},
		{"per-tensor FP8 Qwen3-30B-A3B", perfFor(t, "qwen3-30b-a3b", "h100-sxm", func(c *EngineConfig) { c.Quantization = "fp8" }, defaultPhysics), bf16, 0},
		{"BF16 Qwen3-30B-A3B", perfFor(t, "qwen3-30b-a3b", "h100-sxm", nil, defaultPhysics), bf16, 0},
	} {
		if tc.m.expertGEMM != tc.triton || tc.m.deepGEMM != tc.deepGEMM {
			t.Errorf("%s on H100: experts' GEMM rate %.3g (Triton) and %.3g (DeepGEMM), want %.3g and %.3g", tc.name, tc.m.expertGEMM, tc.m.deepGEMM, tc.triton, tc.deepGEMM)
		}
	}
	if m := perfFor(t, "qwen3-235b-a22b-fp8", "b200", tp(4), defaultPhysics); m.expertGEMM != m.gemmRate || m.deepGEMM != 0 {
		t.Errorf("block-FP8 Qwen3-235B on B200: experts' GEMM rate %.3g, want the FP8 rate %.3g", m.expertGEMM, m.gemmRate)
	}

	// DeepGEMM's steps: every touched expert padded to 128 rows at the FP8 rate; below 128
	// tokens Triton's tile at the BF16 rate.
	m := perfFor(t, "qwen3-235b-a22b-fp8", "h100-sxm", tp(4), defaultPhysics)
	rows := func(tokens, tile float64) (touched, r float64) {
		touched = m.experts * (1 - math.Pow(1-m.activeExp/m.experts, tokens))
		n := tokens * m.activeExp / touched
		return touched, touched * math.Max(tile, n+tile/2)
	}
	for _, tc := range []struct {
		tokens, tile, rate float64
	}{{64, 16, bf16}, {256, 128, fp8}} {
		touched, r := rows(tc.tokens, tc.tile)
		stream := touched * (m.expertBytes/m.expertRate + expertFloors*m.floorS)
		gemm := 2 * r * m.expertSlice / (tc.rate * m.expertComp)
		want := m.moeCallS + math.Max(stream, gemm) + tc.tokens*m.activeExp*m.pairBytes/m.wRate
		if got := m.expertTime(tc.tokens); math.Abs(got-want) > 1e-12 {
			t.Errorf("block-FP8 Qwen3-235B at TP 4 on H100, %v tokens: experts take %.1f µs, want %.1f µs (%v-row tiles at %.3g FLOP/s)", tc.tokens, got*1e6, want*1e6, tc.tile, tc.rate)
		}
	}
}
