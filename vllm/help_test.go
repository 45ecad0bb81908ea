package vllm

import (
	"os"
	"slices"
	"strings"
	"testing"
)

func TestParseHelpReadsOnlyOptionLines(t *testing.T) {
	t.Parallel()
	text, err := os.ReadFile("testdata/help-prose.txt")
	if err != nil {
		t.Fatal(err)
	}
	opts, err := ParseHelp(string(text))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]HelpOption{}
	for _, o := range opts {
		got[o.Names[0]] = o
	}
	for _, prose := range []string{"--help=all", "--legacy-flag", "--old-grpc-switch", "--prose-only-flag",
		"--another-prose-flag", "--json-arg", "--epilog-flag"} {
		if _, ok := got[prose]; ok {
			t.Errorf("%s is named only in prose, yet ParseHelp took it as an option", prose)
		}
	}
	want := map[string]struct {
		kind    Kind
		nargs   string
		choices []string
		def     string
	}{
		"--grpc":                   {StoreTrue, "", nil, ""},
		"--headless":               {StoreTrue, "", nil, ""},
		"--max-num-seqs":           {Store, "", nil, "None"},
		"--enable-chunked-prefill": {BooleanOptional, "", nil, "None"},
		"--scheduling-policy":      {Store, "", []string{"fcfs", "priority"}, "fcfs"},
		"--tensor-parallel-size":   {Store, "", nil, "1"},
		"-pp":                      {Store, "", nil, "1"},
		"--served-model-name":      {Store, "+", nil, "None"},
		"--hf-token":               {Store, "?", nil, "None"},
	}
	for name, w := range want {
		o, ok := got[name]
		if !ok {
			t.Errorf("option %s not read; got %v", name, opts)
			continue
		}
		if o.Kind != w.kind || o.Nargs != w.nargs || !slices.Equal(o.Choices, w.choices) || o.Default != w.def {
			t.Errorf("%s = %+v, want kind %v nargs %q choices %v default %q", name, o, w.kind, w.nargs, w.choices, w.def)
		}
	}
	if len(opts) != len(want)+1 { // and -h, --help
		t.Errorf("read %d options, want %d: %+v", len(opts), len(want)+1, opts)
	}
}

func TestParseHelpStripsColour(t *testing.T) {
	t.Parallel()
	// Python 3.14's argparse with FORCE_COLOR=1 colours titles, option strings and metavars.
	text := "\x1b[1;34musage: \x1b[0m\x1b[1;35mvllm serve\x1b[0m [options]\n\n" +
		"\x1b[1;34moptions:\x1b[0m\n" +
		"  \x1b[1;36m--max-num-seqs\x1b[0m \x1b[1;33mMAX_NUM_SEQS\x1b[0m\n" +
		"                        (default: \x1b[1;32mNone\x1b[0m)\n" +
		"  \x1b[1;36m--enable-prefix-caching\x1b[0m, \x1b[1;36m--no-enable-prefix-caching\x1b[0m\n"
	opts, err := ParseHelp(text)
	if err != nil {
		t.Fatal(err)
	}
	if len(opts) != 2 || opts[0].Names[0] != "--max-num-seqs" || opts[0].Default != "None" ||
		opts[1].Kind != BooleanOptional {
		t.Errorf("coloured help read as %+v", opts)
	}
}

func TestParseHelpRefusesTextWithoutOptions(t *testing.T) {
	t.Parallel()
	for _, text := range []string{"", "vllm 0.33.0\n", "usage: x --foo\n\nSee --bar.\n", "\x00\x01\x02binary"} {
		if _, err := ParseHelp(text); err == nil {
			t.Errorf("ParseHelp(%q) = nil error, want one", text)
		}
	}
}

// TestHelpRoundTripsEveryLine renders each line's table in argparse's layout (the stand-in
// for a host's `vllm serve --help=all`, and what `frontier sim serve --help=all` prints) and
// reads it back: the same flags, kinds, short forms, nargs and choices.
func TestHelpRoundTripsEveryLine(t *testing.T) {
	t.Parallel()
	for _, line := range Versions() {
		v := mustLookup(t, line)
		h, err := v.WithHost(line+".0", v.Help("vllm serve [model_tag] [options]"))
		if err != nil {
			t.Fatalf("v%s: %v", line, err)
		}
		want, got := v.Flags(), h.Flags()
		if len(want) != len(got) {
			t.Errorf("v%s: %d flags read back, want %d", line, len(got), len(want))
			continue
		}
		for i := range want {
			w, g := want[i], got[i]
			if w.Name != g.Name || w.Kind != g.Kind || w.Nargs != g.Nargs || !slices.Equal(w.Short, g.Short) ||
				!slices.Equal(w.Choices, g.Choices) || w.Type != g.Type {
				t.Errorf("v%s: %+v read back as %+v", line, w, g)
			}
		}
	}
}

func TestWithHostDecidesAndExplains(t *testing.T) {
	t.Parallel()
	v, err := Lookup("0.33.0")
	if err != nil {
		t.Fatal(err)
	}
	help := "usage: vllm serve\n\noptions:\n  --grpc\n  --max-num-scheduled-tokens MAX_NUM_SCHEDULED_TOKENS\n" +
		"  --enable-prefix-caching, --no-enable-prefix-caching\n  --brand-new-flag {a,b}\n"
	h, err := v.WithHost("0.33.0", help)
	if err != nil {
		t.Fatal(err)
	}
	for _, ok := range []string{"--grpc", "max_num_scheduled_tokens", "--no-enable-prefix-caching", "--brand-new-flag"} {
		if err := h.Check(ok); err != nil {
			t.Errorf("host lists %s, yet Check says %v", ok, err)
		}
	}
	if args := h.BoolArgs("grpc", false); len(args) != 0 {
		t.Errorf("grpc = false on a host whose --grpc is store_true gave %v, want nothing", args)
	}
	err = h.Check("max_num_partial_prefills")
	if err == nil || !strings.Contains(err.Error(), "removed in v0.28") || !strings.Contains(err.Error(), "2026-07-21") {
		t.Errorf("Check(max_num_partial_prefills) on the host = %v, want the removal named", err)
	}
	err = h.Check("max_num_seqs") // the table has it, this host's help does not
	if err == nil || !strings.Contains(err.Error(), "0.33.0") {
		t.Errorf("Check(max_num_seqs) on a host that does not list it = %v, want the host named", err)
	}
	if !h.Host() || v.Host() {
		t.Errorf("Host() = %v for the host model, %v for the table", h.Host(), v.Host())
	}
}

func FuzzParseHelp(f *testing.F) {
	seed, _ := os.ReadFile("testdata/help-prose.txt")
	f.Add(string(seed))
	f.Add(mustLookupF(Current).Help("vllm serve"))
	f.Add("options:\n  --x, --no-x\n  --y {a,b} [{a,b} ...]\n  --z [Z ...]\n")
	f.Fuzz(func(t *testing.T, text string) {
		opts, err := ParseHelp(text)
		if err != nil {
			return
		}
		for _, o := range opts {
			if len(o.Names) == 0 || !strings.HasPrefix(o.Names[0], "-") {
				t.Fatalf("option without a name: %+v", o)
			}
		}
		if _, err := mustLookupF(Current).WithHost("x", text); err != nil {
			t.Fatalf("WithHost failed on text ParseHelp read: %v", err)
		}
	})
}

func mustLookupF(line string) *Version {
	v, err := Lookup(line)
	if err != nil {
		panic(err)
	}
	return v
}
