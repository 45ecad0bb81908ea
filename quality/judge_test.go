package quality

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/ollama/ollama/api"

	"github.com/frontier-llm/frontier/plan"
)

func TestParseVerdictReadsTheUsualForms(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		reply string
		want  float64
	}{
		{name: "score line", reply: "The answer keeps the name.\nScore: 4/5", want: 0.8},
		{name: "last score line wins", reply: "A first guess, score: 2/5. On reflection:\nScore: 5/5", want: 1},
		{name: "markdown bold", reply: "**Score:** **3**/5", want: 0.6},
		{name: "out of", reply: "Rating: 7 out of 10", want: 0.7},
		{name: "json object", reply: `{"score": 0.8, "reason": "minor omission"}`, want: 0.8},
		{name: "json in prose", reply: "Here is my verdict: {\"rating\": 4} thanks", want: 0.8},
		{name: "json score as a string", reply: `{"score": "3/4"}`, want: 0.75},
		{name: "bare whole number on the 1..5 scale", reply: "4", want: 0.8},
		{name: "bare fraction in 0..1", reply: "0.35\n", want: 0.35},
		{name: "bare one with a decimal point", reply: "1.0", want: 1},
		{name: "bare fraction", reply: " 2/4. ", want: 0.5},
		{name: "percentage", reply: "score = 85%", want: 0.85},
		{name: "zero", reply: "Score: 0", want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseVerdict(tt.reply)
			if err != nil {
				t.Fatalf("ParseVerdict(%q): %v", tt.reply, err)
			}
			if diff := cmp.Diff(tt.want, got, approx); diff != "" {
				t.Errorf("ParseVerdict(%q) (-want +got):\n%s", tt.reply, diff)
			}
		})
	}
}

func TestParseVerdictRejectsUnusableVerdicts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		reply string
		want  error
	}{
		{name: "no number", reply: "The answer is fine.", want: ErrVerdictUnparseable},
		{name: "empty", reply: "", want: ErrVerdictUnparseable},
		{name: "above the scale", reply: "Score: 6/5", want: ErrVerdictOutOfRange},
		{name: "whole number above 5", reply: "Score: 9", want: ErrVerdictOutOfRange},
		{name: "decimal above 1", reply: `{"score": 1.5}`, want: ErrVerdictOutOfRange},
		{name: "negative json", reply: `{"score": -1}`, want: ErrVerdictOutOfRange},
		{name: "zero denominator", reply: "Score: 0/0", want: ErrVerdictOutOfRange},
		{name: "percentage above 100", reply: "score: 120%", want: ErrVerdictOutOfRange},
		{name: "json score not a number", reply: `{"score": true}`, want: ErrVerdictUnparseable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseVerdict(tt.reply)
			if !errors.Is(err, tt.want) {
				t.Errorf("ParseVerdict(%q) = %v, %v; want an error wrapping %v", tt.reply, got, err, tt.want)
			}
		})
	}
}

// ollamaStandIn is an httptest server on loopback that speaks Ollama's /api/chat protocol
// (non-streaming), a stand-in for a real Ollama server with a judge model: it answers each
// request with verdict(the user message) and records the requests.
type ollamaStandIn struct {
	*httptest.Server
	mu       sync.Mutex
	requests []api.ChatRequest
}

func newOllamaStandIn(t *testing.T, verdict func(user string) string) *ollamaStandIn {
	t.Helper()
	s := &ollamaStandIn{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/chat" || r.Method != http.MethodPost {
			http.Error(w, `{"error":"not found"}`, http.StatusNotFound)
			return
		}
		var req api.ChatRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, `{"error":"bad request"}`, http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.requests = append(s.requests, req)
		s.mu.Unlock()
		if req.Model != "judge-model" {
			w.WriteHeader(http.StatusNotFound)
			json.NewEncoder(w).Encode(map[string]string{"error": `model "` + req.Model + `" not found, try pulling it first`})
			return
		}
		user := req.Messages[len(req.Messages)-1].Content
		json.NewEncoder(w).Encode(api.ChatResponse{
			Model:   req.Model,
			Message: api.Message{Role: "assistant", Content: verdict(user)},
			Done:    true,
		})
	}))
	t.Cleanup(s.Close)
	return s
}

