package main

import (
	"bytes"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/frontier-llm/frontier/record"
	"github.com/frontier-llm/frontier/sim"
)

// relative removes dir from the paths in s, so that a row does not depend on the test's
// temporary folder.
func relative(s, dir string) string { return strings.ReplaceAll(s, dir+"/", "") }

// logFolders lists the folders under dir/study.db.logs, each with the trial logs it holds.
func logFolders(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, "study.db.logs"))
	if err != nil {
		return "no log folder"
	}
	var out []string
	for _, e := range entries {
		logs, _ := filepath.Glob(filepath.Join(dir, "study.db.logs", e.Name(), "trial-*.log"))
		var names []string
		for _, l := range logs {
			names = append(names, filepath.Base(l))
		}
		sort.Strings(names)
		out = append(out, fmt.Sprintf("`%s/` (%s)", e.Name(), strings.Join(names, ", ")))
	}
	return strings.Join(out, ", ")
}

// recordCases are the faults of what frontier records and reads (provenance, log folders, the
// user's files, engine refusals): each runs frontier as a real subprocess in its folder and
// reports the outcome as a row of the records-third-pass table of docs/reliability.md.
func recordCases() []boundCase {
	bom := "\xef\xbb\xbf"
	return []boundCase{
		{
			name: "simulated study resumed with another performance model", input: "`frontier apply --estimate` of 2 trials, the study's model version set to `0123456789ab` (as an older release stores it), then `frontier apply --estimate --trials 4`", within: 10 * time.Second,
			want: boundRow{Exit: 1, Saw: "its 2 trials hold the numbers of performance model 0123456789ab (by frontier 0.1.0+aaaaaaaaaaaa), and this frontier's model is `sim.ModelVersion`, whose numbers differ",
				Stored: "unchanged: 2 trials (complete 2)"},
			run: func(t *testing.T, dir string) (result, boundRow) {
				return resumeOtherModel(t, dir, `UPDATE study_system_attributes SET value = '0123456789ab' WHERE key = 'frontier:sim_model';
UPDATE study_system_attributes SET value = '0.1.0+aaaaaaaaaaaa' WHERE key = 'frontier:release';`,
					"its 2 trials hold the numbers of performance model 0123456789ab (by frontier 0.1.0+aaaaaaaaaaaa), and this frontier's model is "+sim.ModelVersion+", whose numbers differ")
			},
		},
		{
			name: "simulated study begun by a release that did not record its model", input: "`frontier apply --estimate` of 2 trials, the study's release and model version removed (as releases before this one left it), then `frontier apply --estimate --trials 4`", within: 10 * time.Second,
			want: boundRow{Exit: 1, Saw: "its 2 trials were measured by an earlier release of frontier, which did not record its performance model version, or on an engine",
				Stored: "unchanged: 2 trials (complete 2)"},
			run: func(t *testing.T, dir string) (result, boundRow) {
				return resumeOtherModel(t, dir, `DELETE FROM study_system_attributes WHERE key IN ('frontier:sim_model', 'frontier:release');`,
					"its 2 trials were measured by an earlier release of frontier, which did not record its performance model version, or on an engine")
			},
		},
		{
			name: "estimated study resumed on an engine", input: "`frontier apply --estimate --storage study.db` of 2 trials, then `frontier apply --storage study.db --trials 4` (engine `sim`)", within: 10 * time.Second,
			want: boundRow{Exit: 1, Saw: "estimates and measurements never share a study: its 2 trials are estimates of the offline model (frontier apply --estimate) and this run measures on an engine",
				Stored: "unchanged: 2 trials (complete 2)"},
			run: estimatesResumedLive,
		},
		{
			name: "simulated quality baseline stored by an older release", input: "`frontier apply --estimate` with a quality gate, its baseline moved to the key releases before this one used (no model version) and its score set to 0.5, the trial queued again; then `frontier apply --estimate --json`", within: 10 * time.Second,
			want: boundRow{Exit: 0, Saw: "the baseline was measured again (baselines_measured 1) and the trial met the gate", Stored: "trial 0 complete; its gate's baseline is this model's, not the stored 0.5"},
			run:  staleBaselineCase,
		},
		{
			name: "studies \"a/b\" and \"a_b\" in one database", input: "`frontier apply` of study \"a/b\", then of study \"a_b\", both `--storage study.db`", within: time.Minute,
			want: boundRow{Exit: 0, Saw: "both studies measured", Stored: "`a_b/` (trial-0.log), `a_b+" + hash12("a/b") + "/` (trial-0.log); each log names its own study's engine"},
			run: func(t *testing.T, dir string) (result, boundRow) {
				var r result
				for _, name := range []string{"a/b", "a_b"} {
					mk := marker("records-" + name)
					writePlan(t, dir, relPlan{Study: name, Model: mk, Requests: 4})
					r = frontier(t, dir, nil, "apply", "plan.hcl", "--storage", "study.db")
					if r.code != 0 {
						return r, boundRow{Saw: lastLine(r.stderr), Stored: logFolders(t, dir)}
					}
				}
				stored := logFolders(t, dir)
				for folder, name := range map[string]string{"a_b+" + hash12("a/b"): "a/b", "a_b": "a_b"} {
					log, err := os.ReadFile(filepath.Join(dir, "study.db.logs", folder, "trial-0.log"))
					if err != nil || !bytes.Contains(log, []byte(marker("records-"+name))) {
						stored += "; " + folder + "/trial-0.log is not study " + name + "'s"
					}
				}
				return r, boundRow{Saw: "both studies measured", Stored: stored + "; each log names its own study's engine"}
			},
		},
		{
			name: "dataset is /proc/kmsg, SIGINT", input: "`dataset = \"/proc/kmsg\"` (a regular file whose read blocks), SIGINT 1 s into `frontier apply`", within: 2 * time.Second,
			want: boundRow{Exit: 2, Saw: "interrupted before any trial ran; nothing was recorded: reading the dataset /proc/kmsg", Stored: "no database created"},
			run: func(t *testing.T, dir string) (result, boundRow) {
				f, err := os.Open("/proc/kmsg")
				if err != nil {
					t.Skipf("/proc/kmsg: %v", err) // needs root (CAP_SYSLOG)
				}
				f.Close()
				writePlan(t, dir, relPlan{Model: marker("records-kmsg"), Input: `dataset       = "/proc/kmsg"`})
				r := interruptAfter(t, dir, time.Second, "apply", "plan.hcl", "--storage", "study.db")
				return r, boundRow{Saw: saw(r.stderr, "interrupted before any trial ran; nothing was recorded: reading the dataset /proc/kmsg"), Stored: noDatabase(dir)}
			},
		},
		{
			name: "SIGINT while a 256 MiB dataset is read", input: "a JSONL dataset of 256 MiB, SIGINT 0.5 s into `frontier apply`", within: 2 * time.Second,
			want: boundRow{Exit: 2, Saw: "interrupted before any trial ran; nothing was recorded: reading the dataset prompts.jsonl", Stored: "no database created"},
			run: func(t *testing.T, dir string) (result, boundRow) {
				line := []byte(`{"prompt": "` + strings.Repeat("lorem ipsum ", 80) + `"}` + "\n")
				big := bytes.Repeat(line, (256<<20)/len(line))
				writeFile(t, dir, "prompts.jsonl", big)
				writePlan(t, dir, relPlan{Model: marker("records-big"), Input: `dataset       = "prompts.jsonl"`})
				r := interruptAfter(t, dir, 500*time.Millisecond, "apply", "plan.hcl", "--storage", "study.db")
				return r, boundRow{Saw: relative(saw(r.stderr, "interrupted before any trial ran; nothing was recorded: reading the dataset "+filepath.Join(dir, "prompts.jsonl")), dir), Stored: noDatabase(dir)}
			},
		},
		{
			name: "prompts longer than max_model_len", input: "`input_tokens = fixed(5000)` with `max_model_len = 4096`, `frontier apply`: the engine refuses every request with HTTP 400", within: time.Minute,
			want: boundRow{Exit: 3, Saw: "chat: no request completed: 4 failed, the first with HTTP 400: This model's maximum context length is 4096 tokens.",
				Stored: "trial 0 infeasible; the reason and the class's error_messages hold vLLM's message"},
			run: func(t *testing.T, dir string) (result, boundRow) {
				writePlan(t, dir, relPlan{Model: marker("records-400"), Requests: 4, Input: "input_tokens  = fixed(5000)"})
				r := frontier(t, dir, nil, "apply", "plan.hcl", "--storage", "study.db")
				if _, err := os.Stat(filepath.Join(dir, "study.db")); err != nil {
					return r, boundRow{Saw: lastLine(r.stderr), Stored: "no database created"}
				}
				rec := study(t, filepath.Join(dir, "study.db"))
				stored := storedSummary(rec)
				if len(rec.Trials) == 1 {
					tr := rec.Trials[0]
					msg := ""
					if w := tr.Workloads["chat"]; w != nil {
						msg = w.ErrorMessages["http"]
					}
					stored = fmt.Sprintf("trial 0 %s", tr.State)
					if strings.Contains(tr.Reason, "This model's maximum context length is 4096 tokens") && strings.HasPrefix(msg, "HTTP 400: This model's maximum context length is 4096 tokens") {
						stored += "; the reason and the class's error_messages hold vLLM's message"
					} else {
						stored += fmt.Sprintf("; reason %q, error_messages %q", tr.Reason, msg)
					}
				}
				return r, boundRow{Saw: saw(r.stdout+r.stderr, "chat: no request completed: 4 failed, the first with HTTP 400: This model's maximum context length is 4096 tokens."), Stored: stored}
			},
		},
		{
			name: "`quality score` of a named pipe", input: "`mkfifo refs.txt`, `frontier quality score --scorer exact --references refs.txt --candidates c.txt`", within: 2 * time.Second,
			want: boundRow{Exit: 1, Saw: "refs.txt is a named pipe (FIFO), not a regular file", Stored: "nothing"},
			run: func(t *testing.T, dir string) (result, boundRow) {
				mkfifo(t, dir, "refs.txt")
				writeFile(t, dir, "c.txt", []byte("a\n"))
				r := frontier(t, dir, nil, "quality", "score", "--scorer", "exact", "--references", "refs.txt", "--candidates", "c.txt")
				return r, boundRow{Saw: saw(r.stderr, "refs.txt is a named pipe (FIFO), not a regular file"), Stored: "nothing"}
			},
		},
		{
			name: "`quality score` of /dev/zero", input: "`frontier quality score --scorer json_valid --candidates /dev/zero`", within: 2 * time.Second,
			want: boundRow{Exit: 1, Saw: "/dev/zero is a character device, not a regular file", Stored: "nothing"},
			run: func(t *testing.T, dir string) (result, boundRow) {
				r := frontier(t, dir, nil, "quality", "score", "--scorer", "json_valid", "--candidates", "/dev/zero")
				return r, boundRow{Saw: saw(r.stderr, "/dev/zero is a character device, not a regular file"), Stored: "nothing"}
			},
		},
		{
			name: "`hw --from` a named pipe", input: "`mkfifo inv.json`, `frontier hw --from inv.json`", within: 2 * time.Second,
			want: boundRow{Exit: 1, Saw: "inv.json is a named pipe (FIFO), not a regular file", Stored: "nothing"},
			run: func(t *testing.T, dir string) (result, boundRow) {
				mkfifo(t, dir, "inv.json")
				r := frontier(t, dir, nil, "hw", "--from", "inv.json")
				return r, boundRow{Saw: saw(r.stderr, "inv.json is a named pipe (FIFO), not a regular file"), Stored: "nothing"}
			},
		},
		{
			name: "`hw --from /dev/zero`", input: "`frontier hw --from /dev/zero`", within: 2 * time.Second,
			want: boundRow{Exit: 1, Saw: "/dev/zero is a character device, not a regular file", Stored: "nothing"},
			run: func(t *testing.T, dir string) (result, boundRow) {
				r := frontier(t, dir, nil, "hw", "--from", "/dev/zero")
				return r, boundRow{Saw: saw(r.stderr, "/dev/zero is a character device, not a regular file"), Stored: "nothing"}
			},
		},
		{
			name: "trace with a byte order mark", input: "a trace file starting with EF BB BF, `frontier estimate`", within: 10 * time.Second,
			want: boundRow{Exit: 0, Saw: "estimated: 3 requests of the trace", Stored: "nothing"},
			run: func(t *testing.T, dir string) (result, boundRow) {
				writeFile(t, dir, "trace.jsonl", []byte(bom+`{"timestamp": 0, "input_tokens": 60, "output_tokens": 12}`+"\n"+
					`{"timestamp": 0.2, "input_tokens": 70, "output_tokens": 12}`+"\n"+`{"timestamp": 0.4, "input_tokens": 80, "output_tokens": 12}`+"\n"))
				p := relPlan{Model: "records-bom", Requests: 3, Knob: "32"}
				writeFile(t, dir, "plan.hcl", []byte(strings.Replace(p.hcl(), "arrival       = poisson(8)", `arrival       = trace("trace.jsonl")`, 1)))
				r := frontier(t, dir, nil, "estimate", "plan.hcl", "--json")
				got := lastLine(r.stderr)
				if r.code == 0 && strings.Contains(r.stdout, `"completed": 3,`) {
					got = "estimated: 3 requests of the trace"
				}
				return r, boundRow{Saw: got, Stored: "nothing"}
			},
		},
		{
			name: "JSON -var-file with a byte order mark", input: "`frontier validate plan.hcl -var-file vars.json`, vars.json `{\"seqs\": [8, 16]}` starting with EF BB BF", within: 2 * time.Second,
			want: boundRow{Exit: 0, Saw: "plan.hcl is valid: 1 knob, 1 workload, 1 objective.", Stored: "nothing"},
			run: func(t *testing.T, dir string) (result, boundRow) {
				planWith(t, dir, relPlan{}, func(s string) string {
					return "variable \"seqs\" {}\n" + strings.Replace(s, "values = [32, 64, 128]", "values = var.seqs", 1)
				})
				writeFile(t, dir, "vars.json", []byte(bom+`{"seqs": [8, 16]}`+"\n"))
				r := frontier(t, dir, nil, "validate", "plan.hcl", "-var-file", "vars.json")
				return r, boundRow{Saw: saw(r.stdout+r.stderr, "plan.hcl is valid: 1 knob, 1 workload, 1 objective."), Stored: "nothing"}
			},
		},
		{
			name: "HCL -var-file with a byte order mark", input: "`frontier validate plan.hcl -var-file vars.hcl`, vars.hcl `seqs = [8, 16]` starting with EF BB BF", within: 2 * time.Second,
			want: boundRow{Exit: 0, Saw: "plan.hcl is valid: 1 knob, 1 workload, 1 objective.", Stored: "nothing"},
			run: func(t *testing.T, dir string) (result, boundRow) {
				planWith(t, dir, relPlan{}, func(s string) string {
					return "variable \"seqs\" {}\n" + strings.Replace(s, "values = [32, 64, 128]", "values = var.seqs", 1)
				})
				writeFile(t, dir, "vars.hcl", []byte(bom+"seqs = [8, 16]\n"))
				r := frontier(t, dir, nil, "validate", "plan.hcl", "-var-file", "vars.hcl")
				return r, boundRow{Saw: saw(r.stdout+r.stderr, "plan.hcl is valid: 1 knob, 1 workload, 1 objective."), Stored: "nothing"}
			},
		},
	}
}

