package main

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestPressurePickOfAMissingTrialIsInvalidInput checks that `frontier pressure --pick N` for a
// trial the study does not have exits 1, as a malformed --pick does, naming the trial, and
// starts no engine (the study is measured offline with --estimate, into its own database; a
// pressure run that started one would need far longer than the bound of frontier's helper).
func TestPressurePickOfAMissingTrialIsInvalidInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plan := writePlan(t, dir, relPlan{Model: marker(t.Name()), Trials: 2})
	if r := frontier(t, dir, nil, "apply", plan, "--estimate"); r.code != exitOK {
		t.Fatalf("apply --estimate exited %d: %s", r.code, r.stderr)
	}
	tests := []struct {
		name, pick, want string
	}{
		{"a trial number the study does not have", "7", "has no trial 7"},
		{"a malformed pick", "-1", "--pick"},
	}
	for _, tc := range tests {
		r := frontier(t, dir, nil, "pressure", plan, "--pick", tc.pick, "--storage", strings.TrimSuffix(plan, ".hcl")+".estimate.db")
		if r.code != exitInvalid || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%s: pressure --pick %s exited %d with %q, want exit %d naming %q", tc.name, tc.pick, r.code, strings.TrimSpace(r.stderr), exitInvalid, tc.want)
		}
	}
}

// TestSIGINTDuringApplysPressureRunSaysWhatWasKept checks that Ctrl-C during the pressure
// experiments that apply runs after its search ends apply with exit 2 and a message that says
// what is stored and how to go on, not with the bare "context canceled" of the cancelled run,
// and leaves no engine running.
func TestSIGINTDuringApplysPressureRunSaysWhatWasKept(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	m := marker(t.Name())
	plan := writePlan(t, dir, relPlan{Model: m, Knob: "32"})
	f, err := os.OpenFile(plan, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("\npressure {\n  budget = \"1m\"\n  ladder {}\n}\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	run := startFrontier(t, dir, nil, "apply", plan)
	run.await(t, `^pressure: `, 90*time.Second)
	time.Sleep(500 * time.Millisecond)
	if err := run.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	r := run.wait(t, 30*time.Second)
	if r.code != exitRuntime || strings.Contains(r.stderr, "context canceled") || !strings.Contains(r.stderr, "interrupted during the pressure experiments") {
		t.Errorf("apply interrupted in its pressure run exited %d with %q, want exit %d saying it was interrupted during the pressure experiments", r.code, lastLine(r.stderr), exitRuntime)
	}
	if left := leftBehind(m, r.pid); len(left) > 0 {
		t.Errorf("left running: %v", left)
	}
}
