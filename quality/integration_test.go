package quality

import (
	"context"
	"strings"
	"testing"

	"github.com/frontier-llm/frontier/plan"
)

// TestSimStudyGateRejectsAWQ runs what a study on the simulator does for one quality gate:
// the baseline configuration (quantization "none") is evaluated once, then every trial's
// configuration (none, fp8, awq) is evaluated with the simulator's answer model and gated
// against it. The answers are simulated; the scorers and the gate are the real ones.
func TestSimStudyGateRejectsAWQ(t *testing.T) {
	t.Parallel()
	items, err := LoadSet("testdata/ja-support.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	const seed = 1
	ctx := context.Background()
	for _, scorer := range []string{ScorerChrF, ScorerBaselineAgreement} {
		t.Run(scorer, func(t *testing.T) {
			t.Parallel()
			tight, loose := 0.02, 0.5
			gate := plan.QualityGate{Name: "ja-support", Scorer: scorer, MaxDrop: &tight,
				Baseline: plan.Config{"quantization": "none"}}
			baseline, err := Evaluate(ctx, gate, items, NewSimGenerator(gate.Baseline, seed), nil)
			if err != nil {
				t.Fatal(err)
			}
			scores := map[string]*Outcome{}
			for _, q := range []string{"none", "fp8", "awq"} {
				cfg := map[string]any{"quantization": q, "max_num_seqs": int64(64)}
				o, err := Evaluate(ctx, gate, items, NewSimGenerator(cfg, seed), baseline)
				if err != nil {
					t.Fatalf("%s: %v", q, err)
				}
				if !o.Simulated {
					t.Errorf("%s: outcome not labelled simulated", q)
				}
				if len(o.Items) != len(items) {
					t.Errorf("%s: %d item scores for %d items", q, len(o.Items), len(items))
				}
				scores[q] = o
			}
			none, fp8, awq := scores["none"].Score, scores["fp8"].Score, scores["awq"].Score
			if none != baseline.Score {
				t.Errorf("the baseline configuration scored %v as a trial and %v as the baseline; want the same", none, baseline.Score)
			}
			if !(awq < fp8 && fp8 <= none) {
				t.Errorf("scores none %.4f, fp8 %.4f, awq %.4f; want awq < fp8 <= none", none, fp8, awq)
			}
			if passed, reason := Gate(gate, fp8, baseline.Score); !passed {
				t.Errorf("fp8 failed max_drop %v: %s", tight, reason)
			}
			passed, reason := Gate(gate, awq, baseline.Score)
			if passed {
				t.Errorf("awq (%.4f against baseline %.4f) passed max_drop %v; want rejected", awq, baseline.Score, tight)
			}
			if !strings.Contains(reason, "below the baseline") || !strings.Contains(reason, `"ja-support"`) {
				t.Errorf("awq rejected with reason %q; want the gate's name and the drop against the baseline", reason)
			}
			gate.MaxDrop = &loose
			if passed, reason := Gate(gate, awq, baseline.Score); !passed {
				t.Errorf("awq failed a loose max_drop %v: %s", loose, reason)
			}
			t.Logf("%s: none %.4f fp8 %.4f awq %.4f", scorer, none, fp8, awq)
		})
	}
}
