package sim

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"testing"

	"github.com/frontier-llm/frontier/hw"
	"github.com/frontier-llm/frontier/workload"
)

func fixedClass(name string, n, in, out int, arr workload.Arrival) workload.Class {
	return workload.Class{Name: name, Requests: n,
		InputTokens:  workload.Dist{Kind: workload.DistFixed, A: float64(in)},
		OutputTokens: workload.Dist{Kind: workload.DistFixed, A: float64(out)},
		Arrival:      arr}
}

func TestEstimateSingleStreamMatchesRoofline(t *testing.T) {
	t.Parallel()
	arch, sku := mustArch(t, "llama-3.1-8b"), mustSKU(t, "h100-sxm")
	cfg := DefaultConfig()
	cfg.MaxModelLen = 16384
	// The measurement is of v0.19.1, where async scheduling is on by default, as it is in
	// the current line's defaults; the host overhead is fitted with it on.
	cls := []workload.Class{fixedClass("c", 8, 8000, 128, workload.Arrival{Kind: workload.ArrivalConcurrency, Concurrency: 1})}
	m, err := Estimate(context.Background(), arch, sku, cfg, cls, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !m.Simulated {
		t.Error("measurement not marked simulated")
	}
	got := m.Total.Metrics["itl_mean_ms"]
	// Section 5.1 of the reference: 6.44 ms + 4.37e-5 ms per context token.
	want := 6.44 + 4.37e-5*8064
	if math.Abs(got-want)/want > 0.05 {
		t.Errorf("ITL = %.3f ms, want %.3f ms ± 5%%", got, want)
	}
	if c := m.Total.Metrics[workload.Completed]; c != 8 {
		t.Errorf("completed = %v, want 8", c)
	}
}

func TestEstimateKVCapacityDecidesQueueing(t *testing.T) {
	t.Parallel()
	arch, sku := mustArch(t, "llama-3.1-8b"), mustSKU(t, "l4")
	cfg := DefaultConfig()
	cfg.MaxModelLen = 8192
	cfg.MaxNumSeqs = 256
	// 60 prompts of 6000 tokens at once: the L4's ~30k-token cache holds about five.
	cls := []workload.Class{fixedClass("long", 60, 6000, 64, workload.Arrival{Kind: workload.ArrivalImmediate})}
	m, err := Estimate(context.Background(), arch, sku, cfg, cls, 1)
	if err != nil {
		t.Fatal(err)
	}
	r := m.Total.Metrics
	if r[workload.KVCacheUsageMax] < 0.8 {
		t.Errorf("kv_cache_usage_max = %v, want the cache nearly full", r[workload.KVCacheUsageMax])
	}
	if r[workload.QueueP99Ms] < 1000 {
		t.Errorf("queue_p99_ms = %v, want long queueing behind the KV cache", r[workload.QueueP99Ms])
	}
	if r[workload.Completed] != 60 {
		t.Errorf("completed = %v, want 60", r[workload.Completed])
	}
}

func TestEstimatePrefixCaching(t *testing.T) {
	t.Parallel()
	arch, sku := mustArch(t, "llama-3.1-8b"), mustSKU(t, "h100-sxm")
	cls := fixedClass("chat", 100, 1200, 50, workload.Arrival{Kind: workload.ArrivalPoisson, Rate: 20})
	cls.PrefixTokens = 1000
	for _, on := range []bool{true, false} {
		cfg := DefaultConfig()
		cfg.MaxModelLen = 8192
		cfg.EnablePrefixCaching = on
		m, err := Estimate(context.Background(), arch, sku, cfg, []workload.Class{cls}, 1)
		if err != nil {
			t.Fatal(err)
		}
		rate := m.Total.Metrics[workload.PrefixCacheHitRate]
		if on && (rate < 0.7 || rate > 0.84) {
			t.Errorf("prefix caching on: hit rate = %v, want about 992/1200", rate)
		}
		if !on && rate != 0 {
			t.Errorf("prefix caching off: hit rate = %v, want 0", rate)
		}
	}
}

func TestEstimateStartupFailure(t *testing.T) {
	t.Parallel()
	_, err := Estimate(context.Background(), mustArch(t, "llama-3.1-405b"), mustSKU(t, "l4"), DefaultConfig(),
		[]workload.Class{fixedClass("c", 1, 10, 10, workload.Arrival{Kind: workload.ArrivalImmediate})}, 1)
	var se *StartupError
	if !errors.As(err, &se) || se.Class != ClassWeightsOOM {
		t.Errorf("Estimate = %v, want a weights_oom StartupError", err)
	}
}

func TestEstimatePreemptsWhenBlocksRunOut(t *testing.T) {
	t.Parallel()
	arch, sku := mustArch(t, "llama-3.1-8b"), mustSKU(t, "h100-sxm")
	cfg := DefaultConfig()
	cfg.MaxModelLen = 4096
	cfg.NumGPUBlocksOverride = 400 // 6400 tokens
	cls := []workload.Class{fixedClass("c", 40, 500, 1000, workload.Arrival{Kind: workload.ArrivalImmediate})}
	m, err := Estimate(context.Background(), arch, sku, cfg, cls, 1)
	if err != nil {
		t.Fatal(err)
	}
	if m.Total.Metrics[workload.Preemptions] == 0 {
		t.Error("preemptions = 0, want some: 40 requests growing to 1500 tokens cannot share 6400 tokens")
	}
	if m.Total.Metrics[workload.Completed] != 40 {
		t.Errorf("completed = %v, want 40", m.Total.Metrics[workload.Completed])
	}
}

func TestPromptTokensCountAsTheServerDoes(t *testing.T) {
	t.Parallel()
	msgs := []workload.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "what is a GPU?"}}
	var raw []chatMessage
	for _, m := range msgs {
		c, _ := json.Marshal(m.Content)
		raw = append(raw, chatMessage{Role: m.Role, Content: c})
	}
	units, err := chatUnits(raw)
	if err != nil {
		t.Fatal(err)
	}
	text, _ := json.Marshal("one two  three\nfour")
	words, err := promptUnits(text)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		req      workload.Request
		endpoint string
		want     int
	}{
		{"chat messages", workload.Request{Messages: msgs, InputTokens: 99}, "", len(units)},
		{"text prompt", workload.Request{Prompt: "one two  three\nfour", InputTokens: 99}, workload.EndpointCompletions, len(words)},
		{"synthetic completions", workload.Request{InputTokens: 300}, "", 300},
		{"synthetic chat", workload.Request{InputTokens: 300}, workload.EndpointChat, 300 + chatTemplateTokens + generationPromptTokens},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := promptTokens(&tt.req, tt.endpoint); got != tt.want {
				t.Errorf("promptTokens = %d, want %d", got, tt.want)
			}
		})
	}
}

