package quality

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/frontier-llm/frontier/sim"
)

// openAIServer is a real HTTP server on loopback that speaks the non-streaming
// OpenAI-compatible completions and chat completions endpoints, answering with the echo of
// the prompt (or of the last message) and recording each request.
type openAIServer struct {
	*httptest.Server
	mu       sync.Mutex
	paths    []string
	bodies   []map[string]any
	authz    []string
	failWith int
}

func newOpenAIServer(t *testing.T) *openAIServer {
	t.Helper()
	s := &openAIServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, "bad json", http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.paths = append(s.paths, r.URL.Path)
		s.bodies = append(s.bodies, body)
		s.authz = append(s.authz, r.Header.Get("Authorization"))
		fail := s.failWith
		s.mu.Unlock()
		if fail != 0 {
			http.Error(w, `{"error": {"message": "model overloaded"}}`, fail)
			return
		}
		switch r.URL.Path {
		case "/v1/completions":
			json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"text": "echo: " + body["prompt"].(string)}}})
		case "/v1/chat/completions":
			msgs := body["messages"].([]any)
			last := msgs[len(msgs)-1].(map[string]any)["content"].(string)
			json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{
				"message": map[string]any{"role": "assistant", "content": "echo: " + last}}}})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func TestHTTPGeneratorSendsDeterministicRequests(t *testing.T) {
	t.Parallel()
	srv := newOpenAIServer(t)
	gen := NewHTTPGenerator(srv.URL+"/", "served-model",
		map[string]any{"options": map[string]any{"num_ctx": 4096}, "temperature": 0.9, "seed": 7}, "sk-secret")
	ctx := context.Background()
	chat := Item{ID: "c", Messages: []Message{{"system", "be brief"}, {"user", "hello"}}, MaxTokens: 16}
	prompt := Item{ID: "p", Prompt: "once upon"}
	var got []string
	for _, it := range []Item{chat, prompt} {
		out, err := gen.Generate(ctx, it)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, out)
	}
	if diff := cmp.Diff([]string{"echo: hello", "echo: once upon"}, got); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}
	if gen.Simulated() {
		t.Error("an HTTP generator says its answers are simulated")
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if diff := cmp.Diff([]string{"/v1/chat/completions", "/v1/completions"}, srv.paths); diff != "" {
		t.Errorf("endpoints (-want +got):\n%s", diff)
	}
	want := []map[string]any{
		{
			"model": "served-model", "temperature": float64(0), "seed": float64(GenerationSeed),
			"max_tokens": float64(16), "stream": false, "options": map[string]any{"num_ctx": float64(4096)},
			"messages": []any{
				map[string]any{"role": "system", "content": "be brief"},
				map[string]any{"role": "user", "content": "hello"},
			},
		},
		{
			"model": "served-model", "temperature": float64(0), "seed": float64(GenerationSeed),
			"max_tokens": float64(DefaultMaxTokens), "stream": false, "options": map[string]any{"num_ctx": float64(4096)},
			"prompt": "once upon",
		},
	}
	if diff := cmp.Diff(want, srv.bodies); diff != "" {
		t.Errorf("request bodies: temperature 0 and the fixed seed must win over options (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"Bearer sk-secret", "Bearer sk-secret"}, srv.authz); diff != "" {
		t.Errorf("Authorization headers (-want +got):\n%s", diff)
	}
}

func TestHTTPGeneratorErrorsNameTheItemAndHideTheKey(t *testing.T) {
	t.Parallel()
	srv := newOpenAIServer(t)
	srv.failWith = http.StatusServiceUnavailable
	gen := NewHTTPGenerator(srv.URL, "m", nil, "sk-secret")
	_, err := gen.Generate(context.Background(), Item{ID: "q7", Prompt: "x", Source: "set.jsonl:7"})
	if err == nil {
		t.Fatal("Generate against a failing server: nil error")
	}
	for _, w := range []string{"set.jsonl:7", `"q7"`, "503", "model overloaded"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
	if strings.Contains(err.Error(), "sk-secret") {
		t.Errorf("error %q shows the API key", err)
	}
	srv.Close()
	if _, err := gen.Generate(context.Background(), Item{ID: "q8", Prompt: "x"}); err == nil || strings.Contains(err.Error(), "sk-secret") {
		t.Errorf("Generate against a closed server: error %v; want an error without the key", err)
	}
}

func TestSimGeneratorAnswersDeterministically(t *testing.T) {
	t.Parallel()
	item := Item{ID: "a", Prompt: "Summarise.", Reference: "田中様は注文番号A-1043の商品が未着であると問い合わせています。"}
	ctx := context.Background()
	gen := NewSimGenerator(map[string]any{"quantization": "awq"}, 3)
	first, err := gen.Generate(ctx, item)
	if err != nil {
		t.Fatal(err)
	}
	again, err := NewSimGenerator(map[string]any{"quantization": "awq", "max_num_seqs": int64(8)}, 3).Generate(ctx, item)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(first, again); diff != "" {
		t.Errorf("the same precision answered differently (-first +again):\n%s", diff)
	}
	if !gen.Simulated() {
		t.Error("the sim generator does not label its answers as simulated")
	}
	m := sim.AnswerModelFromSettings(map[string]any{"quantization": "none"}, 3)
	m.Checkpoint = "awq"
	fromCheckpoint, err := NewSimGeneratorFor(m).Generate(ctx, item)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(first, fromCheckpoint); diff != "" {
		t.Errorf("an awq checkpoint served with quantization none answered unlike awq (-awq +checkpoint):\n%s", diff)
	}
	_, err = NewSimGenerator(map[string]any{"quantization": "mystery"}, 3).Generate(ctx, item)
	if err == nil || !strings.Contains(err.Error(), `"mystery"`) {
		t.Errorf("unknown quantization: error %v; want one naming it", err)
	}
}
