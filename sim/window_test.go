package sim

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSlidingWindowKVGroups checks the KV cache layout vLLM's hybrid manager gives gpt-oss
// (18 full-attention and 18 sliding-window layers: two groups of 18, a pool block of 18
// pages) and what it reports: tokens are the pool's blocks shared out between the groups, and
// a max_model_len request needs its full-attention blocks plus the window's.
func TestSlidingWindowKVGroups(t *testing.T) {
	t.Parallel()
	arch := mustArch(t, "gpt-oss-120b")
	g := arch.kvGroups(arch.Layers)
	if g != (kvGroups{window: 128, full: 1, sliding: 1, stageLayers: 18}) {
		t.Fatalf("gpt-oss-120b groups = %+v, want one full and one sliding group of 18 layers", g)
	}
	// Two pipeline stages of 18 layers: 9 of each kind per stage.
	if g2 := arch.kvGroups(18); g2.stageLayers != 9 {
		t.Errorf("PP 2 stage layers per group = %d, want 9", g2.stageLayers)
	}
	// A request of 131,072 tokens with 8,192-token steps: 8,192 full blocks, and
	// ⌈(127 + 8192)/16⌉ + 1 = 521 window blocks.
	if n := g.requestBlocks(131072, 16, 8192); n != 8192+521 {
		t.Errorf("requestBlocks = %d, want %d", n, 8192+521)
	}
	// The window never needs more than the request's own length.
	if n := g.requestBlocks(100, 16, 8192); n != 7+8 {
		t.Errorf("requestBlocks(100) = %d, want 15", n)
	}
	if l := g.maxModelLen(8192+521, 16, 8192, 131072); l != 131072 {
		t.Errorf("maxModelLen = %d, want 131072", l)
	}
	if l := g.maxModelLen(8192+520, 16, 8192, 131072); l != 131072-16 {
		t.Errorf("maxModelLen one block short = %d, want %d", l, 131072-16)
	}

	// An H200: on one H100 at vLLM's defaults the Triton MXFP4 layout leaves too little KV
	// cache for one 131,072-token request, as vLLM itself reports (vllm-project/vllm#33155).
	sku := mustSKU(t, "h200")
	c := DefaultConfig()
	st, err := CheckStartup(arch, sku, c)
	if err != nil {
		t.Fatal(err)
	}
	page := 16.0 * 2 * 8 * 64 * 2 // bytes of one block in one layer: K and V of 8 heads of 64
	if want := int(st.KVCacheGiB * gib / (18 * page)); st.NumGPUBlocks != want {
		t.Errorf("NumGPUBlocks = %d, want %d (KV bytes over 18 pages)", st.NumGPUBlocks, want)
	}
	if st.KVCacheTokens != st.NumGPUBlocks/2*16 {
		t.Errorf("KVCacheTokens = %d, want %d", st.KVCacheTokens, st.NumGPUBlocks/2*16)
	}
	want := float64(st.NumGPUBlocks) / float64(g.requestBlocks(st.Config.MaxModelLen, 16, st.Config.MaxNumBatchedTokens))
	if math.Abs(st.MaxConcurrency-want) > 1e-9 {
		t.Errorf("MaxConcurrency = %v, want %v", st.MaxConcurrency, want)
	}
	// Counted as full attention, a block spans all 36 layers: half as many blocks, the same
	// tokens as vLLM logs them, and about half the concurrency (a window costs 9 blocks).
	full := arch
	full.SlidingWindow, full.SlidingLayers = 0, nil
	fst, err := CheckStartup(full, sku, c)
	if err != nil {
		t.Fatal(err)
	}
	if d := fst.NumGPUBlocks*2 - st.NumGPUBlocks; d < -2 || d > 2 {
		t.Errorf("full-attention blocks %d, hybrid %d: want half", fst.NumGPUBlocks, st.NumGPUBlocks)
	}
	if r := st.MaxConcurrency / fst.MaxConcurrency; r < 1.85 || r > 2 {
		t.Errorf("hybrid concurrency %.2f is %.2f times the full-attention %.2f, want 1.85 to 2", st.MaxConcurrency, r, fst.MaxConcurrency)
	}
}

// TestSlidingWindowEngineBlocks runs requests through the scheduler and checks that a
// sliding-window group holds only the window's blocks: a long decode holds its full blocks
// plus ⌈127/16⌉ + 1 window blocks, and everything is freed at the end.
func TestSlidingWindowEngineBlocks(t *testing.T) {
	t.Parallel()
	arch := mustArch(t, "gpt-oss-20b")
	c := DefaultConfig()
	c.EnablePrefixCaching = false
	e, err := newEngine(arch, mustSKU(t, "h100-sxm"), c)
	if err != nil {
		t.Fatal(err)
	}
	s := &seq{id: 1, prompt: 1000, maxOut: 600}
	e.queue = append(e.queue, s)
	now := 0.0
	maxHeld := 0
	for !s.done {
		dt, _ := e.step(now)
		now += dt
		if !s.done {
			// Allocated for the next token: ⌈(computed+1)/16⌉ full blocks.
			full := ceilDiv(s.computed+1, 16)
			if s.blocks != full && s.blocks != ceilDiv(s.computed, 16) {
				t.Fatalf("at %d tokens the sequence holds %d full blocks, want about %d", s.computed, s.blocks, full)
			}
			if s.computed > 1000 && (s.swBlocks < 8 || s.swBlocks > 10) {
				t.Fatalf("at %d tokens the sequence holds %d window blocks, want 8 to 10 (128 tokens of 16)", s.computed, s.swBlocks)
			}
			maxHeld = max(maxHeld, s.swBlocks)
		}
	}
	// The prefill chunk of 1,000 tokens held its blocks at once: ⌈1000/16⌉ = 63.
	if maxHeld < 63 {
		t.Errorf("the prefill held at most %d window blocks, want its whole chunk's 63", maxHeld)
	}
	if e.usedBlk != 0 {
		t.Errorf("%d blocks still used after the request finished", e.usedBlk)
	}
}