// TestReliabilityRecords runs frontier as a real subprocess on each case of recordCases:
// what a study records (log folders, provenance), how the user's files are read (special
// files, blocked reads, byte order marks) and what an engine's refusal leaves in the record.
// Each must end within its time bound with the outcome the row states. The observed rows
// are the "records-third-pass" table of docs/reliability.md; -update rewrites it.
func TestReliabilityRecords(t *testing.T) {
	checkBoundCases(t, "records-third-pass", "stored", recordCases())
}

// hash12 is the first 12 hex digits of the SHA-256 of s: the tag of a study's log folder
// whose name had to be changed.
func hash12(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:6])
}

// sqlExec runs statements on the SQLite database at path.
func sqlExec(t *testing.T, path, stmts string) {
	t.Helper()
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(stmts); err != nil {
		t.Fatalf("%s: %v", stmts, err)
	}
}

// resumeOtherModel runs a simulated study of 2 trials, edits its database with stmts (to look
// as another release left it) and resumes it: the resume must be refused with phrase and
// leave the trials as they were.
func resumeOtherModel(t *testing.T, dir, stmts, phrase string) (result, boundRow) {
	writePlan(t, dir, relPlan{Model: "records-model", Trials: 2, Requests: 6})
	if r := frontier(t, dir, nil, "apply", "plan.hcl", "--storage", "study.db", "--estimate"); r.code != 0 {
		t.Fatalf("first apply exited %d:\n%s", r.code, r.stderr)
	}
	db := filepath.Join(dir, "study.db")
	sqlExec(t, db, stmts)
	r := frontier(t, dir, nil, "apply", "plan.hcl", "--storage", "study.db", "--estimate", "--trials", "4")
	rec := study(t, db)
	// The row names the model version as the constant, so that the table stays true when the
	// model's numbers, and so its version, change.
	return r, boundRow{Saw: strings.ReplaceAll(saw(r.stderr, phrase), sim.ModelVersion, "`sim.ModelVersion`"), Stored: "unchanged: " + fmt.Sprintf("%d trials (%s)", len(rec.Trials), trialStates(rec))}
}

