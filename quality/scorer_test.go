package quality

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/frontier-llm/frontier/plan"
)

func mustItems(t *testing.T, jsonl string) []Item {
	t.Helper()
	items, err := ReadSet(strings.NewReader(jsonl), "set.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	return items
}

func TestScoreOfEachPerItemScorer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		scorer    string
		set       string
		outputs   []string
		wantItems []float64
		wantScore float64
	}{
		{
			name: "exact ignores surrounding whitespace", scorer: ScorerExact,
			set:       `{"id": "1", "prompt": "p", "reference": "Tokyo"}` + "\n" + `{"id": "2", "prompt": "p", "reference": "Osaka"}`,
			outputs:   []string{" Tokyo\n", "osaka"},
			wantItems: []float64{1, 0}, wantScore: 0.5,
		},
		{
			name: "contains gives the share of strings found", scorer: ScorerContains,
			set:       `{"id": "1", "prompt": "p", "contains": ["田中", "A-1043"]}` + "\n" + `{"id": "2", "prompt": "p", "contains": ["佐藤"]}`,
			outputs:   []string{"田中様の注文", "佐藤様"},
			wantItems: []float64{0.5, 1}, wantScore: 0.75,
		},
		{
			name: "regex", scorer: ScorerRegex,
			set:       `{"id": "1", "prompt": "p", "regex": "^件名: .+"}` + "\n" + `{"id": "2", "prompt": "p", "regex": "\\d{3}-\\d{4}"}`,
			outputs:   []string{"件名: 返金", "郵便番号 1000001"},
			wantItems: []float64{1, 0}, wantScore: 0.5,
		},
		{
			name: "json_valid accepts one code fence", scorer: ScorerJSONValid,
			set: `{"id": "1", "prompt": "p", "json": true}` + "\n" + `{"id": "2", "prompt": "p", "json": true}` + "\n" +
				`{"id": "3", "prompt": "p", "json": true}`,
			outputs:   []string{"```json\n{\"a\": 1}\n```", `{"a": }`, " [1, 2] "},
			wantItems: []float64{1, 0, 1}, wantScore: 2.0 / 3,
		},
		{
			// The corpus score is the mean of the sentence scores (3/4 and 4/7).
			name: "rouge_l", scorer: ScorerRougeL,
			set: `{"id": "1", "prompt": "p", "reference": "police killed the gunman"}` + "\n" +
				`{"id": "2", "prompt": "p", "reference": "東京都に住む"}`,
			outputs:   []string{"police kill the gunman", "東京に住んでいる"},
			wantItems: []float64{3.0 / 4, 4.0 / 7}, wantScore: (3.0/4 + 4.0/7) / 2,
		},
		{
			// Corpus chrF sums statistics: 39/140, not the mean of 7/11 and 1105/4304.
			name: "chrf", scorer: ScorerChrF,
			set:       `{"id": "1", "prompt": "p", "reference": "東京都"}` + "\n" + `{"id": "2", "prompt": "p", "reference": "山田様へ"}`,
			outputs:   []string{"東京", "山田さんへ"},
			wantItems: []float64{7.0 / 11, 1105.0 / 4304}, wantScore: 39.0 / 140,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			items := mustItems(t, tt.set)
			o, err := Score(context.Background(), plan.QualityGate{Scorer: tt.scorer}, items, tt.outputs, nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantItems, o.Items, approx); diff != "" {
				t.Errorf("item scores (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantScore, o.Score, approx); diff != "" {
				t.Errorf("score (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBaselineAgreementScoresAgainstTheBaselineOutputs(t *testing.T) {
	t.Parallel()
	items := mustItems(t, `{"id": "1", "prompt": "p"}`+"\n"+`{"id": "2", "prompt": "q"}`)
	gate := plan.QualityGate{Scorer: ScorerBaselineAgreement}
	ctx := context.Background()
	self, err := Score(ctx, gate, items, []string{"東京", ""}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]float64{1, 1}, self.Items); diff != "" || self.Score != 1 {
		t.Errorf("the baseline against itself: score %v, items (-want +got):\n%s", self.Score, diff)
	}
	o, err := Score(ctx, gate, items, []string{"東京", "山田さんへ"}, []string{"東京都", "山田様へ"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]float64{7.0 / 11, 1105.0 / 4304}, o.Items, approx); diff != "" {
		t.Errorf("items (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(39.0/140, o.Score, approx); diff != "" {
		t.Errorf("score (-want +got):\n%s", diff)
	}
	if _, err := Score(ctx, gate, items, []string{"a", "b"}, []string{"a"}); err == nil {
		t.Error("a baseline with fewer outputs than items: nil error")
	}
}

func TestCheckItemsSaysWhatAScorerNeeds(t *testing.T) {
	t.Parallel()
	items := mustItems(t, `{"id": "1", "prompt": "p", "reference": "r", "contains": ["x"]}`+"\n"+`{"id": "2", "prompt": "p"}`)
	tests := []struct {
		scorer string
		want   string // "" when the items suffice
	}{
		{ScorerExact, `set.jsonl:2: item "2" has no "reference", which scorer exact needs`},
		{ScorerChrF, `set.jsonl:2: item "2" has no "reference", which scorer chrf needs`},
		{ScorerRougeL, `set.jsonl:2: item "2" has no "reference"`},
		{ScorerContains, `item "2" has no "contains" list`},
		{ScorerRegex, `set.jsonl:1: item "1" has no "regex"`},
		{ScorerJSONValid, `has no "json": true, which scorer json_valid needs`},
		{ScorerBaselineAgreement, ""},
		{ScorerJudge, ""},
		{"bleu", `unknown scorer "bleu"; known scorers are exact, contains`},
	}
	for _, tt := range tests {
		t.Run(tt.scorer, func(t *testing.T) {
			t.Parallel()
			err := CheckItems(tt.scorer, items)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("CheckItems: %v; want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("CheckItems error %v; want one containing %q", err, tt.want)
			}
		})
	}
}
