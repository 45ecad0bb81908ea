package workload

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// TestARefusedRequestKeepsTheEnginesReason runs requests against a loopback server that
// answers as vLLM does to a prompt longer than max_model_len (a stand-in for vLLM: the
// status and body are those of its ErrorResponse): each Record and the class's Result keep
// the engine's message, not only the count.
func TestARefusedRequestKeepsTheEnginesReason(t *testing.T) {
	t.Parallel()
	const msg = "This model's maximum context length is 2048 tokens. However, your request has 3000 input tokens. Please reduce the length of the input messages."
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error": {"message": "` + msg + `", "type": "BadRequestError", "param": null, "code": 400}}`))
	}))
	defer srv.Close()
	class := Class{Name: "chat", Requests: 3, Timeout: time.Minute, InputTokens: Dist{Kind: DistFixed, A: 3000}, OutputTokens: Dist{Kind: DistFixed, A: 8},
		Arrival: Arrival{Kind: ArrivalImmediate}}
	res, err := Run(context.Background(), Target{URL: srv.URL, Model: "m"}, []Class{class}, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := "HTTP 400: " + msg
	for _, r := range res.Records {
		if r.Err != want {
			t.Errorf("record %d: Err = %q, want %q", r.Index, r.Err, want)
		}
	}
	if diff := cmp.Diff(map[string]string{ErrHTTP: want}, res.Measurement.Workloads["chat"].ErrorMessages); diff != "" {
		t.Errorf("class error messages (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{ErrHTTP: want}, res.Measurement.Total.ErrorMessages); diff != "" {
		t.Errorf("total error messages (-want +got):\n%s", diff)
	}
}

func TestEngineMessage(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 3*MaxErrorMessage)
	for _, tc := range []struct{ name, body, want string }{
		{"vLLM ErrorResponse", `{"error": {"message": "too long", "type": "BadRequestError", "code": 400}}`, "too long"},
		{"older vLLM", `{"object": "error", "message": "too long", "type": "BadRequestError", "code": 400}`, "too long"},
		{"an error string", `{"error": "model not found"}`, "model not found"},
		{"FastAPI detail", `{"detail": "Not Found"}`, "Not Found"},
		{"FastAPI validation list", `{"detail": [{"loc": ["body"], "msg": "field required"}]}`, `[{"loc": ["body"], "msg": "field required"}]`},
		{"plain text", "Bad Gateway\n", "Bad Gateway"},
		{"control characters and escapes", "{\"error\": {\"message\": \"a\\u001b[31mred\\r\\nline\\u0000\"}}", "a\ufffd[31mred line\ufffd"},
		{"invalid UTF-8", "bad \xff byte", "bad \ufffd byte"},
		{"long", `{"message": "` + long + `"}`, strings.Repeat("é", MaxErrorMessage) + "…"},
		{"empty", "", ""},
	} {
		got := engineMessage([]byte(tc.body))
		if got != tc.want {
			t.Errorf("%s: engineMessage = %q, want %q", tc.name, got, tc.want)
		}
		if !utf8.ValidString(got) || strings.ContainsAny(got, "\n\r\x1b\x00") {
			t.Errorf("%s: engineMessage = %q is not one line of printable text", tc.name, got)
		}
	}
}

// FuzzEngineMessage checks that whatever a server sends, the message kept is one line of
// valid UTF-8 with no control character and at most MaxErrorMessage+1 characters.
func FuzzEngineMessage(f *testing.F) {
	f.Add([]byte(`{"error": {"message": "x"}}`))
	f.Add([]byte(`{"detail": [1, 2]}`))
	f.Add([]byte("\x1b]0;title\x07\n\xff"))
	f.Fuzz(func(t *testing.T, body []byte) {
		got := engineMessage(body)
		if !utf8.ValidString(got) || utf8.RuneCountInString(got) > MaxErrorMessage+1 {
			t.Fatalf("engineMessage(%q) = %q", body, got)
		}
		for _, r := range got {
			if r < 0x20 || r == 0x7f {
				t.Fatalf("engineMessage(%q) = %q holds a control character", body, got)
			}
		}
	})
}