// estimatesResumedLive estimates a study of 2 trials and resumes it on the engine: the resume
// must be refused before any engine starts and leave the estimates as they were.
func estimatesResumedLive(t *testing.T, dir string) (result, boundRow) {
	writePlan(t, dir, relPlan{Model: marker("records-estimates"), Trials: 2, Requests: 6})
	if r := frontier(t, dir, nil, "apply", "plan.hcl", "--storage", "study.db", "--estimate"); r.code != 0 {
		t.Fatalf("apply --estimate exited %d:\n%s", r.code, r.stderr)
	}
	r := frontier(t, dir, nil, "apply", "plan.hcl", "--storage", "study.db", "--trials", "4")
	rec := study(t, filepath.Join(dir, "study.db"))
	const phrase = "estimates and measurements never share a study: its 2 trials are estimates of the offline model (frontier apply --estimate) and this run measures on an engine"
	return r, boundRow{Saw: saw(r.stderr, phrase), Stored: "unchanged: " + fmt.Sprintf("%d trials (%s)", len(rec.Trials), trialStates(rec))}
}

// trialStates counts a study's trials by state: "complete 2".
func trialStates(rec *record.Study) string {
	n := map[record.State]int{}
	for _, tr := range rec.Trials {
		n[tr.State]++
	}
	var parts []string
	for _, s := range record.States() {
		if n[s] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", s, n[s]))
		}
	}
	return strings.Join(parts, ", ")
}

