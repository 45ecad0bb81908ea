package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"net"
	"os"
	osexec "os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/frontier-llm/frontier/record"
	"github.com/frontier-llm/frontier/search/storage"

	"github.com/google/go-cmp/cmp"
	_ "gorm.io/driver/sqlite" // registers the sqlite3 driver, to lock a study database
)

var update = flag.Bool("update", false, "rewrite docs/reliability.md from the reliability suite's run")

// relRow is one fault or bad input and what was observed: the row of docs/reliability.md.
type relRow struct {
	Case   string
	Fault  string
	Exit   int
	Saw    string // the gist of what frontier told the user
	Stored string // what the study database holds afterwards
	Left   string // processes of the run still there afterwards
}

// relCase injects one fault through `frontier apply` and reports what it observed.
type relCase struct {
	name  string
	fault string
	want  relRow
	run   func(t *testing.T, dir, mk string) relRow
}

// saw is phrase when text contains it, else the last line of text: what the user saw,
// deterministic when it is what the case expects.
func saw(text, phrase string) string {
	if strings.Contains(text, phrase) {
		return phrase
	}
	return lastLine(text)
}

// left describes the processes of a run still there.
func left(mk string, pids ...int) string {
	if l := leftBehind(mk, pids...); len(l) > 0 {
		return strings.Join(l, "; ")
	}
	return "none"
}

// applyCase is the common shape: one apply of a plan with fault flags, then the study and
// the first trial's outcome.
func applyCase(p relPlan, phrase string, stored func(rec *record.Study) string) func(t *testing.T, dir, mk string) relRow {
	return func(t *testing.T, dir, mk string) relRow {
		p.Model = mk
		writePlan(t, dir, p)
		r := frontier(t, dir, nil, "apply", "plan.hcl", "--storage", "study.db")
		rec := study(t, filepath.Join(dir, "study.db"))
		return relRow{Exit: r.code, Saw: saw(r.stdout+r.stderr, phrase), Stored: stored(rec), Left: left(mk, r.pid)}
	}
}

// firstTrial describes the study and its first trial: states, the failure's reason up to
// the engine's message, and the request counts.
func firstTrial(rec *record.Study) string {
	s := storedSummary(rec)
	if len(rec.Trials) == 0 {
		return s
	}
	tr := rec.Trials[0]
	if tr.Reason != "" {
		reason := tr.Reason
		if i := strings.Index(reason, ". "); i > 0 {
			reason = reason[:i+1]
		}
		s += "; " + reason
	}
	return s + "; " + requestCounts(tr)
}

const (
	noFeasible = "no configuration met every SLO, check and quality gate"
	finished   = "study reliability (simulated): 1 of 1 trials"
)

