package launcher

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/frontier-llm/frontier/vllm"
)

// These tests run the preflight against stand-ins for a host's vLLM (vLLM cannot run here):
// small shell scripts that answer --version and serve --help=all with texts generated from
// frontier's own tables (vllm.Version.Help, argparse's layout) or written for the case.

// hostScript writes an executable script whose --version prints version (verbatim) and whose
// serve --help=all / --help prints help; it returns the engine command.
func hostScript(t *testing.T, version, help string) []string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "help.txt"), []byte(help), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "version.txt"), []byte(version), 0o644); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "vllm")
	body := "#!/bin/sh\nd=$(dirname \"$0\")\ncase \"$1\" in --version) cat \"$d/version.txt\"; exit 0;; esac\n" +
		"case \"$2\" in --help*) cat \"$d/help.txt\"; exit 0;; esac\nexit 2\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return []string{script, "serve"}
}

// rawScript writes an executable shell script with the given body.
func rawScript(t *testing.T, body string) string {
	t.Helper()
	script := filepath.Join(t.TempDir(), "vllm")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return script
}

func tableHelp(t *testing.T, line string) string {
	t.Helper()
	v, err := vllm.Lookup(line)
	if err != nil {
		t.Fatal(err)
	}
	return v.Help("vllm serve [model_tag] [options]")
}

// TestPreflightOnANewerHost: a 0.33 host (help generated from the newest table, a platform
// line logged before the version) takes max_num_scheduled_tokens and grpc = false, with a
// warning that it is newer than the newest table; the command line is built from its help;
// a knob it removed is refused with the removal named.
func TestPreflightOnANewerHost(t *testing.T) {
	t.Parallel()
	cmd := hostScript(t, "INFO 08-14 10:00:00 [__init__.py:241] Automatically detected platform cuda.\n0.33.0\n", tableHelp(t, vllm.Current))
	knobs := []Setting{{"max_num_scheduled_tokens", int64(4096)}, {"grpc", false}, {"enable_prefix_caching", false}}
	pf, err := PreflightWith(context.Background(), PreflightConfig{Command: cmd, Knobs: knobs})
	if err != nil {
		t.Fatalf("PreflightWith: %v", err)
	}
	if pf.Version != "0.33.0" {
		t.Errorf("Version = %q, want the version line 0.33.0", pf.Version)
	}
	if len(pf.Warnings) == 0 || !strings.Contains(strings.Join(pf.Warnings, "\n"), "0.33.0 is newer than frontier's newest table, v"+vllm.Current) {
		t.Errorf("Warnings = %q, want the newer host named", pf.Warnings)
	}
	if pf.Model == nil || !pf.Model.Host() {
		t.Fatalf("Model = %v, want the host's flag model", pf.Model)
	}
	e := newOpenAIEngine(KindVLLM, Options{})
	UseHostModel(e, cmd, pf.Model)
	argv, err := e.argv(Spec{Command: cmd, Model: "m", Settings: knobs}, 8000, pf.Version)
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Join(argv, " ")
	if strings.Contains(line, "grpc") || !strings.Contains(line, "--max-num-scheduled-tokens 4096") || !strings.Contains(line, "--no-enable-prefix-caching") {
		t.Errorf("argv = %q: want grpc = false left out, the new flag and --no-enable-prefix-caching", line)
	}

	_, err = PreflightWith(context.Background(), PreflightConfig{Command: cmd, Knobs: []Setting{{"max_num_partial_prefills", int64(2)}}})
	if !errors.Is(err, ErrPreflight) || !strings.Contains(err.Error(), `knob "max_num_partial_prefills"`) || !strings.Contains(err.Error(), "removed in v0.28") {
		t.Errorf("a removed knob: %v, want ErrPreflight naming the knob and its removal", err)
	}
}

// TestPreflightAgainstEveryLine: a host of each modelled line (help from that line's table)
// takes every flag of the line and refuses one it lacks.
func TestPreflightAgainstEveryLine(t *testing.T) {
	t.Parallel()
	for _, line := range []string{"0.13", "0.22", vllm.Current} {
		cmd := hostScript(t, line+".0\n", tableHelp(t, line))
		pf, err := PreflightWith(context.Background(), PreflightConfig{Command: cmd, Knobs: []Setting{{"max_num_seqs", int64(8)}}})
		if err != nil || pf.Version != line+".0" || len(pf.Warnings) != 0 {
			t.Errorf("v%s: version %q warnings %q error %v", line, pf.Version, pf.Warnings, err)
		}
		_, err = PreflightWith(context.Background(), PreflightConfig{Command: cmd, Args: []string{"--no-such-flag-at-all"}})
		if !errors.Is(err, ErrPreflight) {
			t.Errorf("v%s took --no-such-flag-at-all: %v", line, err)
		}
	}
}

