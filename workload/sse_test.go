package workload

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
)

func readAll(r io.Reader) ([]string, error) {
	s := newSSEReader(r)
	var out []string
	for {
		p, err := s.next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return out, err
		}
		out = append(out, string(p))
	}
}

func TestSSEReaderPayloads(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 100<<10)
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"events and done", "data: {\"a\":1}\n\ndata: [DONE]\n\n", []string{`{"a":1}`, "[DONE]"}},
		{"no space after the colon", "data:{}\n\n", []string{"{}"}},
		{"crlf line ends", "data: {}\r\n\r\ndata: [DONE]\r\n\r\n", []string{"{}", "[DONE]"}},
		{"comments and other fields skipped", ": ping\nevent: message\nid: 3\nretry: 10\ndata: x\n\n", []string{"x"}},
		{"a last line without newline", "data: {}\n\ndata: [DONE]", []string{"{}", "[DONE]"}},
		{"a line longer than the buffer", "data: " + long + "\n\n", []string{long}},
		{"empty data", "data:\n\n", []string{""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// One byte at a time too: payloads must not depend on how reads split the stream.
			for _, r := range []io.Reader{strings.NewReader(tt.in), iotest.OneByteReader(strings.NewReader(tt.in))} {
				got, err := readAll(r)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("payloads (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestParseChunk(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		want    chunk
		wantErr bool
	}{
		{"completion text", `{"id":"cmpl-1","object":"text_completion","choices":[{"index":0,"text":" hi","logprobs":null,"finish_reason":null}]}`,
			chunk{content: true}, false},
		{"empty completion text", `{"choices":[{"index":0,"text":"","finish_reason":"length"}]}`, chunk{finish: "length"}, false},
		{"chat role chunk has no content", `{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`, chunk{}, false},
		{"chat content", `{"choices":[{"index":0,"delta":{"content":"x"}}]}`, chunk{content: true}, false},
		{"chat last chunk", `{"choices":[{"index":0,"delta":{"content":"."},"finish_reason":"stop"}]}`, chunk{content: true, finish: "stop"}, false},
		{"reasoning counts as content", `{"choices":[{"index":0,"delta":{"reasoning_content":"hmm"}}]}`, chunk{content: true}, false},
		{"null content", `{"choices":[{"index":0,"delta":{"content":null}}]}`, chunk{}, false},
		{"usage", `{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":34,"total_tokens":46}}`,
			chunk{usage: true, prompt: 12, completed: 34}, false},
		{"vllm error object", `{"error":{"object":"error","message":"boom","type":"BadRequestError","code":400}}`,
			chunk{isError: true, errMsg: "boom", errCode: 400}, false},
		{"top-level error", `{"object":"error","message":"overloaded","code":"503"}`,
			chunk{isError: true, errMsg: "overloaded", errCode: 503}, false},
		{"error as a string", `{"error":"plain"}`, chunk{isError: true, errMsg: `"plain"`}, false},
		{"null error is no error", `{"error":null,"choices":[{"text":"a"}]}`, chunk{content: true}, false},
		{"not json", `{"choices": [`, chunk{}, true},
		{"not an object", `[1,2]`, chunk{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseChunk([]byte(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v, want error %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(chunk{})); diff != "" {
				t.Errorf("chunk (-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzSSE checks that no stream makes the reader or the chunk parser panic, and that the
// reader yields the same payloads however the stream is split into reads.
func FuzzSSE(f *testing.F) {
	f.Add("data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n")
	f.Add("data: {\"error\": {\"message\": \"x\", \"code\": 500}}\n\ndata: [DONE]\n\n")
	f.Add(": keep-alive\r\n\r\ndata:{\"choices\":[{\"delta\":{\"content\":\"\"}}]}\r\n")
	f.Add("data: {\"choices\": [{\"text\": \"\\ud800\"}]}\n")
	f.Add("data: {\"usage\": {\"prompt_tokens\": -1, \"completion_tokens\": 1e400}}\n")
	f.Fuzz(func(t *testing.T, stream string) {
		whole, err1 := readAll(strings.NewReader(stream))
		split, err2 := readAll(iotest.OneByteReader(strings.NewReader(stream)))
		if (err1 == nil) != (err2 == nil) || !cmp.Equal(whole, split) {
			t.Fatalf("payloads depend on reads: %q (%v) vs %q (%v)", whole, err1, split, err2)
		}
		for _, p := range whole {
			c, err := parseChunk([]byte(p))
			if err == nil && c.isError && c.errCode != 0 && (c.errCode < 100 || c.errCode > 599) {
				t.Fatalf("error code %d is not an HTTP status", c.errCode)
			}
		}
	})
}

func TestScanChunkTakesTheUsualShapes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		ok   bool
	}{
		{"vllm completion chunk", `{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" a","logprobs":null,"finish_reason":null,"stop_reason":null}]}`, true},
		{"vllm chat chunk", `{"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"b"},"logprobs":null,"finish_reason":null}]}`, true},
		{"usage chunk", `{"id":"x","choices":[],"usage":{"prompt_tokens":5,"total_tokens":7,"completion_tokens":2,"prompt_tokens_details":null}}`, true},
		{"ollama chunk", `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","system_fingerprint":"fp_ollama","choices":[{"index":0,"delta":{"role":"assistant","content":"c"},"finish_reason":null}]}`, true},
		{"error object goes the slow way", `{"error":{"message":"x"}}`, false},
		{"case-folded key goes the slow way", `{"Choices":[{"text":"a"}]}`, false},
		{"escaped key goes the slow way", `{"ch\u006fices":[]}`, false},
		{"repeated usage goes the slow way", `{"usage":{"prompt_tokens":1},"usage":{"completion_tokens":2}}`, false},
		{"trailing garbage is refused", `{"choices":[]} x`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := scanChunk([]byte(tt.in))
			if ok != tt.ok {
				t.Fatalf("scanChunk ok = %v, want %v", ok, tt.ok)
			}
			if !ok {
				return
			}
			want, err := decodeChunk([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got, cmp.AllowUnexported(chunk{})); diff != "" {
				t.Errorf("scanChunk against encoding/json (-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzScanChunk checks the fast chunk scanner against encoding/json: whatever it accepts, it
// reads exactly as encoding/json does.
func FuzzScanChunk(f *testing.F) {
	for _, s := range []string{
		`{"id":"cmpl-1","object":"text_completion","choices":[{"index":0,"text":" a","logprobs":null,"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`,
		`{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":-3,"total_tokens":9}}`,
		`{"choices":[{"delta":{"reasoning_content":"\u00e9","content":null}}],"x":[1,2.5e-3,{"y":true}]}`,
		`{"object":"error","message":"m","code":400}`,
		`{"error":null,"choices":null,"usage":null}`,
		` {"a":"\"\\\/\b\f\n\r\t"} `,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := scanChunk([]byte(s))
		if !ok {
			return
		}
		want, err := decodeChunk([]byte(s))
		if err != nil {
			t.Fatalf("scanChunk accepted %q, which encoding/json refuses: %v", s, err)
		}
		if got != want {
			t.Fatalf("scanChunk(%q) = %+v, encoding/json reads %+v", s, got, want)
		}
	})
}
