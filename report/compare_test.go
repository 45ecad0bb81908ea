package report

import (
	"bytes"
	"testing"

	"github.com/frontier-llm/frontier/record"

	"github.com/google/go-cmp/cmp"
)

func TestCompareMatchesGolden(t *testing.T) {
	t.Parallel()
	files := []string{"quickstart.json", "quickstart-h200.json", "quickstart-qwen.json"}
	var recs []*record.Study
	for _, f := range files {
		recs = append(recs, loadFixture(t, f))
	}
	c := Compare(files, recs)
	for _, tc := range []struct {
		name  string
		write func(*bytes.Buffer) error
	}{
		{"compare.txt", func(b *bytes.Buffer) error { return WriteCompareText(b, c) }},
		{"compare.md", func(b *bytes.Buffer) error { return WriteCompareMarkdown(b, c) }},
		{"compare.json", func(b *bytes.Buffer) error { return WriteCompareJSON(b, c) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			if err := tc.write(&buf); err != nil {
				t.Fatal(err)
			}
			golden(t, tc.name, buf.Bytes())
		})
	}
}

func TestSummarizeBestAtTheSLO(t *testing.T) {
	t.Parallel()
	s := Summarize("h100", loadFixture(t, "quickstart.json"))
	// Trial 12 has the highest throughput of all but was pruned; trial 8 is the best that met
	// the SLO.
	got := struct {
		Tput, Cost, Capacity int
		Feasible             int
	}{s.ThroughputPerGPU.Trial, s.CostPerMillion.Trial, s.Capacity.Trial, s.Feasible}
	want := struct {
		Tput, Cost, Capacity int
		Feasible             int
	}{8, 8, 8, 11}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("best trials at the SLO (-want +got):\n%s", diff)
	}
}
