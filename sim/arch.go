package sim

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Arch is a model architecture: the numbers the memory and performance models need.
type Arch struct {
	Name         string `json:"name"`          // catalog key, e.g. "llama-3.1-8b"
	Layers       int    `json:"layers"`        // num_hidden_layers
	Hidden       int    `json:"hidden"`        // hidden_size
	Heads        int    `json:"heads"`         // num_attention_heads
	KVHeads      int    `json:"kv_heads"`      // num_key_value_heads
	HeadDim      int    `json:"head_dim"`      // hidden / heads unless the config says otherwise
	FFN          int    `json:"ffn"`           // intermediate_size (per expert for MoE)
	Vocab        int    `json:"vocab"`         // vocab_size
	Experts      int    `json:"experts"`       // routed experts per layer; 0 or 1 for a dense model
	ActiveExpert int    `json:"active_expert"` // experts per token (top-k); 0 for a dense model
	MaxPositions int    `json:"max_positions"` // max_position_embeddings
	TiedEmbed    bool   `json:"tied_embeddings"`
	// SharedExperts are experts every token goes through beside its routed ones
	// (n_shared_experts), each FFN wide.
	SharedExperts int `json:"shared_experts,omitempty"`
	// DenseLayers leading layers of a mixture of experts have a dense MLP of DenseFFN
	// (first_k_dense_replace and intermediate_size).
	DenseLayers int `json:"dense_layers,omitempty"`
	DenseFFN    int `json:"dense_ffn,omitempty"`
	// Multi-head latent attention (DeepSeek-V2/V3): the KV cache holds one latent of
	// KVLoraRank plus RopeDim elements per token and layer, shared by all heads; HeadDim is
	// then qk_nope_head_dim + qk_rope_head_dim. QLoraRank is 0 without a query low-rank
	// projection.
	KVLoraRank int `json:"kv_lora_rank,omitempty"`
	QLoraRank  int `json:"q_lora_rank,omitempty"`
	RopeDim    int `json:"qk_rope_head_dim,omitempty"`
	VHeadDim   int `json:"v_head_dim,omitempty"`
	// QKNorm is true when queries and keys are RMS-normalised per head before attention
	// (Qwen3): two more small kernels per layer.
	QKNorm bool `json:"qk_norm,omitempty"`
	// SlidingWindow is the window, in tokens, of the layers that attend only to their most
	// recent tokens (config.json's sliding_window), and SlidingLayers those layers' indices
	// from 0 (layer_types' "sliding_attention"); both empty when every layer attends to the
	// whole context.
	SlidingWindow int   `json:"sliding_window,omitempty"`
	SlidingLayers []int `json:"sliding_layers,omitempty"`
	// QuantMethod is the checkpoint's own quantisation method ("fp8", "awq", ...), or "".
	QuantMethod string `json:"quant_method,omitempty"`
	// Catalog is true for a built-in architecture: a what-if about a model family rather than
	// one checkpoint, so a method that needs a quantised checkpoint means that family's
	// checkpoint quantised with it (see CheckStartup).
	Catalog bool `json:"catalog,omitempty"`
}

