package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/frontier-llm/frontier/workload"
)

// turnResults is a class of conversations with three turns whose prompts grow.
func turnResults() *workload.Result {
	r := &workload.Result{Metrics: map[string]float64{workload.Completed: 30}}
	for i, ttft := range []float64{80, 95, 110} {
		r.Turns = append(r.Turns, &workload.Result{Metrics: map[string]float64{
			workload.Completed: 10, workload.DurationS: 10,
			workload.InputTokenThroughput: float64(1000 * (i + 1)), // 1000, 2000, 3000 tokens a turn
			"ttft_p50_ms":                 ttft, "ttft_p99_ms": 2 * ttft, "ttft_mean_ms": ttft,
		}})
	}
	return r
}

func TestRecommendationShowsTTFTByTurn(t *testing.T) {
	t.Parallel()
	rec := loadFixture(t, "quickstart.json")
	a := Analyze(rec)
	if a.Recommended == nil {
		t.Fatal("the quickstart fixture has a recommendation")
	}
	rec.Trial(a.Recommended.Trial).Workloads["chat"] = turnResults()
	var buf bytes.Buffer
	if err := WriteText(&buf, Analyze(rec), Options{}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if !strings.Contains(out, "Time to first token by turn") {
		t.Fatalf("the report has no TTFT by turn:\n%s", out)
	}
	for _, want := range [][]string{{"chat", "1", "10", "1000", "160"}, {"chat", "3", "10", "3000", "220"}} {
		found := false
		for _, line := range strings.Split(out, "\n") {
			f := strings.FieldsFunc(line, func(r rune) bool { return r == '|' || r == ' ' || r == '│' })
			if len(f) >= len(want) && strings.Join(f[:len(want)-1], " ") == strings.Join(want[:len(want)-1], " ") && strings.Contains(line, want[len(want)-1]) {
				found = true
			}
		}
		if !found {
			t.Errorf("no row %v in:\n%s", want, out)
		}
	}
}

func TestMeasurementTableShowsTTFTByTurn(t *testing.T) {
	t.Parallel()
	m := &workload.Measurement{Workloads: map[string]*workload.Result{"chat": turnResults()},
		Total: &workload.Result{Metrics: map[string]float64{workload.Completed: 30}}}
	var buf bytes.Buffer
	if err := WriteMeasurementTable(&buf, m, []string{"chat"}); err != nil {
		t.Fatal(err)
	}
	if out := buf.String(); !strings.Contains(out, "time to first token by turn") || !strings.Contains(out, "3000") {
		t.Errorf("the table has no TTFT by turn:\n%s", out)
	}
	m.Workloads["chat"].Turns = nil
	buf.Reset()
	if err := WriteMeasurementTable(&buf, m, []string{"chat"}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "by turn") {
		t.Errorf("a class without turns got a TTFT by turn table:\n%s", buf.String())
	}
}