// TestEveryArchitectureOnEverySKU runs a small workload on every catalog architecture and
// SKU at TP 1 and 8: each either fails to start with a StartupError or completes every
// request.
func TestEveryArchitectureOnEverySKU(t *testing.T) {
	t.Parallel()
	cls := []workload.Class{fixedClass("c", 16, 300, 20, workload.Arrival{Kind: workload.ArrivalImmediate})}
	for _, arch := range Archs() {
		for _, sku := range hw.SKUs() {
			for _, tp := range []int{1, 8} {
				cfg := DefaultConfig()
				cfg.MaxModelLen = 4096
				cfg.TensorParallelSize = tp
				m, err := Estimate(context.Background(), arch, sku, cfg, cls, 1)
				var se *StartupError
				switch {
				case errors.As(err, &se):
					if se.Class == "" || se.Message == "" {
						t.Errorf("%s on %d x %s: empty StartupError %+v", arch.Name, tp, sku.Name, se)
					}
				case err != nil:
					t.Errorf("%s on %d x %s: %v", arch.Name, tp, sku.Name, err)
				case m.Total.Metrics[workload.Completed] != 16:
					t.Errorf("%s on %d x %s: completed %v of 16", arch.Name, tp, sku.Name, m.Total.Metrics[workload.Completed])
				}
			}
		}
	}
}

