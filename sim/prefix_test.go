package sim

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/frontier-llm/frontier/workload"
)

// TestServerCachesASharedPrefixOfTokenIDs drives a real sim serve on loopback with token-id
// prompts that share a 256-token prefix (and differ after it), as frontier bench
// --token-ids sends them: the server finds the prefix from the ids alone (hashes of whole
// blocks), counts the cached tokens in vllm:prefix_cache_hits_total, and the requests that
// find it cached skip its prefill, so their TTFT is shorter than the first request's.
func TestServerCachesASharedPrefixOfTokenIDs(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time serving")
	}
	t.Parallel()
	// On an L4 a step of Llama-3.1-8B streams its 16 GB of weights in about 67 ms and computes
	// about 300 tokens in that time: a 512-token prefill is compute-bound (about 115 ms), the
	// 256 tokens left after a hit are not (about 67 ms). At 10 requests a second of one output
	// token each, requests rarely share a step.
	url, log, _ := startServer(t, "llama-3.1-8b", "--sku", "l4", "--max-model-len", "4096")
	const n, prefix, in = 100, 256, 512
	cls := []workload.Class{{Name: "chat", Requests: n,
		InputTokens: workload.Dist{Kind: workload.DistFixed, A: in}, OutputTokens: workload.Dist{Kind: workload.DistFixed, A: 1},
		PrefixTokens: prefix, Arrival: workload.Arrival{Kind: workload.ArrivalConstant, Rate: 10}}}
	res, err := workload.Run(context.Background(), workload.Target{URL: url, Model: "llama-3.1-8b", TokenIDs: true}, cls, workload.RunOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Measurement.Total.Metrics[workload.Completed]; got != n {
		t.Fatalf("%v requests completed, want %d\n%s", got, n, log)
	}

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
	counter := func(name string) float64 {
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
	queries, hits := counter("vllm:prefix_cache_queries_total"), counter("vllm:prefix_cache_hits_total")
	// The first request's prompt blocks are cached once computed, so every later request
	// finds the prefix's 16 whole blocks cached, and nothing after it (the ids differ).
	if want := float64((n - 1) * prefix); hits != want || queries != float64(n*in) {
		t.Errorf("vllm:prefix_cache_hits_total = %v of %v queried tokens, want %v of %v", hits, queries, want, n*in)
	}

	if raceEnabled {
		return // timing under the race detector says nothing about the model
	}
	// TTFT of the first request, which computes the prefix, against the later ones.
	var first time.Duration
	var later []time.Duration
	for _, r := range res.Records {
		if r.Warmup || !r.OK() {
			continue
		}
		if r.Index == 0 {
			first = r.FirstToken - r.Sent
		} else {
			later = append(later, r.FirstToken-r.Sent)
		}
	}
	slices.Sort(later)
	med := later[len(later)/2]
	t.Logf("TTFT: first request %v, median of the later ones %v", first, med)
	if float64(med) > 0.8*float64(first) {
		t.Errorf("median TTFT of requests 2 to %d = %v, want at most 80%% of the first request's %v", n, med, first)
	}
}