// staleBaselineCase stores a simulated quality baseline as a release before model versions
// did (under the gate and space alone) with a score no model gives, queues the study's trial
// again, and resumes: the running release must measure the baseline itself.
func staleBaselineCase(t *testing.T, dir string) (result, boundRow) {
	planWith(t, dir, relPlan{Knob: "32, 64"}, func(s string) string {
		return s + "quality \"support\" {\n  dataset  = \"eval.jsonl\"\n  scorer   = \"chrf\"\n  max_drop = 0.05\n  baseline = { max_num_seqs = 32 }\n}\n"
	})
	writeFile(t, dir, "eval.jsonl", []byte(`{"id": "a", "prompt": "Summarise: the committee approved the library.", "reference": "The committee approved the plan for the new library."}`+"\n"+
		`{"id": "b", "prompt": "Translate: bonjour", "reference": "Hello, and welcome to the meeting."}`+"\n"))
	if r := frontier(t, dir, nil, "apply", "plan.hcl", "--storage", "study.db", "--estimate", "--trials", "1"); r.code != 0 {
		t.Fatalf("first apply exited %d:\n%s", r.code, r.stderr)
	}
	db := filepath.Join(dir, "study.db")
	sqlExec(t, db, `UPDATE study_system_attributes SET key = REPLACE(key, '@`+sim.ModelVersion+`', '') WHERE key LIKE 'frontier:baseline:%';
UPDATE study_system_attributes SET value = REPLACE(value, '"score":', '"score":0.5,"was":') WHERE key LIKE 'frontier:baseline:%';
DELETE FROM study_system_attributes WHERE key IN ('frontier:sim_model', 'frontier:release');
UPDATE trials SET state = 'WAITING';`)
	r := frontier(t, dir, nil, "apply", "plan.hcl", "--storage", "study.db", "--estimate", "--trials", "1", "--json")
	var sum struct {
		BaselinesMeasured int `json:"baselines_measured"`
	}
	_ = json.Unmarshal([]byte(r.stdout), &sum)
	rec := study(t, db)
	saw := fmt.Sprintf("baselines_measured %d; %s", sum.BaselinesMeasured, lastLine(r.stderr))
	stored := storedSummary(rec)
	if len(rec.Trials) == 1 {
		tr := rec.Trials[0]
		q := tr.Quality["support"]
		stored = fmt.Sprintf("trial 0 %s; gate baseline %.4g", tr.State, q.Baseline)
		if q.Baseline != 0.5 && q.Baseline > 0 {
			stored = fmt.Sprintf("trial 0 %s; its gate's baseline is this model's, not the stored 0.5", tr.State)
		}
		if sum.BaselinesMeasured == 1 && q.Passed {
			saw = "the baseline was measured again (baselines_measured 1) and the trial met the gate"
		}
	}
	return r, boundRow{Saw: saw, Stored: stored}
}
