package plan

import (
	"bytes"
	"fmt"
	"io"
	"sort"

	"github.com/agext/levenshtein"
	"github.com/hashicorp/hcl/v2"
)

// DiagnosticsError is the error Load returns for an invalid plan: every diagnostic found (warnings
// included) and the source files they point into.
type DiagnosticsError struct {
	Diagnostics hcl.Diagnostics
	Files       map[string]*hcl.File
}

// Error returns the first error diagnostic and how many more there are.
func (e *DiagnosticsError) Error() string {
	errs := e.Diagnostics.Errs()
	switch len(errs) {
	case 0:
		return "invalid plan"
	case 1:
		return errs[0].Error()
	default:
		return fmt.Sprintf("%s (and %d more)", errs[0].Error(), len(errs)-1)
	}
}

// Write prints every diagnostic as HCL does: file:line,col, the summary, the source line that
// caused it and the detail.
func (e *DiagnosticsError) Write(w io.Writer) error {
	return writeDiagnostics(w, e.Files, e.Diagnostics)
}

// WriteWarnings prints the plan's warnings in the same form as DiagnosticsError.Write.
func (p *Plan) WriteWarnings(w io.Writer) error {
	return writeDiagnostics(w, p.files, p.warnings)
}

// writeDiagnostics prints the first MaxDiagnostics diagnostics in full, errors first, and
// counts the rest: printing one scans its file, so a file with an error on each line would
// otherwise print for minutes. A diagnostic on a line longer than maxSnippetLine is printed
// with its position but without the line.
func writeDiagnostics(w io.Writer, files map[string]*hcl.File, diags hcl.Diagnostics) error {
	if len(diags) == 0 {
		return nil
	}
	var list hcl.Diagnostics
	for _, errs := range []bool{true, false} {
		for _, d := range diags {
			if (d.Severity == hcl.DiagError) == errs && len(list) < MaxDiagnostics {
				list = append(list, withoutLongLine(files, d))
			}
		}
	}
	if err := hcl.NewDiagnosticTextWriter(w, files, 0, false).WriteDiagnostics(list); err != nil {
		return fmt.Errorf("write diagnostics: %w", err)
	}
	if rest := len(diags) - len(list); rest > 0 {
		errs := 0
		for _, d := range diags {
			if d.Severity == hcl.DiagError {
				errs++
			}
		}
		errs -= len(list.Errs())
		if _, err := fmt.Fprintf(w, "... and %d more diagnostics (%d errors, %d warnings) not shown; fix the ones above first.\n\n", rest, errs, rest-errs); err != nil {
			return fmt.Errorf("write diagnostics: %w", err)
		}
	}
	return nil
}

// maxSnippetLine is the longest source line a printed diagnostic quotes.
const maxSnippetLine = 240

// withoutLongLine returns d, or a copy without its source snippet when the line it points
// at is longer than maxSnippetLine: the position is put in the summary instead.
func withoutLongLine(files map[string]*hcl.File, d *hcl.Diagnostic) *hcl.Diagnostic {
	if d.Subject == nil {
		return d
	}
	f := files[d.Subject.Filename]
	if f == nil {
		return d
	}
	src := f.Bytes
	at := min(max(d.Subject.Start.Byte, 0), len(src))
	start := bytes.LastIndexByte(src[:at], '\n') + 1
	end := bytes.IndexByte(src[at:], '\n')
	if end < 0 {
		end = len(src) - at
	}
	if at+end-start <= maxSnippetLine {
		return d
	}
	c := *d
	c.Summary = fmt.Sprintf("%s:%d,%d: %s", d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column, d.Summary)
	c.Subject, c.Context = nil, nil
	return &c
}

// sortDiagnostics orders diagnostics by file and position, those about the whole plan last,
// so that they read from the top of the file down.
func sortDiagnostics(diags hcl.Diagnostics) hcl.Diagnostics {
	out := append(hcl.Diagnostics(nil), diags...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].Subject, out[j].Subject
		switch {
		case a == nil || b == nil:
			return a != nil && b == nil
		case a.Filename != b.Filename:
			return a.Filename < b.Filename
		default:
			return a.Start.Byte < b.Start.Byte
		}
	})
	return out
}

// errorAt builds an error diagnostic whose subject is rng.
func errorAt(rng hcl.Range, summary, detail string, args ...any) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  summary,
		Detail:   fmt.Sprintf(detail, args...),
		Subject:  rng.Ptr(),
	}
}

// warningAt builds a warning diagnostic whose subject is rng.
func warningAt(rng hcl.Range, summary, detail string, args ...any) *hcl.Diagnostic {
	d := errorAt(rng, summary, detail, args...)
	d.Severity = hcl.DiagWarning
	return d
}

// didYouMean returns ` Did you mean "x"?` for the candidate nearest to name, when one is near
// enough to be a likely typo, and "" otherwise.
func didYouMean(name string, candidates []string) string {
	best := nearestName(name, candidates)
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" Did you mean %q?", best)
}

// nearestName returns the candidate nearest in spelling to name, when one other than name is
// near enough to be a likely typo, and "" otherwise.
func nearestName(name string, candidates []string) string {
	best, bestDist := "", len(name)/3+2
	for _, c := range candidates {
		if d := levenshtein.Distance(name, c, nil); d < bestDist {
			best, bestDist = c, d
		}
	}
	if best == name {
		return ""
	}
	return best
}
