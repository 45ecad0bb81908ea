package main

import (
	"bytes"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// boundRow is one input that must be refused, or accepted, in bounded time: a row of the
// "bounds" table of docs/reliability.md.
type boundRow struct {
	Case   string
	Input  string
	Exit   int
	Saw    string
	Time   string
	Stored string
}

// boundCase runs frontier on one hostile input in dir and reports what it observed. within is
// the time the command must finish in (five times as long under the race detector).
type boundCase struct {
	name   string
	input  string
	within time.Duration
	want   boundRow
	run    func(t *testing.T, dir string) (result, boundRow)
}

// writeFile writes content to dir/name and returns the path.
func writeFile(t *testing.T, dir, name string, content []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, content, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// mkfifo makes a named pipe dir/name, or skips the test where it cannot.
func mkfifo(t *testing.T, dir, name string) {
	t.Helper()
	if err := syscall.Mkfifo(filepath.Join(dir, name), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
}

// noDatabase says whether dir/study.db was created.
func noDatabase(dir string) string {
	if _, err := os.Stat(filepath.Join(dir, "study.db")); err == nil {
		return "a database was created"
	}
	return "no database created"
}

// planWith is the reliability plan with edit applied to its text.
func planWith(t *testing.T, dir string, p relPlan, edit func(string) string) {
	t.Helper()
	p.Model = "bounds-model"
	writeFile(t, dir, "plan.hcl", []byte(edit(p.hcl())))
}

// sqliteFile writes a SQLite database with schema to dir/name and returns its bytes.
func sqliteFile(t *testing.T, dir, name, schema string) []byte {
	t.Helper()
	db, err := sql.Open("sqlite3", filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(schema); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// unchanged says whether dir/name still holds before.
func unchanged(t *testing.T, dir, name string, before []byte) string {
	after, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(before, after) {
		return "the database is unchanged"
	}
	return "the database was changed"
}

func validateCase(file string, phrase string) func(t *testing.T, dir string) (result, boundRow) {
	return func(t *testing.T, dir string) (result, boundRow) {
		r := frontier(t, dir, nil, "validate", file)
		return r, boundRow{Saw: saw(r.stderr, phrase), Stored: "nothing"}
	}
}

func identity(s string) string { return s }

const optunaSchema = `CREATE TABLE studies (study_id INTEGER PRIMARY KEY, study_name VARCHAR(512));
CREATE TABLE study_directions (study_direction_id INTEGER PRIMARY KEY, direction VARCHAR(8), study_id INTEGER, objective INTEGER);
CREATE TABLE trials (trial_id INTEGER PRIMARY KEY, number INTEGER, study_id INTEGER, state VARCHAR(8));
CREATE TABLE version_info (version_info_id INTEGER PRIMARY KEY, schema_version INTEGER, library_version VARCHAR(256));
CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL PRIMARY KEY);
INSERT INTO studies VALUES (1, 'optuna-study');`

func boundCases() []boundCase {
	nested := "variable \"deep\" { default = " + strings.Repeat("(", 100000) + "1" + strings.Repeat(")", 100000) + " }\n"
	manyKnobs := func(n int) func(string) string {
		return func(s string) string {
			var b strings.Builder
			for i := range n {
				fmt.Fprintf(&b, "knob \"k%d\" { values = [1, 2] }\n", i)
			}
			// A vLLM newer than frontier's tables: a knob they do not know is a warning, left to
			// the installed vLLM's help at the preflight.
			s = strings.Replace(s, `engine "sim" {`, "engine \"vllm\" {\n  version = \"0.33\"", 1)
			return s + b.String()
		}
	}
	return []boundCase{
		{
			name: "plan is a named pipe", input: "`mkfifo plan.hcl`, then `frontier validate plan.hcl`", within: 2 * time.Second,
			want: boundRow{Exit: 1, Saw: "plan.hcl is a named pipe (FIFO), not a regular file", Stored: "nothing"},
			run: func(t *testing.T, dir string) (result, boundRow) {
				mkfifo(t, dir, "plan.hcl")
				r := frontier(t, dir, nil, "validate", "plan.hcl")
				return r, boundRow{Saw: saw(r.stderr, "plan.hcl is a named pipe (FIFO), not a regular file"), Stored: "nothing"}
			},
		},
		{
			name: "plan is /dev/zero", input: "`frontier plan /dev/zero`", within: 2 * time.Second,
			want: boundRow{Exit: 1, Saw: "/dev/zero is a character device, not a regular file", Stored: "nothing"},
			run: func(t *testing.T, dir string) (result, boundRow) {
				r := frontier(t, dir, nil, "plan", "/dev/zero")
				return r, boundRow{Saw: saw(r.stderr, "/dev/zero is a character device, not a regular file"), Stored: "nothing"}
			},
		},
		{
			name: "plan is a SQLite database", input: "a study database given as the plan", within: 2 * time.Second,
			want: boundRow{Exit: 1, Saw: "byte 15 is NUL: the file is binary (a database, an archive or a program?), not UTF-8 text", Stored: "nothing"},
			run: func(t *testing.T, dir string) (result, boundRow) {
				sqliteFile(t, dir, "study.db", "CREATE TABLE t (x); INSERT INTO t VALUES (randomblob(100000));")
				return validateCase("study.db", "byte 15 is NUL: the file is binary (a database, an archive or a program?), not UTF-8 text")(t, dir)
			},
		},
		{
			name: "plan of 2 MiB", input: "a plan padded with comments to 2 MiB", within: 2 * time.Second,
			want: boundRow{Exit: 1, Saw: "is 2 MiB, over the limit of 1 MiB: file too large", Stored: "nothing"},
			run: func(t *testing.T, dir string) (result, boundRow) {
				writeFile(t, dir, "plan.hcl", bytes.Repeat([]byte("# padding\n"), 2<<20/10+1)[:2<<20])
				return validateCase("plan.hcl", "is 2 MiB, over the limit of 1 MiB: file too large")(t, dir)
			},
		},
		{
			name: "plan nested 100,000 deep", input: "a variable's default in 100,000 nested parentheses", within: 2 * time.Second,
			want: boundRow{Exit: 1, Saw: "Nested too deeply", Stored: "nothing"},
			run: func(t *testing.T, dir string) (result, boundRow) {
				planWith(t, dir, relPlan{}, func(s string) string { return s + nested })
				return validateCase("plan.hcl", "Nested too deeply")(t, dir)
			},
		},
		{
			name: "plan with 5,000 invalid characters", input: "one line of 5,000 characters HCL does not use", within: 2 * time.Second,
			want: boundRow{Exit: 1, Saw: "20 diagnostics printed, the rest counted; under 16 KiB in all", Stored: "nothing"},
			run: func(t *testing.T, dir string) (result, boundRow) {
				planWith(t, dir, relPlan{}, func(s string) string { return s + strings.Repeat("@", 5000) + "\n" })
				r := frontier(t, dir, nil, "validate", "plan.hcl")
				seen := fmt.Sprintf("%d diagnostics printed", strings.Count(r.stderr, "Error: "))
				if strings.Contains(r.stderr, "not shown; fix the ones above first.") {
					seen += ", the rest counted"
				}
				if len(r.stderr) < 16<<10 {
					seen += "; under 16 KiB in all"
				} else {
					seen += fmt.Sprintf("; %d bytes in all", len(r.stderr))
				}
				return r, boundRow{Saw: seen, Stored: "nothing"}
			},
		},
		{
			name: "plan with 2,000 knobs", input: "`frontier validate` of 2,000 knobs, each a warning (no flag frontier's tables know, on a vLLM 0.33 newer than them)", within: 10 * time.Second,
			want: boundRow{Exit: 0, Saw: "plan.hcl is valid: 2001 knobs, 1 workload, 1 objective.", Stored: "nothing"},
			run: func(t *testing.T, dir string) (result, boundRow) {
				planWith(t, dir, relPlan{}, manyKnobs(2000))
				r := frontier(t, dir, nil, "validate", "plan.hcl")
				return r, boundRow{Saw: saw(r.stdout, "plan.hcl is valid: 2001 knobs, 1 workload, 1 objective."), Stored: "nothing"}
			},
		},
		{
			name: "-var-file list of 40,000 values", input: "`knob { values = var.seqs }`, `-var-file` with 40,000 numbers", within: 10 * time.Second,
			want: boundRow{Exit: 0, Saw: "plan.hcl is valid: 1 knob, 1 workload, 1 objective.", Stored: "nothing"},
			run: func(t *testing.T, dir string) (result, boundRow) {
				planWith(t, dir, relPlan{Knob: "0"}, func(s string) string {
					return "variable \"seqs\" { type = list(number) }\n" + strings.Replace(s, "values = [0]", "values = var.seqs", 1)
				})
				vals := make([]string, 40000)
				for i := range vals {
					vals[i] = fmt.Sprint(i + 1)
				}
				writeFile(t, dir, "seqs.tfvars", []byte("seqs = ["+strings.Join(vals, ", ")+"]\n"))
				r := frontier(t, dir, nil, "validate", "plan.hcl", "-var-file", "seqs.tfvars")
				return r, boundRow{Saw: saw(r.stdout, "plan.hcl is valid: 1 knob, 1 workload, 1 objective."), Stored: "nothing"}
			},
		},
		{
			name: "knob value beyond a float", input: "`values = [1e400, 8]`", within: 2 * time.Second,
			want: boundRow{Exit: 1, Saw: `Value 1 of knob "max_num_seqs", 1e+400, is beyond the range of a 64-bit float`, Stored: "nothing"},
			run: func(t *testing.T, dir string) (result, boundRow) {
				planWith(t, dir, relPlan{Knob: "1e400, 8"}, identity)
				return validateCase("plan.hcl", `Value 1 of knob "max_num_seqs", 1e+400, is beyond the range of a 64-bit float`)(t, dir)
			},
		},
		{
			name: "empty evaluation set", input: "a quality gate whose `dataset` is an empty file, `frontier apply`", within: 5 * time.Second,
			want: boundRow{Exit: 1, Saw: `quality "support": evaluation set eval.jsonl: eval.jsonl: no items`, Stored: "no database created"},
			run: func(t *testing.T, dir string) (result, boundRow) {
				planWith(t, dir, relPlan{}, func(s string) string {
					return s + "quality \"support\" {\n  dataset = \"eval.jsonl\"\n  scorer  = \"chrf\"\n  min     = 0.5\n}\n"
				})
				writeFile(t, dir, "eval.jsonl", nil)
				r := frontier(t, dir, nil, "apply", "plan.hcl", "--storage", "study.db")
				return r, boundRow{Saw: strings.ReplaceAll(saw(r.stderr, `quality "support": evaluation set `+dir+`/eval.jsonl: `+dir+`/eval.jsonl: no items`), dir+"/", ""), Stored: noDatabase(dir)}
			},
		},
		{
			name: "evaluation set without references", input: "items without `reference` for the `chrf` scorer, `frontier validate`", within: 2 * time.Second,
			want: boundRow{Exit: 1, Saw: `eval.jsonl:1: item "a" has no "reference", which scorer chrf needs`, Stored: "nothing"},
			run: func(t *testing.T, dir string) (result, boundRow) {
				planWith(t, dir, relPlan{}, func(s string) string {
					return s + "quality \"support\" {\n  dataset = \"eval.jsonl\"\n  scorer  = \"chrf\"\n  min     = 0.5\n}\n"
				})
				writeFile(t, dir, "eval.jsonl", []byte(`{"id": "a", "prompt": "say hi"}`+"\n"))
				r := frontier(t, dir, nil, "validate", "plan.hcl")
				return r, boundRow{Saw: strings.ReplaceAll(saw(r.stderr, dir+`/eval.jsonl:1: item "a" has no "reference", which scorer chrf needs`), dir+"/", ""), Stored: "nothing"}
			},
		},
		{
			name: "trace with 10^12 input tokens", input: "a trace line with `\"input_tokens\": 1000000000000`, `frontier apply`", within: 5 * time.Second,
			want: boundRow{Exit: 1, Saw: `trace.jsonl:1: "input_tokens" is 1000000000000; it must be at least 1 and at most 2097152 (MaxTokens)`, Stored: "no database created"},
			run: func(t *testing.T, dir string) (result, boundRow) {
				planWith(t, dir, relPlan{}, func(s string) string {
					return strings.Replace(s, "poisson(8)", `trace("trace.jsonl")`, 1)
				})
				writeFile(t, dir, "trace.jsonl", []byte(`{"timestamp": 0, "input_tokens": 1000000000000, "output_tokens": 5}`+"\n"))
				r := frontier(t, dir, nil, "apply", "plan.hcl", "--storage", "study.db")
				phrase := `trace.jsonl:1: "input_tokens" is 1000000000000; it must be at least 1 and at most 2097152 (MaxTokens)`
				return r, boundRow{Saw: saw(strings.ReplaceAll(r.stderr, dir+"/", ""), phrase), Stored: noDatabase(dir)}
			},
		},
		{
			name: "trace with a gap of 10^7 s", input: "trace timestamps 0, 1 and 10,000,001, `frontier validate`", within: 2 * time.Second,
			want: boundRow{Exit: 0, Saw: "Warning: Long wait in the trace; waits 115.7 days between the request on line 2 and the next, on line 3", Stored: "nothing"},
			run: func(t *testing.T, dir string) (result, boundRow) {
				planWith(t, dir, relPlan{}, func(s string) string {
					return strings.Replace(s, "poisson(8)", `trace("trace.jsonl")`, 1)
				})
				writeFile(t, dir, "trace.jsonl", []byte("{\"timestamp\": 0}\n{\"timestamp\": 1}\n{\"timestamp\": 10000001}\n"))
				r := frontier(t, dir, nil, "validate", "plan.hcl")
				seen := saw(r.stderr, "Warning: Long wait in the trace")
				if strings.Contains(r.stderr, "waits 115.7 days between the request on line 2 and the next, on line 3") {
					seen += "; waits 115.7 days between the request on line 2 and the next, on line 3"
				}
				return r, boundRow{Saw: seen, Stored: "nothing"}
			},
		},
		{
			name: "dataset is a named pipe", input: "`mkfifo prompts.jsonl` as the workload's `dataset`, `frontier apply`", within: 5 * time.Second,
			want: boundRow{Exit: 1, Saw: `The file "prompts.jsonl" of workload "chat" (attribute dataset) is a named pipe (FIFO)`, Stored: "no database created"},
			run: func(t *testing.T, dir string) (result, boundRow) {
				planWith(t, dir, relPlan{Input: `dataset       = "prompts.jsonl"`}, identity)
				mkfifo(t, dir, "prompts.jsonl")
				r := frontier(t, dir, nil, "apply", "plan.hcl", "--storage", "study.db")
				return r, boundRow{Saw: saw(r.stderr, `The file "prompts.jsonl" of workload "chat" (attribute dataset) is a named pipe (FIFO)`), Stored: noDatabase(dir)}
			},
		},
		{
			name: "an Optuna database as storage", input: "`--storage optuna.db`, a SQLite file in Optuna's schema, `frontier apply`", within: 5 * time.Second,
			want: boundRow{Exit: 1, Saw: "is an Optuna study database (it has tables alembic_version, version_info, study_directions)", Stored: "the database is unchanged"},
			run: func(t *testing.T, dir string) (result, boundRow) {
				before := sqliteFile(t, dir, "optuna.db", optunaSchema)
				planWith(t, dir, relPlan{}, identity)
				r := frontier(t, dir, nil, "apply", "plan.hcl", "--storage", "optuna.db")
				return r, boundRow{Saw: saw(r.stderr, "is an Optuna study database (it has tables alembic_version, version_info, study_directions)"), Stored: unchanged(t, dir, "optuna.db", before)}
			},
		},
		{
			name: "another program's database as storage", input: "`frontier report --storage notes.db`, a SQLite file with a table `notes`", within: 5 * time.Second,
			want: boundRow{Exit: 1, Saw: "is another program's database (it has the tables notes, which are not goptuna's)", Stored: "the database is unchanged"},
			run: func(t *testing.T, dir string) (result, boundRow) {
				before := sqliteFile(t, dir, "notes.db", "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes (body) VALUES ('keep me');")
				r := frontier(t, dir, nil, "report", "--storage", "notes.db")
				return r, boundRow{Saw: saw(r.stderr, "is another program's database (it has the tables notes, which are not goptuna's)"), Stored: unchanged(t, dir, "notes.db", before)}
			},
		},
		{
			name: "blank storage", input: "`frontier apply plan.hcl --storage \" \"`", within: 5 * time.Second,
			want: boundRow{Exit: 1, Saw: "the SQLite path is blank", Stored: "no file created"},
			run: func(t *testing.T, dir string) (result, boundRow) {
				planWith(t, dir, relPlan{}, identity)
				r := frontier(t, dir, nil, "apply", "plan.hcl", "--storage", " ")
				stored := "no file created"
				if entries, _ := os.ReadDir(dir); len(entries) != 1 {
					stored = fmt.Sprintf("%d files in the folder", len(entries))
				}
				return r, boundRow{Saw: saw(r.stderr, "the SQLite path is blank"), Stored: stored}
			},
		},
		{
			name: "standard output as storage", input: "`frontier apply plan.hcl --storage sqlite:///dev/stdout`", within: 5 * time.Second,
			want: boundRow{Exit: 1, Saw: "not a regular file: frontier reads plans and data from regular files only; a study database is a SQLite file", Stored: "nothing written to standard output; no /dev/stdout.logs"},
			run: func(t *testing.T, dir string) (result, boundRow) {
				planWith(t, dir, relPlan{}, identity)
				r := frontier(t, dir, nil, "apply", "plan.hcl", "--storage", "sqlite:///dev/stdout")
				stored := "nothing written to standard output"
				if r.stdout != "" {
					stored = fmt.Sprintf("%d bytes written to standard output", len(r.stdout))
				}
				if _, err := os.Stat("/dev/stdout.logs"); err == nil {
					stored += "; /dev/stdout.logs created"
				} else {
					stored += "; no /dev/stdout.logs"
				}
				// The kind of file standard output is depends on how the test runs (a pipe here).
				return r, boundRow{Saw: saw(r.stderr, "not a regular file: frontier reads plans and data from regular files only; a study database is a SQLite file"), Stored: stored}
			},
		},
		{
			name: "storage URL that does not parse", input: "`--storage 'mysql://frontier:s3cret@[::1/studies'`", within: 5 * time.Second,
			want: boundRow{Exit: 1, Saw: "the password is shown as xxxxx", Stored: "nothing"},
			run: func(t *testing.T, dir string) (result, boundRow) {
				planWith(t, dir, relPlan{}, identity)
				r := frontier(t, dir, nil, "apply", "plan.hcl", "--storage", "mysql://frontier:s3cret@[::1/studies")
				seen := "the password is shown as xxxxx"
				if strings.Contains(r.stdout+r.stderr, "s3cret") || !strings.Contains(r.stderr, "frontier:xxxxx@") {
					seen = lastLine(r.stderr)
				}
				return r, boundRow{Saw: seen, Stored: "nothing"}
			},
		},
		{
			name: "SIGINT during `frontier plan`", input: "SIGINT 0.5 s into `frontier plan` of 10,000 knobs", within: 2 * time.Second,
			want: boundRow{Exit: 2, Saw: "frontier plan: interrupted", Stored: "nothing"},
			run: func(t *testing.T, dir string) (result, boundRow) {
				planWith(t, dir, relPlan{}, manyKnobs(10000))
				r := interruptAfter(t, dir, 500*time.Millisecond, "plan", "plan.hcl")
				return r, boundRow{Saw: saw(r.stderr, "frontier plan: interrupted"), Stored: "nothing"}
			},
		},
		{
			name: "SIGINT during `frontier estimate --all`", input: "SIGINT 0.5 s into `frontier estimate --all` of 3,000 configurations", within: 2 * time.Second,
			want: boundRow{Exit: 2, Saw: "frontier estimate: interrupted", Stored: "nothing"},
			run: func(t *testing.T, dir string) (result, boundRow) {
				values := make([]string, 3000)
				for i := range values {
					values[i] = strconv.Itoa(i + 1)
				}
				planWith(t, dir, relPlan{Knob: strings.Join(values, ", ")}, identity)
				r := interruptAfter(t, dir, 500*time.Millisecond, "estimate", "plan.hcl", "--all")
				return r, boundRow{Saw: saw(r.stderr, "frontier estimate: interrupted"), Stored: "nothing"}
			},
		},
	}
}

// TestReliabilityBounds runs frontier as a real subprocess on each hostile input of
// boundCases: every one must be refused (or, for the large but valid ones, accepted) within
// its time bound, with a message that says what was wrong, and leave what the user has as it
// was. The observed rows are the "bounds" table of docs/reliability.md; -update rewrites it.
func TestReliabilityBounds(t *testing.T) {
	checkBoundCases(t, "bounds", "stored", boundCases())
}

// checkBoundCases runs each case as a subtest, holds it to its row and its time bound, and
// checks (or with -update rewrites) the section of docs/reliability.md with the observed rows;
// last is the header of the table's last column, the rows' Stored (what is stored, or what
// came of the case).
func checkBoundCases(t *testing.T, section, last string, cases []boundCase) {
	t.Helper()
	var rows []boundRow
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, got := c.run(t, t.TempDir())
			limit := c.within
			if raceEnabled {
				limit *= 5
			}
			got.Exit = r.code
			got.Time = "under " + c.within.String()
			if r.elapsed > limit {
				got.Time = "took " + r.elapsed.Round(100*time.Millisecond).String()
			}
			got.Case, got.Input = c.name, c.input
			want := c.want
			want.Case, want.Input, want.Time = c.name, c.input, "under "+c.within.String()
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("observed outcome (-want +got):\n%s\nstdout:\n%.2000s\nstderr:\n%.3000s", diff, r.stdout, r.stderr)
			}
			rows = append(rows, got)
		})
	}
	if t.Failed() || len(rows) != len(cases) {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| case | input | exit | the user sees | time | %s |\n|---|---|---:|---|---|---|\n", last)
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s |\n", r.Case, r.Input, r.Exit, cell(r.Saw), r.Time, cell(r.Stored))
	}
	checkReliabilityDoc(t, section, b.String())
}

// interruptAfter runs frontier with args in dir, sends it SIGINT after delay and waits for it;
// the result's elapsed time counts from the signal.
func interruptAfter(t *testing.T, dir string, delay time.Duration, args ...string) result {
	t.Helper()
	p := startFrontier(t, dir, nil, args...)
	time.Sleep(delay)
	sent := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	r := p.wait(t, 30*time.Second)
	r.elapsed = time.Since(sent)
	return r
}