func TestPreflightReadsOptionLinesNotProse(t *testing.T) {
	t.Parallel()
	help := "usage: vllm serve [options]\n\nSee --prose-flag for more.\n\noptions:\n  --max-num-seqs MAX_NUM_SEQS\n" +
		"                        also see --described-flag (default: None)\n"
	cmd := hostScript(t, "0.22.0\n", help)
	_, err := PreflightWith(context.Background(), PreflightConfig{Command: cmd, Knobs: []Setting{{"max_num_seqs", int64(8)}, {"described_flag", int64(1)}}})
	if !errors.Is(err, ErrPreflight) || !strings.Contains(err.Error(), `knob "described_flag"`) || strings.Contains(err.Error(), "max_num_seqs") {
		t.Errorf("a flag named only in prose: %v, want it refused and max_num_seqs taken", err)
	}
}

// TestPreflightReadsColouredHelp: Python 3.14's argparse colours its help with FORCE_COLOR.
func TestPreflightReadsColouredHelp(t *testing.T) {
	t.Parallel()
	help := "\x1b[1;34musage: \x1b[0mvllm serve\n\n\x1b[1;34moptions:\x1b[0m\n  \x1b[1;36m--max-num-seqs\x1b[0m \x1b[1;33mMAX_NUM_SEQS\x1b[0m\n" +
		"  \x1b[1;36m--enable-prefix-caching\x1b[0m, \x1b[1;36m--no-enable-prefix-caching\x1b[0m\n"
	cmd := hostScript(t, "0.22.0\n", help)
	_, err := PreflightWith(context.Background(), PreflightConfig{Command: cmd, Knobs: []Setting{{"max_num_seqs", int64(8)}, {"enable_prefix_caching", false}}})
	if err != nil {
		t.Errorf("coloured help: %v", err)
	}
}

func TestPreflightRefusesAFailingVersion(t *testing.T) {
	t.Parallel()
	script := rawScript(t, "printf 'Traceback (most recent call last):\\n\\033[31mImportError: libcuda.so.1\\033[0m\\n' >&2\nexit 3\n")
	_, err := PreflightWith(context.Background(), PreflightConfig{Command: []string{script, "serve"}})
	if err == nil || !strings.Contains(err.Error(), script+" --version failed (exit status 3)") ||
		!strings.Contains(err.Error(), "ImportError: libcuda.so.1") || strings.Contains(err.Error(), "\x1b") {
		t.Errorf("a failing --version: %v, want its command, status and escaped output", err)
	}
	bin := rawScript(t, "printf '\\000\\001\\002\\377\\376garbage' \nexit 1\n")
	_, err = PreflightWith(context.Background(), PreflightConfig{Command: []string{bin, "serve"}})
	if err == nil || !strings.Contains(err.Error(), "bytes of binary output, not shown") || strings.ContainsRune(err.Error(), 0) {
		t.Errorf("binary output: %v, want it summarised, not echoed", err)
	}
	// A compatible server without --version runs, with a warning.
	compat := rawScript(t, "case \"$1\" in --version) echo 'unknown flag: --version' >&2; exit 1;; esac\n"+
		"echo 'Usage of sim:'; echo '      --port int   port'; echo '      --max-num-seqs int   seqs'\n")
	pf, err := PreflightWith(context.Background(), PreflightConfig{Command: []string{compat}, Compatible: true, Knobs: []Setting{{"max_num_seqs", int64(4)}}})
	if err != nil || pf.Version != "" || len(pf.Warnings) == 0 || !strings.Contains(pf.Warnings[0], "answers no version") {
		t.Errorf("compatible server without --version: version %q warnings %q error %v", pf.Version, pf.Warnings, err)
	}
}

func TestPreflightProbesAreBounded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	hung := rawScript(t, "echo $$ > "+pidFile+"\nexec sleep 60\n")
	start := time.Now()
	_, err := PreflightWith(context.Background(), PreflightConfig{Command: []string{hung, "serve"}, Timeout: 300 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "gave no answer within 300ms") || time.Since(start) > 5*time.Second {
		t.Errorf("hung probe: %v after %v, want a bounded, clear error", err, time.Since(start))
	}
	waitGone(t, pidFile)

	// Ctrl-C (a cancelled context) ends the probe at once.
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start = time.Now()
	_, err = PreflightWith(ctx, PreflightConfig{Command: []string{hung, "serve"}})
	if err == nil || !strings.Contains(err.Error(), "interrupted") || time.Since(start) > 5*time.Second {
		t.Errorf("cancelled probe: %v after %v, want interrupted at once", err, time.Since(start))
	}

	// An endless help is cut off at the output bound.
	endless := rawScript(t, "case \"$1\" in --version) echo 0.22.0; exit 0;; esac\nexec yes -- '--flood-flag'\n")
	start = time.Now()
	_, err = PreflightWith(context.Background(), PreflightConfig{Command: []string{endless, "serve"}})
	if err == nil || !strings.Contains(err.Error(), "more than 4 MiB") || time.Since(start) > 20*time.Second {
		t.Errorf("endless help: %v after %v, want it stopped at the bound", err, time.Since(start))
	}
}

