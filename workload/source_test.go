package workload

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadSyntheticIsReproducible(t *testing.T) {
	t.Parallel()
	c := Class{Name: "chat", Requests: 50, Warmup: 5, InputTokens: Dist{Kind: DistLogNormal, A: 500, B: 0.5},
		OutputTokens: Dist{Kind: DistUniform, A: 10, B: 20}, PrefixTokens: 100,
		Arrival: Arrival{Kind: ArrivalPoisson, Rate: 10}, CancelFraction: 0.3}
	a, err := Load(c, 7)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Load(c, 7)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("same seed, different requests (-first +second):\n%s", diff)
	}
	other, _ := Load(c, 8)
	if cmp.Equal(a, other) {
		t.Errorf("seeds 7 and 8 gave the same requests")
	}
	c.Seed = 99
	own7, _ := Load(c, 7)
	own8, _ := Load(c, 8)
	if diff := cmp.Diff(own7, own8); diff != "" {
		t.Errorf("a class with its own seed changed with the study's seed (-7 +8):\n%s", diff)
	}
	if len(a) != 55 || !a[4].Warmup || a[5].Warmup {
		t.Errorf("want 55 requests with the first 5 warm-up")
	}
	cancels := 0
	for i, r := range a {
		if r.InputTokens <= r.PrefixTokens {
			t.Errorf("request %d: input %d not above the prefix %d", i, r.InputTokens, r.PrefixTokens)
		}
		if i > 0 && r.At < a[i-1].At {
			t.Errorf("request %d due before request %d", i, i-1)
		}
		if r.Cancel {
			cancels++
		}
	}
	if cancels == 0 || cancels == len(a) {
		t.Errorf("cancel_fraction 0.3 cancelled %d of %d", cancels, len(a))
	}
}

