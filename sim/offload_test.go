package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/frontier-llm/frontier/workload"
)

// longChat is a class of conversations whose histories outgrow a small GPU KV cache: 16
// conversations of 6 turns, each turn 1,500 new tokens, so that by the last turns the
// conversations' histories hold about 16 × 9,000 tokens, against a GPU cache of 2 GiB
// (about 16,000 tokens of Llama 3.1 8B).
func longChat() workload.Class {
	return workload.Class{Name: "chat", Conversations: 16, Endpoint: workload.EndpointCompletions,
		Turns:        workload.Dist{Kind: workload.DistFixed, A: 6},
		ThinkTime:    2 * time.Second,
		InputTokens:  workload.Dist{Kind: workload.DistFixed, A: 1500},
		OutputTokens: workload.Dist{Kind: workload.DistFixed, A: 40},
		Arrival:      workload.Arrival{Kind: workload.ArrivalPoisson, Rate: 2}}
}

// smallCache is llama-3.1-8b on an H100 SXM with a GPU KV cache of 2 GiB.
func smallCache() EngineConfig {
	cfg := DefaultConfig()
	cfg.MaxModelLen = 16384
	cfg.KVCacheMemoryBytes = 2 << 30
	return cfg
}

// The check: for conversations whose histories exceed the GPU's KV cache, a CPU
// offload raises the prefix cache hit rate and lowers TTFT against no offload.
func TestOffloadRaisesHitRateAndLowersTTFT(t *testing.T) {
	t.Parallel()
	arch, sku := mustArch(t, "llama-3.1-8b"), mustSKU(t, "h100-sxm")
	run := func(size float64) *workload.Result {
		cfg := smallCache()
		cfg.KVOffloadingSize = size
		m, err := Estimate(context.Background(), arch, sku, cfg, []workload.Class{longChat()}, 1)
		if err != nil {
			t.Fatal(err)
		}
		return m.Total
	}
	off, on := run(0), run(32)
	hitOff, hitOn := off.Metrics[workload.PrefixCacheHitRate], on.Metrics[workload.PrefixCacheHitRate]
	ttftOff, ttftOn := off.Metrics["ttft_mean_ms"], on.Metrics["ttft_mean_ms"]
	t.Logf("no offload: hit rate %.3f, TTFT mean %.1f ms p99 %.1f ms; 32 GiB offload: hit rate %.3f, TTFT mean %.1f ms p99 %.1f ms",
		hitOff, ttftOff, off.Metrics["ttft_p99_ms"], hitOn, ttftOn, on.Metrics["ttft_p99_ms"])
	if off.Metrics[workload.Completed] != 96 || on.Metrics[workload.Completed] != 96 {
		t.Fatalf("completed %v and %v turns, want 96 each", off.Metrics[workload.Completed], on.Metrics[workload.Completed])
	}
	if hitOn < hitOff+0.2 {
		t.Errorf("prefix_cache_hit_rate %.3f with offload against %.3f without: want at least 0.2 higher", hitOn, hitOff)
	}
	if ttftOn > 0.8*ttftOff {
		t.Errorf("TTFT mean %.1f ms with offload against %.1f ms without: want at least a fifth lower", ttftOn, ttftOff)
	}
}

// A CPU tier too small for the histories evicts them before the next turn: it hits less than
// one that holds them all.
func TestOffloadHitRateGrowsWithTheTier(t *testing.T) {
	t.Parallel()
	arch, sku := mustArch(t, "llama-3.1-8b"), mustSKU(t, "h100-sxm")
	rate := func(size float64) float64 {
		cfg := smallCache()
		cfg.KVOffloadingSize = size
		m, err := Estimate(context.Background(), arch, sku, cfg, []workload.Class{longChat()}, 1)
		if err != nil {
			t.Fatal(err)
		}
		return m.Total.Metrics[workload.PrefixCacheHitRate]
	}
	small, large := rate(2), rate(32)
	if !(large > small+0.1) {
		t.Errorf("hit rate with a 2 GiB tier %.3f, with 32 GiB %.3f: want the larger tier clearly higher", small, large)
	}
}

