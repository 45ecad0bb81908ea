package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// deathPlan is a study of one trial of the simulated vLLM whose workload is scheduled over
// about 50 s (100 requests at 2 a second); %s is the served model name, %s the disaggregation
// knob's values (empty: one engine).
const deathPlan = `study "death" {
  trials  = 1
  sampler = "grid"
  confirm = 0
}

model {
  name          = %q
  architecture  = "llama-3.1-8b"
  max_model_len = 4096
}

engine "sim" {
  startup_timeout = "30s"
}

hardware {
  gpus = %d
  sku  = "h100-sxm"
}
%s
knob "max_num_seqs" { values = [32] }

workload "chat" {
  requests      = 100
  input_tokens  = uniform(100, 200)
  output_tokens = uniform(10, 20)
  arrival       = poisson(2)
}

objective "throughput" {
  maximize = metric.total.output_token_throughput
}
`

// findLog waits up to a minute for a file named name under dir that holds want.
func findLog(t *testing.T, dir, name, want string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var found string
		_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.Name() == name {
				if b, _ := os.ReadFile(path); strings.Contains(string(b), want) {
					found = path
				}
			}
			return nil
		})
		if found != "" {
			return
		}
	}
	t.Fatalf("no %s holding %q under %s within a minute", name, want, dir)
}

// TestApplyNoticesAnEngineKilledMidWorkload kills (SIGKILL) one process of a running trial
// once its workload has begun: a single engine, an instance of a 1p1d deployment, or its
// router. frontier apply notices at once, not when the workload's 50 s schedule ends, and
// the trial's reason says which process died, its pid and the signal.
func TestApplyNoticesAnEngineKilledMidWorkload(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		gpus   int
		knob   string
		log    string // the log, and its line, after which the workload runs
		line   string
		victim string // what the killed process's command line holds
		want   string // the reason, %d the pid
	}{
		{"single engine", 1, "", "trial-0.log", "Application startup complete", " sim serve ", `the engine \(pid %d\) exited with signal KILL`},
		{"prefill instance", 2, `knob "disaggregation" { values = ["1p1d"] }`, "trial-0-router.log", "listening on", " sim serve ", `(prefill|decode) instance 0: the engine \(pid %d\) exited with signal KILL`},
		{"router", 2, `knob "disaggregation" { values = ["1p1d"] }`, "trial-0-router.log", "listening on", " router ", `the router \(pid %d\) exited with signal KILL`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			mk := marker("death-" + tc.name)
			if err := os.WriteFile(filepath.Join(dir, "plan.hcl"), []byte(fmt.Sprintf(deathPlan, mk, tc.gpus, tc.knob)), 0o644); err != nil {
				t.Fatal(err)
			}
			r := startFrontier(t, dir, nil, "apply", "plan.hcl", "--storage", "study.db")
			findLog(t, dir, tc.log, tc.line)
			time.Sleep(2 * time.Second) // requests under way
			victim := 0
			for _, p := range runProcs(dir, mk, r.cmd.Process.Pid) {
				if strings.Contains(p.args, tc.victim) && p.pgrp == p.pid {
					victim = p.pid
					break
				}
			}
			if victim == 0 {
				t.Fatalf("no process running %q: %v", tc.victim, runProcs(dir, mk, r.cmd.Process.Pid))
			}
			if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed := time.Now()
			res := r.wait(t, 2*time.Minute)
			took := time.Since(killed)
			if took > 15*time.Second {
				t.Errorf("frontier apply ended %s after the %s was killed; want it noticed at once, not when the workload's schedule ends", took.Round(time.Second), tc.name)
			}
			if res.code != 3 {
				t.Errorf("frontier apply exited %d, want 3 (no configuration met every SLO):\n%s", res.code, res.stderr)
			}
			rec := study(t, filepath.Join(dir, "study.db"))
			if len(rec.Trials) != 1 {
				t.Fatalf("%d trials stored, want 1", len(rec.Trials))
			}
			tr := rec.Trials[0]
			want := regexp.MustCompile(fmt.Sprintf(tc.want, victim))
			if tr.State != "infeasible" || !want.MatchString(tr.Reason) {
				t.Errorf("trial 0: %s, %q; want infeasible with a reason matching %q", tr.State, tr.Reason, want)
			}
			if l := leftBehind(mk, res.pid); len(l) > 0 {
				t.Errorf("left running after frontier exited:\n%s", strings.Join(l, "\n"))
			}
		})
	}
}
