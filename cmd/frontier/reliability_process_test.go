package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Cases of TestReliability about what an engine's program does around the simulated vLLM: a
// shell script in the case's folder stands in for an installation (a wrapper, a container
// entrypoint) and runs `frontier sim serve` unless the case says otherwise. Processes are
// found by their working directory, the case's folder.

// engineScript writes dir/engine.sh: versionLine for `--version`, then body.
func engineScript(t *testing.T, dir, version, body string) string {
	t.Helper()
	path := filepath.Join(dir, "engine.sh")
	text := "#!/bin/sh\nif [ \"$1\" = --version ]; then\n" + version + "\nfi\n" + body + "\n"
	if err := os.WriteFile(path, []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// processCases are the rows about the engine's processes, its API key and its launch
// failures.
func processCases() []relCase {
	return []relCase{
		{
			name:  "engine's child leaves its session",
			fault: "the engine program starts `setsid sleep 300 &`, then serves",
			want:  relRow{Exit: 0, Saw: finished, Left: "none", Stored: "1 trial(s): 1 complete; completed 12, failed 0"},
			run: func(t *testing.T, dir, mk string) relRow {
				sh := engineScript(t, dir, "echo 0.13.0; exit 0", "setsid sleep 300 &\nexec frontier sim serve \"$@\"")
				writePlan(t, dir, relPlan{Model: mk, Command: sh})
				r := frontier(t, dir, nil, "apply", "plan.hcl", "--storage", "study.db")
				return relRow{Exit: r.code, Saw: saw(r.stdout+r.stderr, finished), Stored: firstTrial(study(t, filepath.Join(dir, "study.db"))), Left: left(dir, r.pid)}
			},
		},
		{
			name:  "SIGKILL during the engine's version probe",
			fault: "`engine.sh --version` hangs; SIGKILL 1 s after trial 0 starts",
			want:  relRow{Exit: 137, Saw: "the probe went with frontier", Left: "none", Stored: "1 trial(s): 1 running"},
			run: func(t *testing.T, dir, mk string) relRow {
				sh := engineScript(t, dir, "exec sleep 300", "exec frontier sim serve \"$@\"")
				writePlan(t, dir, relPlan{Model: mk, Command: sh})
				r := startFrontier(t, dir, nil, "apply", "plan.hcl", "--storage", "study.db")
				r.await(t, `trial 0 started`, time.Minute)
				time.Sleep(time.Second)
				if l := scanProc(dir, nil); len(l) == 0 {
					t.Fatal("no version probe running before the kill: the case no longer checks what it means to")
				}
				if err := r.cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				res := r.wait(t, 10*time.Second)
				row := relRow{Exit: res.code, Saw: "the probe went with frontier", Left: left(dir, res.pid)}
				if row.Left != "none" {
					row.Saw = "the probe outlived frontier"
				}
				row.Stored = storedSummary(study(t, filepath.Join(dir, "study.db")))
				return row
			},
		},
		{
			name:  "engine enforces its API key",
			fault: "engine args `--api-key KEY` (the simulated vLLM enforces it as vLLM does)",
			want: relRow{Exit: 0, Saw: finished, Left: "none",
				Stored: "1 trial(s): 1 complete; completed 12, failed 0; the key went by VLLM_API_KEY, not on the command line"},
			run: func(t *testing.T, dir, mk string) relRow {
				const key = "sk-reliability-key"
				writePlan(t, dir, relPlan{Model: mk, Args: []string{"--api-key", key}})
				r := frontier(t, dir, nil, "apply", "plan.hcl", "--storage", "study.db")
				row := relRow{Exit: r.code, Saw: saw(r.stdout+r.stderr, finished), Stored: firstTrial(study(t, filepath.Join(dir, "study.db"))), Left: left(mk, r.pid)}
				log, err := os.ReadFile(filepath.Join(dir, "study.db.logs", "reliability", "trial-0.log"))
				if err != nil {
					t.Fatal(err)
				}
				switch {
				case strings.Contains(string(log), "--api-key"):
					row.Stored += "; the key went on the command line"
				case strings.Contains(string(log), "# env: VLLM_API_KEY=REDACTED"):
					row.Stored += "; the key went by VLLM_API_KEY, not on the command line"
				default:
					row.Stored += "; the log does not say how the key went"
				}
				return row
			},
		},
		{
			name:  "engine enforces a key frontier was not given",
			fault: "the engine program exports `VLLM_API_KEY=other`, then serves",
			want: relRow{Exit: 3, Saw: noFeasible, Left: "none",
				Stored: "1 trial(s): 1 infeasible (other); the engine failed to start: other: engine reported a fatal error: the engine refused the API key: GET /v1/models answered 401 Unauthorized without an API key; give the engine its key by --api-key or VLLM_API_KEY in the engine block, and frontier sends it; no measurement"},
			run: func(t *testing.T, dir, mk string) relRow {
				sh := engineScript(t, dir, "echo 0.13.0; exit 0", "VLLM_API_KEY=other exec frontier sim serve \"$@\"")
				writePlan(t, dir, relPlan{Model: mk, Command: sh})
				r := frontier(t, dir, nil, "apply", "plan.hcl", "--storage", "study.db")
				return relRow{Exit: r.code, Saw: saw(r.stderr, noFeasible), Stored: firstTrial(study(t, filepath.Join(dir, "study.db"))), Left: left(dir, r.pid)}
			},
		},
		{
			name:  "engine's wrapper fails before vLLM runs",
			fault: "the engine program prints container-runtime lines and exits 127",
			want: relRow{Exit: 3, Saw: noFeasible, Left: "none",
				Stored: "1 trial(s): 1 infeasible (unknown); the engine failed to start: unknown: starting vllm / /entrypoint.sh: line 4: /opt/venv/bin/python3: No such file or directory / entrypoint exited with status 127; no measurement"},
			run: func(t *testing.T, dir, mk string) relRow {
				sh := engineScript(t, dir, "echo 0.13.0; exit 0",
					"echo '2025-01-07T10:00:00.1Z stdout F starting vllm'\n"+
						"echo '2025-01-07T10:00:00.2Z stderr F /entrypoint.sh: line 4: /opt/venv/bin/python3: No such file or directory' >&2\n"+
						"echo '[pod/vllm-0/vllm] entrypoint exited with status 127'\nexit 127")
				writePlan(t, dir, relPlan{Model: mk, Command: sh})
				r := frontier(t, dir, nil, "apply", "plan.hcl", "--storage", "study.db")
				return relRow{Exit: r.code, Saw: saw(r.stderr, noFeasible), Stored: firstTrial(study(t, filepath.Join(dir, "study.db"))), Left: left(dir, r.pid)}
			},
		},
	}
}