func reliabilityCases() []relCase {
	cases := []relCase{
		{
			name:  "engine crashes mid-workload",
			fault: "`--fault-crash-after 4` (12 requests)",
			want: relRow{Exit: 3, Saw: noFeasible, Left: "none",
				Stored: "1 trial(s): 1 infeasible (crash); the engine exited during the workload: crash: Engine core proc EngineCore_DP0 died unexpectedly, shutting down client.; no measurement"},
			run: applyCase(relPlan{Args: []string{"--fault-crash-after", "4"}}, noFeasible, firstTrial),
		},
		{
			name:  "engine hangs at startup",
			fault: "`--fault-hang-startup`, `startup_timeout = \"3s\"`",
			want: relRow{Exit: 3, Saw: noFeasible, Left: "none",
				Stored: "1 trial(s): 1 infeasible (startup_timeout); the engine failed to start: startup_timeout: not ready within the startup timeout of 3s; last log line: Starting to load model MARKER...; no measurement"},
			run: applyCase(relPlan{Args: []string{"--fault-hang-startup"}, StartupTimeout: "3s"}, noFeasible, firstTrial),
		},
		{
			name:  "engine starts slowly",
			fault: "`--fault-slow-start 2s`, `startup_timeout = \"30s\"`",
			want:  relRow{Exit: 0, Saw: finished, Left: "none", Stored: "1 trial(s): 1 complete; completed 12, failed 0"},
			run:   applyCase(relPlan{Args: []string{"--fault-slow-start", "2s"}}, finished, firstTrial),
		},
		{
			name:  "engine fails at startup with out-of-memory",
			fault: "`--fault-startup-oom`",
			want: relRow{Exit: 3, Saw: noFeasible, Left: "none",
				Stored: "1 trial(s): 1 infeasible (weights_oom); the engine failed to start: weights_oom: Failed to load model - not enough GPU memory.; no measurement"},
			run: applyCase(relPlan{Args: []string{"--fault-startup-oom"}}, noFeasible, firstTrial),
		},
		{
			name:  "engine's port is taken",
			fault: "`--fault-bind-port P`, P held by the test",
			want: relRow{Exit: 3, Saw: noFeasible, Left: "none",
				Stored: "1 trial(s): 1 infeasible (port_taken); the engine failed to start: port_taken: error while attempting to bind on address ('127.0.0.1', P): address already in use; no measurement"},
			run: portTakenCase,
		},
		{
			name:  "engine answers 429 and 500 in bursts",
			fault: "`--fault-error-burst 429:3:3,500:8:2`, SLO `error_rate = 0.5`",
			want:  relRow{Exit: 0, Saw: finished, Left: "none", Stored: "1 trial(s): 1 complete; completed 7, failed 5 (http 5)"},
			run:   applyCase(relPlan{Args: []string{"--fault-error-burst", "429:3:3,500:8:2"}, SLO: "    error_rate = 0.5\n"}, finished, firstTrial),
		},
		{
			name:  "engine sends malformed, truncated streams",
			fault: "`--fault-malformed-stream 0.25`",
			want:  relRow{Exit: 0, Saw: finished, Left: "none", Stored: "1 trial(s): 1 complete; completed 10, failed 2 (malformed 2)"},
			run:   applyCase(relPlan{Args: []string{"--fault-malformed-stream", "0.25"}}, finished, firstTrial),
		},
		{
			name:  "engine stops answering mid-stream",
			fault: "`--fault-stall-after 3`, workload `timeout = \"2s\"`",
			want:  relRow{Exit: 3, Saw: noFeasible, Left: "none", Stored: "1 trial(s): 1 infeasible; chat: no request completed: every request timed out after 2s, the class's request timeout; if the engine is only slow under this load, raise it with timeout = \"8s\" in workload \"chat\"; completed 0, failed 12 (timeout 12)"},
			run:   applyCase(relPlan{Args: []string{"--fault-stall-after", "3"}, Workload: "  timeout       = \"2s\"\n"}, noFeasible, firstTrial),
		},
		{
			name:  "engine message holds markup",
			fault: "model name with `<script>`, `--fault-hang-startup`: the message quotes it",
			want:  relRow{Exit: 3, Saw: noFeasible, Left: "none", Stored: "1 trial(s): 1 infeasible (startup_timeout); the HTML report shows the engine message escaped"},
			run:   markupCase,
		},
		{
			name:  "SIGINT mid-trial, then resume",
			fault: "SIGINT 1 s into trial 1 of 2",
			want:  relRow{Exit: 2, Saw: "stopped within 10 s: interrupted with 1 of 2 trials done; run it again to finish the budget", Left: "none", Stored: "after the signal: 2 trial(s): 1 complete, 1 interrupted; after resuming: 2 trial(s): 2 complete"},
			run:   signalCase(syscall.SIGINT),
		},
		{
			name:  "SIGTERM mid-trial, then resume",
			fault: "SIGTERM 1 s into trial 1 of 2",
			want:  relRow{Exit: 2, Saw: "stopped within 10 s: interrupted with 1 of 2 trials done; run it again to finish the budget", Left: "none", Stored: "after the signal: 2 trial(s): 1 complete, 1 interrupted; after resuming: 2 trial(s): 2 complete"},
			run:   signalCase(syscall.SIGTERM),
		},
		{
			name:  "SIGHUP mid-trial (the terminal closed), then resume",
			fault: "SIGHUP 1 s into trial 1 of 2",
			want:  relRow{Exit: 2, Saw: "stopped within 10 s: interrupted with 1 of 2 trials done; run it again to finish the budget", Left: "none", Stored: "after the signal: 2 trial(s): 1 complete, 1 interrupted; after resuming: 2 trial(s): 2 complete"},
			run:   signalCase(syscall.SIGHUP),
		},
		{
			name:  "frontier stopped and continued mid-trial (Ctrl-Z, then fg)",
			fault: "SIGTSTP 1 s into trial 1 of 2, SIGCONT 2 s later",
			want:  relRow{Exit: 0, Saw: "trial 1: frontier was stopped (SIGTSTP or SIGSTOP) during the measurement, which would count the pause as engine latency; it is measured again", Left: "none", Stored: "2 trial(s): 2 complete; trial 1 measured after the pause"},
			run:   suspendCase,
		},
		{
			name:  "quickstart: SIGINT mid-trial, then resume",
			fault: "`examples/quickstart.hcl` with `--trials 2`, SIGINT 1 s into trial 1",
			want:  relRow{Exit: 2, Saw: "stopped within 10 s: interrupted with 1 of 2 trials done; run it again to finish the budget", Left: "none", Stored: "after the signal: 1 trial(s) done, 1 interrupted; after resuming: 2 trial(s) done, 0 interrupted"},
			run:   quickstartCase,
		},
		{
			name:  "SIGINT mid-pressure-experiment",
			fault: "`frontier pressure` on the knee, SIGINT 3 s into the engine restart (the engine is loading again)",
			want: relRow{Exit: 2, Saw: "stopped within 10 s: interrupted: the experiments finished before the signal are stored, the one it cut short is not; run it again to measure it",
				Left: "none", Stored: "pressure of trial 0: ladder of chat (2 steps); restart: interrupted before it finished"},
			run: pressureSignalCase,
		},
		{
			name:  "SIGKILL mid-trial, then resume",
			fault: "SIGKILL 1 s into trial 1 of 2",
			want:  relRow{Exit: 137, Saw: "repaired: trials [1] were left running by a stopped process and were measured again", Left: "none", Stored: "after the kill: 2 trial(s): 1 complete, 1 running; after resuming: 2 trial(s): 2 complete"},
			run:   killCase,
		},
		{
			name:  "two apply processes on one SQLite study",
			fault: "two `frontier apply` at once, budget 4",
			want:  relRow{Exit: 0, Saw: "both exit 0", Left: "none", Stored: "4 trial(s): 4 complete"},
			run:   twoProcessesCase,
		},
		{
			name:  "study database is read-only",
			fault: "the database file made immutable (`chattr +i`, or mode 0444 for a non-root user)",
			want:  relRow{Exit: 1, Saw: "the study database cannot be written", Left: "none", Stored: "unchanged: 1 trial(s): 1 complete"},
			run:   readOnlyCase,
		},
		{
			name:  "study database made immutable mid-run, then resume",
			fault: "`chattr +i` on the database and its journal files during trial 1 of 2",
			want:  relRow{Exit: 2, Saw: "the study database cannot be written (disk I/O error: operation not permitted); once it can, the next apply measures the unrecorded trials again", Left: "none", Stored: "after the fault: 2 trial(s): 1 complete, 1 running; after resuming: 2 trial(s): 2 complete"},
			run:   immutableMidRunCase,
		},
		{
			name:  "engine log disk full, then resume",
			fault: "trial 0's log is `/dev/full` (every write: no space left on device), budget 2",
			want:  relRow{Exit: 2, Saw: "no space left on device; it is left to be measured again once the disk can be written", Left: "none", Stored: "after the fault: 1 trial(s): 1 interrupted; after resuming: 2 trial(s): 2 complete"},
			run:   fullLogDiskCase,
		},
		{
			name:  "PostgreSQL unreachable for 4 s mid-trial",
			fault: "a TCP proxy between frontier and PostgreSQL drops every connection and refuses new ones from the start of trial 0 of 2, for 4 s",
			want:  relRow{Exit: 0, Saw: "study reliability (simulated): 2 of 2 trials", Left: "none", Stored: "2 trial(s): 2 complete"},
			run:   postgresOutageCase,
		},
		{
			name:  "study database locked for 3 s",
			fault: "another connection holds `BEGIN EXCLUSIVE` for 3 s",
			want:  relRow{Exit: 0, Saw: "waits for the lock, then runs", Left: "none", Stored: "2 trial(s): 2 complete"},
			run:   lockedCase(3*time.Second, false),
		},
		{
			name:  "study database locked for longer than the busy timeout",
			fault: "another connection holds `BEGIN EXCLUSIVE` for 40 s",
			want:  relRow{Exit: 0, Saw: "waits for the lock, then runs", Left: "none", Stored: "2 trial(s): 2 complete"},
			run:   lockedCase(40*time.Second, false),
		},
		{
			name:  "SIGINT while waiting for a locked study database",
			fault: "another connection holds `BEGIN EXCLUSIVE` for 40 s; SIGINT 1.5 s into the wait",
			want:  relRow{Exit: 2, Saw: "stopped within 3 s: interrupted before any trial ran; nothing was recorded", Left: "none", Stored: "unchanged: 1 trial(s): 1 complete"},
			run:   lockedCase(40*time.Second, true),
		},
		{
			name:  "dataset file is missing",
			fault: "`dataset = \"prompts.jsonl\"`, no such file",
			want:  relRow{Exit: 1, Saw: `The file "prompts.jsonl" of workload "chat" (attribute dataset) cannot be read: it does not exist.`, Left: "none", Stored: "no database created"},
			run:   datasetCase(nil),
		},
		{
			name:  "dataset has a bad line",
			fault: "line 2 of the dataset is cut short",
			want:  relRow{Exit: 1, Saw: `workload "chat": prompts.jsonl:2: not a JSON object`, Left: "none", Stored: "no database created"},
			run:   datasetCase([]byte("{\"prompt\": \"hello there\"}\n{\"prompt\": \"cut\n{\"prompt\": \"third\"}\n")),
		},
		{
			name:  "plan changed between runs of one study",
			fault: "knob values changed, same study and database",
			want:  relRow{Exit: 1, Saw: "the plan's search space changed since the study began", Left: "none", Stored: "unchanged: 1 trial(s): 1 complete"},
			run:   planChangedCase,
		},
	}
	return append(cases, processCases()...)
}

