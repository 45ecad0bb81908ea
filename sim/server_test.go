package sim

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/frontier-llm/frontier/workload"
)

// syncBuffer is a log writer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startServer runs a simulated server on a free loopback port until the test ends.
func startServer(t *testing.T, args ...string) (string, *syncBuffer, <-chan error) {
	t.Helper()
	sa, err := ParseServeArgs(append([]string{"--host", "127.0.0.1", "--port", "0"}, args...))
	if err != nil {
		t.Fatal(err)
	}
	arch, ok := LookupArch(sa.Architecture)
	if !ok {
		arch = mustArch(t, sa.Model)
	}
	cfg, err := ConfigFromSettings(sa.Settings, 0)
	if err != nil {
		t.Fatal(err)
	}
	log := &syncBuffer{}
	ready := make(chan string, 1)
	done := make(chan error, 1)
	stopped := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		done <- Serve(ctx, ServeOptions{Args: sa, Arch: arch, SKU: mustSKU(t, sa.SKU), Config: cfg, Log: log,
			Ready: func(addr string) { ready <- addr }})
		close(stopped)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-stopped:
		case <-time.After(5 * time.Second):
			t.Error("server did not stop")
		}
	})
	select {
	case addr := <-ready:
		return "http://" + addr, log, done
	case err := <-done:
		t.Fatalf("server stopped before it was ready: %v\n%s", err, log)
	case <-time.After(5 * time.Second):
		t.Fatalf("server not ready\n%s", log)
	}
	return "", nil, nil
}

func post(t *testing.T, url, body string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// sseEvents splits an SSE body into its data payloads.
func sseEvents(body string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, d)
		}
	}
	return out
}

