package launcher

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestProcessStopKillsWholeGroup(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		args  []string
		grace time.Duration
		// maxStop bounds how long Stop may take.
		maxStop time.Duration
	}{
		{"leader and child honour SIGTERM", []string{"--fault-spawn-child"}, 5 * time.Second, 4 * time.Second},
		{"leader ignores SIGTERM: SIGKILL after the grace", []string{"--fault-spawn-child", "--fault-ignore-term"}, 500 * time.Millisecond, 4 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			port, err := FreePort()
			if err != nil {
				t.Fatal(err)
			}
			logPath := filepath.Join(t.TempDir(), "engine.log")
			argv := append([]string{standinBin, "serve", "m", "--host", "127.0.0.1", "--port", fmt.Sprint(port)}, tc.args...)
			p, err := StartProcess(context.Background(), ProcessConfig{
				Argv: argv, LogPath: logPath, LogHeader: "# header\n", GracePeriod: tc.grace,
			})
			if err != nil {
				t.Fatal(err)
			}
			child := childPID(t, logPath)
			url := fmt.Sprintf("http://127.0.0.1:%d", port)
			if err := WaitReady(context.Background(), p, 10*time.Second, OpenAIProbe(nil, url, "m")); err != nil {
				t.Fatalf("WaitReady: %v", err)
			}
			start := time.Now()
			if err := p.Stop(context.Background()); err != nil {
				t.Fatalf("Stop: %v", err)
			}
			if took := time.Since(start); took > tc.maxStop {
				t.Errorf("Stop took %s, want at most %s", took, tc.maxStop)
			}
			// A second Stop is safe and returns at once.
			if err := p.Stop(context.Background()); err != nil {
				t.Fatalf("second Stop: %v", err)
			}
			assertNoProcesses(t, p.Pid())
			if alive(child) {
				t.Errorf("child %d of the engine still running", child)
			}
			log, _ := os.ReadFile(logPath)
			if !strings.HasPrefix(string(log), "# header\n") {
				t.Errorf("log does not start with the header: %q", firstLine(string(log)))
			}
		})
	}
}

