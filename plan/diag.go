package plan

import (
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

func writeDiagnostics(w io.Writer, files map[string]*hcl.File, diags hcl.Diagnostics) error {
	if len(diags) == 0 {
		return nil
	}
	if err := hcl.NewDiagnosticTextWriter(w, files, 0, false).WriteDiagnostics(diags); err != nil {
		return fmt.Errorf("write diagnostics: %w", err)
	}
	return nil
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
	best, bestDist := "", len(name)/3+2
	for _, c := range candidates {
		if d := levenshtein.Distance(name, c, nil); d < bestDist {
			best, bestDist = c, d
		}
	}
	if best == "" || best == name {
		return ""
	}
	return fmt.Sprintf(" Did you mean %q?", best)
}