// portTakenCase has the engine bind a port the test holds, as if another program had taken
// the port frontier picked: the launcher tries three ports, then records the class.
func portTakenCase(t *testing.T, dir, mk string) relRow {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	row := applyCase(relPlan{Args: []string{"--fault-bind-port", port}}, noFeasible, firstTrial)(t, dir, mk)
	row.Stored = strings.ReplaceAll(row.Stored, port, "P")
	return row
}

// markupCase stores an engine message with a script element in it (vLLM's last log line
// names the model) and checks that the HTML report escapes it.
func markupCase(t *testing.T, dir, mk string) relRow {
	const script = `<script>alert("pwned")</script>`
	writePlan(t, dir, relPlan{Model: mk + script, Args: []string{"--fault-hang-startup"}, StartupTimeout: "2s"})
	r := frontier(t, dir, nil, "apply", "plan.hcl", "--storage", "study.db")
	rec := study(t, filepath.Join(dir, "study.db"))
	if len(rec.Trials) != 1 || !strings.Contains(rec.Trials[0].EngineMessage, script) {
		t.Fatalf("the stored engine message does not quote the model name; the case no longer checks what it means to: %+v", rec.Trials)
	}
	rep := frontier(t, dir, nil, "report", "--storage", "study.db", "--all", "--format", "html", "-o", "report.html")
	if rep.code != 0 {
		t.Fatalf("report exited %d:\n%s", rep.code, rep.stderr)
	}
	html, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	shown := "the HTML report shows the engine message escaped"
	switch {
	case strings.Contains(string(html), script):
		shown = "the HTML report holds the script element as it is"
	case !strings.Contains(string(html), "&lt;script&gt;alert(&#34;pwned&#34;)&lt;/script&gt;"):
		shown = "the HTML report does not show the engine message"
	}
	return relRow{Exit: r.code, Saw: saw(r.stderr, noFeasible), Stored: storedSummary(rec) + "; " + shown, Left: left(mk, r.pid)}
}