// catalogArchs lists the built-in architectures, from the models' published config.json.
func catalogArchs() []Arch {
	a := []Arch{
		{Name: "llama-3.1-8b", Layers: 32, Hidden: 4096, Heads: 32, KVHeads: 8, HeadDim: 128, FFN: 14336, Vocab: 128256, MaxPositions: 131072},
		{Name: "llama-3.1-70b", Layers: 80, Hidden: 8192, Heads: 64, KVHeads: 8, HeadDim: 128, FFN: 28672, Vocab: 128256, MaxPositions: 131072},
		{Name: "llama-3.3-70b", Layers: 80, Hidden: 8192, Heads: 64, KVHeads: 8, HeadDim: 128, FFN: 28672, Vocab: 128256, MaxPositions: 131072},
		{Name: "llama-3.1-405b", Layers: 126, Hidden: 16384, Heads: 128, KVHeads: 8, HeadDim: 128, FFN: 53248, Vocab: 128256, MaxPositions: 131072},
		{Name: "llama-3-8b", Layers: 32, Hidden: 4096, Heads: 32, KVHeads: 8, HeadDim: 128, FFN: 14336, Vocab: 128256, MaxPositions: 8192},
		{Name: "llama-3-70b", Layers: 80, Hidden: 8192, Heads: 64, KVHeads: 8, HeadDim: 128, FFN: 28672, Vocab: 128256, MaxPositions: 8192},
		{Name: "llama-3.2-1b", Layers: 16, Hidden: 2048, Heads: 32, KVHeads: 8, HeadDim: 64, FFN: 8192, Vocab: 128256, MaxPositions: 131072, TiedEmbed: true},
		{Name: "llama-3.2-3b", Layers: 28, Hidden: 3072, Heads: 24, KVHeads: 8, HeadDim: 128, FFN: 8192, Vocab: 128256, MaxPositions: 131072, TiedEmbed: true},
		{Name: "llama-2-70b", Layers: 80, Hidden: 8192, Heads: 64, KVHeads: 8, HeadDim: 128, FFN: 28672, Vocab: 32000, MaxPositions: 4096},
		{Name: "qwen2.5-7b", Layers: 28, Hidden: 3584, Heads: 28, KVHeads: 4, HeadDim: 128, FFN: 18944, Vocab: 152064, MaxPositions: 32768},
		{Name: "qwen2.5-32b", Layers: 64, Hidden: 5120, Heads: 40, KVHeads: 8, HeadDim: 128, FFN: 27648, Vocab: 152064, MaxPositions: 32768},
		{Name: "qwen2.5-72b", Layers: 80, Hidden: 8192, Heads: 64, KVHeads: 8, HeadDim: 128, FFN: 29568, Vocab: 152064, MaxPositions: 32768},
		{Name: "mistral-7b", Layers: 32, Hidden: 4096, Heads: 32, KVHeads: 8, HeadDim: 128, FFN: 14336, Vocab: 32768, MaxPositions: 32768},
		{Name: "mixtral-8x7b", Layers: 32, Hidden: 4096, Heads: 32, KVHeads: 8, HeadDim: 128, FFN: 14336, Vocab: 32000, Experts: 8, ActiveExpert: 2, MaxPositions: 32768},
		{Name: "qwen3-8b", Layers: 36, Hidden: 4096, Heads: 32, KVHeads: 8, HeadDim: 128, FFN: 12288, Vocab: 151936, MaxPositions: 40960, QKNorm: true},
		{Name: "qwen3-14b", Layers: 40, Hidden: 5120, Heads: 40, KVHeads: 8, HeadDim: 128, FFN: 17408, Vocab: 151936, MaxPositions: 40960, QKNorm: true},
		{Name: "qwen3-32b", Layers: 64, Hidden: 5120, Heads: 64, KVHeads: 8, HeadDim: 128, FFN: 25600, Vocab: 151936, MaxPositions: 40960, QKNorm: true},
		{Name: "qwen3-30b-a3b", Layers: 48, Hidden: 2048, Heads: 32, KVHeads: 4, HeadDim: 128, FFN: 768, Vocab: 151936, Experts: 128, ActiveExpert: 8, MaxPositions: 40960, QKNorm: true},
		// Qwen3-235B-A22B as its 2507 release (262,144 positions).
		{Name: "qwen3-235b-a22b", Layers: 94, Hidden: 4096, Heads: 64, KVHeads: 4, HeadDim: 128, FFN: 1536, Vocab: 151936, Experts: 128, ActiveExpert: 8, MaxPositions: 262144, QKNorm: true},
		// Qwen's FP8 checkpoints of both (Qwen/Qwen3-30B-A3B-FP8, Qwen/Qwen3-235B-A22B-FP8 and
		// its -Instruct-2507-FP8): "fine-grained fp8 quantization with block size of 128" (the
		// model cards), quantization_config {quant_method: fp8, weight_block_size: [128, 128]},
		// as DeepSeek's, so vLLM runs their linear layers through the block-FP8 GEMMs.
		{Name: "qwen3-30b-a3b-fp8", Layers: 48, Hidden: 2048, Heads: 32, KVHeads: 4, HeadDim: 128, FFN: 768, Vocab: 151936, Experts: 128, ActiveExpert: 8, MaxPositions: 40960, QKNorm: true, QuantMethod: "fp8"},
		{Name: "qwen3-235b-a22b-fp8", Layers: 94, Hidden: 4096, Heads: 64, KVHeads: 4, HeadDim: 128, FFN: 1536, Vocab: 151936, Experts: 128, ActiveExpert: 8, MaxPositions: 262144, QKNorm: true, QuantMethod: "fp8"},
		// gpt-oss ships with MXFP4 experts; its layer_types alternate a 128-token sliding
		// window (even layers, from the first) with full attention (sliding_window: 128).
		{Name: "gpt-oss-20b", Layers: 24, Hidden: 2880, Heads: 64, KVHeads: 8, HeadDim: 64, FFN: 2880, Vocab: 201088, Experts: 32, ActiveExpert: 4, MaxPositions: 131072, QuantMethod: "mxfp4",
			SlidingWindow: 128, SlidingLayers: everyOther(24)},
		{Name: "gpt-oss-120b", Layers: 36, Hidden: 2880, Heads: 64, KVHeads: 8, HeadDim: 64, FFN: 2880, Vocab: 201088, Experts: 128, ActiveExpert: 4, MaxPositions: 131072, QuantMethod: "mxfp4",
			SlidingWindow: 128, SlidingLayers: everyOther(36)},
		// MiniMax-M2 (M2.1 and M2.5 share it): 256 experts of 1,536, eight per token, full
		// attention with per-layer QK norms; published with block-wise FP8 weights.
		{Name: "minimax-m2", Layers: 62, Hidden: 3072, Heads: 48, KVHeads: 8, HeadDim: 128, FFN: 1536, Vocab: 200064,
			Experts: 256, ActiveExpert: 8, MaxPositions: 196608, QKNorm: true, QuantMethod: "fp8"},
		// DeepSeek-V3 (and R1, the same architecture): MLA, 256 routed experts and one shared,
		// the first three layers dense; published with block-wise FP8 weights.
		{Name: "deepseek-v3", Layers: 61, Hidden: 7168, Heads: 128, KVHeads: 128, HeadDim: 192, FFN: 2048, Vocab: 129280,
			Experts: 256, ActiveExpert: 8, SharedExperts: 1, DenseLayers: 3, DenseFFN: 18432, MaxPositions: 163840,
			KVLoraRank: 512, QLoraRank: 1536, RopeDim: 64, VHeadDim: 128, QuantMethod: "fp8"},
		{Name: "deepseek-r1", Layers: 61, Hidden: 7168, Heads: 128, KVHeads: 128, HeadDim: 192, FFN: 2048, Vocab: 129280,
			Experts: 256, ActiveExpert: 8, SharedExperts: 1, DenseLayers: 3, DenseFFN: 18432, MaxPositions: 163840,
			KVLoraRank: 512, QLoraRank: 1536, RopeDim: 64, VHeadDim: 128, QuantMethod: "fp8"},
		// GLM-4.5-Air (zai-org/GLM-4.5-Air, Glm4MoeForCausalLM, BF16): 96 query heads of 128 over
		// a hidden size of 4,096, 8 KV heads, 128 routed experts of 1,408 and one shared, the
		// first layer dense (10,944), no QK norm, untied embeddings, 131,072 positions. These
		// are transformers' Glm4MoeConfig defaults (configuration_glm4_moe.py) and slime's
		// model arguments for it (scripts/models/glm4.5-106B-A12B.sh). Its
		// num_nextn_predict_layers: 1 (the MTP layer) is not loaded by vLLM without speculative
		// decoding, so it is not counted.
		{Name: "glm-4.5-air", Layers: 46, Hidden: 4096, Heads: 96, KVHeads: 8, HeadDim: 128, FFN: 1408, Vocab: 151552,
			Experts: 128, ActiveExpert: 8, SharedExperts: 1, DenseLayers: 1, DenseFFN: 10944, MaxPositions: 131072},
		// GLM-4.6 (zai-org/GLM-4.6, the GLM-4.5 architecture with 202,752 positions; BF16):
		// 92 layers, hidden 5,120, 96 query heads of 128, 8 KV heads, 160 routed experts of
		// 1,536 and one shared, the first three layers dense (12,288), QK norm (use_qk_norm),
		// untied embeddings (slime's scripts/models/glm4.5-355B-A32B.sh and published copies
		// of its config.json agree); its MTP layer is left out as GLM-4.5-Air's.
		{Name: "glm-4.6", Layers: 92, Hidden: 5120, Heads: 96, KVHeads: 8, HeadDim: 128, FFN: 1536, Vocab: 151552,
			Experts: 160, ActiveExpert: 8, SharedExperts: 1, DenseLayers: 3, DenseFFN: 12288, MaxPositions: 202752, QKNorm: true},
	}
	for i := range a {
		a[i].Catalog = true
	}
	return a
}

