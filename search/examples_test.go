package search

import (
	"strings"
	"testing"

	"github.com/frontier-llm/frontier/record"

	"github.com/google/go-cmp/cmp"

	"github.com/frontier-llm/frontier/quality"
)

// TestExamplesAreTheWorstItemsWithTheBaselinesAnswer checks the examples a quality score
// keeps for the report: at most record.MaxExamples, the lowest-scoring first, each with its id,
// reference and the baseline's answer to the same item, texts cut to record.MaxExampleChars.
func TestExamplesAreTheWorstItemsWithTheBaselinesAnswer(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", record.MaxExampleChars+50)
	items := []quality.Item{
		{ID: "a", Prompt: "one", Reference: "1"},
		{ID: "b", Prompt: "two", Reference: "2"},
		{ID: "c", Prompt: "three", Reference: "3"},
		{ID: "d", Prompt: long, Reference: "4"},
		{ID: "e", Prompt: "five", Reference: "5"},
	}
	o := &quality.Outcome{
		IDs:     []string{"a", "b", "c", "d", "e"},
		Items:   []float64{0.9, 0.2, 1, 0.1, 0.2},
		Outputs: []string{"1", "<script>alert(1)</script>", "3", "four", "six"},
	}
	base := &quality.Outcome{IDs: []string{"e", "d", "b", "a", "c"}, Outputs: []string{"5", long, "2", "1", "3"}}
	cut := strings.Repeat("x", record.MaxExampleChars) + "…"
	tests := []struct {
		name string
		base *quality.Outcome
		want []record.QualityExample
	}{
		{"with a baseline", base, []record.QualityExample{
			{ID: "d", Input: cut, Reference: "4", Output: "four", Score: 0.1, BaselineOutput: cut},
			{ID: "b", Input: "two", Reference: "2", Output: "<script>alert(1)</script>", Score: 0.2, BaselineOutput: "2"},
			{ID: "e", Input: "five", Reference: "5", Output: "six", Score: 0.2, BaselineOutput: "5"},
		}},
		{"without a baseline", nil, []record.QualityExample{
			{ID: "d", Input: cut, Reference: "4", Output: "four", Score: 0.1},
			{ID: "b", Input: "two", Reference: "2", Output: "<script>alert(1)</script>", Score: 0.2},
			{ID: "e", Input: "five", Reference: "5", Output: "six", Score: 0.2},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := examples(items, o, tc.base, record.MaxExamples)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("examples (-want +got):\n%s", diff)
			}
		})
	}
}