// TestSlidingWindowAttention checks the step model's sliding-window layers: a decode step at a
// long context reads the window, not the context, so it is faster than with every layer
// attending to the whole context, and windowPairs counts query-key pairs position by
// position.
func TestSlidingWindowAttention(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ c, n, w int }{{0, 10, 128}, {100, 50, 128}, {500, 1, 128}, {120, 300, 128}, {0, 1000, 128}} {
		want := 0.0
		for p := tc.c + 1; p <= tc.c+tc.n; p++ {
			want += float64(min(p, tc.w))
		}
		if got := windowPairs(tc.c, tc.n, tc.w); math.Abs(got-want) > 1e-9 {
			t.Errorf("windowPairs(%d, %d, %d) = %v, want %v", tc.c, tc.n, tc.w, got, want)
		}
	}
	arch := mustArch(t, "gpt-oss-120b")
	sku := mustSKU(t, "h100-sxm")
	c := DefaultConfig()
	c.TensorParallelSize = 2
	st, err := CheckStartup(arch, sku, c)
	if err != nil {
		t.Fatal(err)
	}
	full := arch
	full.SlidingWindow, full.SlidingLayers = 0, nil
	// 64 sequences decoding at 30,000 tokens of context.
	l := stepLoad{tokens: 64, samples: 64, kvRead: 64 * 30001, attn: 64 * 30001,
		swKVRead: 64 * 128, swAttn: 64 * 128}
	hybrid, allFull := newPerfModel(arch, sku, st).step(l), newPerfModel(full, sku, st).step(l)
	if !(hybrid < allFull) {
		t.Fatalf("a long-context decode step takes %.2f ms with sliding windows, %.2f ms without: want faster", hybrid*1e3, allFull*1e3)
	}
	// Half the layers read 30,001 tokens instead of all: the saving is about half the KV read.
	pm := newPerfModel(full, sku, st)
	kvAll := pm.layers * pm.pp * 64 * 30001 * pm.kvPerToken / pm.kvRate
	if saved := allFull - hybrid; math.Abs(saved-kvAll/2)/(kvAll/2) > 0.05 {
		t.Errorf("saved %.3f ms, want about half the KV read, %.3f ms", saved*1e3, kvAll/2*1e3)
	}
}

// TestConfigJSONSlidingWindow reads sliding-window layers from config.json files as
// published: layer_types (gpt-oss), a pattern (Gemma 3's older configs), Gemma 2's
// alternation, Mistral 7B v0.1's every layer, and Qwen2's use_sliding_window switch.
func TestConfigJSONSlidingWindow(t *testing.T) {
	t.Parallel()
	base := `"num_hidden_layers": 6, "hidden_size": 512, "num_attention_heads": 8, "num_key_value_heads": 2, "intermediate_size": 1024, "vocab_size": 1000, "max_position_embeddings": 4096`
	for _, tc := range []struct {
		name, extra string
		window      int
		layers      []int
		err         string
	}{
		{"layer_types", `"sliding_window": 128, "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention"]`, 128, []int{0, 2, 4}, ""},
		{"pattern", `"model_type": "gemma3_text", "sliding_window": 1024, "sliding_window_pattern": 3`, 1024, []int{0, 1, 3, 4}, ""},
		{"gemma2", `"model_type": "gemma2", "sliding_window": 4096`, 4096, []int{0, 2, 4}, ""},
		{"mistral v0.1", `"model_type": "mistral", "sliding_window": 4096`, 4096, []int{0, 1, 2, 3, 4, 5}, ""},
		{"qwen2 off", `"model_type": "qwen2", "sliding_window": 131072, "use_sliding_window": false`, 0, nil, ""},
		{"null window", `"sliding_window": null`, 0, nil, ""},
		{"short layer_types", `"sliding_window": 128, "layer_types": ["sliding_attention"]`, 0, nil, "layer_types has 1 entries for 6 layers"},
		{"unknown layer type", `"sliding_window": 128, "layer_types": ["sliding_attention", "full_attention", "linear_attention", "full_attention", "sliding_attention", "full_attention"]`, 0, nil, `layer_types[2] is "linear_attention"`},
	} {
		dir := t.TempDir()
		path := filepath.Join(dir, "config.json")
		if err := os.WriteFile(path, []byte("{"+base+", "+tc.extra+"}"), 0o644); err != nil {
			t.Fatal(err)
		}
		a, err := ArchFromConfigJSON(path)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err = %v, want one saying %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if a.SlidingWindow != tc.window || len(a.SlidingLayers) != len(tc.layers) {
			t.Errorf("%s: window %d layers %v, want %d %v", tc.name, a.SlidingWindow, a.SlidingLayers, tc.window, tc.layers)
			continue
		}
		for i := range tc.layers {
			if a.SlidingLayers[i] != tc.layers[i] {
				t.Errorf("%s: layers %v, want %v", tc.name, a.SlidingLayers, tc.layers)
				break
			}
		}
	}
}
