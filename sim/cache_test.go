package sim

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/frontier-llm/frontier/workload"
)

// cacheEngine is an engine of Llama-3.1-8B on an H100 with blocks KV blocks of 16 tokens.
func cacheEngine(t *testing.T, blocks int) *engine {
	t.Helper()
	cfg := DefaultConfig()
	cfg.MaxModelLen = 256
	cfg.NumGPUBlocksOverride = blocks
	e, err := newEngine(mustArch(t, "llama-3.1-8b"), mustSKU(t, "h100-sxm"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// promptSeq is a request whose prompt is the tokens from, from+1, ..., from+n-1, hashed as the
// server hashes token ids, that generates out tokens.
func promptSeq(e *engine, from, n, out int) *seq {
	units := make([]uint64, n)
	for i := range units {
		units[i] = uint64(from + i)
	}
	return &seq{prompt: n, maxOut: out, hashes: blockHashes(units, e.cfg.BlockSize)}
}

// drain steps the engine until it is idle, checking its block accounting after every step.
func drain(t *testing.T, e *engine) {
	t.Helper()
	for i := 0; !e.idle(); i++ {
		if dt, _ := e.step(0); dt == 0 || i > 10000 {
			t.Fatalf("engine stalled with %d running and %d waiting", len(e.running), e.waiting())
		}
		checkBlocks(t, e)
	}
	if u := e.kvUsage(); u != 0 {
		t.Errorf("idle engine: KV usage = %v, want 0", u)
	}
}

// checkBlocks checks that the engine's block counts agree with what its sequences hold and
// what its cache keeps.
func checkBlocks(t *testing.T, e *engine) {
	t.Helper()
	private := 0
	for _, s := range e.running {
		private += s.blocks
		for _, id := range s.held {
			if id < 0 {
				private++
			}
		}
	}
	live := len(e.cache) - len(e.cacheSlots)
	free := 0
	for id := e.lruHead; id >= 0; id = e.cache[id].next {
		if e.cache[id].refs != 0 {
			t.Fatalf("block %d in the free list has %d references", id, e.cache[id].refs)
		}
		free++
	}
	if e.usedBlk != private+live || e.usedBlk > e.totalBlk || e.cachedFree != free {
		t.Fatalf("used %d blocks of %d, want %d private + %d cached; %d counted free, %d in the free list",
			e.usedBlk, e.totalBlk, private, live, e.cachedFree, free)
	}
}

func TestPrefixCacheHitsAllButTheLastPartialBlockOfAnIdenticalPrompt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		prompt     int
		wantHitTok int
	}{
		{"partial last block", 100, 96}, // 6 full blocks
		{"whole blocks", 96, 80},        // the last token is computed again
		{"one block", 16, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := cacheEngine(t, 100)
			e.add(promptSeq(e, 0, tc.prompt, 4))
			drain(t, e)
			if e.prefixHits != 0 {
				t.Errorf("first request: %d tokens hit, want 0", e.prefixHits)
			}
			e.add(promptSeq(e, 0, tc.prompt, 4))
			drain(t, e)
			if e.prefixHits != tc.wantHitTok || e.prefixQueries != 2*tc.prompt {
				t.Errorf("hits/queries = %d/%d tokens, want %d/%d", e.prefixHits, e.prefixQueries, tc.wantHitTok, 2*tc.prompt)
			}
		})
	}
}

func TestPrefixCacheHitsBlocksARunningRequestHolds(t *testing.T) {
	t.Parallel()
	e := cacheEngine(t, 100)
	first := promptSeq(e, 0, 100, 50)
	e.add(first)
	e.step(0) // the first request's prefill
	e.add(promptSeq(e, 0, 70, 2))
	e.step(0)
	checkBlocks(t, e)
	if e.prefixHits != 64 {
		t.Errorf("a prompt sharing 4 full blocks with a running request: %d tokens hit, want 64", e.prefixHits)
	}
	if held := first.held[:4]; e.cache[held[0]].refs != 2 {
		t.Errorf("a shared block has %d references, want 2", e.cache[held[0]].refs)
	}
	drain(t, e)
}

func TestPrefixCacheMissesBlocksComputedInTheSameStep(t *testing.T) {
	t.Parallel()
	e := cacheEngine(t, 100)
	e.add(promptSeq(e, 0, 100, 1))
	e.add(promptSeq(e, 0, 100, 1)) // scheduled with the first: nothing is computed yet
	e.step(0)
	e.add(promptSeq(e, 0, 100, 1))
	drain(t, e)
	if e.prefixHits != 96 || e.prefixQueries != 300 {
		t.Errorf("hits/queries = %d/%d tokens, want 96/300 (only the third request hits)", e.prefixHits, e.prefixQueries)
	}
}

