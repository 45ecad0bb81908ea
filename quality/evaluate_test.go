package quality

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/frontier-llm/frontier/plan"
)

func ptr(v float64) *float64 { return &v }

func TestGateAppliesMinAndMaxDrop(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name           string
		min, maxDrop   *float64
		score, base    float64
		wantPass       bool
		wantReasonPart string
	}{
		{name: "no bounds", score: 0.1, base: 0.9, wantPass: true},
		{name: "within max_drop", maxDrop: ptr(0.02), score: 0.882, base: 0.9, wantPass: true},
		{name: "exactly at max_drop", maxDrop: ptr(0.02), score: 0.9 * 0.98, base: 0.9, wantPass: true},
		{name: "beyond max_drop", maxDrop: ptr(0.02), score: 0.85, base: 0.9, wantPass: false,
			wantReasonPart: `quality "g": score 0.8500 is 5.56% below the baseline's 0.9000 (max_drop 2%)`},
		{name: "better than the baseline", maxDrop: ptr(0), score: 0.95, base: 0.9, wantPass: true},
		{name: "zero baseline", maxDrop: ptr(0.02), score: 0, base: 0, wantPass: true},
		{name: "below min", min: ptr(0.8), score: 0.79, base: 0.9, wantPass: false,
			wantReasonPart: `quality "g": score 0.7900 is below min 0.8`},
		{name: "at min", min: ptr(0.8), score: 0.8, base: 0.9, wantPass: true},
		{name: "min checked first", min: ptr(0.8), maxDrop: ptr(0.01), score: 0.5, base: 0.9, wantPass: false,
			wantReasonPart: "below min"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			gate := plan.QualityGate{Name: "g", Min: tt.min, MaxDrop: tt.maxDrop}
			passed, reason := Gate(gate, tt.score, tt.base)
			if passed != tt.wantPass {
				t.Errorf("Gate(%v, %v) passed = %v (%q); want %v", tt.score, tt.base, passed, reason, tt.wantPass)
			}
			if tt.wantPass && reason != "" {
				t.Errorf("a passing score has reason %q; want none", reason)
			}
			if !strings.Contains(reason, tt.wantReasonPart) {
				t.Errorf("reason %q does not contain %q", reason, tt.wantReasonPart)
			}
		})
	}
}

func TestEvaluateUsesTheFirstSamplesItems(t *testing.T) {
	t.Parallel()
	items := mustItems(t, `{"id": "1", "prompt": "p", "reference": "a"}`+"\n"+
		`{"id": "2", "prompt": "p", "reference": "b"}`+"\n"+`{"id": "3", "prompt": "p", "reference": "c"}`)
	gate := plan.QualityGate{Name: "g", Scorer: ScorerExact, Samples: 2}
	o, err := Evaluate(context.Background(), gate, items, NewSimGenerator(nil, 1), nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"1", "2"}, o.IDs); diff != "" {
		t.Errorf("evaluated items (-want +got):\n%s", diff)
	}
	if len(o.Outputs) != 2 || !o.Simulated {
		t.Errorf("outputs %q, simulated %v; want 2 simulated outputs", o.Outputs, o.Simulated)
	}
}

func TestEvaluateReportsWhatCannotBeEvaluated(t *testing.T) {
	t.Parallel()
	items := mustItems(t, `{"id": "1", "prompt": "p"}`)
	ctx := context.Background()
	if _, err := Evaluate(ctx, plan.QualityGate{Name: "g", Scorer: ScorerChrF}, items, NewSimGenerator(nil, 1), nil); err == nil ||
		!strings.Contains(err.Error(), `quality "g": set.jsonl:1: item "1" has no "reference"`) {
		t.Errorf("chrf without references: error %v", err)
	}
	base := &Outcome{Outputs: []string{"a", "b"}}
	if _, err := Evaluate(ctx, plan.QualityGate{Name: "g", Scorer: ScorerBaselineAgreement}, items, NewSimGenerator(nil, 1), base); err == nil ||
		!strings.Contains(err.Error(), "the baseline has 2 outputs for 1 items") {
		t.Errorf("a baseline of another size: error %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Evaluate(cancelled, plan.QualityGate{Name: "g", Scorer: ScorerBaselineAgreement}, items, NewSimGenerator(nil, 1), nil); err == nil {
		t.Error("a cancelled context: nil error")
	}
}

func TestBaselineAgreementWithoutReferencesOnTheSimulator(t *testing.T) {
	t.Parallel()
	items := mustItems(t, `{"id": "1", "prompt": "Summarise the customer's message about a late parcel and a refund request in one sentence."}`+"\n"+
		`{"id": "2", "messages": [{"role": "user", "content": "荷物が届かないという問い合わせを一文で要約してください。"}]}`)
	gate := plan.QualityGate{Name: "agree", Scorer: ScorerBaselineAgreement}
	ctx := context.Background()
	base, err := Evaluate(ctx, gate, items, NewSimGenerator(map[string]any{"quantization": "none"}, 1), nil)
	if err != nil {
		t.Fatal(err)
	}
	same, err := Evaluate(ctx, gate, items, NewSimGenerator(map[string]any{"quantization": "none"}, 1), base)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]float64{1, 1}, same.Items); diff != "" {
		t.Errorf("the baseline configuration against its own answers (-want +got):\n%s", diff)
	}
	low, err := Evaluate(ctx, gate, items, NewSimGenerator(map[string]any{"quantization": "bitsandbytes"}, 1), base)
	if err != nil {
		t.Fatal(err)
	}
	if !(low.Score < 1) {
		t.Errorf("4-bit round-to-nearest agrees %v with the baseline; want below 1", low.Score)
	}
}