func TestJudgeScoresItemsAndSkipsUnusableVerdicts(t *testing.T) {
	t.Parallel()
	srv := newOllamaStandIn(t, func(user string) string {
		switch {
		case strings.Contains(user, "answer-good"):
			return "The name is kept and the format followed.\nScore: 5/5"
		case strings.Contains(user, "answer-partial"):
			return `{"score": 0.6}`
		case strings.Contains(user, "answer-odd"):
			return "Score: 11/5"
		}
		return "I cannot decide."
	})
	items := []Item{
		{ID: "1", Prompt: "q1", Reference: "r1"},
		{ID: "2", Prompt: "q2"},
		{ID: "3", Prompt: "q3"},
		{ID: "4", Prompt: "q4"},
	}
	outputs := []string{"answer-good", "answer-partial", "answer-odd", "answer-vague"}
	gate := plan.QualityGate{Name: "judged", Scorer: ScorerJudge, JudgeModel: "judge-model",
		JudgeRubric: "Keeps the customer's name.", JudgeURL: srv.URL}
	o, err := Score(context.Background(), gate, items, outputs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]float64{1, 0.6, 0, 0}, o.Items, approx); diff != "" {
		t.Errorf("item scores (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(0.8, o.Score, approx); diff != "" {
		t.Errorf("score: the mean over the items with a usable verdict (-want +got):\n%s", diff)
	}
	var errIDs []string
	for _, e := range o.Errors {
		errIDs = append(errIDs, e.ID)
	}
	if diff := cmp.Diff([]string{"3", "4"}, errIDs); diff != "" {
		t.Errorf("items with unusable verdicts (-want +got):\n%s", diff)
	}

	srv.mu.Lock()
	defer srv.mu.Unlock()
	if len(srv.requests) != 4 {
		t.Fatalf("the judge got %d requests; want 4", len(srv.requests))
	}
	req := srv.requests[0]
	if diff := cmp.Diff(map[string]any{"temperature": float64(0), "seed": float64(GenerationSeed)}, req.Options); diff != "" {
		t.Errorf("judge options (-want +got):\n%s", diff)
	}
	if req.Stream == nil || *req.Stream {
		t.Errorf("judge request streams; want stream false")
	}
	if sys := req.Messages[0].Content; !strings.Contains(sys, "Keeps the customer's name.") || !strings.Contains(sys, "Score: N/5") {
		t.Errorf("system message %q lacks the rubric or the verdict format", sys)
	}
	if user := req.Messages[1].Content; !strings.Contains(user, "Reference answer:\nr1") || !strings.Contains(user, "Question:\nq1") {
		t.Errorf("user message %q lacks the question or the reference", user)
	}
	if user := srv.requests[1].Messages[1].Content; strings.Contains(user, "Reference answer") {
		t.Errorf("user message %q has a reference section for an item without a reference", user)
	}
}

func TestJudgeFailuresThatAreNotVerdicts(t *testing.T) {
	t.Parallel()
	srv := newOllamaStandIn(t, func(string) string { return "nothing useful" })
	items := []Item{{ID: "1", Prompt: "q"}}
	tests := []struct {
		name string
		gate plan.QualityGate
		want string
	}{
		{name: "unknown judge model", gate: plan.QualityGate{Scorer: ScorerJudge, JudgeModel: "missing", JudgeURL: srv.URL},
			want: `model "missing" not found`},
		{name: "no judge model", gate: plan.QualityGate{Scorer: ScorerJudge, JudgeURL: srv.URL}, want: "no judge model"},
		{name: "bad judge url", gate: plan.QualityGate{Scorer: ScorerJudge, JudgeModel: "judge-model", JudgeURL: "localhost"},
			want: "not an absolute URL"},
		{name: "every verdict unusable", gate: plan.QualityGate{Scorer: ScorerJudge, JudgeModel: "judge-model", JudgeURL: srv.URL},
			want: "no item could be scored"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Score(context.Background(), tt.gate, items, []string{"a"}, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Score error %v; want one containing %q", err, tt.want)
			}
		})
	}
}

// FuzzParseVerdict checks that any reply gives a score in 0..1 or a verdict error.
func FuzzParseVerdict(f *testing.F) {
	for _, s := range []string{"Score: 4/5", `{"score": 0.8}`, "4", "0.35", "rating = 85%", "Score: 6/5",
		`{"score": "3/4"}`, `{"score": {"x": 1}}`, "**Score:** **3**/5", "score: .5", "Score: 1e9/2", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, reply string) {
		s, err := ParseVerdict(reply)
		if err != nil {
			if !errors.Is(err, ErrVerdictUnparseable) && !errors.Is(err, ErrVerdictOutOfRange) {
				t.Errorf("ParseVerdict(%q): error %v wraps neither verdict error", reply, err)
			}
			return
		}
		if s < 0 || s > 1 || s != s {
			t.Errorf("ParseVerdict(%q) = %v; want a score in 0..1", reply, s)
		}
	})
}
