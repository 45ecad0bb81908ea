package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/frontier-llm/frontier/record"
	"github.com/frontier-llm/frontier/search/storage"
)

// relPlan is a small study on the simulated vLLM whose engine arguments carry the simulator's
// fault flags. Model is the test's marker: it is the served model name, so the engines of one
// case can be found in the process table.
type relPlan struct {
	Study          string
	Model          string
	Args           []string // engine args: the --fault-* flags
	StartupTimeout string
	Trials         int
	Requests       int
	Knob           string // values of max_num_seqs
	Workload       string // extra lines of the workload block
	SLO            string // extra lines of its slo block
	Input          string // the input_tokens line, or a dataset line
	SecretEnv      []string
	Command        string // the engine block's command, when not the default
}

func (p relPlan) hcl() string {
	q := func(xs []string) string {
		var s []string
		for _, x := range xs {
			s = append(s, strconv.Quote(x))
		}
		return "[" + strings.Join(s, ", ") + "]"
	}
	if p.Study == "" {
		p.Study = "reliability"
	}
	if p.StartupTimeout == "" {
		p.StartupTimeout = "30s"
	}
	if p.Trials == 0 {
		p.Trials = 1
	}
	if p.Requests == 0 {
		p.Requests = 12
	}
	if p.Knob == "" {
		p.Knob = "32, 64, 128"
	}
	if p.Input == "" {
		p.Input = "input_tokens  = uniform(50, 100)"
	}
	secret := ""
	if len(p.SecretEnv) > 0 {
		secret = "  secret_env      = " + q(p.SecretEnv) + "\n"
	}
	if p.Command != "" {
		secret += "  command         = " + q([]string{p.Command}) + "\n"
	}
	return fmt.Sprintf(`study %q {
  trials  = %d
  sampler = "grid"
  confirm = 0
}

model {
  name          = %q
  architecture  = "llama-3.1-8b"
  max_model_len = 4096
}

engine "sim" {
  args            = %s
  startup_timeout = %q
%s}

hardware {
  gpus = 1
  sku  = "h100-sxm"
}

knob "max_num_seqs" { values = [%s] }

workload "chat" {
  requests      = %d
  %s
  output_tokens = uniform(10, 20)
  arrival       = poisson(8)
%s  slo {
    ttft_p99 = "30s"
%s  }
}

objective "throughput" {
  maximize = metric.total.output_token_throughput
}
`, p.Study, p.Trials, p.Model, q(p.Args), p.StartupTimeout, secret, p.Knob, p.Requests, p.Input, p.Workload, p.SLO)
}

// marker returns a model name unique to this test process and case, so that the process
// table can be searched for what the case started.
func marker(name string) string {
	return fmt.Sprintf("rel-%s-%d", regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(name), "-"), os.Getpid())
}

// writePlan writes p to dir/plan.hcl and returns its path.
func writePlan(t *testing.T, dir string, p relPlan) string {
	t.Helper()
	path := filepath.Join(dir, "plan.hcl")
	if err := os.WriteFile(path, []byte(p.hcl()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// frontierExe is the frontier program that testscript put in $PATH: the test binary itself,
// run as a real subprocess.
func frontierExe(t *testing.T) string {
	t.Helper()
	exe, err := exec.LookPath("frontier")
	if err != nil {
		t.Fatalf("frontier is not in $PATH: %v", err)
	}
	return exe
}

// result is what a finished frontier process showed the user.
type result struct {
	code           int
	stdout, stderr string
	elapsed        time.Duration
	pid            int
}

// frontier runs frontier with args in dir and env (added to the test's environment), bounded
// to two minutes.
func frontier(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, frontierExe(t), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String(), elapsed: time.Since(start)}
	if cmd.Process != nil {
		r.pid = cmd.Process.Pid
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		t.Fatalf("frontier %s: %v", strings.Join(args, " "), err)
	}
	if ctx.Err() != nil {
		t.Fatalf("frontier %s did not finish within two minutes; stderr:\n%s", strings.Join(args, " "), r.stderr)
	}
	return r
}

// running is a frontier process started in the background.
type running struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	stderr bytes.Buffer
	lines  chan string
	done   chan struct{}
	out    bytes.Buffer
}

// startFrontier starts frontier in the background; its stderr lines can be awaited.
func startFrontier(t *testing.T, dir string, env []string, args ...string) *running {
	t.Helper()
	cmd := exec.Command(frontierExe(t), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	r := &running{cmd: cmd, lines: make(chan string, 1024), done: make(chan struct{})}
	cmd.Stdout = &r.out
	pr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(r.done)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			r.mu.Lock()
			r.stderr.WriteString(sc.Text() + "\n")
			r.mu.Unlock()
			select {
			case r.lines <- sc.Text():
			default:
			}
		}
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return r
}

// await waits up to d for a stderr line matching re.
func (r *running) await(t *testing.T, re string, d time.Duration) {
	t.Helper()
	rx := regexp.MustCompile(re)
	timeout := time.After(d)
	for {
		select {
		case l := <-r.lines:
			if rx.MatchString(l) {
				return
			}
		case <-r.done:
			t.Fatalf("frontier exited before printing %q; stderr:\n%s", re, r.errText())
		case <-timeout:
			t.Fatalf("frontier did not print %q within %v; stderr:\n%s", re, d, r.errText())
		}
	}
}

func (r *running) errText() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stderr.String()
}

