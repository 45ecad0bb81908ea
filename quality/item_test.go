package quality

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestReadSetReadsEveryField(t *testing.T) {
	t.Parallel()
	in := "\xef\xbb\xbf" + `{"id": "a", "prompt": "Say hi", "reference": "hi", "contains": ["hi"], "regex": "^h", "json": false, "max_tokens": 8}` + "\r\n" +
		"\n" +
		`{"id": 7, "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}], "json": true}` + "\n" +
		`{"id": "c", "prompt": "p", "contains": "届"}`
	got, err := ReadSet(strings.NewReader(in), "set.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	want := []Item{
		{ID: "a", Prompt: "Say hi", Reference: "hi", Contains: []string{"hi"}, Regex: "^h", MaxTokens: 8, Source: "set.jsonl:1"},
		{ID: "7", Messages: []Message{{"system", "S"}, {"user", "U"}}, JSON: true, Source: "set.jsonl:3"},
		{ID: "c", Prompt: "p", Contains: []string{"届"}, Source: "set.jsonl:4"},
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(Item{})); diff != "" {
		t.Errorf("ReadSet (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff("S\nU", got[1].Text()); diff != "" {
		t.Errorf("Text of a chat (-want +got):\n%s", diff)
	}
}

func TestReadSetNamesFileLineAndProblem(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want []string // every substring must appear in the error
	}{
		{name: "not json", in: `{"id": "a", "prompt": "x"}` + "\n" + `{"id": "b", prompt: "x"}`,
			want: []string{"set.jsonl:2: not valid JSON"}},
		{name: "missing id", in: `{"prompt": "x"}`, want: []string{"set.jsonl:1: missing \"id\""}},
		{name: "id of the wrong type", in: `{"id": [1], "prompt": "x"}`, want: []string{"set.jsonl:1:", "want a string or a number"}},
		{name: "duplicate id", in: `{"id": "a", "prompt": "x"}` + "\n" + `{"id": "a", "prompt": "y"}`,
			want: []string{"set.jsonl:2: id \"a\" is already used on line 1"}},
		{name: "neither prompt nor messages", in: `{"id": "a"}`, want: []string{"set.jsonl:1:", "neither \"prompt\" nor \"messages\""}},
		{name: "both prompt and messages", in: `{"id": "a", "prompt": "x", "messages": [{"role": "user", "content": "y"}]}`,
			want: []string{"set.jsonl:1:", "both \"prompt\" and \"messages\""}},
		{name: "empty prompt", in: `{"id": "a", "prompt": "  "}`, want: []string{"set.jsonl:1:", "\"prompt\" is empty"}},
		{name: "bad role", in: `{"id": "a", "messages": [{"role": "bot", "content": "y"}]}`,
			want: []string{"set.jsonl:1:", "messages[0] has role \"bot\"; want system, user or assistant"}},
		{name: "unknown field", in: `{"id": "a", "prompt": "x", "referense": "y"}`,
			want: []string{"set.jsonl:1:", `unknown field "referense"`, "known fields are id, prompt"}},
		{name: "wrong type", in: `{"id": "a", "prompt": "x", "contains": 3}`,
			want: []string{"set.jsonl:1:", `"contains" is 3; want a list of strings`}},
		{name: "wrong type in a list", in: `{"id": "a", "prompt": "x", "contains": ["a", 3]}`,
			want: []string{"set.jsonl:1:", `"contains" is ["a", 3]; want a list of strings`}},
		{name: "empty contains string", in: `{"id": "a", "prompt": "x", "contains": ""}`,
			want: []string{"set.jsonl:1:", `contains[0] is empty`}},
		{name: "wrong type of a field", in: `{"id": "a", "prompt": "x", "json": "yes"}`,
			want: []string{"set.jsonl:1:", `field "json" is a string; want true or false`}},
		{name: "regex does not compile", in: `{"id": "a", "prompt": "x", "regex": "("}`,
			want: []string{"set.jsonl:1:", "\"regex\" does not compile"}},
		{name: "max_tokens not positive", in: `{"id": "a", "prompt": "x", "max_tokens": 0}`,
			want: []string{"set.jsonl:1:", "\"max_tokens\" is 0; want a positive number"}},
		{name: "two objects on a line", in: `{"id": "a", "prompt": "x"} {"id": "b", "prompt": "y"}`,
			want: []string{"set.jsonl:1:", "more than one JSON value"}},
		{name: "not an object", in: `["a"]`, want: []string{"set.jsonl:1: want a JSON object"}},
		{name: "empty file", in: "\n\n", want: []string{"set.jsonl: no items"}},
		{name: "every bad line reported", in: `{"id": "a"}` + "\n" + `{"id": "b", "prompt": "ok"}` + "\n" + `{}`,
			want: []string{"set.jsonl:1:", "set.jsonl:3:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			items, err := ReadSet(strings.NewReader(tt.in), "set.jsonl")
			if err == nil {
				t.Fatalf("ReadSet = %d items, nil error; want an error", len(items))
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("ReadSet error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestLoadSetReadsEveryExampleSet(t *testing.T) {
	t.Parallel()
	paths, err := filepath.Glob("../examples/evals/*.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Skip("no example evaluation sets")
	}
	for _, p := range paths {
		if _, err := LoadSet(p); err != nil {
			t.Errorf("LoadSet(%s): %v", p, err)
		}
	}
}

func TestLoadSetReportsMissingFile(t *testing.T) {
	t.Parallel()
	_, err := LoadSet("testdata/no-such-set.jsonl")
	if err == nil || !strings.Contains(err.Error(), "no-such-set.jsonl") {
		t.Errorf("LoadSet of a missing file: error %v; want one naming the file", err)
	}
}

// FuzzReadSet checks that the reader never panics, and that whatever it accepts is a valid
// set: unique non-empty ids, exactly one of prompt and messages, compiled regexes.
func FuzzReadSet(f *testing.F) {
	for _, s := range []string{
		`{"id": "a", "prompt": "x", "reference": "y"}`,
		`{"id": 1, "messages": [{"role": "user", "content": "こんにちは"}], "contains": ["田中"], "regex": "^.+$", "json": true, "max_tokens": 3}`,
		`{"id": "a", "prompt": "x"}` + "\n" + `{"id": "a", "prompt": "x"}`,
		"\xef\xbb\xbf{\"id\": \"b\", \"prompt\": \"p\"}\r\n\r\n",
		`{"id": null}`, `[]`, `{`, "", `{"id": "x", "prompt": "p"} 1`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		items, err := ReadSet(strings.NewReader(in), "fuzz.jsonl")
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz.jsonl") {
				t.Errorf("error %q does not name the file", err)
			}
			return
		}
		seen := map[string]bool{}
		for _, it := range items {
			if it.ID == "" || seen[it.ID] {
				t.Errorf("accepted an empty or repeated id %q", it.ID)
			}
			seen[it.ID] = true
			if (it.Prompt == "") == (it.Messages == nil) {
				t.Errorf("item %q: want exactly one of prompt and messages", it.ID)
			}
			if _, err := it.compiled(); err != nil {
				t.Errorf("item %q: accepted a regex that does not compile: %v", it.ID, err)
			}
		}
	})
}