// The host link decides the load's cost: the same hits cost a PCIe Gen4 A100 more time per
// block than a GH200's NVLink-C2C, and the tier's size is in blocks of the model's KV pages.
func TestOffloadTierSizeAndLink(t *testing.T) {
	t.Parallel()
	arch := mustArch(t, "llama-3.1-8b")
	secs := map[string]float64{}
	for _, name := range []string{"a100-80gb", "h100-sxm", "gh200"} {
		cfg := smallCache()
		cfg.KVOffloadingSize = 8
		e, err := newEngine(arch, mustSKU(t, name), cfg)
		if err != nil {
			t.Fatal(err)
		}
		// Llama 3.1 8B: 32 layers × 8 KV heads × 128 × 2 (K and V) × 2 bytes = 128 KiB a
		// token, 2 MiB a 16-token block; 8 GiB hold 4,096 of them.
		if e.off == nil || e.off.capacity != 4096 || e.st.OffloadBlockBytes != 2<<20 {
			t.Fatalf("%s: CPU tier %+v, block %v bytes; want 4096 blocks of 2 MiB", name, e.off, e.st.OffloadBlockBytes)
		}
		secs[name] = e.off.secPerBlock
	}
	if !(secs["a100-80gb"] > 1.9*secs["h100-sxm"] && secs["h100-sxm"] > 7*secs["gh200"]) {
		t.Errorf("seconds a block: %v; want PCIe Gen4 twice Gen5's, Gen5 over 7 times NVLink-C2C's", secs)
	}
	// Each data-parallel engine core has a tier of its own.
	cfg0 := smallCache()
	cfg0.KVOffloadingSize, cfg0.DataParallelSize = 8, 2
	dp, err := newDataParallel(arch, mustSKU(t, "h100-sxm"), cfg0)
	if err != nil {
		t.Fatal(err)
	}
	if r := dp.dataParallel(); len(r) != 2 || r[0].off == nil || r[1].off == nil || r[0].off == r[1].off || r[1].off.capacity != 4096 {
		t.Errorf("data-parallel ranks' CPU tiers: %d ranks, %p and %p; want two tiers of 4096 blocks", len(r), r[0].off, r[1].off)
	}
	// fp8 KV halves a block: twice the blocks in the same memory.
	cfg := smallCache()
	cfg.KVOffloadingSize, cfg.KVCacheDType = 8, "fp8"
	st, err := CheckStartup(arch, mustSKU(t, "h100-sxm"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if st.CPUBlocks != 8192 {
		t.Errorf("fp8 KV: %d CPU blocks, want 8192", st.CPUBlocks)
	}
	// With tensor parallelism the size is the total over the ranks (CacheConfig's doc): each
	// rank holds its heads' share of every block, so the block count stays.
	cfg = smallCache()
	cfg.KVOffloadingSize, cfg.TensorParallelSize = 8, 2
	if st, err = CheckStartup(arch, mustSKU(t, "h100-sxm"), cfg); err != nil || st.CPUBlocks != 4096 {
		t.Errorf("TP 2: %d CPU blocks (%v), want 4096", st.CPUBlocks, err)
	}
}

// Bad values are refused as vLLM refuses them; 0 is no offloading; on v0.13 the backend
// alone is refused and the size alone offloads nothing; the pinned memory of every
// data-parallel engine must fit in the host's RAM.
func TestOffloadOptions(t *testing.T) {
	t.Parallel()
	arch, sku := mustArch(t, "llama-3.1-8b"), mustSKU(t, "h100-sxm")
	for _, tc := range []struct {
		name     string
		settings map[string]any
		class    string
		msg      string
		blocks   int
		warning  string
	}{
		{name: "native by default", settings: map[string]any{"kv_offloading_size": 4.0}, blocks: 2048},
		{name: "lmcache", settings: map[string]any{"kv_offloading_size": "4", "kv_offloading_backend": "lmcache"}, blocks: 2048},
		{name: "zero is none", settings: map[string]any{"kv_offloading_size": 0}},
		{name: "backend alone ignored from v0.14", settings: map[string]any{"kv_offloading_backend": "native"}},
		{name: "negative size", settings: map[string]any{"kv_offloading_size": -2},
			class: ClassInvalidArgs, msg: "ValueError: kv_offloading_size must be positive, got -2.0"},
		{name: "unknown backend", settings: map[string]any{"kv_offloading_size": 4, "kv_offloading_backend": "disk"},
			class: ClassInvalidArgs, msg: "argument --kv-offloading-backend: invalid choice: 'disk' (choose from 'native', 'lmcache')"},
		{name: "v0.13 backend without size", settings: map[string]any{"vllm_version": "0.13", "kv_offloading_backend": "native"},
			class: ClassInvalidArgs, msg: "You must set kv_offloading_size when kv_offloading_backend is set."},
		{name: "v0.13 size without backend", settings: map[string]any{"vllm_version": "0.13", "kv_offloading_size": 4},
			warning: "offloads the KV cache only when both are given"},
		{name: "v0.13 size 0 given with a backend is none", settings: map[string]any{"vllm_version": "0.13", "kv_offloading_size": 0, "kv_offloading_backend": "native"}},
		{name: "v0.13 both", settings: map[string]any{"vllm_version": "0.13", "kv_offloading_size": 4, "kv_offloading_backend": "native"}, blocks: 2048},
		{name: "more than the host's RAM", settings: map[string]any{"kv_offloading_size": 3000},
			class: ClassOOM, msg: "pinning 3000.0 GiB of host memory for the KV offloading buffer: the h100-sxm host, NVIDIA DGX H100, has 2048 GiB of RAM"},
		{name: "every data-parallel engine pins its own", settings: map[string]any{"kv_offloading_size": 600, "data_parallel_size": 4},
			class: ClassOOM, msg: "pinning 2400.0 GiB of host memory for the KV offloading buffer (600 GiB for each of 4 data-parallel engines)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := ConfigFromSettings(tc.settings, 16384)
			if err != nil {
				t.Fatal(err)
			}
			st, err := CheckStartup(arch, sku, cfg)
			var se *StartupError
			if tc.class != "" {
				if !errors.As(err, &se) || se.Class != tc.class || !strings.Contains(se.Message, tc.msg) {
					t.Fatalf("CheckStartup = %v, want %s with %q", err, tc.class, tc.msg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if st.CPUBlocks != tc.blocks {
				t.Errorf("CPU blocks = %d, want %d", st.CPUBlocks, tc.blocks)
			}
			if got := strings.Join(st.Warnings, "\n"); tc.warning != "" && !strings.Contains(got, tc.warning) {
				t.Errorf("warnings %q, want %q", got, tc.warning)
			}
		})
	}
}

// The simulated server takes vLLM's flags, exports the CPU tier's hits as vLLM's external
// prefix cache counters, and the load generator's hit rate counts them: over loopback HTTP,
// with the real load generator.
func TestServedOffloadExportsExternalPrefixCache(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("real-time serving")
	}
	t.Parallel()
	url, _, _ := startServer(t, "llama-3.1-8b", "--sku", "h100-sxm", "--max-model-len", "8192",
		"--kv-cache-memory-bytes", "1G", "--kv-offloading-size", "16", "--kv-offloading-backend", "native")
	c := longChat()
	c.Conversations, c.ThinkTime = 8, 300*time.Millisecond
	c.Turns = workload.Dist{Kind: workload.DistFixed, A: 3}
	c.Arrival = workload.Arrival{Kind: workload.ArrivalPoisson, Rate: 8}
	res, err := workload.Run(context.Background(), workload.Target{URL: url, Model: "llama-3.1-8b", TokenIDs: true, MetricsURL: url + "/metrics"},
		[]workload.Class{c}, workload.RunOptions{Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text := string(body)
	for _, want := range []string{"# TYPE vllm:external_prefix_cache_queries_total counter", "# TYPE vllm:external_prefix_cache_hits_total counter"} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	queries, hits := promSum(text, "vllm:external_prefix_cache_queries_total"), promSum(text, "vllm:external_prefix_cache_hits_total")
	gpuQ, gpuH := promSum(text, "vllm:prefix_cache_queries_total"), promSum(text, "vllm:prefix_cache_hits_total")
	if queries <= 0 || hits <= 0 {
		t.Fatalf("external prefix cache: %v hits of %v queried tokens; want hits: later turns find their histories in the CPU tier", hits, queries)
	}
	served := res.Measurement.Total.Metrics[workload.PrefixCacheHitRate]
	want := (gpuH + hits) / gpuQ
	t.Logf("GPU %v/%v, CPU tier %v/%v; prefix_cache_hit_rate %.3f", gpuH, gpuQ, hits, queries, served)
	if d := served - want; d > 0.01 || d < -0.01 {
		t.Errorf("prefix_cache_hit_rate = %.3f, want (GPU hits + external hits) / queries = %.3f", served, want)
	}
}

// promSum adds up a metric's samples in Prometheus text.
func promSum(text, name string) float64 {
	sum := 0.0
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		f := strings.Fields(line)
		var v float64
		if _, err := fmt.Sscan(f[len(f)-1], &v); err == nil {
			sum += v
		}
	}
	return sum
}
