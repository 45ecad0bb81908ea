package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/frontier-llm/frontier/record"
)

// TestZeroTrialReportSaysNothingFinished: a study with no trial (interrupted while it waited
// for the database, or before its first trial was claimed) has no front and no problems; the
// report says no trial has finished instead of pointing below for why nothing met the SLOs and
// then claiming every trial met them.
func TestZeroTrialReportSaysNothingFinished(t *testing.T) {
	rec := &record.Study{Study: "empty"}
	var buf bytes.Buffer
	if err := WriteText(&buf, Analyze(rec), Options{All: true}); err != nil {
		t.Fatal(err)
	}
	text := buf.String()
	for _, bad := range []string{"see below for why", "every trial met every SLO"} {
		if strings.Contains(text, bad) {
			t.Errorf("the report of a study with no finished trial says %q:\n%s", bad, text)
		}
	}
	for _, want := range []string{"No trial has finished yet", "None: no trial has finished yet."} {
		if !strings.Contains(text, want) {
			t.Errorf("the report does not say %q:\n%s", want, text)
		}
	}
}
