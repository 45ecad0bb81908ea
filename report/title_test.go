package report

import (
	"strings"
	"testing"

	"github.com/frontier-llm/frontier/record"
)

// TestTitleShowsAStudyNameWithControlCharactersQuoted checks that a study name holding a
// newline or an escape sequence (it can come from --study or a shared database) reaches the
// report's title quoted, so it cannot start a line of its own or drive the terminal.
func TestTitleShowsAStudyNameWithControlCharactersQuoted(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"chat\n# injected", "chat\x1b[2J"} {
		got := title(Analyze(&record.Study{Study: name}))
		if strings.ContainsAny(got, "\n\x1b") || !strings.Contains(got, "chat") {
			t.Errorf("title for %q = %q, want the name quoted on one printable line", name, got)
		}
	}
	if got := title(Analyze(&record.Study{Study: "chat-8b"})); got != "frontier report: study chat-8b" {
		t.Errorf("title = %q, want a plain name as it is", got)
	}
}