// everyOther lists the even layer indices below n: gpt-oss's sliding-window layers.
func everyOther(n int) []int {
	var l []int
	for i := 0; i < n; i += 2 {
		l = append(l, i)
	}
	return l
}

// Archs returns the built-in architectures sorted by name.
func Archs() []Arch {
	a := catalogArchs()
	sort.Slice(a, func(i, j int) bool { return a[i].Name < a[j].Name })
	return a
}

// LookupArch returns the built-in architecture with the given name (case-insensitive). A
// Hugging Face repository name such as "meta-llama/Llama-3.1-8B-Instruct" also matches.
func LookupArch(name string) (Arch, bool) {
	key := strings.ToLower(strings.TrimSpace(name))
	for _, a := range catalogArchs() {
		if a.Name == key {
			return a, true
		}
	}
	// "org/Model-Name-Instruct" → "model-name".
	if i := strings.LastIndex(key, "/"); i >= 0 {
		key = key[i+1:]
	}
	for _, suffix := range []string{"-instruct", "-chat", "-hf", "-v0.1", "-v0.2", "-v0.3"} {
		key = strings.TrimSuffix(key, suffix)
	}
	key = strings.TrimPrefix(key, "meta-")
	for _, a := range catalogArchs() {
		if a.Name == key {
			return a, true
		}
	}
	return Arch{}, false
}