func TestProcessLeaderExitKillsLeftoverChildren(t *testing.T) {
	t.Parallel()
	logPath := filepath.Join(t.TempDir(), "engine.log")
	// The leader spawns a child that ignores SIGTERM, then fails as vLLM does.
	p, err := StartProcess(context.Background(), ProcessConfig{
		Argv:    []string{standinBin, "serve", "m", "--fault-spawn-child", "--fault-message", "ValueError: boom"},
		LogPath: logPath,
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Exited():
	case <-time.After(10 * time.Second):
		p.Stop(context.Background())
		t.Fatal("stand-in did not exit")
	}
	if diff := cmp.Diff(1, p.ExitCode()); diff != "" {
		t.Errorf("exit code (-want +got):\n%s", diff)
	}
	assertNoProcesses(t, p.Pid())
	if !strings.Contains(p.LogTail(4096), "ValueError: boom") {
		t.Errorf("log tail lacks the engine's message: %q", p.LogTail(4096))
	}
}

func TestProcessStopWithDoneContextKillsAtOnce(t *testing.T) {
	t.Parallel()
	p, err := StartProcess(context.Background(), ProcessConfig{
		Argv:        []string{standinBin, "serve", "m", "--fault-hang-startup", "--fault-ignore-term"},
		LogPath:     filepath.Join(t.TempDir(), "engine.log"),
		GracePeriod: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	waitForLog(t, p.LogPath(), "loading the model") // SIGTERM is ignored from here on
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = p.Stop(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Stop = %v, want context.DeadlineExceeded", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Stop took %s despite its context", took)
	}
	assertNoProcesses(t, p.Pid())
}

func TestWaitReadyOutcomes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		timeout time.Duration
		want    error
	}{
		{"hung start hits the timeout", []string{"--fault-hang-startup"}, 700 * time.Millisecond, ErrStartupTimeout},
		{"exit before ready", []string{"--fault-message", "ValueError: no"}, 10 * time.Second, ErrExitedEarly},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			port, err := FreePort()
			if err != nil {
				t.Fatal(err)
			}
			argv := append([]string{standinBin, "serve", "m", "--host", "127.0.0.1", "--port", fmt.Sprint(port)}, tc.args...)
			p, err := StartProcess(context.Background(), ProcessConfig{Argv: argv, LogPath: filepath.Join(t.TempDir(), "log")})
			if err != nil {
				t.Fatal(err)
			}
			defer assertNoProcesses(t, p.Pid())
			defer p.Stop(context.Background())
			err = WaitReady(context.Background(), p, tc.timeout, OpenAIProbe(nil, fmt.Sprintf("http://127.0.0.1:%d", port), "m"))
			if !errors.Is(err, tc.want) {
				t.Errorf("WaitReady = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestWaitReadyWrongModelIsNotReady(t *testing.T) {
	t.Parallel()
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	p, err := StartProcess(context.Background(), ProcessConfig{
		Argv:    []string{standinBin, "serve", "other-model", "--host", "127.0.0.1", "--port", fmt.Sprint(port)},
		LogPath: filepath.Join(t.TempDir(), "log"),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer assertNoProcesses(t, p.Pid())
	defer p.Stop(context.Background())
	err = WaitReady(context.Background(), p, time.Second, OpenAIProbe(nil, fmt.Sprintf("http://127.0.0.1:%d", port), "m"))
	if !errors.Is(err, ErrStartupTimeout) || !strings.Contains(err.Error(), `"other-model"`) {
		t.Errorf("WaitReady = %v, want a timeout naming the model that is served", err)
	}
}

func TestStartProcessMissingProgramLeavesNothing(t *testing.T) {
	t.Parallel()
	logPath := filepath.Join(t.TempDir(), "engine.log")
	_, err := StartProcess(context.Background(), ProcessConfig{Argv: []string{filepath.Join(t.TempDir(), "no-such-engine")}, LogPath: logPath})
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("StartProcess = %v, want os.ErrNotExist", err)
	}
	if _, err := StartProcess(context.Background(), ProcessConfig{}); !errors.Is(err, ErrEmptyCommand) {
		t.Errorf("StartProcess(empty) = %v, want ErrEmptyCommand", err)
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// waitForLog waits until the log at path contains s.
func waitForLog(t *testing.T, path, s string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if b, _ := os.ReadFile(path); strings.Contains(string(b), s) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s never logged %q", path, s)
}

// TestEngineDiesWithKilledParent checks that an engine does not outlive a frontier killed
// with SIGKILL, which cannot stop it: a parent process (this test binary) starts the
// stand-in, which ignores SIGTERM, through StartProcess; the parent is killed, and the
// engine's process group must be gone shortly after.
func TestEngineDiesWithKilledParent(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), parentEnv+"="+standinBin, parentEnv+"_LOG="+filepath.Join(t.TempDir(), "engine.log"))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("read the engine's pid from the parent: %v", err)
	}
	var pgid int
	if _, err := fmt.Sscanf(line, "engine pid %d", &pgid); err != nil {
		t.Fatalf("parent said %q: %v", line, err)
	}
	if !alive(pgid) {
		t.Fatalf("the engine %d is not running before its parent is killed", pgid)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait() // killed: the error says so
	assertNoProcesses(t, pgid)
}

// TestProcessStopEndsDescendantsThatLeftTheGroup: an engine whose child calls setsid() has a
// descendant outside its process group, which signalling the group does not reach; it must
// end with the engine all the same, whether the engine is stopped or exits.
func TestProcessStopEndsDescendantsThatLeftTheGroup(t *testing.T) {
	t.Parallel()
	for _, stop := range []bool{true, false} {
		name := "stopped"
		leader := "sleep 300"
		if !stop {
			name, leader = "exits", "sleep 1.5"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			logPath := filepath.Join(t.TempDir(), "engine.log")
			p, err := StartProcess(context.Background(), ProcessConfig{
				Argv:        []string{"sh", "-c", "setsid sleep 300 & echo child pid $!; " + leader},
				Env:         []string{"PATH=" + os.Getenv("PATH")},
				LogPath:     logPath,
				GracePeriod: time.Second,
			})
			if err != nil {
				t.Fatal(err)
			}
			child := childPID(t, logPath)
			t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })
			time.Sleep(2 * descendantPoll) // the walk has seen it
			if pgid, _ := syscall.Getpgid(child); pgid == p.Pid() {
				t.Fatalf("the child %d did not leave the group %d: the test no longer checks what it means to", child, pgid)
			}
			if stop {
				if err := p.Stop(context.Background()); err != nil {
					t.Fatal(err)
				}
			} else {
				<-p.Exited()
			}
			deadline := time.Now().Add(3 * time.Second)
			for alive(child) && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
			if alive(child) {
				t.Errorf("the engine's descendant %d, in its own session, outlived it", child)
			}
		})
	}
}
