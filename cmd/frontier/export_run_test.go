package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestDisaggregatedExportRunsAsPrintedOnOneHost measures a 1p1d trial with `frontier apply`
// on the simulated vLLM, exports it with `frontier export --format vllm-args`, and runs the
// export's lines as they are printed, with one change: `frontier sim serve --sku h100-sxm
// --architecture llama-3.1-8b` stands in for `vllm serve` (no vLLM and no GPU here; the
// simulator needs to be told which GPU and model to simulate). Both instances start on the
// one host without a clash of port, NIXL side channel or GPU, each with the kv_role of its
// role, and a request through the router's line is answered.
func TestDisaggregatedExportRunsAsPrintedOnOneHost(t *testing.T) {
	dir := t.TempDir()
	model := marker("pd-export")
	if err := os.WriteFile(filepath.Join(dir, "plan.hcl"), []byte(fmt.Sprintf(disaggPlan, model, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := frontier(t, dir, nil, "apply", "plan.hcl", "--storage", "study.db", "--trials", "1"); r.code != 0 {
		t.Fatalf("frontier apply exited %d:\n%s", r.code, r.stderr)
	}
	r := frontier(t, dir, nil, "export", "--storage", "study.db", "--trial", "0", "--format", "vllm-args")
	if r.code != 0 {
		t.Fatalf("frontier export exited %d:\n%s", r.code, r.stderr)
	}
	t.Logf("the export:\n%s", r.stdout)
	var instances []string
	var router string
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		switch {
		case strings.HasPrefix(l, "#"):
		case strings.HasPrefix(l, "frontier router "):
			router = l
		case strings.Contains(l, " vllm serve "):
			instances = append(instances, l)
		default:
			t.Fatalf("a line of the export is neither an instance, the router nor a comment: %q", l)
		}
	}
	if len(instances) != 2 || router == "" {
		t.Fatalf("%d instance lines and router line %q, want two instances and the router", len(instances), router)
	}
	ports := map[string]bool{}
	gpus := map[string]bool{}
	for _, l := range instances {
		for _, re := range []string{`--port ([0-9]+)`, `VLLM_NIXL_SIDE_CHANNEL_PORT=([0-9]+)`} {
			m := regexp.MustCompile(re).FindStringSubmatch(l)
			if m == nil || ports[m[1]] {
				t.Fatalf("%q: no port of its own for %s (ports so far %v)", l, re, ports)
			}
			ports[m[1]] = true
		}
		m := regexp.MustCompile(`CUDA_VISIBLE_DEVICES=([0-9,]+) `).FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("%q: no CUDA_VISIBLE_DEVICES", l)
		}
		for _, g := range strings.Split(m[1], ",") {
			if gpus[g] {
				t.Fatalf("%q: GPU %s is another instance's too", l, g)
			}
			gpus[g] = true
		}
	}
	if len(gpus) != 2 {
		t.Errorf("the instances have GPUs %v, want one each (tensor_parallel_size 1)", gpus)
	}
	for p := range ports {
		busy(t, p)
	}
	busy(t, "8000")

	exe := frontierExe(t)
	standIn := exe + " sim serve --sku h100-sxm --architecture llama-3.1-8b "
	var logs []*procLog
	for _, l := range instances {
		logs = append(logs, startLine(t, dir, strings.Replace(l, "vllm serve ", standIn, 1)))
	}
	for i, l := range instances {
		port := regexp.MustCompile(`--port ([0-9]+)`).FindStringSubmatch(l)[1]
		waitLineHealthy(t, "http://127.0.0.1:"+port, logs[i])
	}
	for i, want := range []string{"kv_role kv_producer", "kv_role kv_consumer"} {
		if l := logs[i].String(); !strings.Contains(l, want) || strings.Contains(l, "deprecated") {
			t.Errorf("instance %d's log lacks %q or warns of a deprecation:\n%s", i, want, l)
		}
	}
	rl := startLine(t, dir, strings.Replace(router, "frontier router ", exe+" router ", 1))
	waitLineHealthy(t, "http://127.0.0.1:8000", rl)
	body := fmt.Sprintf(`{"model":%q,"prompt":"a b c d e f g h i j","max_tokens":4,"stream":true}`, model)
	resp, err := http.Post("http://127.0.0.1:8000/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(got), "[DONE]") {
		t.Errorf("a request through the exported router: %d %s\nprefill:\n%s\ndecode:\n%s", resp.StatusCode, got, logs[0], logs[1])
	}
}

// busy skips the test when port is taken on this host: the export's ports are fixed.
func busy(t *testing.T, port string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		t.Skipf("port %s is taken on this host, and the export's ports are fixed: %v", port, err)
	}
	ln.Close()
}

// procLog is what a started line printed.
type procLog struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	done chan struct{}
}

func (p *procLog) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.buf.Write(b)
}

func (p *procLog) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.buf.String()
}

// startLine runs one shell line of an export with bash, in its own process group, which the
// test's cleanup ends.
func startLine(t *testing.T, dir, line string) *procLog {
	t.Helper()
	cmd := exec.Command("bash", "-c", line)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	out := &procLog{done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(out.done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-out.done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-out.done
		}
	})
	return out
}

// waitLineHealthy waits up to a minute for url's /health to answer 200, failing at once when the
// process exits.
func waitLineHealthy(t *testing.T, url string, p *procLog) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/health", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-p.done:
			t.Fatalf("%s exited before it was ready:\n%s", url, p)
		case <-ctx.Done():
			t.Fatalf("%s not ready within a minute:\n%s", url, p)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
