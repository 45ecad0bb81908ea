package sim

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRequireAPIKey: like vLLM's API server, the simulated one enforces --api-key, else
// VLLM_API_KEY, on the paths under /v1, and leaves /health and /metrics open.
func TestRequireAPIKey(t *testing.T) {
	t.Parallel()
	if diff := cmp.Diff([]string{"k1", "k2"}, apiKeys([]string{"--enable-log-requests", "--api-key", "k1", "k2", "--trust-remote-code"}, "env")); diff != "" {
		t.Errorf("apiKeys from --api-key (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"env"}, apiKeys(nil, "env")); diff != "" {
		t.Errorf("apiKeys from VLLM_API_KEY (-want +got):\n%s", diff)
	}
	if keys := apiKeys([]string{"--trust-remote-code"}, ""); keys != nil {
		t.Errorf("apiKeys without a key = %v", keys)
	}
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {})
	h := requireAPIKey(ok, []string{"k1"})
	for _, tc := range []struct {
		method, path, auth string
		want               int
	}{
		{"GET", "/v1/models", "", 401},
		{"POST", "/v1/completions", "Bearer wrong", 401},
		{"POST", "/v1/completions", "k1", 401},
		{"POST", "/v1/chat/completions", "Bearer k1", 200},
		{"OPTIONS", "/v1/completions", "", 200},
		{"GET", "/health", "", 200},
		{"GET", "/metrics", "", 200},
	} {
		req := httptest.NewRequest(tc.method, tc.path, nil)
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("%s %s with %q: %d, want %d", tc.method, tc.path, tc.auth, rec.Code, tc.want)
		}
	}
}