func TestPrefixCacheEvictsTheLeastRecentlyFreedBlocks(t *testing.T) {
	t.Parallel()
	e := cacheEngine(t, 20)
	// A and B leave 12 blocks cached and free; C needs 10, so two of them are evicted: A's
	// last two, which vLLM frees (and so evicts) first. C's 10 full blocks then fill the
	// cache, and A's return evicts B's last two for the two blocks it computes again.
	e.add(promptSeq(e, 0, 96, 1))
	drain(t, e)
	e.add(promptSeq(e, 1000, 96, 1))
	drain(t, e)
	if e.cachedFree != 12 {
		t.Fatalf("%d blocks cached and free after A and B, want 12", e.cachedFree)
	}
	e.add(promptSeq(e, 2000, 160, 1))
	drain(t, e)
	hits := e.prefixHits
	e.add(promptSeq(e, 0, 96, 1))
	drain(t, e)
	if got := e.prefixHits - hits; got != 64 {
		t.Errorf("A again: %d tokens hit, want 64 (its first 4 blocks survived)", got)
	}
	hits = e.prefixHits
	e.add(promptSeq(e, 1000, 96, 1))
	drain(t, e)
	if got := e.prefixHits - hits; got != 64 {
		t.Errorf("B again: %d tokens hit, want 64 (A's recompute evicted its last 2 blocks)", got)
	}
}

func TestPrefixCacheStaysWithinTheKVCache(t *testing.T) {
	t.Parallel()
	e := cacheEngine(t, 40)
	for i := range 200 {
		e.add(promptSeq(e, i%7*1000+i/7, 50+i%5*40, 1+i%30))
		if i%3 == 0 {
			drain(t, e)
		}
	}
	drain(t, e)
	if n := len(e.cacheIdx); n > e.totalBlk {
		t.Errorf("%d blocks indexed, want at most the cache's %d", n, e.totalBlk)
	}
	if live := len(e.cache) - len(e.cacheSlots); live != e.cachedFree || live > e.totalBlk {
		t.Errorf("%d blocks cached, %d free, want all free and at most %d", live, e.cachedFree, e.totalBlk)
	}
}

func TestPrefixCacheKeepsAPreemptedRequestsBlocks(t *testing.T) {
	t.Parallel()
	e := cacheEngine(t, 28)
	e.add(promptSeq(e, 0, 200, 40))
	e.add(promptSeq(e, 1000, 200, 40))
	drain(t, e)
	if e.preemptions == 0 {
		t.Fatal("no preemptions: two requests growing to 240 tokens should not fit in 448")
	}
	if e.prefixHits == 0 {
		t.Error("a preempted request's recompute hit nothing, want its cached blocks")
	}
}

func TestEstimateSecondRequestHitsTheSharedPrefix(t *testing.T) {
	t.Parallel()
	arch, sku := mustArch(t, "llama-3.1-8b"), mustSKU(t, "h100-sxm")
	cfg := DefaultConfig()
	cfg.MaxModelLen = 4096
	for _, tc := range []struct {
		name   string
		prefix int
		want   float64
	}{
		{"shared prefix", 256, 256.0 / 1024},
		// A class's prompts have at least one token after the prefix: 513 tokens here.
		{"prefix of all but the last token", 512, 512.0 / 1026},
	} {
		cls := fixedClass("chat", 2, 512, 1, workload.Arrival{Kind: workload.ArrivalConstant, Rate: 1})
		cls.PrefixTokens = tc.prefix
		m, err := Estimate(context.Background(), arch, sku, cfg, []workload.Class{cls}, 1)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.Total.Metrics[workload.PrefixCacheHitRate]; got != tc.want {
			t.Errorf("%s: prefix cache hit rate = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// metricValue reads one sample of a counter or gauge from a server's /metrics.
func metricValue(t *testing.T, url, name string) float64 {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	f, ok := fams[name]
	if !ok || len(f.GetMetric()) != 1 {
		t.Fatalf("/metrics has no %s", name)
	}
	// The text parser files a _total sample of a counter family as untyped.
	if c := f.GetMetric()[0].GetCounter(); c != nil {
		return c.GetValue()
	}
	return f.GetMetric()[0].GetUntyped().GetValue()
}

func TestServerSecondIdenticalPromptHitsAllButItsLastPartialBlock(t *testing.T) {
	t.Parallel()
	url, log, _ := startServer(t, "llama-3.1-8b", "--sku", "h100-sxm", "--max-model-len", "4096")
	ids := make([]string, 100)
	for i := range ids {
		ids[i] = fmt.Sprint(1000 + i)
	}
	body := `{"prompt": [` + strings.Join(ids, ",") + `], "max_tokens": 2}`
	for range 2 {
		if resp, out := post(t, url+"/v1/completions", body); resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d: %s\n%s", resp.StatusCode, out, log)
		}
	}
	queries, hits := metricValue(t, url, "vllm:prefix_cache_queries_total"), metricValue(t, url, "vllm:prefix_cache_hits_total")
	if queries != 200 || hits != 96 {
		t.Errorf("prefix cache hits/queries = %v/%v tokens, want 96/200", hits, queries)
	}
}
