package router

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The instances in these tests are stand-ins for vLLM (which needs a GPU): real HTTP servers
// on loopback that answer as vLLM's OpenAI server with the NixlConnector does.

// nixlParams is what a prefill instance's NixlConnector returns (request_finished).
var nixlParams = map[string]any{
	"do_remote_prefill": true, "do_remote_decode": false, "remote_block_ids": []any{1.0, 2.0, 3.0},
	"remote_engine_id": "engine-p0", "remote_request_id": "cmpl-1", "remote_host": "127.0.0.1", "remote_port": 5600.0, "tp_size": 1.0,
}

type recorded struct {
	mu     sync.Mutex
	bodies []map[string]any
	heads  []http.Header
}

func (r *recorded) add(req *http.Request) map[string]any {
	var body map[string]any
	_ = json.NewDecoder(req.Body).Decode(&body)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bodies = append(r.bodies, body)
	r.heads = append(r.heads, req.Header.Clone())
	return body
}

func prefillServer(t testing.TB, rec *recorded) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch req.URL.Path {
		case "/health":
			return
		case "/v1/completions", "/v1/chat/completions":
		default:
			http.NotFound(w, req)
			return
		}
		rec.add(req)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "cmpl-1", "choices": []any{map[string]any{"text": "x"}}, "kv_transfer_params": nixlParams})
	}))
	t.Cleanup(s.Close)
	return s
}

// decodeServer streams n server-sent events, each after release says so.
func decodeServer(t testing.TB, rec *recorded, n int, release chan struct{}) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch req.URL.Path {
		case "/health":
			return
		case "/v1/models":
			_, _ = io.WriteString(w, `{"data":[{"id":"m"}]}`)
			return
		}
		rec.add(req)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush() // the headers go at once, as vLLM's streams send them
		for i := range n {
			if release != nil {
				<-release
			}
			_, _ = io.WriteString(w, "data: {\"choices\":[{\"text\":\"t"+string(rune('0'+i))+"\"}]}\n\n")
			w.(http.Flusher).Flush()
		}
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(s.Close)
	return s
}

func routerServer(t *testing.T, prefill, decode []string) *httptest.Server {
	t.Helper()
	r, err := New(Config{Prefill: prefill, Decode: decode})
	if err != nil {
		t.Fatal(err)
	}
	s := httptest.NewServer(r)
	t.Cleanup(s.Close)
	return s
}

