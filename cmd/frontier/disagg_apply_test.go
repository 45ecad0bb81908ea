package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frontier-llm/frontier/launcher"
	"github.com/frontier-llm/frontier/vllm"
)

// disaggPlan is a study of two trials of a 1p1d deployment of the simulated vLLM on two
// simulated GPUs; %s is the served model name, which finds the engines in the process table.
const disaggPlan = `study "pd" {
  trials  = 2
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
%s}

hardware {
  gpus = 2
  sku  = "h100-sxm"
}

knob "disaggregation" { values = ["1p1d"] }
knob "max_num_seqs"   { values = [32, 64] }

workload "chat" {
  requests      = 16
  input_tokens  = uniform(500, 1000)
  output_tokens = uniform(10, 20)
  arrival       = poisson(8)
}

objective "throughput" {
  maximize = metric.total.output_token_throughput
}
`

// TestApplyDisaggregatedRunsTwoEnginesAndTheRouter runs frontier apply of a "1p1d" plan on
// engine sim as a real subprocess and watches the process table while it runs: each trial
// has three processes at once (a prefill engine, a decode engine, the router), each in its
// own process group; both trials complete with two GPUs and both instances' launches in the
// record; and nothing of the run is left once frontier has exited.
func TestApplyDisaggregatedRunsTwoEnginesAndTheRouter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, engineLines string }{
		{"frontier's router", ""},
		// Another router, given by its command: here frontier's own again, started through
		// a shell from the addresses in its environment, as a user's router would be.
		{"a router command", `  router = ["sh", "-c", "exec frontier router --host \"$FRONTIER_ROUTER_HOST\" --port \"$FRONTIER_ROUTER_PORT\" --prefill $FRONTIER_PREFILL_URLS --decode $FRONTIER_DECODE_URLS"]` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			mk := marker("pd-" + tc.name)
			if err := os.WriteFile(filepath.Join(dir, "plan.hcl"), []byte(fmt.Sprintf(disaggPlan, mk, tc.engineLines)), 0o644); err != nil {
				t.Fatal(err)
			}
			r := startFrontier(t, dir, nil, "apply", "plan.hcl", "--storage", "study.db")
			apply := r.cmd.Process.Pid
			// Sample the process table: the run's processes are those working in dir
			// (the router) or serving the marker (the engines), frontier itself aside.
			maxAt, engines, routers, groups := 0, map[int]bool{}, map[int]bool{}, map[int]bool{}
			for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
				select {
				case <-r.done:
				default:
					if time.Now().Before(deadline) {
						procs := runProcs(dir, mk, apply)
						n := 0
						for _, p := range procs {
							if p.pgrp == 0 {
								continue // gone between the two reads of /proc
							}
							switch {
							case strings.Contains(p.args, " sim serve "):
								engines[p.pid], groups[p.pgrp] = true, true
								n++
							case strings.Contains(p.args, " router "):
								routers[p.pid], groups[p.pgrp] = true, true
								n++
							}
						}
						maxAt = max(maxAt, n)
						continue
					}
					t.Fatal("frontier apply did not finish within two minutes")
				}
				break
			}
			res := r.wait(t, 10*time.Second)
			if res.code != 0 {
				t.Fatalf("frontier apply exited %d:\n%s", res.code, res.stderr)
			}
			t.Logf("processes at once: %d; engines %d, routers %d, process groups %d", maxAt, len(engines), len(routers), len(groups))
			if maxAt != 3 || len(engines) != 4 || len(routers) != 2 || len(groups) != 6 {
				t.Errorf("saw %d processes at once, %d engines, %d routers in %d process groups over two trials; want 3 at once (two engines and the router), 4 engines, 2 routers, each its own group",
					maxAt, len(engines), len(routers), len(groups))
			}
			if l := leftBehind(mk, res.pid); len(l) > 0 {
				t.Errorf("left running after frontier exited:\n%s", strings.Join(l, "\n"))
			}
			if l := leftBehind(dir, res.pid); len(l) > 0 {
				t.Errorf("left running in the study's folder:\n%s", strings.Join(l, "\n"))
			}
			rec := study(t, filepath.Join(dir, "study.db"))
			if len(rec.Trials) != 2 {
				t.Fatalf("%d trials stored, want 2", len(rec.Trials))
			}
			for _, tr := range rec.Trials {
				if tr.State != "complete" || tr.GPUs != 2 || tr.Total == nil || tr.Total.Metrics["completed"] != 16 {
					t.Errorf("trial %d: state %s, %d GPUs, reason %q; want complete with 16 requests on 2 GPUs", tr.Number, tr.State, tr.GPUs, tr.Reason)
					continue
				}
				l := tr.Provenance.Launch
				if l.Role != launcher.RoleRouter || len(l.Instances) != 2 || l.Instances[0].Role != launcher.RolePrefill ||
					l.Instances[1].Role != launcher.RoleDecode || len(l.GPUNames) != 2 {
					t.Errorf("trial %d's launch %+v: want the router's, with a prefill and a decode instance and two GPUs", tr.Number, l)
					continue
				}
				// The simulator emulates the current line, whose prefill instances are the
				// NixlConnector's kv_producer and decode instances its kv_consumer.
				line, err := vllm.Lookup(vllm.Current)
				if err != nil {
					t.Fatal(err)
				}
				for _, in := range l.Instances {
					if !strings.Contains(strings.Join(in.Command, " "), "--kv-transfer-config "+line.KVTransferConfig(in.Role == launcher.RolePrefill)) ||
						in.Env["VLLM_NIXL_SIDE_CHANNEL_PORT"] == "" || in.Capacity == nil || in.Capacity.KVCacheTokens == 0 {
						t.Errorf("trial %d's %s instance: command %q, env %v, capacity %v", tr.Number, in.Role, in.Command, in.Env, in.Capacity)
					}
				}
			}
		})
	}
}

// runProc is one process of the table.
type runProc struct {
	pid, pgrp int
	args      string
}

// runProcs lists the processes other than frontier itself (skip) that serve marker or work
// in dir.
func runProcs(dir, marker string, skip int) []runProc {
	var out []runProc
	for _, m := range []string{marker, dir} {
		for _, line := range scanProc(m, nil) {
			var p runProc
			if _, err := fmt.Sscanf(line, "%d:", &p.pid); err != nil || p.pid == skip {
				continue
			}
			_, p.args, _ = strings.Cut(line, ": ")
			p.args = " " + p.args + " "
			p.pgrp = procGroup(p.pid)
			dup := false
			for _, q := range out {
				dup = dup || q.pid == p.pid
			}
			if !dup {
				out = append(out, p)
			}
		}
	}
	return out
}

// procGroup is a process's group, from /proc/PID/stat, or 0.
func procGroup(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	var state string
	var ppid, pgrp int
	if _, err := fmt.Sscanf(s[i+1:], " %s %d %d", &state, &ppid, &pgrp); err != nil {
		return 0
	}
	return pgrp
}