func TestFasterSKUsServeFaster(t *testing.T) {
	t.Parallel()
	arch := mustArch(t, "llama-3.1-8b")
	cls := []workload.Class{fixedClass("c", 64, 500, 100, workload.Arrival{Kind: workload.ArrivalConcurrency, Concurrency: 8})}
	prev := 0.0
	// Slowest to fastest memory bandwidth.
	for _, name := range []string{"l4", "a10g", "l40s", "a100-80gb", "h100-sxm", "h200", "b200"} {
		cfg := DefaultConfig()
		cfg.MaxModelLen = 4096
		m, err := Estimate(context.Background(), arch, mustSKU(t, name), cfg, cls, 1)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := m.Total.Metrics[workload.OutputTokenThroughput]
		if got <= prev {
			t.Errorf("%s: %.0f tok/s, not above the slower SKU's %.0f", name, got, prev)
		}
		prev = got
	}
}

// TestLongPrefillsStallDecodes checks the scheduler knobs that decide how much a long prompt
// delays the decodes running beside it: the per-step token budget, chunked prefill and
// long_prefill_token_threshold.
func TestLongPrefillsStallDecodes(t *testing.T) {
	t.Parallel()
	arch, sku := mustArch(t, "llama-3.1-8b"), mustSKU(t, "h100-sxm")
	chat := fixedClass("chat", 40, 200, 200, workload.Arrival{Kind: workload.ArrivalConcurrency, Concurrency: 8})
	long := fixedClass("long", 6, 16000, 10, workload.Arrival{Kind: workload.ArrivalPoisson, Rate: 2})
	// The longest gap a chat stream sees is the step that carries the most prompt tokens.
	itlMax := func(set func(c *EngineConfig)) float64 {
		cfg := DefaultConfig()
		cfg.MaxModelLen = 16384
		set(&cfg)
		m, err := Estimate(context.Background(), arch, sku, cfg, []workload.Class{chat, long}, 1)
		if err != nil {
			t.Fatal(err)
		}
		q := m.Workloads["chat"].Quantiles["itl_ms"]
		return q[len(q)-1]
	}
	whole := itlMax(func(c *EngineConfig) { c.EnableChunkedPrefill, c.MaxNumBatchedTokens = false, 16384 })
	chunked := itlMax(func(c *EngineConfig) { c.MaxNumBatchedTokens = 8192 })
	capped := itlMax(func(c *EngineConfig) { c.MaxNumBatchedTokens, c.LongPrefillTokenThreshold = 8192, 1024 })
	if !(whole > chunked && chunked > capped) {
		t.Errorf("chat ITL max: whole prompts %.1f ms, chunks of 8192 %.1f ms, threshold 1024 %.1f ms; want each lower than the last", whole, chunked, capped)
	}
}

// TestStartupWaveSeparatesTheFirstPrefills: 64 clients start at once with two requests each
// on a model whose prefills queue, so the first wave waits behind each other's prefills and
// the second does not; the wave's share of TTFT is then well above its share of requests.
func TestStartupWaveSeparatesTheFirstPrefills(t *testing.T) {
	t.Parallel()
	arch, sku := mustArch(t, "llama-3.1-8b"), mustSKU(t, "h100-sxm")
	cfg := DefaultConfig()
	cfg.MaxModelLen = 8192
	cls := []workload.Class{fixedClass("c", 128, 4000, 64, workload.Arrival{Kind: workload.ArrivalConcurrency, Concurrency: 64})}
	m, err := Estimate(context.Background(), arch, sku, cfg, cls, 1)
	if err != nil {
		t.Fatal(err)
	}
	w := m.StartupWave
	if w == nil || w.Requests != 64 {
		t.Fatalf("wave = %+v, want 64 requests", w)
	}
	if !(w.TTFTMeanMs > 2*w.RestTTFTMeanMs && w.Share > 0.6 && w.Share <= 1) {
		t.Errorf("wave %+v: want its TTFT well above the rest's and most of the sum", w)
	}
	all := m.Total.Metrics["ttft_mean_ms"]
	if got := (w.TTFTMeanMs*64 + w.RestTTFTMeanMs*64) / 128; math.Abs(got-all)/all > 0.01 {
		t.Errorf("wave and rest average to %.1f ms, the measurement says %.1f ms", got, all)
	}
	// Open-loop arrivals have no wave.
	cls[0].Arrival = workload.Arrival{Kind: workload.ArrivalPoisson, Rate: 5}
	if m, err = Estimate(context.Background(), arch, sku, cfg, cls, 1); err != nil {
		t.Fatal(err)
	}
	if m.StartupWave != nil {
		t.Errorf("Poisson arrivals: wave %+v; want none", m.StartupWave)
	}
}
