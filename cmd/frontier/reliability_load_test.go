package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestReliabilityLoadHoldsTwoThousandStreams drives `frontier sim serve` with `frontier bench`
// at 2,000 concurrent streams on loopback, two rounds, both real subprocesses: every request
// must complete, and the server's resident memory must level off instead of growing with
// each round.
func TestReliabilityLoadHoldsTwoThousandStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("2,000 streams; not in -short")
	}
	const streams = 2000
	mk := marker(t.Name())
	port := freePort(t)
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	exe := loadFrontier(t)
	srv := exec.CommandContext(ctx, exe, "sim", "serve", mk, "--sku", "h200", "--architecture", "llama-3.1-8b",
		"--max-num-seqs", "2048", "--max-num-batched-tokens", "131072", "--max-model-len", "2048",
		"--host", "127.0.0.1", "--port", strconv.Itoa(port))
	srv.Stdout, srv.Stderr = nil, nil
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = srv.Process.Signal(os.Interrupt)
		_ = srv.Wait()
		if l := left(mk); l != "none" {
			t.Errorf("processes left running: %s", l)
		}
	}()
	waitHealthy(t, url, time.Minute)

	var rss []int
	for round := 1; round <= 2; round++ {
		peakc := make(chan float64, 1)
		stop := make(chan struct{})
		go func() { peakc <- peakInServer(url, stop) }()
		r := runProgram(t, exe, "bench", "--url", url, "--model", mk, "--concurrency", strconv.Itoa(streams),
			"--requests", strconv.Itoa(streams), "--input-tokens", "32", "--output-tokens", "64", "--token-ids", "--json")
		if r.code != 0 {
			t.Fatalf("round %d: frontier bench exited %d:\n%s", round, r.code, r.stderr)
		}
		close(stop)
		peak := <-peakc
		var m struct {
			Total struct {
				Metrics map[string]float64 `json:"metrics"`
			} `json:"total"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &m); err != nil {
			t.Fatalf("round %d: bench JSON: %v\n%s", round, err, r.stdout)
		}
		if got := m.Total.Metrics["completed"]; got != streams || m.Total.Metrics["failed"] != 0 {
			t.Errorf("round %d: completed %v, failed %v; want %d and 0", round, got, m.Total.Metrics["failed"], streams)
		}
		if peak < 0.9*streams {
			t.Errorf("round %d: at most %v requests in the server at once; want about %d", round, peak, streams)
		}
		rss = append(rss, rssKiB(t, srv.Process.Pid))
	}
	t.Logf("server RSS after each round: %v KiB", rss)
	// Memory levels off: the second round costs little more than the first.
	if rss[1] > rss[0]+rss[0]/4+32<<10 {
		t.Errorf("server RSS grew from %d KiB to %d KiB in the second round; want it to level off", rss[0], rss[1])
	}
	if rss[1] > 2<<20 {
		t.Errorf("server RSS %d KiB after two rounds of %d streams; want under 2 GiB", rss[1], streams)
	}
	if t.Failed() {
		return
	}
	checkReliabilityDoc(t, "load", "| load | rounds | every request completed | most requests in the server at once | server memory |\n|---|---:|---|---|---|\n"+
		"| `frontier bench --concurrency 2000 --requests 2000 --output-tokens 64` against `frontier sim serve --max-num-seqs 2048`, both subprocesses on loopback | 2 | yes, 0 failed | at least 1,800 | levels off: the second round adds under 25% (+32 MiB), under 2 GiB in all |\n")
}

// peakInServer polls the server's /metrics every 20 ms until stop is closed and returns the
// most requests it held at once (vllm:num_requests_running plus vllm:num_requests_waiting).
func peakInServer(url string, stop <-chan struct{}) float64 {
	peak := 0.0
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		select {
		case <-stop:
			return peak
		case <-time.After(20 * time.Millisecond):
		}
		resp, err := client.Get(url + "/metrics")
		if err != nil {
			continue
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		sum := 0.0
		for _, l := range strings.Split(string(raw), "\n") {
			if strings.HasPrefix(l, "vllm:num_requests_running") || strings.HasPrefix(l, "vllm:num_requests_waiting") {
				f := strings.Fields(l)
				if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
					sum += v
				}
			}
		}
		peak = max(peak, sum)
	}
}

// loadFrontier is the frontier program for the load test: the test binary, or under the race
// detector a plain build, since the detector's own cost in memory and CPU (5 to 10 times)
// would be what the test measured.
func loadFrontier(t *testing.T) string {
	t.Helper()
	if !raceEnabled {
		return frontierExe(t)
	}
	bin := filepath.Join(t.TempDir(), "frontier")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// runProgram runs exe with args, bounded to two minutes.
func runProgram(t *testing.T, exe string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, args...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s %s: %v", exe, strings.Join(args, " "), err)
	}
	return r
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func waitHealthy(t *testing.T, url string, d time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		resp, err := http.Get(url + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
	}
	t.Fatalf("%s/health did not answer 200 within %v", url, d)
}

// rssKiB is the resident memory of process pid, from /proc/pid/status.
func rssKiB(t *testing.T, pid int) int {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			n, err := strconv.Atoi(f[1])
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}
