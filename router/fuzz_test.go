package router

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzRouterRequest sends arbitrary request bodies through the router to stand-ins of vLLM
// on loopback: a body that is not a JSON object is the router's 400, and anything else
// reaches the prefill stand-in with max_tokens 1 and do_remote_decode, never a panic.
func FuzzRouterRequest(f *testing.F) {
	for _, s := range []string{`{"model":"m","prompt":"a"}`, `{"stream":true,"max_tokens":"x"}`, `[]`, `null`, `{"kv_transfer_params":7}`, `{`, "\xff", `{"min_tokens":3,"stream_options":{}}`} {
		f.Add([]byte(s))
	}
	var pre, dec recorded
	p := prefillServer(f, &pre)
	d := decodeServer(f, &dec, 1, nil)
	r, err := New(Config{Prefill: []string{p.URL}, Decode: []string{d.URL}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		before := len(pre.bodies)
		w := httptest.NewRecorder()
		r.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/v1/completions", strings.NewReader(string(body))))
		var obj map[string]json.RawMessage
		isObject := json.Unmarshal(body, &obj) == nil && obj != nil
		pre.mu.Lock()
		defer pre.mu.Unlock()
		switch {
		case !isObject && (w.Code != http.StatusBadRequest || len(pre.bodies) != before):
			t.Fatalf("body %q: %d and %d prefill requests, want 400 and none", body, w.Code, len(pre.bodies)-before)
		case isObject && len(pre.bodies) != before+1:
			t.Fatalf("body %q: %d, not sent to the prefill instance", body, w.Code)
		case isObject:
			got := pre.bodies[len(pre.bodies)-1]
			kv, _ := got["kv_transfer_params"].(map[string]any)
			if got["max_tokens"] != 1.0 || got["stream"] != false || kv["do_remote_decode"] != true {
				t.Fatalf("body %q reached the prefill instance as %v", body, got)
			}
		}
	})
}