// signalCase sends sig to apply one second into its second trial, checks that it stops
// within ten seconds and leaves nothing running, then resumes the study to its budget.
func signalCase(sig syscall.Signal) func(t *testing.T, dir, mk string) relRow {
	return func(t *testing.T, dir, mk string) relRow {
		writePlan(t, dir, relPlan{Model: mk, Trials: 2, Requests: 24})
		r := startFrontier(t, dir, nil, "apply", "plan.hcl", "--storage", "study.db")
		r.await(t, `trial 1 started`, time.Minute)
		time.Sleep(time.Second)
		sent := time.Now()
		if err := r.cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		res := r.wait(t, 30*time.Second)
		row := relRow{Exit: res.code, Saw: stopSaw(time.Since(sent), res.stderr), Left: left(mk, res.pid)}
		row.Stored = "after the signal: " + storedSummary(study(t, filepath.Join(dir, "study.db")))
		resumeStudy(t, dir, mk, &row)
		return row
	}
}

// suspendCase stops apply (SIGTSTP, as Ctrl-Z does) during its second trial and continues
// it two seconds later: the engine kept serving in its own process group, so the pause is
// not the engine's; the trial must be measured again, not stored with the pause as latency.
func suspendCase(t *testing.T, dir, mk string) relRow {
	// 64 requests at 8 a second: the measurement lasts about 8 s, so a stop 1 s after the
	// trial starts lands inside it even on a busy host.
	writePlan(t, dir, relPlan{Model: mk, Trials: 2, Requests: 64})
	r := startFrontier(t, dir, nil, "apply", "plan.hcl", "--storage", "study.db")
	r.await(t, `trial 1 started`, time.Minute)
	time.Sleep(time.Second)
	stopped := time.Now()
	if err := r.cmd.Process.Signal(syscall.SIGTSTP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	continued := time.Now()
	if err := r.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	res := r.wait(t, time.Minute)
	rec := study(t, filepath.Join(dir, "study.db"))
	row := relRow{Exit: res.code, Left: left(mk, res.pid), Stored: storedSummary(rec),
		Saw: saw(res.stderr, "trial 1: frontier was stopped (SIGTSTP or SIGSTOP) during the measurement, which would count the pause as engine latency; it is measured again")}
	for _, tr := range rec.Trials {
		if tr.Number != 1 {
			continue
		}
		switch {
		case tr.Provenance == nil:
			row.Stored += "; trial 1 has no provenance"
		case tr.Provenance.Started.After(continued):
			row.Stored += "; trial 1 measured after the pause"
		case tr.Provenance.Finished.Before(stopped):
			// The case did not happen: the trial ended before the stop.
			row.Stored += "; trial 1 finished before the stop"
		default:
			row.Stored += "; trial 1 holds the measurement that spans the pause"
		}
	}
	return row
}

// stopSaw is what the user saw of an interrupted apply: how soon it stopped after the signal,
// then its message.
func stopSaw(took time.Duration, stderr string) string {
	when := "stopped within 10 s"
	if took > 10*time.Second {
		when = fmt.Sprintf("took %v to stop", took.Round(time.Second))
	}
	return when + ": " + saw(stderr, "interrupted with 1 of 2 trials done; run it again to finish the budget")
}

// quickstartCase interrupts the quickstart study with SIGINT during its second trial: it must
// stop within ten seconds, leave no engine running, and the next run must finish the budget.
func quickstartCase(t *testing.T, dir, _ string) relRow {
	copyFile(t, filepath.Join(examplesDir(t), "quickstart.hcl"), filepath.Join(dir, "quickstart.hcl"))
	done := func(rec *record.Study) string {
		n, interrupted := 0, 0
		for _, tr := range rec.Trials {
			switch tr.State {
			case record.StateInterrupted:
				interrupted++
			case record.StateRunning, record.StateWaiting:
			default:
				if !tr.PreScreened {
					n++
				}
			}
		}
		return fmt.Sprintf("%d trial(s) done, %d interrupted", n, interrupted)
	}
	r := startFrontier(t, dir, nil, "apply", "quickstart.hcl", "--trials", "2")
	r.await(t, `trial \d+ started`, time.Minute)
	r.await(t, `trial \d+ started`, time.Minute)
	time.Sleep(time.Second)
	sent := time.Now()
	if err := r.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	res := r.wait(t, 30*time.Second)
	db := storage.DefaultStorage(filepath.Join(dir, "quickstart.hcl"))
	row := relRow{Exit: res.code, Saw: stopSaw(time.Since(sent), res.stderr), Left: left(dir, res.pid)}
	row.Stored = "after the signal: " + done(study(t, db))
	again := frontier(t, dir, nil, "apply", "quickstart.hcl", "--trials", "2")
	if again.code != 0 && again.code != 3 {
		t.Errorf("resumed apply exited %d; stderr:\n%s", again.code, again.stderr)
	}
	row.Stored += "; after resuming: " + done(study(t, db))
	if l := left(dir, again.pid); l != "none" {
		row.Left = l
	}
	return row
}

// killCase kills apply with SIGKILL during its second trial: the engine must go with it (the
// kernel's parent-death signal) and the next apply repairs the stale trial.
func killCase(t *testing.T, dir, mk string) relRow {
	writePlan(t, dir, relPlan{Model: mk, Trials: 2, Requests: 24})
	r := startFrontier(t, dir, nil, "apply", "plan.hcl", "--storage", "study.db")
	r.await(t, `trial 1 started`, time.Minute)
	time.Sleep(time.Second)
	if err := r.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	res := r.wait(t, 10*time.Second)
	row := relRow{Exit: res.code, Left: left(mk, res.pid)}
	row.Stored = "after the kill: " + storedSummary(study(t, filepath.Join(dir, "study.db")))
	again := resumeStudy(t, dir, mk, &row)
	row.Saw = saw(again.stdout, "repaired: trials [1] were left running by a stopped process and were measured again")
	return row
}

func twoProcessesCase(t *testing.T, dir, mk string) relRow {
	writePlan(t, dir, relPlan{Model: mk, Trials: 4, Knob: "16, 32, 64, 128, 256, 512", Requests: 8})
	a := startFrontier(t, dir, nil, "apply", "plan.hcl", "--storage", "study.db")
	b := startFrontier(t, dir, nil, "apply", "plan.hcl", "--storage", "study.db")
	ra, rb := a.wait(t, 2*time.Minute), b.wait(t, 2*time.Minute)
	row := relRow{Exit: max(ra.code, rb.code), Saw: "both exit 0", Left: left(mk, ra.pid, rb.pid)}
	if ra.code != 0 || rb.code != 0 {
		row.Saw = fmt.Sprintf("exits %d and %d: %s | %s", ra.code, rb.code, lastLine(ra.stderr), lastLine(rb.stderr))
	}
	row.Stored = storedSummary(study(t, filepath.Join(dir, "study.db")))
	return row
}

// makeReadOnly makes path unwritable even for root (the immutable attribute), or by its mode
// for other users; it skips the test where neither works.
func makeReadOnly(t *testing.T, path string) {
	t.Helper()
	if os.Geteuid() != 0 {
		if err := os.Chmod(path, 0o444); err != nil {
			t.Fatal(err)
		}
		return
	}
	if out, err := runCmd("chattr", "+i", path); err != nil {
		t.Skipf("cannot make %s read-only as root: chattr: %v %s", path, err, out)
	}
	t.Cleanup(func() { _, _ = runCmd("chattr", "-i", path) })
}

func readOnlyCase(t *testing.T, dir, mk string) relRow {
	writePlan(t, dir, relPlan{Model: mk, Requests: 6})
	if r := frontier(t, dir, nil, "apply", "plan.hcl", "--storage", "study.db"); r.code != 0 {
		t.Fatalf("first apply exited %d:\n%s", r.code, r.stderr)
	}
	// A checkpointed copy without its WAL files, so that the database is the one file.
	ro := filepath.Join(dir, "ro.db")
	checkpoint(t, filepath.Join(dir, "study.db"))
	copyFile(t, filepath.Join(dir, "study.db"), ro)
	makeReadOnly(t, ro)
	r := frontier(t, dir, nil, "apply", "plan.hcl", "--storage", "ro.db", "--trials", "2")
	return relRow{Exit: r.code, Saw: saw(r.stderr, "the study database cannot be written"), Stored: "unchanged: " + storedSummary(study(t, ro)), Left: left(mk, r.pid)}
}

// immutableMidRunCase makes the study database's files immutable while a trial runs: apply
// must stop with a message (not die of SIGBUS in SQLite's shared memory map), and the next
// apply, once the files are writable again, measures the trial again.
func immutableMidRunCase(t *testing.T, dir, mk string) relRow {
	if os.Geteuid() != 0 {
		t.Skip("chattr +i needs root")
	}
	writePlan(t, dir, relPlan{Model: mk, Trials: 2, Requests: 24})
	r := startFrontier(t, dir, nil, "apply", "plan.hcl", "--storage", "study.db")
	r.await(t, `trial 1 started`, time.Minute)
	files, _ := filepath.Glob(filepath.Join(dir, "study.db*"))
	var locked []string
	for _, f := range files {
		if st, err := os.Stat(f); err != nil || !st.Mode().IsRegular() {
			continue
		}
		if out, err := runCmd("chattr", "+i", f); err != nil {
			t.Skipf("chattr +i %s: %v %s", f, err, out)
		}
		locked = append(locked, f)
	}
	unlock := func() {
		for _, f := range locked {
			_, _ = runCmd("chattr", "-i", f)
		}
		locked = nil
	}
	t.Cleanup(unlock)
	res := r.wait(t, time.Minute)
	unlock()
	row := relRow{Exit: res.code, Saw: saw(res.stderr, "the study database cannot be written (disk I/O error: operation not permitted); once it can, the next apply measures the unrecorded trials again"), Left: left(mk, res.pid)}
	row.Stored = "after the fault: " + storedSummary(study(t, filepath.Join(dir, "study.db")))
	resumeStudy(t, dir, mk, &row)
	return row
}

// fullLogDiskCase makes the first trial's engine log a full disk: frontier's own failure,
// which stops the study instead of becoming a trial's result, and leaves the trial to the
// next apply.
func fullLogDiskCase(t *testing.T, dir, mk string) relRow {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	writePlan(t, dir, relPlan{Model: mk, Trials: 2, Requests: 6})
	logs := filepath.Join(dir, "study.db.logs", "reliability")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		t.Fatal(err)
	}
	full := filepath.Join(logs, "trial-0.log")
	if err := os.Symlink("/dev/full", full); err != nil {
		t.Fatal(err)
	}
	r := frontier(t, dir, nil, "apply", "plan.hcl", "--storage", "study.db")
	row := relRow{Exit: r.code, Saw: saw(r.stderr, "no space left on device; it is left to be measured again once the disk can be written"), Left: left(mk, r.pid)}
	row.Stored = "after the fault: " + storedSummary(study(t, filepath.Join(dir, "study.db")))
	if err := os.Remove(full); err != nil {
		t.Fatal(err)
	}
	resumeStudy(t, dir, mk, &row)
	return row
}

