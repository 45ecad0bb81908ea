package launcher

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// binaries built once for the whole test run by TestMain; read-only afterwards.
var (
	// standinBin stands in for `vllm serve`: vLLM cannot run here (no GPU). It is a real
	// subprocess with vLLM's command line, log lines and endpoints.
	standinBin string
	// frontierBin is the frontier binary, whose `frontier sim serve` is the simulated vLLM;
	// empty when it could not be built.
	frontierBin   string
	frontierBuild string // why frontierBin is empty
)

// parentEnv makes the test binary a parent that starts an engine and waits to be killed
// (see TestEngineDiesWithKilledParent); its value is the stand-in's path.
const parentEnv = "FRONTIER_LAUNCHER_TEST_PARENT"

func TestMain(m *testing.M) {
	if bin := os.Getenv(parentEnv); bin != "" {
		os.Exit(parent(bin))
	}
	dir, err := os.MkdirTemp("", "launcher-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	standinBin = filepath.Join(dir, "standin")
	if out, err := exec.Command("go", "build", "-o", standinBin, "./testdata/standin").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build the vLLM stand-in: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(2)
	}
	bin := filepath.Join(dir, "frontier")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/frontier").CombinedOutput(); err != nil {
		frontierBuild = fmt.Sprintf("build frontier: %v\n%s", err, out)
	} else {
		frontierBin = bin
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// groupMembers lists the processes in process group pgid, and the process pgid itself, by
// scanning /proc.
func groupMembers(t *testing.T, pgid int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatalf("read /proc: %v", err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // exited meanwhile
		}
		// Fields after the command name, which is in parentheses and may contain spaces.
		s := string(stat)
		rest := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(rest) < 3 {
			continue
		}
		state := rest[0]
		pg, _ := strconv.Atoi(rest[2])
		if state == "Z" || state == "X" {
			continue // a zombie holds no resources; reaped by its parent
		}
		if pg == pgid || pid == pgid {
			pids = append(pids, pid)
		}
	}
	return pids
}

// assertNoProcesses fails the test if anything of process group pgid is still running. Killed
// processes take a moment to disappear, so it polls briefly.
func assertNoProcesses(t *testing.T, pgid int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		left := groupMembers(t, pgid)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes of group %d still running: %v", pgid, left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// childPID reads the pid the stand-in logs for the child it spawned.
func childPID(t *testing.T, logPath string) int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(logPath)
		for _, line := range strings.Split(string(b), "\n") {
			if _, after, ok := strings.Cut(line, "child pid "); ok {
				pid, err := strconv.Atoi(strings.TrimSpace(after))
				if err == nil {
					return pid
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no child pid in %s", logPath)
	return 0
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	s := string(stat)
	rest := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(rest) > 0 && rest[0] != "Z" && rest[0] != "X"
}

// parent starts the stand-in through StartProcess, hanging at startup and ignoring SIGTERM,
// prints its pid and sleeps until it is killed.
func parent(standin string) int {
	p, err := StartProcess(context.Background(), ProcessConfig{
		Argv:    []string{standin, "serve", "m", "--fault-hang-startup", "--fault-ignore-term"},
		Env:     os.Environ(),
		LogPath: os.Getenv(parentEnv + "_LOG"),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Printf("engine pid %d\n", p.Pid())
	time.Sleep(time.Hour)
	return 0
}
