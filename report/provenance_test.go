package report

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// TestProvenanceCommandRunsAsItWasRun checks that the recommended trial's command in the
// report is a shell line that gives the program the same arguments, empty ones included:
// a real sh parses it and prints each argument.
func TestProvenanceCommandRunsAsItWasRun(t *testing.T) {
	t.Parallel()
	rec := loadFixture(t, "quickstart.json")
	argv := []string{"vllm", "serve", "org/model", "--zmq-endpoint", "", "--chat-template", "{{ 'a b' }}", "--x", "it's"}
	for i := range rec.Trials {
		if rec.Trials[i].Provenance != nil {
			rec.Trials[i].Provenance.Launch.Command = argv
		}
	}
	var buf bytes.Buffer
	if err := WriteText(&buf, Analyze(rec), Options{All: true}); err != nil {
		t.Fatal(err)
	}
	want := `vllm serve org/model --zmq-endpoint '' --chat-template '{{ '\''a b'\'' }}' --x 'it'\''s'`
	if !strings.Contains(buf.String(), want) {
		t.Fatalf("the report does not hold the command line %s", want)
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh to run the line with")
	}
	script := `set -- ` + want + `; for a in "$@"; do printf '<%s>' "$a"; done`
	out, err := exec.Command(sh, "-c", script).Output()
	if err != nil {
		t.Fatal(err)
	}
	var w strings.Builder
	for _, a := range argv {
		w.WriteString("<" + a + ">")
	}
	if string(out) != w.String() {
		t.Errorf("sh read the line as %s, want %s", out, w.String())
	}
}