// TestRouterRunsThePrefillThenTheDecodeWithItsTransferParams checks both requests of the
// protocol as the instances receive them, and that the decode's stream reaches the client
// event by event, before the decode instance has sent the rest.
func TestRouterRunsThePrefillThenTheDecodeWithItsTransferParams(t *testing.T) {
	t.Parallel()
	var pre, dec recorded
	release := make(chan struct{})
	p, d := prefillServer(t, &pre), decodeServer(t, &dec, 3, release)
	rs := routerServer(t, []string{p.URL}, []string{d.URL + "/v1"})

	body := `{"model":"m","prompt":[1,2,3],"max_tokens":16,"min_tokens":16,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`
	req, _ := http.NewRequest(http.MethodPost, rs.URL+"/v1/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer k")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	lines := bufio.NewReader(resp.Body)
	for i := range 3 {
		release <- struct{}{}
		got := make(chan string, 1)
		go func() {
			l, _ := lines.ReadString('\n')
			_, _ = lines.ReadString('\n') // the blank line after the event
			got <- l
		}()
		select {
		case l := <-got:
			if want := "data: {\"choices\":[{\"text\":\"t" + string(rune('0'+i)) + "\"}]}\n"; l != want {
				t.Fatalf("event %d = %q, want %q", i, l, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("event %d did not reach the client while the decode instance held the rest back: the stream is buffered", i)
		}
	}
	rest, _ := io.ReadAll(lines)
	if string(rest) != "data: [DONE]\n\n" {
		t.Errorf("the stream ends with %q", rest)
	}

	if len(pre.bodies) != 1 || len(dec.bodies) != 1 {
		t.Fatalf("prefill got %d requests, decode %d; want one each", len(pre.bodies), len(dec.bodies))
	}
	wantPre := map[string]any{"model": "m", "prompt": []any{1.0, 2.0, 3.0}, "max_tokens": 1.0, "ignore_eos": true, "stream": false,
		"kv_transfer_params": map[string]any{"do_remote_decode": true, "do_remote_prefill": false, "remote_engine_id": nil,
			"remote_block_ids": nil, "remote_host": nil, "remote_port": nil}}
	if diff := cmp.Diff(wantPre, pre.bodies[0]); diff != "" {
		t.Errorf("the prefill request (-want +got):\n%s", diff)
	}
	wantDec := map[string]any{"model": "m", "prompt": []any{1.0, 2.0, 3.0}, "max_tokens": 16.0, "min_tokens": 16.0, "ignore_eos": true,
		"stream": true, "stream_options": map[string]any{"include_usage": true}, "kv_transfer_params": nixlParams}
	if diff := cmp.Diff(wantDec, dec.bodies[0]); diff != "" {
		t.Errorf("the decode request (-want +got):\n%s", diff)
	}
	for role, h := range map[string]http.Header{"prefill": pre.heads[0], "decode": dec.heads[0]} {
		if h.Get("Authorization") != "Bearer k" || h.Get("X-Request-Id") == "" {
			t.Errorf("the %s request's Authorization %q, X-Request-Id %q: want the client's key and the router's id", role, h.Get("Authorization"), h.Get("X-Request-Id"))
		}
	}
	if pre.heads[0].Get("X-Request-Id") != dec.heads[0].Get("X-Request-Id") {
		t.Errorf("the two requests have ids %q and %q, want one", pre.heads[0].Get("X-Request-Id"), dec.heads[0].Get("X-Request-Id"))
	}
}

// TestRouterChatSetsMaxCompletionTokensForThePrefill: the chat endpoint's
// max_completion_tokens is held to 1 too.
func TestRouterChatSetsMaxCompletionTokensForThePrefill(t *testing.T) {
	t.Parallel()
	var pre, dec recorded
	p, d := prefillServer(t, &pre), decodeServer(t, &dec, 1, nil)
	rs := routerServer(t, []string{p.URL}, []string{d.URL})
	resp, err := http.Post(rs.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}],"max_completion_tokens":9}`))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if got := pre.bodies[0]["max_completion_tokens"]; got != 1.0 {
		t.Errorf("prefill max_completion_tokens %v, want 1", got)
	}
	if got := dec.bodies[0]["max_completion_tokens"]; got != 9.0 {
		t.Errorf("decode max_completion_tokens %v, want the client's 9", got)
	}
}

// TestRouterPicksTheInstanceWithFewestInFlight holds one decode stream open: the next
// request goes to the other decode instance.
func TestRouterPicksTheInstanceWithFewestInFlight(t *testing.T) {
	t.Parallel()
	var pre, d1, d2 recorded
	release := make(chan struct{})
	p := prefillServer(t, &pre)
	a, b := decodeServer(t, &d1, 1, release), decodeServer(t, &d2, 1, nil)
	rs := routerServer(t, []string{p.URL}, []string{a.URL, b.URL})
	first, err := http.Post(rs.URL+"/v1/completions", "application/json", strings.NewReader(`{"model":"m","prompt":"a","stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	second, err := http.Post(rs.URL+"/v1/completions", "application/json", strings.NewReader(`{"model":"m","prompt":"b","stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.ReadAll(second.Body)
	second.Body.Close()
	close(release)
	_, _ = io.ReadAll(first.Body)
	first.Body.Close()
	if len(d1.bodies) != 1 || len(d2.bodies) != 1 || d1.bodies[0]["prompt"] != "a" || d2.bodies[0]["prompt"] != "b" {
		t.Errorf("decode instances got %v and %v; want a on the first, b on the second (the first was busy)", d1.bodies, d2.bodies)
	}
}

// TestRouterPassesThePrefillsRefusalThrough: a prompt the prefill instance refuses is the
// client's error, and no decode request is sent.
func TestRouterPassesThePrefillsRefusalThrough(t *testing.T) {
	t.Parallel()
	p := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(400)
		_, _ = io.WriteString(w, `{"error":{"message":"This model's maximum context length is 8 tokens."}}`)
	}))
	defer p.Close()
	var dec recorded
	d := decodeServer(t, &dec, 1, nil)
	rs := routerServer(t, []string{p.URL}, []string{d.URL})
	resp, err := http.Post(rs.URL+"/v1/completions", "application/json", strings.NewReader(`{"model":"m","prompt":"a"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(b), "maximum context length") {
		t.Errorf("status %d, body %s; want the prefill's 400", resp.StatusCode, b)
	}
	if len(dec.bodies) != 0 {
		t.Errorf("the decode instance got %d requests after a refused prefill", len(dec.bodies))
	}
}

// TestRouterRefusesBadInput checks the router's own answers to what it cannot route.
func TestRouterRefusesBadInput(t *testing.T) {
	t.Parallel()
	var pre, dec recorded
	p, d := prefillServer(t, &pre), decodeServer(t, &dec, 1, nil)
	rs := routerServer(t, []string{p.URL}, []string{d.URL})
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close() // nothing listens there now
	rdown := routerServer(t, []string{gone.URL}, []string{d.URL})
	for _, tc := range []struct {
		name, method, url, body string
		status                  int
		msg                     string
	}{
		{"not JSON", "POST", rs.URL + "/v1/completions", `{"model":`, 400, "not a JSON object"},
		{"a JSON array", "POST", rs.URL + "/v1/completions", `[1]`, 400, "not a JSON object"},
		{"GET of completions", "GET", rs.URL + "/v1/completions", ``, 405, "use POST"},
		{"unknown path", "POST", rs.URL + "/v1/embeddings", `{}`, 404, "/v1/chat/completions"},
		{"prefill unreachable", "POST", rdown.URL + "/v1/completions", `{"model":"m","prompt":"a"}`, 502, "prefill instance"},
		{"health with an instance down", "GET", rdown.URL + "/health", ``, 503, "instance"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, tc.url, strings.NewReader(tc.body))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status || !strings.Contains(string(b), tc.msg) {
				t.Errorf("status %d, body %s; want %d mentioning %q", resp.StatusCode, b, tc.status, tc.msg)
			}
		})
	}
	if len(pre.bodies)+len(dec.bodies) != 0 {
		t.Errorf("bad requests reached the instances: %v %v", pre.bodies, dec.bodies)
	}
	if _, err := New(Config{Prefill: []string{p.URL}}); err == nil {
		t.Error("New accepted a router without decode instances")
	}
	if _, err := New(Config{Prefill: []string{"127.0.0.1:1"}, Decode: []string{d.URL}}); err == nil || !strings.Contains(err.Error(), "http://") {
		t.Errorf("New(an address without a scheme) = %v, want an error showing a base URL", err)
	}
}

// TestRouterHealthAndModels: /health is 200 when every instance is healthy, /v1/models is
// the decode instance's.
func TestRouterHealthAndModels(t *testing.T) {
	t.Parallel()
	var pre, dec recorded
	p, d := prefillServer(t, &pre), decodeServer(t, &dec, 1, nil)
	rs := routerServer(t, []string{p.URL}, []string{d.URL})
	for path, want := range map[string]string{"/health": "", "/v1/models": `{"data":[{"id":"m"}]}`} {
		resp, err := http.Get(rs.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(b) != want {
			t.Errorf("GET %s: %d %q, want 200 %q", path, resp.StatusCode, b, want)
		}
	}
}
