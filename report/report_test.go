package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReportFormatsMatchGolden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		fixture string
		write   func(*bytes.Buffer, *Analysis) error
	}{
		{"quickstart.txt", "quickstart.json", func(b *bytes.Buffer, a *Analysis) error { return WriteText(b, a, Options{}) }},
		{"quickstart-all.txt", "quickstart.json", func(b *bytes.Buffer, a *Analysis) error { return WriteText(b, a, Options{All: true}) }},
		{"quickstart.md", "quickstart.json", func(b *bytes.Buffer, a *Analysis) error { return WriteMarkdown(b, a, Options{}) }},
		{"quickstart.json", "quickstart.json", func(b *bytes.Buffer, a *Analysis) error { return WriteJSON(b, a) }},
		{"quickstart-h200.txt", "quickstart-h200.json", func(b *bytes.Buffer, a *Analysis) error { return WriteText(b, a, Options{}) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			if err := tc.write(&buf, Analyze(loadFixture(t, tc.fixture))); err != nil {
				t.Fatal(err)
			}
			golden(t, tc.name, buf.Bytes())
		})
	}
}

func TestJSONKeepsRecordKeysAndAddsRecommended(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if err := WriteJSON(&buf, Analyze(loadFixture(t, "quickstart.json"))); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"study", "trials", "front", "objectives", "recommended"} {
		if _, ok := got[k]; !ok {
			t.Errorf("JSON report has no %q key", k)
		}
	}
	trial := got["trials"].([]any)[0].(map[string]any)
	for _, k := range []string{"number", "state", "config", "workloads", "total", "quality", "objectives", "pareto", "simulated"} {
		if _, ok := trial[k]; !ok {
			t.Errorf("JSON trial has no %q key", k)
		}
	}
	rec := got["recommended"].(map[string]any)
	if diff := cmp.Diff(float64(14), rec["trial"]); diff != "" {
		t.Errorf("recommended trial (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(rec["method"].(string), "knee") {
		t.Errorf("recommended method = %q, want the knee", rec["method"])
	}
}
