package quality

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/frontier-llm/frontier/plan"
)

// Scorer names, as a quality block's scorer attribute spells them.
const (
	ScorerExact             = "exact"
	ScorerContains          = "contains"
	ScorerRegex             = "regex"
	ScorerJSONValid         = "json_valid"
	ScorerChrF              = "chrf"
	ScorerRougeL            = "rouge_l"
	ScorerBaselineAgreement = "baseline_agreement"
	ScorerJudge             = "judge"
)

// Scorers returns every scorer name.
func Scorers() []string {
	return []string{ScorerExact, ScorerContains, ScorerRegex, ScorerJSONValid, ScorerChrF,
		ScorerRougeL, ScorerBaselineAgreement, ScorerJudge}
}

// IsScorer reports whether name is a scorer.
func IsScorer(name string) bool {
	for _, s := range Scorers() {
		if s == name {
			return true
		}
	}
	return false
}

// Outcome is an evaluation's result: the corpus score, and per item its score and answer.
type Outcome struct {
	// Scorer is the scorer that gave the scores.
	Scorer string `json:"scorer"`
	// Score is the corpus score on 0..1: corpus chrF for chrf and baseline_agreement, the
	// mean of the item scores for the others (items with an error left out).
	Score float64 `json:"score"`
	// IDs, Items and Outputs are per item, in the set's order: the id, the score on 0..1
	// (0 for an item with an error) and the answer.
	IDs     []string  `json:"ids"`
	Items   []float64 `json:"items"`
	Outputs []string  `json:"outputs,omitempty"`
	// Errors lists the items that could not be scored (a judge verdict that could not be
	// used), which the corpus score leaves out.
	Errors []ItemError `json:"errors,omitempty"`
	// Simulated is true when the answers come from the simulator's answer model.
	Simulated bool `json:"simulated,omitempty"`
}

// ItemError is an item that could not be scored.
type ItemError struct {
	ID    string `json:"id"`
	Error string `json:"error"`
}

// CheckItems reports, for every item that lacks what scorer needs, which item and what it
// lacks: a reference for exact, chrf and rouge_l; a contains list for contains; a regex for
// regex; "json": true for json_valid.
func CheckItems(scorer string, items []Item) error {
	if !IsScorer(scorer) {
		return fmt.Errorf("unknown scorer %q; known scorers are %s", scorer, strings.Join(Scorers(), ", "))
	}
	if len(items) == 0 {
		return errors.New("no items to score")
	}
	var errs []error
	for i := range items {
		it := &items[i]
		var lack string
		switch scorer {
		case ScorerExact, ScorerChrF, ScorerRougeL:
			if it.Reference == "" {
				lack = `a "reference"`
			}
		case ScorerContains:
			if len(it.Contains) == 0 {
				lack = `a "contains" list`
			}
		case ScorerRegex:
			if it.Regex == "" {
				lack = `a "regex"`
			}
		case ScorerJSONValid:
			if !it.JSON {
				lack = `"json": true`
			}
		}
		if lack != "" {
			errs = append(errs, fmt.Errorf("%s has no %s, which scorer %s needs", it.where(), strings.TrimPrefix(lack, "a "), scorer))
		}
	}
	return errors.Join(errs...)
}

// Score scores outputs, one per item, with gate's scorer. baseline holds the baseline
// configuration's outputs for baseline_agreement; with nil, the outputs are the baseline's
// own and every item agrees with itself (score 1). The judge scorer asks gate's judge.
func Score(ctx context.Context, gate plan.QualityGate, items []Item, outputs, baseline []string) (*Outcome, error) {
	if err := CheckItems(gate.Scorer, items); err != nil {
		return nil, err
	}
	if len(outputs) != len(items) {
		return nil, fmt.Errorf("%d outputs for %d items", len(outputs), len(items))
	}
	o := &Outcome{Scorer: gate.Scorer, IDs: make([]string, len(items)), Items: make([]float64, len(items)), Outputs: outputs}
	for i := range items {
		o.IDs[i] = items[i].ID
	}
	switch gate.Scorer {
	case ScorerChrF:
		refs := make([]string, len(items))
		for i := range items {
			refs[i] = items[i].Reference
		}
		o.Score, o.Items = CorpusChrF(outputs, refs)
		return o, nil
	case ScorerBaselineAgreement:
		if baseline == nil {
			for i := range o.Items {
				o.Items[i] = 1
			}
			o.Score = 1
			return o, nil
		}
		if len(baseline) != len(items) {
			return nil, fmt.Errorf("baseline_agreement: the baseline has %d outputs for %d items", len(baseline), len(items))
		}
		o.Score, o.Items = CorpusChrF(outputs, baseline)
		return o, nil
	case ScorerJudge:
		j, err := NewJudge(gate.JudgeURL, gate.JudgeModel, gate.JudgeRubric)
		if err != nil {
			return nil, err
		}
		if err := scoreItems(o, items, func(it *Item, out string) (float64, error) {
			return j.Rate(ctx, *it, out)
		}); err != nil {
			return nil, err
		}
		return o, nil
	}
	if err := scoreItems(o, items, func(it *Item, out string) (float64, error) {
		return itemScore(gate.Scorer, it, out)
	}); err != nil {
		return nil, err
	}
	return o, nil
}

// scoreItems fills o's item scores with score and sets o.Score to their mean, leaving out
// the items whose verdict could not be used. Other errors (a judge that cannot be reached,
// a cancelled context) end the scoring.
func scoreItems(o *Outcome, items []Item, score func(*Item, string) (float64, error)) error {
	sum, n := 0.0, 0
	for i := range items {
		s, err := score(&items[i], o.Outputs[i])
		if errors.Is(err, ErrVerdictUnparseable) || errors.Is(err, ErrVerdictOutOfRange) {
			o.Errors = append(o.Errors, ItemError{ID: items[i].ID, Error: err.Error()})
			continue
		}
		if err != nil {
			return fmt.Errorf("%s: %w", items[i].where(), err)
		}
		o.Items[i] = s
		sum += s
		n++
	}
	if n == 0 {
		return fmt.Errorf("no item could be scored; the first error: %s", o.Errors[0].Error)
	}
	o.Score = sum / float64(n)
	return nil
}

// itemScore is the score of one output under a per-item scorer.
func itemScore(scorer string, it *Item, out string) (float64, error) {
	switch scorer {
	case ScorerExact:
		return boolScore(strings.TrimSpace(out) == strings.TrimSpace(it.Reference)), nil
	case ScorerContains:
		found := 0
		for _, c := range it.Contains {
			if strings.Contains(out, c) {
				found++
			}
		}
		return float64(found) / float64(len(it.Contains)), nil
	case ScorerRegex:
		re, err := it.compiled()
		if err != nil {
			return 0, fmt.Errorf("regex: %w", err)
		}
		return boolScore(re.MatchString(out)), nil
	case ScorerJSONValid:
		return boolScore(json.Valid([]byte(stripFence(out)))), nil
	case ScorerRougeL:
		return RougeL(out, it.Reference), nil
	}
	return 0, fmt.Errorf("scorer %s has no per-item score", scorer)
}

// stripFence removes surrounding whitespace and one Markdown code fence (```json ... ```)
// around an answer.
func stripFence(s string) string {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "```") || !strings.HasSuffix(s, "```") || len(s) < 6 {
		return s
	}
	s = strings.TrimSuffix(s, "```")
	nl := strings.IndexByte(s, '\n')
	if nl < 0 {
		return strings.TrimSpace(strings.TrimPrefix(s, "```"))
	}
	return strings.TrimSpace(s[nl+1:])
}

func boolScore(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
