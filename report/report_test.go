package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/frontier-llm/frontier/record"
	"github.com/frontier-llm/frontier/workload"
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

func TestSimulatedStudySaysHowSureTheModelIs(t *testing.T) {
	t.Parallel()
	rec := loadFixture(t, "quickstart.json")
	rec.ModelConfidence = []record.ModelConfidence{
		{SKU: "h100-sxm", Points: 69, MedianError: 0.303, WorstError: 6.977, Level: "poor"},
		{SKU: "l40s", Level: "unvalidated"},
		{SKU: "h200", Family: "dense", Level: "unvalidated"},
		{SKU: "h200", Points: 9, MedianError: 0.527, WorstError: 1.243, Level: "poor"},
	}
	a := Analyze(rec)
	if !a.Simulated {
		t.Fatal("the quickstart fixture is a simulated study")
	}
	var buf bytes.Buffer
	if err := WriteText(&buf, a, Options{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Model confidence on h100-sxm: poor (median error 30.3%, worst 698%, on 69 published vLLM measurements",
		"Model confidence on l40s: unvalidated",
		"Model confidence on h200 for dense models: unvalidated (no published measurement of a model of this family on this GPU was scored)",
		"Model confidence on h200 over its other published measurements: poor (median error 52.7%, worst 124%, on 9 published vLLM measurements)",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("the report does not say %q:\n%s", want, buf.String())
		}
	}
	// A trial whose simulated engine lagged real time is named.
	rec = loadFixture(t, "quickstart.json")
	rec.Trials[2].Total.Metrics[workload.SimLagS] = 0.2 * rec.Trials[2].Total.Metrics[workload.DurationS]
	rec.Trials[3].Total.Metrics[workload.SimLagS] = 0.001 * rec.Trials[3].Total.Metrics[workload.DurationS]
	buf.Reset()
	if err := WriteText(&buf, Analyze(rec), Options{}); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("fell behind real time in trial(s) %d (up to 20%%", rec.Trials[2].Number); !strings.Contains(buf.String(), want) {
		t.Errorf("the report does not say %q:\n%s", want, buf.String())
	}
	// A measured study says nothing of the model.
	rec = loadFixture(t, "quickstart.json")
	for i := range rec.Trials {
		rec.Trials[i].Simulated = false
	}
	rec.ModelConfidence = nil
	buf.Reset()
	if err := WriteText(&buf, Analyze(rec), Options{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "Model confidence") {
		t.Errorf("a measured study's report speaks of the model's confidence:\n%s", buf.String())
	}
}
