package quality

import (
	"context"
	"fmt"

	"github.com/frontier-llm/frontier/plan"
)

// Result is one scored set, as `frontier quality --json` writes it. Its keys are those of a
// trial's quality scores in `frontier report --format json`.
type Result struct {
	Scorer string  `json:"scorer"`
	Score  float64 `json:"score"`
	// Baseline is the baseline configuration's score, when one was measured.
	Baseline *float64 `json:"baseline,omitempty"`
	// Passed and Reason are the gate's verdict; Passed is nil when the block sets neither
	// min nor max_drop and there is a score.
	Passed    *bool       `json:"passed,omitempty"`
	Reason    string      `json:"reason,omitempty"`
	IDs       []string    `json:"ids"`
	Items     []float64   `json:"items"`
	Errors    []ItemError `json:"errors,omitempty"`
	Simulated bool        `json:"simulated,omitempty"`
}

// ResultOf is the result of an outcome, without a baseline or a verdict.
func ResultOf(o *Outcome) Result {
	return Result{Scorer: o.Scorer, Score: o.Score, IDs: o.IDs, Items: o.Items, Errors: o.Errors, Simulated: o.Simulated}
}

// LoadGateSets reads and checks the evaluation set of every quality gate, in order, before
// anything is sent to a server. withBaseline says whether a baseline server will answer too:
// baseline_agreement cannot be scored without one. Every error is a problem of the plan or
// its sets.
func LoadGateSets(gates []plan.QualityGate, withBaseline bool) ([][]Item, error) {
	sets := make([][]Item, len(gates))
	for i, g := range gates {
		if g.Scorer == ScorerBaselineAgreement && !withBaseline {
			return nil, fmt.Errorf("quality %q uses baseline_agreement, which needs --baseline-url (a server running the baseline configuration)", g.Name)
		}
		items, err := LoadSet(g.Dataset)
		if err == nil {
			err = CheckItems(g.Scorer, items)
		}
		if err != nil {
			return nil, fmt.Errorf("quality %q: %w", g.Name, err)
		}
		sets[i] = items
	}
	return sets, nil
}

// RunGate evaluates gate's items on gen and gates the score. With a baseline generator the
// items are evaluated there first, and max_drop and baseline_agreement compare against it;
// without one only min is checked.
func RunGate(ctx context.Context, gate plan.QualityGate, items []Item, gen, baseline Generator) (Result, error) {
	var base *Outcome
	if baseline != nil {
		var err error
		if base, err = Evaluate(ctx, gate, items, baseline, nil); err != nil {
			return Result{}, fmt.Errorf("the baseline: %w", err)
		}
	}
	o, err := Evaluate(ctx, gate, items, gen, base)
	if err != nil {
		return Result{}, err
	}
	res := ResultOf(o)
	checked := gate
	baseScore := 0.0
	if base != nil {
		baseScore = base.Score
		res.Baseline = &baseScore
	} else {
		checked.MaxDrop = nil // no baseline measured: only min can be checked
	}
	passed, reason := Gate(checked, o.Score, baseScore)
	if gate.MaxDrop != nil || gate.Min != nil || !passed {
		res.Passed, res.Reason = &passed, reason
	}
	return res, nil
}
