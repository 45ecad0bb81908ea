package plan

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
)

// expectation is a diagnostic a fixture expects: "line: summary", line 0 for diagnostics
// about the whole plan.
var expectRE = regexp.MustCompile(`#\s*(ERROR|WARNING)(\(plan\))?:\s*(.+?)\s*$`)

// expectedDiagnostics reads the "# ERROR: summary" and "# WARNING: summary" comments of a
// fixture: each expects a diagnostic with that summary on its line; "# ERROR(plan): summary"
// expects one that points at no line.
func expectedDiagnostics(t *testing.T, src []byte) []string {
	t.Helper()
	var want []string
	for i, line := range strings.Split(string(src), "\n") {
		m := expectRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		n := i + 1
		if m[2] != "" {
			n = 0
		}
		want = append(want, fmt.Sprintf("%s %d: %s", strings.ToLower(m[1]), n, m[3]))
	}
	sort.Strings(want)
	return want
}

func gotDiagnostics(diags hcl.Diagnostics) []string {
	var got []string
	for _, d := range diags {
		sev := "error"
		if d.Severity == hcl.DiagWarning {
			sev = "warning"
		}
		line := 0
		if d.Subject != nil {
			line = d.Subject.Start.Line
		}
		got = append(got, fmt.Sprintf("%s %d: %s", sev, line, d.Summary))
	}
	sort.Strings(got)
	return got
}

// TestLoadFixturesReportDiagnosticsAtTheirLines loads every plan in testdata/invalid and
// testdata/valid and compares the diagnostics with the comments next to the lines that cause
// them.
func TestLoadFixturesReportDiagnosticsAtTheirLines(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/*/*.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no fixtures in testdata")
	}
	for _, file := range files {
		t.Run(file, func(t *testing.T) {
			t.Parallel()
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			want := expectedDiagnostics(t, src)
			p, err := Load(file, LoadOptions{})
			var got []string
			var de *DiagnosticsError
			switch {
			case errors.As(err, &de):
				got = gotDiagnostics(de.Diagnostics)
			case err != nil:
				t.Fatalf("Load: %v", err)
			default:
				got = gotDiagnostics(p.warnings)
			}
			valid := strings.Contains(file, string(filepath.Separator)+"valid"+string(filepath.Separator))
			if valid && err != nil {
				t.Errorf("a valid fixture failed to load: %v", err)
			}
			if !valid && err == nil {
				t.Errorf("an invalid fixture loaded")
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("diagnostics (-want +got):\n%s", diff)
			}
		})
	}
}