func TestLoadDatasets(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		file    string
		content string
		class   Class
		want    []Request
	}{
		{
			name:    "jsonl prompts and messages",
			file:    "d.jsonl",
			content: "{\"prompt\": \"abcdefgh\", \"max_tokens\": 5}\n\n{\"messages\": [{\"role\": \"user\", \"content\": \"hi there\"}]}\n",
			class:   Class{Name: "d", Requests: 2, OutputTokens: Dist{Kind: DistFixed, A: 9}},
		},
		{
			name: "sharegpt conversations",
			file: "s.json",
			content: `[{"id": "a", "conversations": [{"from": "human", "value": "abcd"}, {"from": "gpt", "value": "12345678"}]},
			{"conversations": [{"from": "human", "value": "only one turn"}]},
			{"conversations": [{"from": "gpt", "value": "x"}, {"from": "human", "value": "abcdefgh"}, {"from": "gpt", "value": "1234"}]}]`,
			class: Class{Name: "s", Requests: 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := tt.class
			c.Dataset = writeFile(t, tt.file, tt.content)
			got, err := Load(c, 1)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != c.Requests {
				t.Fatalf("%d requests, want %d", len(got), c.Requests)
			}
			// The order is drawn from the seed; compare as a set keyed by prompt.
			byPrompt := map[string]Request{}
			for _, r := range got {
				key := r.Prompt
				if len(r.Messages) > 0 {
					key = "messages:" + r.Messages[0].Content
				}
				r.Index, r.At = 0, 0
				byPrompt[key] = r
			}
			var want map[string]Request
			switch tt.name {
			case "jsonl prompts and messages":
				want = map[string]Request{
					"abcdefgh":          {Class: "d", Prompt: "abcdefgh", InputTokens: 2, OutputTokens: 5},
					"messages:hi there": {Class: "d", Messages: []Message{{Role: "user", Content: "hi there"}}, InputTokens: 2, OutputTokens: 9},
				}
			default:
				want = map[string]Request{
					"abcd":     {Class: "s", Prompt: "abcd", InputTokens: 1, OutputTokens: 2},
					"abcdefgh": {Class: "s", Prompt: "abcdefgh", InputTokens: 2, OutputTokens: 1},
				}
			}
			if diff := cmp.Diff(want, byPrompt); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoadDatasetCyclesAndSamples(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for i := 0; i < 3; i++ {
		b.WriteString(`{"prompt": "p` + string(rune('a'+i)) + `"}` + "\n")
	}
	c := Class{Name: "c", Requests: 7, Dataset: writeFile(t, "d.jsonl", b.String())}
	got, err := Load(c, 3)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, r := range got {
		seen[r.Prompt]++
	}
	if len(got) != 7 || len(seen) != 3 {
		t.Errorf("7 requests from 3 prompts: got %d requests, %d distinct prompts", len(got), len(seen))
	}
	c.Requests = 2
	two, _ := Load(c, 3)
	if len(two) != 2 || two[0].Prompt == two[1].Prompt {
		t.Errorf("2 of 3 prompts drawn without replacement: %+v", two)
	}
}

func TestLoadErrorsNameFileAndLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		file    string
		content string
		trace   bool
		line    int
		msg     string
	}{
		{"bad json", "d.jsonl", "{\"prompt\": \"a\"}\n{\"prompt\": \n", false, 2, "not a JSON object"},
		{"neither prompt nor messages", "d.jsonl", "\n\n{\"text\": \"a\"}\n", false, 3, `no "prompt"`},
		{"both prompt and messages", "d.jsonl", `{"prompt": "a", "messages": [{"role": "user", "content": "b"}]}`, false, 1, "both"},
		{"zero max_tokens", "d.jsonl", `{"prompt": "a", "max_tokens": 0}`, false, 1, "at least 1"},
		{"empty dataset", "d.jsonl", "\n", false, 0, "no usable entries"},
		{"sharegpt entry of the wrong type", "s.json", "[\n{\"conversations\": []},\n{\"conversations\": 3}\n]", false, 3, "conversation 2"},
		{"sharegpt unterminated", "s.json", "[\n{\"conversations\": []}", false, 2, "does not end"},
		{"trace without timestamp", "t.jsonl", "{\"timestamp\": 0, \"input_tokens\": 1, \"output_tokens\": 1}\n{\"input_tokens\": 1}\n", true, 2, `no "timestamp"`},
		{"trace negative length", "t.jsonl", `{"timestamp": 1, "input_tokens": -3, "output_tokens": 1}`, true, 1, "at least 1"},
		{"trace without lengths or distributions", "t.jsonl", `{"timestamp": 1}`, true, 1, `no "input_tokens"`},
		{"trace negative time", "t.jsonl", `{"timestamp": -1, "input_tokens": 1, "output_tokens": 1}`, true, 1, "at least 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := writeFile(t, tt.file, tt.content)
			c := Class{Name: "c", Requests: 5}
			if tt.trace {
				c.Arrival = Arrival{Kind: ArrivalTrace, TraceFile: path}
			} else {
				c.Dataset = path
			}
			_, err := Load(c, 1)
			var ie *InputError
			if !errors.As(err, &ie) {
				t.Fatalf("error %v is not an *InputError", err)
			}
			if ie.File != path || ie.Line != tt.line || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q: want file %s, line %d, and %q", err, path, tt.line, tt.msg)
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	t.Parallel()
	_, err := Load(Class{Name: "c", Dataset: filepath.Join(t.TempDir(), "none.jsonl")}, 1)
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("error %v, want one wrapping os.ErrNotExist", err)
	}
}

func TestLoadTraceKeepsTimesAndLengths(t *testing.T) {
	t.Parallel()
	content := `{"timestamp": 100.5, "input_tokens": 30, "output_tokens": 3}
{"timestamp": 100.0, "input_tokens": 10, "output_tokens": 1}
{"timestamp": 101.25, "output_tokens": 4}
{"timestamp": 200, "input_tokens": 1, "output_tokens": 1}
`
	c := Class{Name: "t", Warmup: 1, Requests: 2, InputTokens: Dist{Kind: DistFixed, A: 50},
		Arrival: Arrival{Kind: ArrivalTrace, TraceFile: writeFile(t, "t.jsonl", content)}}
	got, err := Load(c, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := []Request{
		{Class: "t", Index: 0, Warmup: true, At: 0, InputTokens: 10, OutputTokens: 1},
		{Class: "t", Index: 1, At: 500 * time.Millisecond, InputTokens: 30, OutputTokens: 3},
		{Class: "t", Index: 2, At: 1250 * time.Millisecond, InputTokens: 50, OutputTokens: 4},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("trace requests (-want +got):\n%s", diff)
	}
}

func TestLoadTraceWithDatasetPrompts(t *testing.T) {
	t.Parallel()
	c := Class{Name: "t", Requests: 2,
		Dataset: writeFile(t, "d.jsonl", `{"prompt": "hello"}`),
		Arrival: Arrival{Kind: ArrivalTrace, TraceFile: writeFile(t, "t.jsonl",
			"{\"timestamp\": 0, \"input_tokens\": 5, \"output_tokens\": 7}\n{\"timestamp\": 1, \"input_tokens\": 5, \"output_tokens\": 8}\n")}}
	got, err := Load(c, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Prompt != "hello" || got[1].OutputTokens != 8 || got[1].At != time.Second {
		t.Errorf("trace with dataset: %+v", got)
	}
}

// FuzzReadDataset checks that no input makes the dataset readers panic, and that every
// entry they accept can be sent.
func FuzzReadDataset(f *testing.F) {
	f.Add([]byte(`{"prompt": "a", "max_tokens": 3}` + "\n" + `{"messages": [{"role": "user", "content": "b"}]}`))
	f.Add([]byte(`[{"conversations": [{"from": "human", "value": "q"}, {"from": "gpt", "value": "a"}]}]`))
	f.Add([]byte("\xef\xbb\xbf[]"))
	f.Add([]byte("{\"prompt\": \"\\u00e9\"}\n{bad"))
	f.Add([]byte("[{\"conversations\": [{\"from\": 1}]}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		add := func(e entry) {
			if e.prompt == "" && len(e.messages) == 0 {
				t.Fatalf("accepted an entry with no prompt: %+v", e)
			}
			if e.maxTokens < 0 {
				t.Fatalf("negative max_tokens: %+v", e)
			}
		}
		_ = readJSONL("f.jsonl", bytes.NewReader(data), add)
		_ = readShareGPT("f.json", bytes.NewReader(data), add)
	})
}

// FuzzReadTrace checks that no trace makes the reader panic and that accepted traces are in
// time order with usable lengths.
func FuzzReadTrace(f *testing.F) {
	f.Add([]byte(`{"timestamp": 1.5, "input_tokens": 10, "output_tokens": 2}` + "\n" + `{"timestamp": 0.5, "input_tokens": 1, "output_tokens": 1}`))
	f.Add([]byte(`{"timestamp": 1e308, "input_tokens": 1, "output_tokens": 1}`))
	f.Add([]byte(`{"timestamp": 3}`))
	f.Add([]byte("\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c := Class{Name: "t", Requests: 10, PrefixTokens: 2}
		reqs, err := readTrace("t.jsonl", bytes.NewReader(data), c, 1)
		if err != nil {
			return
		}
		for i, r := range reqs {
			if r.At < 0 || (i > 0 && r.At < reqs[i-1].At) {
				t.Fatalf("request %d at %v after %v", i, r.At, reqs[max(i-1, 0)].At)
			}
			if r.InputTokens <= r.PrefixTokens || r.OutputTokens < 1 {
				t.Fatalf("request %d has unusable lengths: %+v", i, r)
			}
		}
	})
}

func TestSamplerKeepsAUniformSample(t *testing.T) {
	t.Parallel()
	counts := make([]int, 10)
	for seed := uint64(0); seed < 2000; seed++ {
		s := newSampler(3, seed)
		for i := 0; i < 10; i++ {
			s.add(entry{maxTokens: i + 1})
		}
		for _, e := range s.result() {
			counts[e.maxTokens-1]++
		}
	}
	// Each of 10 entries is kept with probability 3/10: 600 of 2000 draws.
	for i, n := range counts {
		if n < 480 || n > 720 {
			t.Errorf("entry %d kept %d times of 2000, want about 600", i, n)
		}
	}
}
