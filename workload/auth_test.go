package workload_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/frontier-llm/frontier/workload"
)

// TestRunReportsRefusedKeysAsUnauthorized: a server that refuses the API key answers 401
// (vLLM: {"error": "Unauthorized"}); each request is counted as unauthorized, not as a
// generic HTTP error, so that the cause is plain. A stand-in server checks the header.
func TestRunReportsRefusedKeysAsUnauthorized(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var auths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error": "Unauthorized"}`))
	}))
	t.Cleanup(srv.Close)
	c := workload.Class{Name: "c", Requests: 3, InputTokens: fixed(8), OutputTokens: fixed(2)}
	res, err := workload.Run(context.Background(), workload.Target{URL: srv.URL, Model: "m", APIKey: "k"}, []workload.Class{c}, workload.RunOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	r := res.Measurement.Workloads["c"]
	if r.Errors[workload.ErrUnauthorized] != 3 || r.Errors[workload.ErrHTTP] != 0 {
		t.Errorf("errors %v, want 3 unauthorized", r.Errors)
	}
	for _, a := range auths {
		if a != "Bearer k" {
			t.Errorf("a request carried Authorization %q, want the key", a)
		}
	}
}