func TestServerEndpoints(t *testing.T) {
	t.Parallel()
	url, log, _ := startServer(t, "meta-llama/Llama-3.1-8B-Instruct", "--sku", "h100-sxm", "--max-model-len", "4k",
		"--served-model-name", "llama", "--enable-log-requests", "--trust-remote-code")
	for _, want := range []string{"GPU KV cache size: ", "Maximum concurrency for 4,000 tokens per request: ", "Application startup complete.",
		"accepted without modelling: --enable-log-requests --trust-remote-code"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}

	t.Run("health", func(t *testing.T) {
		resp, err := http.Get(url + "/health")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("GET /health = %d, want 200", resp.StatusCode)
		}
	})
	t.Run("models", func(t *testing.T) {
		resp, err := http.Get(url + "/v1/models")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var got struct {
			Data []struct {
				ID          string `json:"id"`
				MaxModelLen int    `json:"max_model_len"`
			} `json:"data"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
			t.Fatal(err)
		}
		if len(got.Data) != 1 || got.Data[0].ID != "llama" || got.Data[0].MaxModelLen != 4000 {
			t.Errorf("/v1/models = %+v, want llama with max_model_len 4000", got)
		}
	})
	t.Run("completions stream", func(t *testing.T) {
		_, body := post(t, url+"/v1/completions", `{"model":"llama","prompt":[1,2,3,4,5],"max_tokens":4,"stream":true,"stream_options":{"include_usage":true}}`)
		ev := sseEvents(body)
		if len(ev) != 6 || ev[5] != "[DONE]" {
			t.Fatalf("want 4 token chunks, usage and [DONE]; got %q", ev)
		}
		var last, use struct {
			Object  string `json:"object"`
			Choices []struct {
				Text         string  `json:"text"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage *usage `json:"usage"`
		}
		json.Unmarshal([]byte(ev[3]), &last)
		json.Unmarshal([]byte(ev[4]), &use)
		if last.Object != "text_completion" || last.Choices[0].FinishReason == nil || *last.Choices[0].FinishReason != "length" {
			t.Errorf("last token chunk = %s", ev[3])
		}
		if diff := cmp.Diff(&usage{PromptTokens: 5, TotalTokens: 9, CompletionTokens: 4}, use.Usage); diff != "" || len(use.Choices) != 0 {
			t.Errorf("usage chunk %s (-want +got):\n%s", ev[4], diff)
		}
	})
	t.Run("chat stream starts with the role", func(t *testing.T) {
		_, body := post(t, url+"/v1/chat/completions", `{"model":"llama","messages":[{"role":"user","content":"hello there"}],"max_completion_tokens":2,"stream":true}`)
		ev := sseEvents(body)
		if len(ev) != 4 || !strings.Contains(ev[0], `"delta":{"role":"assistant","content":""}`) || ev[3] != "[DONE]" {
			t.Errorf("chat stream = %q", ev)
		}
	})
	t.Run("non-streaming completion", func(t *testing.T) {
		_, body := post(t, url+"/v1/completions", `{"model":"llama","prompt":"one two three","max_tokens":3}`)
		var got struct {
			Choices []struct{ Text string } `json:"choices"`
			Usage   usage                   `json:"usage"`
		}
		if err := json.Unmarshal([]byte(body), &got); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(usage{PromptTokens: 3, TotalTokens: 6, CompletionTokens: 3}, got.Usage); diff != "" {
			t.Errorf("usage (-want +got):\n%s", diff)
		}
		if got.Choices[0].Text != fillerText(0, 3) {
			t.Errorf("text = %q, want %q", got.Choices[0].Text, fillerText(0, 3))
		}
	})
	t.Run("too long", func(t *testing.T) {
		resp, body := post(t, url+"/v1/completions", `{"model":"llama","prompt":[1,2,3],"max_tokens":3998}`)
		if resp.StatusCode != 400 || !strings.Contains(body, "This model's maximum context length is 4000 tokens. However, you requested 3998 output tokens and your prompt contains at least 3 input tokens, for a total of at least 4001 tokens.") {
			t.Errorf("status %d, body %s", resp.StatusCode, body)
		}
	})
	t.Run("unknown model", func(t *testing.T) {
		resp, _ := post(t, url+"/v1/completions", `{"model":"other","prompt":"x","max_tokens":1}`)
		if resp.StatusCode != 404 {
			t.Errorf("status %d, want 404", resp.StatusCode)
		}
	})
	t.Run("metrics", func(t *testing.T) {
		resp, err := http.Get(url + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		for _, want := range []string{`vllm:cache_config_info{block_size="16"`, "vllm:kv_cache_usage_perc{", "vllm:num_requests_running{",
			"vllm:num_requests_waiting{", "vllm:num_preemptions_total{", "vllm:prefix_cache_queries_total{", "vllm:prefix_cache_hits_total{",
			"vllm:request_queue_time_seconds_bucket{", `vllm:time_to_first_token_seconds_bucket{engine="0",model_name="llama",le="+Inf"}`,
			"vllm:generation_tokens_total{"} {
			if !strings.Contains(string(b), want) {
				t.Errorf("/metrics lacks %q", want)
			}
		}
	})
}

func TestServerStartupFailure(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		args  []string
		class string
		log   string
	}{
		{"KV cache too small", []string{"llama-3.1-8b", "--sku", "l4"}, ClassKVCacheTooSmall, "estimated maximum model length is"},
		{"injected OOM", []string{"llama-3.1-8b", "--sku", "h100-sxm", "--fault-startup-oom"}, ClassWeightsOOM, "CUDA out of memory"},
		{"TP does not divide heads", []string{"qwen2.5-7b", "--sku", "h100-sxm", "-tp", "8"}, ClassInvalidArgs, "must be divisible by tensor parallel size"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sa, err := ParseServeArgs(append([]string{"--host", "127.0.0.1", "--port", "0"}, tt.args...))
			if err != nil {
				t.Fatal(err)
			}
			cfg, _ := ConfigFromSettings(sa.Settings, 0)
			var log syncBuffer
			err = Serve(context.Background(), ServeOptions{Args: sa, Arch: mustArch(t, sa.Model), SKU: mustSKU(t, sa.SKU), Config: cfg, Log: &log})
			var se *StartupError
			if !errors.As(err, &se) || se.Class != tt.class {
				t.Fatalf("Serve = %v, want a %s StartupError", err, tt.class)
			}
			for _, want := range []string{tt.log, "Engine core initialization failed"} {
				if !strings.Contains(log.String(), want) {
					t.Errorf("log lacks %q:\n%s", want, log.String())
				}
			}
		})
	}
}