// Params returns the number of parameters: embeddings, attention, MLP (every expert), the
// router and the LM head.
func (a Arch) Params() float64 {
	return a.embedParams()*a.embedCopies() + float64(a.Layers)*(a.attnParams()+a.mlpParams(a.experts())+a.routerParams())
}

// Model families the validation scores separately (docs/sim.md, "Validation").
const (
	FamilyDense = "dense"
	FamilyMoE   = "MoE"
)

// Family is FamilyMoE for a mixture of experts, else FamilyDense.
func (a Arch) Family() string {
	if a.Experts > 1 {
		return FamilyMoE
	}
	return FamilyDense
}

func (a Arch) experts() int {
	if a.Experts > 1 {
		return a.Experts
	}
	return 1
}

func (a Arch) activeExperts() int {
	if a.Experts > 1 && a.ActiveExpert > 0 {
		return a.ActiveExpert
	}
	return 1
}

func (a Arch) embedParams() float64 { return float64(a.Vocab) * float64(a.Hidden) }

func (a Arch) embedCopies() float64 {
	if a.TiedEmbed {
		return 1
	}
	return 2
}

// mla reports whether the architecture uses multi-head latent attention.
func (a Arch) mla() bool { return a.KVLoraRank > 0 }

func (a Arch) attnParams() float64 {
	h, hd, heads := float64(a.Hidden), float64(a.HeadDim), float64(a.Heads)
	if a.mla() {
		// Query (through its low-rank projection when there is one), the KV latent and the
		// rotary key, the latent's expansion into per-head keys and values, the output.
		rope, kvl := float64(a.RopeDim), float64(a.KVLoraRank)
		v := float64(a.VHeadDim)
		if v == 0 {
			v = hd - rope
		}
		q := h * heads * hd
		if a.QLoraRank > 0 {
			ql := float64(a.QLoraRank)
			q = h*ql + ql*heads*hd
		}
		return q + h*(kvl+rope) + kvl*heads*(hd-rope+v) + heads*v*h
	}
	return h*hd*heads*2 + h*hd*float64(a.KVHeads)*2
}

// expertParams is one routed expert's MLP (gate, up and down projections).
func (a Arch) expertParams() float64 { return 3 * float64(a.Hidden) * float64(a.FFN) }

