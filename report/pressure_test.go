package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/frontier-llm/frontier/record"
	"github.com/frontier-llm/frontier/workload"
)

// TestPressureNotesALaggingSimulatorByTheTrialsRule: the pressure section says the simulated
// engine fell behind real time by the rule a trial is judged by (workload.SimLagged: more than
// 1% of the seconds measured), over every ladder step and episode together.
func TestPressureNotesALaggingSimulatorByTheTrialsRule(t *testing.T) {
	t.Parallel()
	pressure := func(stepLag, burstLag float64) *record.Pressure {
		step := func(lag float64) record.LadderStep {
			return record.LadderStep{Metrics: map[string]float64{workload.DurationS: 5, workload.SimLagS: lag}}
		}
		return &record.Pressure{
			Trial:   3,
			Ladders: []record.Ladder{{Class: "chat", Steps: []record.LadderStep{step(stepLag), step(stepLag)}}},
			Burst:   &record.Episode{Kind: "burst", Phases: []record.Phase{{Name: "base", From: 0, To: 10}, {Name: "burst", From: 10, To: 20}}, SimLagS: burstLag},
		}
	}
	lagged := func(p *record.Pressure) bool {
		for _, n := range pressureNotes(p) {
			if strings.Contains(n, "fell") && strings.Contains(n, "behind real time") {
				return true
			}
		}
		return false
	}
	// 30 s measured: two 5-second steps and a 20-second burst; 1% is 0.3 s.
	for _, tc := range []struct {
		stepLag, burstLag float64
		want              bool
	}{
		{0, 0, false},
		{0.1, 0.05, false}, // 0.25 s of 30
		{0.1, 0.15, true},  // 0.35 s of 30
		{0, 0.5, true},
	} {
		if got := lagged(pressure(tc.stepLag, tc.burstLag)); got != tc.want {
			t.Errorf("steps %.2f s each, burst %.2f s: lag noted %v, want %v", tc.stepLag, tc.burstLag, got, tc.want)
		}
	}
}

// TestRecommendationSaysHowMuchOfTTFTIsTheStartupWave: the recommended configuration's section
// says how much of its time to first token came from the requests sent at once at the start.
func TestRecommendationSaysHowMuchOfTTFTIsTheStartupWave(t *testing.T) {
	t.Parallel()
	rec := loadFixture(t, "quickstart.json")
	a := Analyze(rec)
	if a.Recommended == nil {
		t.Fatal("the quickstart fixture has a recommendation")
	}
	rec.Trial(a.Recommended.Trial).StartupWave = &workload.StartupWave{Requests: 16, TTFTMeanMs: 420, RestTTFTMeanMs: 60, Share: 0.35}
	var buf bytes.Buffer
	if err := WriteText(&buf, Analyze(rec), Options{}); err != nil {
		t.Fatal(err)
	}
	want := "Start-up wave: the 16 requests sent at once at the start had a mean time to first token of 420"
	if !strings.Contains(buf.String(), want) || !strings.Contains(buf.String(), "35") {
		t.Errorf("the report does not say %q:\n%s", want, buf.String())
	}
}