func TestPreflightRunsWithTheEngineEnv(t *testing.T) {
	t.Parallel()
	script := rawScript(t, "case \"$1\" in --version) echo \"$HOST_VLLM_VERSION\"; exit 0;; esac\n"+
		"printf 'usage: x\\n\\noptions:\\n  --max-num-seqs N\\n'\n")
	pf, err := PreflightWith(context.Background(), PreflightConfig{Command: []string{script, "serve"}, Env: map[string]string{"HOST_VLLM_VERSION": "0.22.1"}})
	if err != nil || pf.Version != "0.22.1" {
		t.Errorf("Version = %q (%v), want the one the engine env gives", pf.Version, err)
	}
}

// TestPreflightProbeDiesWithFrontier: SIGKILL of the process running the preflight leaves no
// probe behind (the parent-death signal). The test binary runs the preflight in a child.
func TestPreflightProbeDiesWithFrontier(t *testing.T) {
	if os.Getenv("PREFLIGHT_CHILD") != "" {
		_, _ = PreflightWith(context.Background(), PreflightConfig{Command: []string{os.Getenv("PREFLIGHT_CHILD"), "serve"}})
		os.Exit(0)
	}
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	hung := rawScript(t, "echo $$ > "+pidFile+"\nexec sleep 60\n")
	child := exec.Command(os.Args[0], "-test.run=^TestPreflightProbeDiesWithFrontier$")
	child.Env = append(os.Environ(), "PREFLIGHT_CHILD="+hung)
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(90 * time.Second) // the child test binary starts with TestMain
	for {
		if raw, err := os.ReadFile(pidFile); err == nil && len(strings.TrimSpace(string(raw))) > 0 {
			break
		}
		if time.Now().After(deadline) {
			_ = child.Process.Kill()
			t.Fatal("the probe did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = child.Process.Signal(syscall.SIGKILL)
	_ = child.Wait()
	waitGone(t, pidFile)
}

// waitGone fails unless the process whose pid is in pidFile is gone within a few seconds.
func waitGone(t *testing.T, pidFile string) {
	t.Helper()
	raw, _ := os.ReadFile(pidFile)
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatalf("the probe did not run: %q", raw)
	}
	for i := 0; i < 100 && alive(pid); i++ {
		time.Sleep(50 * time.Millisecond)
	}
	if alive(pid) {
		t.Errorf("probe %d is still running", pid)
	}
}

// TestPreflightChecksChoices: a knob value outside the choices the host lists is refused,
// named once however often it is given.
func TestPreflightChecksChoices(t *testing.T) {
	t.Parallel()
	cmd := hostScript(t, "0.22.0\n", tableHelp(t, "0.22"))
	knobs := []Setting{{"kv_cache_dtype", "nvfp4"}, {"kv_cache_dtype", "int8_per_token_head"}, {"quantization", "none"}}
	if _, err := PreflightWith(context.Background(), PreflightConfig{Command: cmd, Knobs: knobs}); err != nil {
		t.Errorf("v0.22 dtypes: %v", err)
	}
	knobs = append(knobs, Setting{"kv_cache_dtype", "int4_per_token_head"}, Setting{"kv_cache_dtype", "int4_per_token_head"})
	_, err := PreflightWith(context.Background(), PreflightConfig{Command: cmd, Knobs: knobs})
	if !errors.Is(err, ErrPreflight) || strings.Count(err.Error(), "int4_per_token_head: vLLM 0.22.0 takes one of") != 1 {
		t.Errorf("a dtype v0.22 lacks: %v, want it refused once with the host's choices", err)
	}
}

// TestPreflightAcceptsAProbeWhoseChildrenHoldItsOutput: a vLLM whose --version and --help
// leave two children each, in sessions of their own, holding the output, answered and exited
// 0: its answer is taken, and the children are killed.
func TestPreflightAcceptsAProbeWhoseChildrenHoldItsOutput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// Each child writes its pid to a file of its own, then sleeps holding stdout and stderr.
	leave := "for i in 1 2; do f=\"" + dir + "/child-$1-$i\"; setsid sh -c 'echo $$ > \"$0\"; exec sleep 300' \"$f\" &\n" +
		"while [ ! -s \"$f\" ]; do sleep 0.02; done; done\n"
	script := rawScript(t, "leave() {\n"+leave+"}\n"+
		"case \"$1\" in --version) leave version; echo 0.22.0; exit 0;; esac\n"+
		"leave help; printf 'usage: x\\n\\noptions:\\n  --max-num-seqs N\\n'\n")
	start := time.Now()
	pf, err := PreflightWith(context.Background(), PreflightConfig{Command: []string{script, "serve"}, Knobs: []Setting{{"max_num_seqs", int64(4)}}})
	if err != nil || pf.Version != "0.22.0" || !slices.Contains(pf.Flags, "--max-num-seqs") {
		t.Fatalf("PreflightWith = version %q, flags %v, %v; want 0.22.0 and --max-num-seqs", pf.Version, pf.Flags, err)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("the preflight took %s", took)
	}
	pids, _ := filepath.Glob(filepath.Join(dir, "child-*"))
	if len(pids) < 4 {
		t.Fatalf("%d children wrote their pid, want at least 4 (two a probe): %v", len(pids), pids)
	}
	for _, f := range pids {
		waitGone(t, f)
	}
}
