package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/frontier-llm/frontier/launcher"
)

// The preflight and the version model, from outside: `frontier validate` and `frontier apply`
// run as real subprocesses against stand-ins for a host's vLLM (vLLM cannot run here), small
// shell scripts that answer --version and serve --help=all as the case needs. The observed
// rows are the "versions" table of docs/reliability.md; -update rewrites it.

const versionsPlan = `study "pf" {
  trials = 2
}
model {
  name = "meta-llama/Llama-3.1-8B-Instruct"
}
engine "vllm" {
%s
}
hardware {
  gpus = 1
}
knob "max_num_seqs" {
  values = [16, 32]
}
workload "chat" {
  requests      = 10
  input_tokens  = fixed(100)
  output_tokens = fixed(10)
  arrival       = poisson(1)
}
objective "tput" {
  maximize = metric.total.output_token_throughput
}
`

func writeVersionsPlan(t *testing.T, dir, engine string) string {
	t.Helper()
	path := filepath.Join(dir, "plan.hcl")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(versionsPlan, engine)), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func writeScript(t *testing.T, dir, body string) string {
	t.Helper()
	path := filepath.Join(dir, "vllm")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// pidGone reports whether the process whose pid is in file ends within 5 s.
func pidGone(t *testing.T, file string) bool {
	t.Helper()
	raw, _ := os.ReadFile(file)
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatalf("the probe did not run: %q", raw)
	}
	for i := 0; i < 100; i++ {
		if syscall.Kill(pid, 0) != nil {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// waitFile waits until file has content.
func waitFile(t *testing.T, file string) {
	t.Helper()
	for i := 0; i < 600; i++ {
		if raw, err := os.ReadFile(file); err == nil && len(bytes.TrimSpace(raw)) > 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s was not written", file)
}

type versionsRow struct{ item, input, outcome string }

func TestReliabilityVersions(t *testing.T) {
	if testing.Short() {
		t.Skip("runs frontier; not in -short")
	}
	t.Parallel()
	var rows []versionsRow
	add := func(item, input, outcome string) { rows = append(rows, versionsRow{item, input, outcome}) }

	// 14: an unquoted version.
	dir := t.TempDir()
	r := frontier(t, dir, nil, "validate", writeVersionsPlan(t, dir, "  version = 0.20"))
	if r.code == 0 || !strings.Contains(r.stderr, "which HCL reads as 0.2") || !strings.Contains(r.stderr, `Quote it as written, e.g. version = "0.20"`) {
		t.Errorf("version = 0.20: exit %d\n%s", r.code, r.stderr)
	}
	add("engine.version", "`version = 0.20` (a number)", fmt.Sprintf("exit %d: \"written as a number, which HCL reads as 0.2 ... Quote it\"", r.code))

	dir = t.TempDir()
	r = frontier(t, dir, nil, "validate", writeVersionsPlan(t, dir, `  version = "0.33"`))
	if r.code != 0 || !strings.Contains(r.stdout+r.stderr, "0.33 is newer than frontier's newest table") {
		t.Errorf("version = \"0.33\": exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	add("engine.version", "`version = \"0.33\"`", fmt.Sprintf("exit %d with a warning: \"0.33 is newer than frontier's newest table\"", r.code))

	// 9: probes of the preflight, through `frontier apply`.
	dir = t.TempDir()
	pidFile := filepath.Join(dir, "probe.pid")
	hung := writeScript(t, dir, "echo $$ > "+pidFile+"\nexec sleep 300\n")
	cmd := exec.Command(frontierExe(t), "apply", writeVersionsPlan(t, dir, `  command = ["`+hung+`", "serve"]`), "--storage", filepath.Join(dir, "s.db"))
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFile(t, pidFile)
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	gone := pidGone(t, pidFile)
	if !gone {
		t.Errorf("SIGKILL of frontier left its --version probe running")
	}
	add("preflight probe", "SIGKILL of `frontier apply` while its `--version` probe hangs", fmt.Sprintf("probe gone: %v (parent-death signal, own process group)", gone))

	dir = t.TempDir()
	pidFile = filepath.Join(dir, "probe.pid")
	hung = writeScript(t, dir, "echo $$ > "+pidFile+"\nexec sleep 300\n")
	cmd = exec.Command(frontierExe(t), "apply", writeVersionsPlan(t, dir, `  command = ["`+hung+`", "serve"]`), "--storage", filepath.Join(dir, "s.db"))
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFile(t, pidFile)
	start := time.Now()
	_ = cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Errorf("Ctrl-C during a hung probe: frontier still running after 20 s")
	}
	quick := time.Since(start) < 10*time.Second
	said := strings.Contains(stderr.String(), "interrupted")
	if !quick || !said || !pidGone(t, pidFile) {
		t.Errorf("Ctrl-C during a hung probe: quick %v, said %q", quick, stderr.String())
	}
	add("preflight probe", "Ctrl-C of `frontier apply` while its `--version` probe hangs", fmt.Sprintf("ended within 10 s: %v; says \"interrupted\": %v; probe gone", quick, said))

	// The probes' other bounds, on launcher.PreflightWith itself.
	probeDir := t.TempDir()
	ctx := context.Background()
	slow := writeScript(t, probeDir, "exec sleep 300\n")
	_, err := launcher.PreflightWith(ctx, launcher.PreflightConfig{Command: []string{slow, "serve"}, Timeout: time.Second})
	ok := err != nil && strings.Contains(err.Error(), "gave no answer within 1s and was stopped")
	if !ok {
		t.Errorf("hung probe: %v", err)
	}
	add("preflight probe", "a `--version` that never answers (probe bound 1 s)", fmt.Sprintf("refused after the bound, \"gave no answer within 1s and was stopped\": %v", ok))

	endless := writeScript(t, t.TempDir(), "case \"$1\" in --version) echo 0.22.0; exit 0;; esac\nexec yes -- '  --flood'\n")
	start = time.Now()
	_, err = launcher.PreflightWith(ctx, launcher.PreflightConfig{Command: []string{endless, "serve"}})
	ok = err != nil && strings.Contains(err.Error(), "more than 4 MiB") && time.Since(start) < 30*time.Second
	if !ok {
		t.Errorf("endless help: %v after %v", err, time.Since(start))
	}
	add("preflight probe", "an endless `--help=all`", fmt.Sprintf("stopped at 4 MiB of output and refused: %v", ok))

	envScript := writeScript(t, t.TempDir(), "case \"$1\" in --version) echo \"$HOST_LINE\"; exit 0;; esac\nprintf 'usage: x\\n\\noptions:\\n  --max-num-seqs N\\n'\n")
	pf, err := launcher.PreflightWith(ctx, launcher.PreflightConfig{Command: []string{envScript, "serve"}, Env: map[string]string{"HOST_LINE": "0.22.1"}})
	ok = err == nil && pf.Version == "0.22.1"
	if !ok {
		t.Errorf("engine env: %q %v", pf.Version, err)
	}
	add("preflight probe", "a probe that needs the engine block's `env`", fmt.Sprintf("runs with it (version %q read)", pf.Version))

	failing := writeScript(t, t.TempDir(), "printf 'ImportError: libcuda.so.1\\033[2J\\n' >&2\nexit 3\n")
	_, err = launcher.PreflightWith(ctx, launcher.PreflightConfig{Command: []string{failing, "serve"}})
	ok = err != nil && strings.Contains(err.Error(), "--version failed (exit status 3)") && strings.Contains(err.Error(), `ImportError: libcuda.so.1\x1b[2J`) && !strings.Contains(err.Error(), "\x1b")
	if !ok {
		t.Errorf("failing probe: %v", err)
	}
	add("preflight probe", "a `--version` that fails with a terminal escape in its output", fmt.Sprintf("refused naming the command, \"exit status 3\" and the output, escape shown as `\\x1b`: %v", ok))

	binary := writeScript(t, t.TempDir(), "printf '\\000\\001\\377\\376' \nexit 1\n")
	_, err = launcher.PreflightWith(ctx, launcher.PreflightConfig{Command: []string{binary, "serve"}})
	ok = err != nil && strings.Contains(err.Error(), "bytes of binary output, not shown") && !strings.ContainsRune(err.Error(), 0)
	if !ok {
		t.Errorf("binary output: %v", err)
	}
	add("preflight probe", "a probe that prints binary output", fmt.Sprintf("summarised as \"N bytes of binary output, not shown\": %v", ok))

	// 15: coloured help.
	colour := writeScript(t, t.TempDir(), "case \"$1\" in --version) echo 0.22.0; exit 0;; esac\n"+
		"printf '\\033[1;34musage:\\033[0m vllm serve\\n\\n\\033[1;34moptions:\\033[0m\\n  \\033[1;36m--max-num-seqs\\033[0m \\033[1;33mMAX_NUM_SEQS\\033[0m\\n'\n")
	_, err = launcher.PreflightWith(ctx, launcher.PreflightConfig{Command: []string{colour, "serve"}, Knobs: []launcher.Setting{{Name: "max_num_seqs", Value: int64(8)}}})
	if err != nil {
		t.Errorf("coloured help: %v", err)
	}
	add("preflight help", "`--help=all` in colour (Python 3.14 argparse, FORCE_COLOR)", fmt.Sprintf("colour codes removed, `max_num_seqs` found: %v", err == nil))

	if t.Failed() {
		return
	}
	var b strings.Builder
	b.WriteString("| area | input | observed |\n|---|---|---|\n")
	for _, row := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", row.item, cell(row.input), cell(row.outcome))
	}
	checkReliabilityDoc(t, "versions", b.String())
}