// moeShare is the share of layers whose MLP is a mixture of experts.
func (a Arch) moeShare() float64 {
	if a.Experts <= 1 || a.DenseLayers <= 0 {
		return 1
	}
	return float64(max(a.Layers-a.DenseLayers, 0)) / float64(a.Layers)
}

// alwaysMLPParams is the MLP every token of an average layer goes through besides its routed
// experts: the shared experts of the MoE layers and the dense MLP of the dense layers.
func (a Arch) alwaysMLPParams() float64 {
	if a.Experts <= 1 {
		return 0
	}
	f := a.moeShare()
	return float64(a.SharedExperts)*a.expertParams()*f + 3*float64(a.Hidden)*float64(a.DenseFFN)*(1-f)
}

// mlpParams is an average layer's MLP with the given number of routed experts: for a dense
// model, experts × the MLP.
func (a Arch) mlpParams(experts int) float64 {
	if a.Experts <= 1 {
		return a.expertParams() * float64(experts)
	}
	return a.alwaysMLPParams() + float64(experts)*a.expertParams()*a.moeShare()
}

// kvPerTokenLayer is the number of KV-cache elements one token takes in one layer on one
// rank with tensor parallelism tp: K and V of the rank's KV heads, or MLA's one latent, which
// every rank holds whole.
func (a Arch) kvPerTokenLayer(tp float64) float64 {
	if a.mla() {
		return float64(a.KVLoraRank + a.RopeDim)
	}
	kv := float64(a.KVHeads)
	return 2 * kv / math.Min(tp, kv) * float64(a.HeadDim)
}

// slidingIn counts the sliding-window layers among the first n layers.
func (a Arch) slidingIn(n int) int {
	if a.SlidingWindow <= 0 {
		return 0
	}
	k := 0
	for _, i := range a.SlidingLayers {
		if i < n {
			k++
		}
	}
	return k
}

// slidingShare is the share of layers that attend over a sliding window.
func (a Arch) slidingShare() float64 {
	if a.Layers <= 0 {
		return 0
	}
	return float64(a.slidingIn(a.Layers)) / float64(a.Layers)
}

func (a Arch) routerParams() float64 {
	if a.Experts > 1 {
		return float64(a.Hidden) * float64(a.Experts) * a.moeShare()
	}
	return 0
}

// KVBytesPerToken returns the bytes of K and V (or of MLA's latent) one token takes in every
// layer together, across all ranks, at the given bytes per element.
func (a Arch) KVBytesPerToken(elemBytes float64) float64 {
	return float64(a.Layers) * a.kvPerTokenLayer(1) * elemBytes
}

