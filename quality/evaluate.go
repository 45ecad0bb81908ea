package quality

import (
	"context"
	"fmt"
	"math"

	"github.com/frontier-llm/frontier/plan"
)

// Evaluate asks gen for an answer to every item (the first gate.Samples items when it is
// set), one at a time so that batching cannot change greedy answers, and scores them with
// gate's scorer. baseline is the baseline configuration's outcome, which baseline_agreement
// needs; nil when evaluating the baseline itself, and ignored by the other scorers.
func Evaluate(ctx context.Context, gate plan.QualityGate, items []Item, gen Generator, baseline *Outcome) (*Outcome, error) {
	if gate.Samples > 0 && gate.Samples < len(items) {
		items = items[:gate.Samples]
	}
	if err := CheckItems(gate.Scorer, items); err != nil {
		return nil, fmt.Errorf("quality %q: %w", gate.Name, err)
	}
	var base []string
	if gate.Scorer == ScorerBaselineAgreement && baseline != nil {
		if len(baseline.Outputs) != len(items) {
			return nil, fmt.Errorf("quality %q: the baseline has %d outputs for %d items", gate.Name, len(baseline.Outputs), len(items))
		}
		base = baseline.Outputs
	}
	outputs := make([]string, len(items))
	for i := range items {
		out, err := gen.Generate(ctx, items[i])
		if err != nil {
			return nil, fmt.Errorf("quality %q: %w", gate.Name, err)
		}
		outputs[i] = out
	}
	o, err := Score(ctx, gate, items, outputs, base)
	if err != nil {
		return nil, fmt.Errorf("quality %q: %w", gate.Name, err)
	}
	o.Simulated = gen.Simulated()
	return o, nil
}

// gateTolerance absorbs floating-point noise in gate comparisons.
const gateTolerance = 1e-12

// Gate reports whether score passes gate: at least gate.Min when set, and, when
// gate.MaxDrop is set, at most MaxDrop below baseline relative to baseline (score ≥
// baseline × (1 − MaxDrop)). reason says why a score fails, and is empty when it passes.
func Gate(gate plan.QualityGate, score, baseline float64) (passed bool, reason string) {
	if math.IsNaN(score) {
		return false, fmt.Sprintf("quality %q: no score", gate.Name)
	}
	if gate.Min != nil && score < *gate.Min-gateTolerance {
		return false, fmt.Sprintf("quality %q: score %.4f is below min %.4g", gate.Name, score, *gate.Min)
	}
	if gate.MaxDrop != nil && baseline > 0 {
		drop := (baseline - score) / baseline
		if drop > *gate.MaxDrop+gateTolerance {
			return false, fmt.Sprintf("quality %q: score %.4f is %.2f%% below the baseline's %.4f (max_drop %.4g%%)",
				gate.Name, score, 100*drop, baseline, 100**gate.MaxDrop)
		}
	}
	return true, ""
}