// wait waits up to d for the process to exit and returns what it showed.
func (r *running) wait(t *testing.T, d time.Duration) result {
	t.Helper()
	exited := make(chan error, 1)
	start := time.Now()
	go func() {
		<-r.done
		exited <- r.cmd.Wait()
	}()
	select {
	case err := <-exited:
		res := result{stdout: r.out.String(), stderr: r.errText(), elapsed: time.Since(start), pid: r.cmd.Process.Pid}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			res.code = ee.ExitCode()
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				res.code = 128 + int(ws.Signal())
			}
		} else if err != nil {
			t.Fatal(err)
		}
		return res
	case <-time.After(d):
		_ = r.cmd.Process.Kill()
		t.Fatalf("frontier did not exit within %v; stderr:\n%s", d, r.errText())
		return result{}
	}
}

// leftBehind lists the processes that belong to a run: those whose command line holds the
// case's marker (the engines it started, by their served model name), those working in the
// marker's folder when it is one, and those in the process group of one of pids. It waits up to three seconds for them to go.
func leftBehind(marker string, pids ...int) []string {
	var found []string
	for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		found = scanProc(marker, pids)
		if len(found) == 0 || time.Now().After(deadline) {
			return found
		}
	}
}

func scanProc(marker string, pids []int) []string {
	entries, _ := os.ReadDir("/proc")
	self := os.Getpid()
	var found []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces, so split after the last ')'.
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) < 3 || fields[0] == "Z" {
			continue
		}
		pgrp, _ := strconv.Atoi(fields[2])
		args := strings.ReplaceAll(string(cmdline), "\x00", " ")
		mine := strings.Contains(args, marker)
		// Engines run in their trial's folder beside the study database: a marker that is
		// a folder also finds them by their working directory.
		if cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd")); err == nil && filepath.IsAbs(marker) && strings.HasPrefix(cwd, marker) {
			mine = true
		}
		for _, p := range pids {
			if p > 0 && pgrp == p {
				mine = true
			}
		}
		if mine {
			found = append(found, fmt.Sprintf("%d: %s", pid, strings.TrimSpace(args)))
		}
	}
	return found
}

// study reads the study back as `frontier report` would.
func study(t *testing.T, db string) *record.Study {
	t.Helper()
	rec, err := storage.Load(context.Background(), db, "")
	if err != nil {
		t.Fatalf("load the study in %s: %v", db, err)
	}
	return rec
}

// storedSummary describes the trials of a study in one deterministic line: how many, their
// states and failure classes, and whether a trial number or a configuration appears twice.
func storedSummary(rec *record.Study) string {
	counts := map[string]int{}
	numbers := map[int]bool{}
	configs := map[string]int{}
	dup := 0
	for _, tr := range rec.Trials {
		k := string(tr.State)
		if tr.FailureClass != "" {
			k += " (" + string(tr.FailureClass) + ")"
		}
		counts[k]++
		if numbers[tr.Number] {
			dup++
		}
		numbers[tr.Number] = true
		configs[fmt.Sprint(tr.Config)]++
	}
	for _, n := range configs {
		if n > 1 {
			dup += n - 1
		}
	}
	var keys []string
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d %s", counts[k], k))
	}
	s := fmt.Sprintf("%d trial(s): %s", len(rec.Trials), strings.Join(parts, ", "))
	if dup > 0 {
		s += fmt.Sprintf("; %d DUPLICATE(S)", dup)
	}
	return s
}

// requestCounts is "completed C, failed F (errors)" of a trial's total.
func requestCounts(tr record.Trial) string {
	if tr.Total == nil {
		return "no measurement"
	}
	m := tr.Total.Metrics
	s := fmt.Sprintf("completed %d, failed %d", int(m["completed"]), int(m["failed"]))
	if w := tr.Workloads["chat"]; w != nil && len(w.Errors) > 0 {
		var keys []string
		for k := range w.Errors {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var parts []string
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%s %d", k, w.Errors[k]))
		}
		s += " (" + strings.Join(parts, ", ") + ")"
	}
	return s
}

// lastLine is the last line of s that starts with "frontier ", trimmed of its prefix, or
// the last non-empty line.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], "frontier apply: ") {
			return strings.TrimPrefix(lines[i], "frontier apply: ")
		}
	}
	return lines[len(lines)-1]
}

// copyFile copies src to dst.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