// validate checks that an architecture has the numbers the models need.
func (a Arch) validate() error {
	var missing []string
	for _, f := range []struct {
		name string
		v    int
	}{{"num_hidden_layers", a.Layers}, {"hidden_size", a.Hidden}, {"num_attention_heads", a.Heads},
		{"num_key_value_heads", a.KVHeads}, {"head_dim", a.HeadDim}, {"intermediate_size", a.FFN},
		{"vocab_size", a.Vocab}, {"max_position_embeddings", a.MaxPositions}} {
		if f.v <= 0 {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("architecture %q: missing or non-positive %s", a.Name, strings.Join(missing, ", "))
	}
	if a.Heads%a.KVHeads != 0 {
		return fmt.Errorf("architecture %q: num_attention_heads (%d) is not a multiple of num_key_value_heads (%d)", a.Name, a.Heads, a.KVHeads)
	}
	if len(a.SlidingLayers) > 0 && a.SlidingWindow <= 0 {
		return fmt.Errorf("architecture %q: sliding-window layers without a positive sliding_window (%d)", a.Name, a.SlidingWindow)
	}
	seen := map[int]bool{}
	for _, i := range a.SlidingLayers {
		if i < 0 || i >= a.Layers || seen[i] {
			return fmt.Errorf("architecture %q: sliding-window layer %d is not a distinct layer index below num_hidden_layers (%d)", a.Name, i, a.Layers)
		}
		seen[i] = true
	}
	return nil
}

// hfConfig is the part of a Hugging Face config.json the models read.
type hfConfig struct {
	ModelType          string          `json:"model_type"`
	NumHiddenLayers    int             `json:"num_hidden_layers"`
	HiddenSize         int             `json:"hidden_size"`
	NumAttentionHeads  int             `json:"num_attention_heads"`
	NumKeyValueHeads   int             `json:"num_key_value_heads"`
	HeadDim            int             `json:"head_dim"`
	IntermediateSize   int             `json:"intermediate_size"`
	MoEIntermediate    int             `json:"moe_intermediate_size"`
	VocabSize          int             `json:"vocab_size"`
	NumLocalExperts    int             `json:"num_local_experts"`
	NumExperts         int             `json:"num_experts"`
	NumExpertsPerTok   int             `json:"num_experts_per_tok"`
	ExpertsPerToken    int             `json:"experts_per_token"`
	NRoutedExperts     int             `json:"n_routed_experts"`
	NSharedExperts     int             `json:"n_shared_experts"`
	FirstKDense        int             `json:"first_k_dense_replace"`
	KVLoraRank         int             `json:"kv_lora_rank"`
	QLoraRank          int             `json:"q_lora_rank"`
	QKRopeHeadDim      int             `json:"qk_rope_head_dim"`
	QKNopeHeadDim      int             `json:"qk_nope_head_dim"`
	VHeadDim           int             `json:"v_head_dim"`
	MaxPositionEmbeds  int             `json:"max_position_embeddings"`
	TieWordEmbeddings  bool            `json:"tie_word_embeddings"`
	SlidingWindow      *int            `json:"sliding_window"`
	UseSlidingWindow   *bool           `json:"use_sliding_window"`
	SlidingPattern     int             `json:"sliding_window_pattern"`
	LayerTypes         []string        `json:"layer_types"`
	QuantizationConfig json.RawMessage `json:"quantization_config"`
	TextConfig         *hfConfig       `json:"text_config"`
}

// ArchFromConfigJSON reads an architecture from a Hugging Face config.json file.
func ArchFromConfigJSON(path string) (Arch, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Arch{}, fmt.Errorf("reading model config: %w", err)
	}
	a, err := parseConfigJSON(data)
	if err != nil {
		return Arch{}, fmt.Errorf("%s: %w", path, err)
	}
	return a, nil
}

// parseConfigJSON decodes a Hugging Face config.json.
func parseConfigJSON(data []byte) (Arch, error) {
	var c hfConfig
	if err := json.Unmarshal(data, &c); err != nil {
		return Arch{}, fmt.Errorf("not a valid config.json: %w", err)
	}
	if c.TextConfig != nil && c.NumHiddenLayers == 0 {
		c = *c.TextConfig
	}
	a := Arch{
		Name:         c.ModelType,
		Layers:       c.NumHiddenLayers,
		Hidden:       c.HiddenSize,
		Heads:        c.NumAttentionHeads,
		KVHeads:      c.NumKeyValueHeads,
		HeadDim:      c.HeadDim,
		FFN:          c.IntermediateSize,
		Vocab:        c.VocabSize,
		MaxPositions: c.MaxPositionEmbeds,
		TiedEmbed:    c.TieWordEmbeddings,
	}
	if a.Name == "" {
		a.Name = "config.json"
	}
	a.QKNorm = c.ModelType == "qwen3" || c.ModelType == "qwen3_moe"
	if a.KVHeads == 0 {
		a.KVHeads = a.Heads
	}
	if a.HeadDim == 0 && a.Heads > 0 {
		a.HeadDim = a.Hidden / a.Heads
	}
	if err := a.readSlidingWindow(c); err != nil {
		return Arch{}, err
	}
	if c.KVLoraRank > 0 {
		a.KVLoraRank, a.QLoraRank, a.RopeDim, a.VHeadDim = c.KVLoraRank, c.QLoraRank, c.QKRopeHeadDim, c.VHeadDim
		if c.QKNopeHeadDim > 0 {
			a.HeadDim = c.QKNopeHeadDim + c.QKRopeHeadDim
		}
	}
	if e := max(c.NumLocalExperts, c.NumExperts, c.NRoutedExperts); e > 1 {
		a.Experts = e
		a.ActiveExpert = max(c.NumExpertsPerTok, c.ExpertsPerToken)
		if a.ActiveExpert == 0 {
			a.ActiveExpert = 2
		}
		a.SharedExperts = c.NSharedExperts
		if c.FirstKDense > 0 {
			a.DenseLayers, a.DenseFFN = c.FirstKDense, c.IntermediateSize
		}
		if c.MoEIntermediate > 0 {
			a.FFN = c.MoEIntermediate
		}
	}
	if len(c.QuantizationConfig) > 0 && string(c.QuantizationConfig) != "null" {
		var q struct {
			QuantMethod string `json:"quant_method"`
		}
		if err := json.Unmarshal(c.QuantizationConfig, &q); err != nil {
			return Arch{}, fmt.Errorf("quantization_config: %w", err)
		}
		a.QuantMethod = strings.ToLower(q.QuantMethod)
	}
	if err := a.validate(); err != nil {
		return Arch{}, err
	}
	return a, nil
}