// checkpoint folds a SQLite database's write-ahead log into the file.
func checkpoint(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
}

// lockedCase locks the study database from another connection for hold while apply runs:
// the lock is waited for, even past SQLite's busy timeout (30 s), since opening the study
// tries again.
// With interrupt, apply gets SIGINT while it waits.
func lockedCase(hold time.Duration, interrupt bool) func(t *testing.T, dir, mk string) relRow {
	return func(t *testing.T, dir, mk string) relRow {
		writePlan(t, dir, relPlan{Model: mk, Trials: 2, Requests: 6})
		if r := frontier(t, dir, nil, "apply", "plan.hcl", "--storage", "study.db", "--trials", "1"); r.code != 0 {
			t.Fatalf("first apply exited %d:\n%s", r.code, r.stderr)
		}
		db, err := sql.Open("sqlite3", filepath.Join(dir, "study.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		ctx := context.Background()
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.ExecContext(ctx, "BEGIN EXCLUSIVE"); err != nil {
			t.Fatal(err)
		}
		release := make(chan struct{})
		released := make(chan struct{})
		go func() {
			defer close(released)
			select {
			case <-time.After(hold):
			case <-release:
			}
			_, _ = conn.ExecContext(ctx, "COMMIT")
			conn.Close()
		}()
		var r result
		if interrupt {
			// SIGINT a second into the wait: apply stops at once, with nothing recorded.
			run := startFrontier(t, dir, nil, "apply", "plan.hcl", "--storage", "study.db")
			time.Sleep(1500 * time.Millisecond)
			sent := time.Now()
			if err := run.cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			r = run.wait(t, time.Minute)
			took := time.Since(sent)
			close(release)
			<-released
			when := "stopped within 3 s"
			if took > 3*time.Second {
				when = fmt.Sprintf("took %v to stop", took.Round(time.Second))
			}
			return relRow{Exit: r.code, Left: left(mk, r.pid), Saw: when + ": " + saw(r.stderr, "interrupted before any trial ran; nothing was recorded"),
				Stored: "unchanged: " + storedSummary(study(t, filepath.Join(dir, "study.db")))}
		}
		r = frontier(t, dir, nil, "apply", "plan.hcl", "--storage", "study.db")
		close(release)
		<-released
		row := relRow{Exit: r.code, Left: left(mk, r.pid)}
		if r.code == 0 {
			row.Saw = "waits for the lock, then runs"
			row.Stored = storedSummary(study(t, filepath.Join(dir, "study.db")))
		} else {
			row.Saw = saw(r.stderr, "the database stayed locked by another process for 30s")
			row.Stored = "unchanged: " + storedSummary(study(t, filepath.Join(dir, "study.db")))
		}
		return row
	}
}

// datasetCase runs a plan whose workload reads prompts.jsonl: missing when content is nil.
func datasetCase(content []byte) func(t *testing.T, dir, mk string) relRow {
	return func(t *testing.T, dir, mk string) relRow {
		writePlan(t, dir, relPlan{Model: mk, Input: `dataset       = "prompts.jsonl"`})
		if content != nil {
			if err := os.WriteFile(filepath.Join(dir, "prompts.jsonl"), content, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		r := frontier(t, dir, nil, "apply", "plan.hcl", "--storage", "study.db")
		phrase := `The file "prompts.jsonl" of workload "chat" (attribute dataset) cannot be read: it does not exist.`
		if content != nil {
			phrase = `workload "chat": ` + filepath.Join(dir, "prompts.jsonl") + `:2: not a JSON object`
		}
		row := relRow{Exit: r.code, Saw: strings.ReplaceAll(saw(r.stderr, phrase), dir+"/", ""), Left: left(mk, r.pid), Stored: "no database created"}
		if _, err := os.Stat(filepath.Join(dir, "study.db")); err == nil {
			row.Stored = storedSummary(study(t, filepath.Join(dir, "study.db")))
		}
		return row
	}
}

func planChangedCase(t *testing.T, dir, mk string) relRow {
	writePlan(t, dir, relPlan{Model: mk, Requests: 6})
	if r := frontier(t, dir, nil, "apply", "plan.hcl", "--storage", "study.db"); r.code != 0 {
		t.Fatalf("first apply exited %d:\n%s", r.code, r.stderr)
	}
	writePlan(t, dir, relPlan{Model: mk, Requests: 6, Knob: "32, 48, 64"})
	r := frontier(t, dir, nil, "apply", "plan.hcl", "--storage", "study.db", "--trials", "2")
	return relRow{Exit: r.code, Saw: saw(r.stderr, "the plan's search space changed since the study began"), Stored: "unchanged: " + storedSummary(study(t, filepath.Join(dir, "study.db"))), Left: left(mk, r.pid)}
}

// TestReliability injects each fault of reliabilityCases through `frontier apply` run as a
// real subprocess on the simulated vLLM, and checks the exit code, what the user saw, what
// the study holds and that nothing is left running. The observed rows are the table of
// docs/reliability.md; -update rewrites it.
func TestReliability(t *testing.T) {
	if testing.Short() {
		t.Skip("starts engines; not in -short")
	}
	var mu sync.Mutex
	var rows []relRow
	// The cases mostly wait on engines and clocks: run several at once whatever -parallel
	// says (t.Run may be called from several goroutines), but not all, on a small machine.
	sem := make(chan struct{}, 6)
	var wg sync.WaitGroup
	run := func(name string, f func(t *testing.T)) {
		wg.Add(1)
		sem <- struct{}{} // here, not in the goroutine, so that cases start in order
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			t.Run(name, f)
		}()
	}
	// The longest first: studies that are interrupted and resumed.
	cases := reliabilityCases()
	slow := func(c relCase) bool { return strings.Contains(c.fault, "SIG") || strings.Contains(c.fault, "40 s") }
	sort.SliceStable(cases, func(i, j int) bool { return slow(cases[i]) && !slow(cases[j]) })
	for _, c := range cases {
		run(c.name, func(t *testing.T) {
			mk := marker(c.name)
			got := c.run(t, t.TempDir(), mk)
			got.Case, got.Fault = c.name, c.fault
			got.Stored = strings.ReplaceAll(got.Stored, mk, "MARKER")
			got.Saw = strings.ReplaceAll(got.Saw, mk, "MARKER")
			want := c.want
			want.Case, want.Fault = c.name, c.fault
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("observed outcome (-want +got):\n%s", diff)
			}
			mu.Lock()
			rows = append(rows, got)
			mu.Unlock()
		})
	}
	run("secrets leave no trace", secretsLeaveNoTrace)
	wg.Wait()
	if t.Failed() || len(rows) != len(reliabilityCases()) {
		return // the table is checked on a whole, passing run
	}
	checkReliabilityDoc(t, "faults", faultTable(rows))
}

func faultTable(rows []relRow) string {
	order := map[string]int{}
	for i, c := range reliabilityCases() {
		order[c.name] = i
	}
	sort.Slice(rows, func(i, j int) bool { return order[rows[i].Case] < order[rows[j].Case] })
	var b strings.Builder
	b.WriteString("| case | fault injected | exit | the user sees | stored | left running |\n|---|---|---:|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s |\n", r.Case, r.Fault, r.Exit, cell(r.Saw), cell(r.Stored), r.Left)
	}
	return b.String()
}

func cell(s string) string {
	return strings.ReplaceAll(s, "|", `\|`)
}

// docMu serialises the tests that check or rewrite docs/reliability.md.
var docMu sync.Mutex

// checkReliabilityDoc checks that the section between the markers <!-- begin NAME --> and
// <!-- end NAME --> of docs/reliability.md is content, or rewrites it with -update.
func checkReliabilityDoc(t *testing.T, name, content string) {
	t.Helper()
	docMu.Lock()
	defer docMu.Unlock()
	path := filepath.Join("..", "..", "docs", "reliability.md")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/frontier -run Reliability -update)", err)
	}
	begin, end := "<!-- begin "+name+" -->\n", "<!-- end "+name+" -->"
	doc := string(raw)
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("%s has no %q ... %q section", path, begin, end)
	}
	cur := doc[i+len(begin) : j]
	if cur == content {
		return
	}
	if *update {
		doc = doc[:i+len(begin)] + content + doc[j:]
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s is not current (-file +observed); run go test ./cmd/frontier -run Reliability -update:\n%s", path, cmp.Diff(cur, content))
}

// runCmd runs a program and returns its combined output.
func runCmd(name string, args ...string) (string, error) {
	out, err := osexec.Command(name, args...).CombinedOutput()
	return string(out), err
}

// resumeStudy runs apply again on the study of dir after a fault: it must finish (exit 0);
// what the study then holds is added to row.Stored, and an engine it left running to row.Left.
func resumeStudy(t *testing.T, dir, mk string, row *relRow) result {
	t.Helper()
	again := frontier(t, dir, nil, "apply", "plan.hcl", "--storage", "study.db")
	if again.code != 0 {
		t.Errorf("resumed apply exited %d; stderr:\n%s", again.code, again.stderr)
	}
	row.Stored += "; after resuming: " + storedSummary(study(t, filepath.Join(dir, "study.db")))
	if l := left(mk, again.pid); l != "none" {
		row.Left = l
	}
	return again
}
