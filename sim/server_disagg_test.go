package sim

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/frontier-llm/frontier/router"
)

const nixlConfig = `{"kv_connector":"NixlConnector","kv_role":"kv_both"}`

// startPDServer starts a simulated vLLM with the NixlConnector, its side channel on a free
// loopback port, and returns its URL.
func startPDServer(t *testing.T, args ...string) (string, *syncBuffer) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	side := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	env := map[string]string{"VLLM_NIXL_SIDE_CHANNEL_HOST": "127.0.0.1", "VLLM_NIXL_SIDE_CHANNEL_PORT": side}
	sa, err := ParseServeArgs(append([]string{"--host", "127.0.0.1", "--port", "0", "--kv-transfer-config", nixlConfig}, args...))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ConfigFromSettings(sa.Settings, 0)
	if err != nil {
		t.Fatal(err)
	}
	log := &syncBuffer{}
	ready, done := make(chan string, 1), make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		done <- Serve(ctx, ServeOptions{Args: sa, Arch: mustArch(t, sa.Model), SKU: mustSKU(t, sa.SKU), Config: cfg, Log: log,
			Ready: func(addr string) { ready <- addr }, Getenv: func(k string) string { return env[k] }})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("server did not stop")
		}
	})
	select {
	case addr := <-ready:
		return "http://" + addr, log
	case err := <-done:
		t.Fatalf("server stopped before it was ready: %v\n%s", err, log)
	case <-time.After(5 * time.Second):
		t.Fatalf("server not ready\n%s", log)
	}
	return "", nil
}

func tokenPrompt(n int) string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = strconv.Itoa(100 + i%1000)
	}
	return "[" + strings.Join(ids, ",") + "]"
}

// TestSimServesBothSidesOfTheDisaggregationProtocol runs a simulated prefill instance and a
// simulated decode instance behind frontier's router: the prefill returns NixlConnector's
// kv_transfer_params, the decode reads the blocks they name from the prefill's side channel,
// once, and answers; a decode request whose parameters name blocks never prefilled, or
// read already, or another prompt's, fails with the prefill instance's reason.
func TestSimServesBothSidesOfTheDisaggregationProtocol(t *testing.T) {
	t.Parallel()
	args := []string{"meta-llama/Llama-3.1-8B-Instruct", "--sku", "h100-sxm", "--max-model-len", "4096"}
	pre, preLog := startPDServer(t, args...)
	dec, decLog := startPDServer(t, args...)

	// The prefill request, as the router sends it.
	prompt := tokenPrompt(2000)
	resp, body := post(t, pre+"/v1/completions", `{"model":"meta-llama/Llama-3.1-8B-Instruct","prompt":`+prompt+`,"max_tokens":1,"stream":false,"kv_transfer_params":{"do_remote_decode":true,"do_remote_prefill":false,"remote_engine_id":null,"remote_block_ids":null,"remote_host":null,"remote_port":null}}`)
	if resp.StatusCode != 200 {
		t.Fatalf("prefill: %d %s\n%s", resp.StatusCode, body, preLog)
	}
	var pr struct {
		KV map[string]any `json:"kv_transfer_params"`
	}
	if err := json.Unmarshal([]byte(body), &pr); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"do_remote_prefill", "do_remote_decode", "remote_block_ids", "remote_engine_id", "remote_request_id", "remote_host", "remote_port", "tp_size"} {
		if _, ok := pr.KV[k]; !ok {
			t.Errorf("the prefill's kv_transfer_params lack %s: %v", k, pr.KV)
		}
	}
	if pr.KV["do_remote_prefill"] != true || len(pr.KV["remote_block_ids"].([]any)) != 125 { // 2000 tokens in blocks of 16
		t.Errorf("kv_transfer_params %v: want do_remote_prefill and 125 blocks", pr.KV)
	}
	params, _ := json.Marshal(pr.KV)

	decodeBody := func(p string, params []byte) string {
		return `{"model":"meta-llama/Llama-3.1-8B-Instruct","prompt":` + p + `,"max_tokens":8,"kv_transfer_params":` + string(params) + `}`
	}
	// Another prompt with these blocks is refused, and leaves them for the right one.
	other := tokenPrompt(1999)
	if resp, body := post(t, dec+"/v1/completions", decodeBody(other, params)); resp.StatusCode != 500 || !strings.Contains(body, "another prompt") {
		t.Errorf("decode of another prompt: %d %s, want 500 saying another prompt", resp.StatusCode, body)
	}
	if resp, body := post(t, dec+"/v1/completions", decodeBody(prompt, params)); resp.StatusCode != 200 || !strings.Contains(body, `"completion_tokens":8`) {
		t.Fatalf("decode: %d %s\n%s", resp.StatusCode, body, decLog)
	}
	// Read once: the same parameters again find nothing.
	if resp, body := post(t, dec+"/v1/completions", decodeBody(prompt, params)); resp.StatusCode != 500 || !strings.Contains(body, "no KV cache is held") {
		t.Errorf("a second decode with the same parameters: %d %s, want 500 saying nothing is held", resp.StatusCode, body)
	}
	var forged map[string]any
	_ = json.Unmarshal(params, &forged)
	forged["remote_engine_id"] = "someone-else"
	fb, _ := json.Marshal(forged)
	if resp, body := post(t, dec+"/v1/completions", decodeBody(prompt, fb)); resp.StatusCode != 500 || !strings.Contains(body, "is not this instance") {
		t.Errorf("decode naming another engine: %d %s", resp.StatusCode, body)
	}
	if resp, body := post(t, dec+"/v1/completions", decodeBody(prompt, []byte(`{"do_remote_prefill":true}`))); resp.StatusCode != 400 || !strings.Contains(body, "remote_engine_id") {
		t.Errorf("decode without the prefill's parameters: %d %s, want 400 naming what is missing", resp.StatusCode, body)
	}

	// Through the router, streamed.
	rt, err := router.New(router.Config{Prefill: []string{pre}, Decode: []string{dec}})
	if err != nil {
		t.Fatal(err)
	}
	rs := httptest.NewServer(rt)
	defer rs.Close()
	resp, body = post(t, rs.URL+"/v1/completions", `{"model":"meta-llama/Llama-3.1-8B-Instruct","prompt":`+prompt+`,"max_tokens":8,"min_tokens":8,"ignore_eos":true,"stream":true}`)
	if resp.StatusCode != 200 || len(sseEvents(body)) != 9 { // 8 tokens and [DONE]
		t.Fatalf("through the router: %d, %d events\n%s", resp.StatusCode, len(sseEvents(body)), body)
	}
	if l := decLog.String(); !strings.Contains(l, "NIXL side channel") || !strings.Contains(l, "KV transfer from engine someone-else") {
		t.Errorf("the decode log has neither its side channel nor the failed transfer:\n%s", l)
	}
}