// readSlidingWindow takes the sliding-window layers from a config.json: layer_types' entries
// (Gemma 3, gpt-oss and later transformers configs), else every layer but each
// sliding_window_pattern-th (Gemma 3's older configs), else every even layer (Gemma 2), else,
// with a sliding_window that use_sliding_window does not switch off, every layer (Mistral
// 7B v0.1). vLLM sizes each such layer's KV cache by the window.
func (a *Arch) readSlidingWindow(c hfConfig) error {
	if c.SlidingWindow == nil || *c.SlidingWindow <= 0 || (c.UseSlidingWindow != nil && !*c.UseSlidingWindow) {
		for _, t := range c.LayerTypes {
			if t == "sliding_attention" {
				return fmt.Errorf("layer_types has sliding_attention layers but sliding_window is not a positive number")
			}
		}
		return nil
	}
	a.SlidingWindow = *c.SlidingWindow
	switch {
	case len(c.LayerTypes) > 0:
		if len(c.LayerTypes) != a.Layers {
			return fmt.Errorf("layer_types has %d entries for %d layers (num_hidden_layers)", len(c.LayerTypes), a.Layers)
		}
		for i, t := range c.LayerTypes {
			switch t {
			case "sliding_attention":
				a.SlidingLayers = append(a.SlidingLayers, i)
			case "full_attention":
			default:
				return fmt.Errorf("layer_types[%d] is %q; want sliding_attention or full_attention", i, t)
			}
		}
	case c.SlidingPattern > 0:
		for i := 0; i < a.Layers; i++ {
			if (i+1)%c.SlidingPattern != 0 {
				a.SlidingLayers = append(a.SlidingLayers, i)
			}
		}
	case c.ModelType == "gemma2":
		a.SlidingLayers = everyOther(a.Layers)
	default:
		for i := 0; i < a.Layers; i++ {
			a.SlidingLayers = append(a.SlidingLayers, i)
		}
	}
	if len(a.SlidingLayers) == 0 {
		a.SlidingWindow = 0
	}
	return nil
}

// ArchNames lists the catalog's architectures by name.
func ArchNames() []string {
	var n []string
	for _, a := range Archs() {
		n = append(n, a.Name)
	}
	return n
}

// ResolveServeArch finds the architecture `frontier sim serve` simulates: --architecture
// (a catalog name or a config.json file), else a catalog entry named like the model, else the
// config.json of a model folder.
func ResolveServeArch(name, model string) (Arch, error) {
	if name != "" {
		if a, ok := LookupArch(name); ok {
			return a, nil
		}
		if st, err := os.Stat(name); err == nil && !st.IsDir() {
			return ArchFromConfigJSON(name)
		}
		return Arch{}, fmt.Errorf("unknown --architecture %q; want one of %s, or a config.json file", name, strings.Join(ArchNames(), ", "))
	}
	if a, ok := LookupArch(model); ok {
		return a, nil
	}
	if st, err := os.Stat(model); err == nil && st.IsDir() {
		return ArchFromConfigJSON(filepath.Join(model, "config.json"))
	}
	return Arch{}, fmt.Errorf("no architecture for model %q: pass --architecture NAME (one of %s)", model, strings.Join(ArchNames(), ", "))
}