func TestServerPortInUse(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	sa, _ := ParseServeArgs([]string{"llama-3.1-8b", "--sku", "h100-sxm", "--host", "127.0.0.1", "--port", itoa(port)})
	var log syncBuffer
	err = Serve(context.Background(), ServeOptions{Args: sa, Arch: mustArch(t, "llama-3.1-8b"), SKU: mustSKU(t, "h100-sxm"), Config: DefaultConfig(), Log: &log})
	if err == nil || !strings.Contains(log.String(), "address already in use") {
		t.Errorf("Serve = %v, log %q; want an address-in-use failure", err, log.String())
	}
}

func itoa(n int) string { return jsonNumber(n) }

func jsonNumber(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestServerFaults(t *testing.T) {
	t.Parallel()
	t.Run("error burst", func(t *testing.T) {
		t.Parallel()
		url, _, _ := startServer(t, "llama-3.2-1b", "--sku", "h100-sxm", "--fault-error-burst", "429:2:2")
		var got []int
		for i := 0; i < 4; i++ {
			resp, _ := post(t, url+"/v1/completions", `{"prompt":"a b","max_tokens":1}`)
			got = append(got, resp.StatusCode)
		}
		if diff := cmp.Diff([]int{200, 429, 429, 200}, got); diff != "" {
			t.Errorf("statuses (-want +got):\n%s", diff)
		}
	})
	t.Run("crash after", func(t *testing.T) {
		t.Parallel()
		url, _, done := startServer(t, "llama-3.2-1b", "--sku", "h100-sxm", "--fault-crash-after", "2")
		for i := 0; i < 2; i++ {
			post(t, url+"/v1/completions", `{"prompt":"a b","max_tokens":1}`)
		}
		select {
		case err := <-done:
			if !errors.Is(err, ErrCrashed) {
				t.Errorf("Serve = %v, want ErrCrashed", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("server did not crash after 2 requests")
		}
	})
	t.Run("malformed stream", func(t *testing.T) {
		t.Parallel()
		url, _, _ := startServer(t, "llama-3.2-1b", "--sku", "h100-sxm", "--fault-malformed-stream", "1")
		_, body := post(t, url+"/v1/completions", `{"prompt":"a b","max_tokens":5,"stream":true}`)
		ev := sseEvents(body)
		var v any
		if len(ev) == 0 || json.Unmarshal([]byte(ev[len(ev)-1]), &v) == nil || strings.Contains(body, "[DONE]") {
			t.Errorf("stream = %q, want a malformed last chunk and no [DONE]", ev)
		}
	})
	t.Run("stall after", func(t *testing.T) {
		t.Parallel()
		url, _, _ := startServer(t, "llama-3.2-1b", "--sku", "h100-sxm", "--fault-stall-after", "2")
		client := &http.Client{Timeout: 500 * time.Millisecond}
		resp, err := client.Post(url+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"a b","max_tokens":50,"stream":true}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err == nil {
			t.Fatalf("stream ended; want it to hang after 2 tokens: %s", b)
		}
		if n := len(sseEvents(string(b))); n != 2 {
			t.Errorf("got %d chunks before the stall, want 2", n)
		}
	})
}

// TestServerAgreesWithEstimate drives the real-time server with the load generator and
// compares with the estimator on the same workload: the two share one engine.
func TestServerAgreesWithEstimate(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("real-time serving: timing under -short or the race detector says nothing about the model")
	}
	t.Parallel()
	// An L4 makes decode steps long (about 65 ms) next to timer and HTTP overheads.
	url, _, _ := startServer(t, "llama-3.1-8b", "--sku", "l4", "--max-model-len", "4096")
	cls := []workload.Class{{Name: "chat", Requests: 24, InputTokens: workload.Dist{Kind: workload.DistUniform, A: 100, B: 400},
		OutputTokens: workload.Dist{Kind: workload.DistUniform, A: 16, B: 32}, PrefixTokens: 64,
		Arrival: workload.Arrival{Kind: workload.ArrivalPoisson, Rate: 4}}}
	res, err := workload.Run(context.Background(), workload.Target{URL: url, Model: "llama-3.1-8b", TokenIDs: true}, cls, workload.RunOptions{Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := ConfigFromSettings(map[string]any{"max_model_len": int64(4096)}, 0)
	est, err := Estimate(context.Background(), mustArch(t, "llama-3.1-8b"), mustSKU(t, "l4"), cfg, cls, 7)
	if err != nil {
		t.Fatal(err)
	}
	// Within 10%; latencies may also differ by the HTTP and scheduling time of the test
	// machine, which the model leaves out (up to 10 ms).
	for _, m := range []struct {
		name  string
		slack float64
	}{{workload.OutputTokenThroughput, 0}, {"ttft_p50_ms", 10}, {"tpot_p50_ms", 0}, {"e2e_p50_ms", 10}} {
		got, want := res.Measurement.Total.Metrics[m.name], est.Total.Metrics[m.name]
		t.Logf("%s: served %.2f, estimated %.2f", m.name, got, want)
		if math.Abs(got-want) > 0.1*want+m.slack {
			t.Errorf("%s: served %.2f, estimated %.2f: more than 10%% apart", m.name, got, want)
		}
	}
}

// Prometheus' own text parser reads every vllm: family with its declared type: counters are
// counters (their HELP and TYPE lines carry the _total name, as prometheus_client writes
// them), not untyped samples.
func TestMetricsParseWithTheirTypes(t *testing.T) {
	t.Parallel()
	url, _, _ := startServer(t, "meta-llama/Llama-3.1-8B-Instruct", "--sku", "h100-sxm", "--max-model-len", "4k")
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("Prometheus' text parser: %v", err)
	}
	want := map[string]dto.MetricType{
		"vllm:num_preemptions_total":       dto.MetricType_COUNTER,
		"vllm:prompt_tokens_total":         dto.MetricType_COUNTER,
		"vllm:generation_tokens_total":     dto.MetricType_COUNTER,
		"vllm:request_success_total":       dto.MetricType_COUNTER,
		"vllm:kv_cache_usage_perc":         dto.MetricType_GAUGE,
		"vllm:time_to_first_token_seconds": dto.MetricType_HISTOGRAM,
		"vllm:prefix_cache_queries_total":  dto.MetricType_COUNTER,
		"vllm:inter_token_latency_seconds": dto.MetricType_HISTOGRAM,
		"vllm:e2e_request_latency_seconds": dto.MetricType_HISTOGRAM,
		"vllm:request_queue_time_seconds":  dto.MetricType_HISTOGRAM,
		"vllm:num_requests_running":        dto.MetricType_GAUGE,
	}
	for name, typ := range want {
		f, ok := families[name]
		if !ok {
			t.Errorf("no family %s", name)
			continue
		}
		if f.GetType() != typ {
			t.Errorf("%s is %v, want %v", name, f.GetType(), typ)
		}
	}
	for name, f := range families {
		if f.GetType() == dto.MetricType_UNTYPED {
			t.Errorf("%s is untyped", name)
		}
	}
}

// usage is the usage object of a response, as clients read it.
type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	TotalTokens      int `json:"total_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}
