package sim

import (
	"context"
	"testing"
	"time"

	"github.com/frontier-llm/frontier/workload"
)

// chatClass is a class of conversations whose histories share prefixes: four tenants'
// system prompts, then each conversation's turns.
func chatClass(endpoint string) workload.Class {
	return workload.Class{Name: "chat", Conversations: 12, Endpoint: endpoint,
		Turns:        workload.Dist{Kind: workload.DistFixed, A: 4},
		ThinkTime:    200 * time.Millisecond,
		PrefixTokens: 400, PrefixGroups: 2,
		InputTokens:  workload.Dist{Kind: workload.DistFixed, A: 120},
		OutputTokens: workload.Dist{Kind: workload.DistFixed, A: 24},
		Arrival:      workload.Arrival{Kind: workload.ArrivalPoisson, Rate: 6}}
}

// meanPrompt is the mean prompt length of a Result's completed requests.
func meanPrompt(r *workload.Result) float64 {
	m := r.Metrics
	if m[workload.Completed] == 0 {
		return 0
	}
	return m[workload.InputTokenThroughput] * m[workload.DurationS] / m[workload.Completed]
}

func TestEstimateConversationsHitThePrefixCacheAndGrow(t *testing.T) {
	t.Parallel()
	arch, sku := mustArch(t, "llama-3.1-8b"), mustSKU(t, "h100-sxm")
	for _, ep := range []string{workload.EndpointCompletions, workload.EndpointChat} {
		t.Run(ep, func(t *testing.T) {
			t.Parallel()
			cfg := DefaultConfig()
			cfg.MaxModelLen = 8192
			m, err := Estimate(context.Background(), arch, sku, cfg, []workload.Class{chatClass(ep)}, 3)
			if err != nil {
				t.Fatal(err)
			}
			r := m.Workloads["chat"]
			if got := r.Metrics[workload.Completed]; got != 48 {
				t.Errorf("completed = %v, want 48 turns", got)
			}
			if hit := r.Metrics[workload.PrefixCacheHitRate]; hit < 0.7 {
				t.Errorf("prefix_cache_hit_rate = %.3f, want above 0.7: every turn repeats its conversation's history", hit)
			}
			if len(r.Turns) != 4 {
				t.Fatalf("%d turns in the breakdown, want 4", len(r.Turns))
			}
			for i := 1; i < len(r.Turns); i++ {
				prev, cur := meanPrompt(r.Turns[i-1]), meanPrompt(r.Turns[i])
				// Each turn adds the previous reply and its own new text: 24 + 120 tokens,
				// plus the chat template's messages.
				if cur-prev < 144 {
					t.Errorf("turn %d's prompts average %.0f tokens, turn %d's %.0f: want at least 144 more", i+1, cur, i, prev)
				}
			}
			// Later turns find their history cached, so their time to first token stays near
			// the first turn's though their prompts are longer.
			if t1, t4 := r.Turns[0].Metrics["ttft_mean_ms"], r.Turns[3].Metrics["ttft_mean_ms"]; t4 > 2*t1 {
				t.Errorf("turn 4's TTFT %.1f ms against turn 1's %.1f ms: the history was recomputed", t4, t1)
			}
		})
	}
}

func TestEstimateConversationsRespectThinkTime(t *testing.T) {
	t.Parallel()
	arch, sku := mustArch(t, "llama-3.1-8b"), mustSKU(t, "h100-sxm")
	cfg := DefaultConfig()
	cfg.MaxModelLen = 8192
	c := chatClass(workload.EndpointCompletions)
	c.Conversations, c.PrefixGroups, c.ThinkTime = 1, 0, 2*time.Second
	e, err := newEngine(arch, sku, cfg)
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := workload.Load(c, 1)
	if err != nil {
		t.Fatal(err)
	}
	run, err := e.run(context.Background(), []workload.Class{c}, [][]workload.Request{reqs})
	if err != nil {
		t.Fatal(err)
	}
	recs := run.state.recs
	if len(recs) != 4 {
		t.Fatalf("%d records, want 4", len(recs))
	}
	for i := 1; i < len(recs); i++ {
		prev, cur := &recs[i-1], &recs[i]
		if cur.Turn != prev.Turn+1 {
			t.Fatalf("record %d is turn %d after turn %d", i, cur.Turn, prev.Turn)
		}
		if want := prev.End + reqs[i].Think; cur.Sent != want {
			t.Errorf("turn %d sent at %v, want the previous reply's end %v plus its think time %v", cur.Turn, cur.Sent, prev.End, reqs[i].Think)
		}
		if want := nextHistory(prev.InputTokens, prev.OutputTokens, false) + 120; cur.InputTokens != want {
			t.Errorf("turn %d's prompt has %d tokens, want the history %d plus 120 new", cur.Turn, cur.InputTokens, want-120)
		}
	}
}

// TestServedConversationsMatchTheEstimate sends conversations to the simulated server with
// the real load generator: the server sees the prompts the client renders (the history as
// received) and its prefix cache, fed by their hashes, hits what the estimator's does.
func TestServedConversationsMatchTheEstimate(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("real-time serving")
	}
	t.Parallel()
	for _, ep := range []string{workload.EndpointCompletions, workload.EndpointChat} {
		t.Run(ep, func(t *testing.T) {
			url, _, _ := startServer(t, "llama-3.1-8b", "--sku", "h100-sxm", "--max-model-len", "8192")
			cls := []workload.Class{chatClass(ep)}
			res, err := workload.Run(context.Background(), workload.Target{URL: url, Model: "llama-3.1-8b", TokenIDs: true, MetricsURL: url + "/metrics"}, cls, workload.RunOptions{Seed: 3})
			if err != nil {
				t.Fatal(err)
			}
			cfg := DefaultConfig()
			cfg.MaxModelLen = 8192
			e, err := newEngine(mustArch(t, "llama-3.1-8b"), mustSKU(t, "h100-sxm"), cfg)
			if err != nil {
				t.Fatal(err)
			}
			reqs, err := workload.Load(cls[0], 3)
			if err != nil {
				t.Fatal(err)
			}
			run, err := e.run(context.Background(), cls, [][]workload.Request{reqs})
			if err != nil {
				t.Fatal(err)
			}
			est := map[int]int{}
			for _, r := range run.state.recs {
				est[r.Index] = r.InputTokens
			}
			if len(res.Records) != len(reqs) {
				t.Fatalf("%d records, want %d", len(res.Records), len(reqs))
			}
			for _, r := range res.Records {
				if !r.OK() {
					t.Fatalf("turn %d of conversation %d failed: %s", r.Turn, r.Conversation, r.Err)
				}
				if r.InputTokens != est[r.Index] {
					t.Errorf("turn %d of conversation %d: the server counted %d prompt tokens, the estimator %d", r.Turn, r.Conversation, r.InputTokens, est[r.Index])
				}
			}
			served := res.Measurement.Total.Metrics[workload.PrefixCacheHitRate]
			estimated := float64(e.prefixHits) / float64(e.prefixQueries)
			t.Logf("prefix cache hit rate: served %.3f, estimated %.3f", served, estimated)
			if served < 0.7 {
				t.Errorf("served prefix_cache_hit_rate = %.3f, want above 0.7", served)
			}
			if d := served - estimated; d > 0.03 || d < -0.03 {
				t.Errorf("served prefix_cache_hit_rate %.3f and estimated %.3f differ by more than 0.03", served, estimated)
			}
		})
	}
}