// TestKVTransferConfigIsCheckedAsVLLMChecksIt: kv_role is required with a connector, and
// the simulator models the NixlConnector only.
func TestKVTransferConfigIsCheckedAsVLLMChecksIt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ cfg, want string }{
		{`{"kv_connector":"NixlConnector"}`, "Please specify kv_role"},
		{`{"kv_connector":"NixlConnector","kv_role":"kv_sender"}`, "Unsupported kv_role"},
		{`{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"}`, "Unsupported connector type"},
	} {
		if _, err := parseKVTransferConfig([]string{"--kv-transfer-config", tc.cfg}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.cfg, err, tc.want)
		}
	}
	if c, err := parseKVTransferConfig([]string{"--kv-transfer-config", nixlConfig}); err != nil || c.KVRole != "kv_both" {
		t.Errorf("%s: %v, %v", nixlConfig, c, err)
	}
}

// TestSecondInstanceOnATakenSideChannelPortFailsAtStartup: an instance whose
// VLLM_NIXL_SIDE_CHANNEL_PORT another instance holds fails at start-up as vLLM's
// NixlConnector does (its handshake listener binds a zmq socket there): zmq's "Address
// already in use" as the engine core's failure, then the API server's report of the
// core's death, and no "Application startup complete".
func TestSecondInstanceOnATakenSideChannelPortFailsAtStartup(t *testing.T) {
	t.Parallel()
	args := []string{"meta-llama/Llama-3.1-8B-Instruct", "--sku", "h100-sxm", "--max-model-len", "4096"}
	first, firstLog := startPDServer(t, args...)
	side := regexp.MustCompile(`NIXL side channel of engine \S+ on 127\.0\.0\.1:([0-9]+)`).FindStringSubmatch(firstLog.String())
	if side == nil {
		t.Fatalf("the first instance (%s) logs no side channel:\n%s", first, firstLog)
	}
	sa, err := ParseServeArgs(append([]string{"--host", "127.0.0.1", "--port", "0", "--kv-transfer-config", nixlConfig}, args...))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ConfigFromSettings(sa.Settings, 0)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"VLLM_NIXL_SIDE_CHANNEL_HOST": "127.0.0.1", "VLLM_NIXL_SIDE_CHANNEL_PORT": side[1]}
	log := &syncBuffer{}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = Serve(ctx, ServeOptions{Args: sa, Arch: mustArch(t, sa.Model), SKU: mustSKU(t, sa.SKU), Config: cfg, Log: log,
		Getenv: func(k string) string { return env[k] }})
	var se *StartupError
	if !errors.As(err, &se) {
		t.Fatalf("Serve on a taken side-channel port = %v, want a *StartupError\n%s", err, log)
	}
	want := "zmq.error.ZMQError: Address already in use (addr='tcp://127.0.0.1:" + side[1] + "')"
	l := log.String()
	for _, s := range []string{"EngineCore failed to start.", want, "RuntimeError: Engine core initialization failed."} {
		if !strings.Contains(l, s) {
			t.Errorf("the log lacks %q:\n%s", s, l)
		}
	}
	if strings.Contains(l, "Application startup complete") {
		t.Errorf("the second instance reported a complete startup:\n%s", l)
	}
}
