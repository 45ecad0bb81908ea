package plan

import (
	"fmt"
	"math"
	"math/big"
	"os"
	"strings"
	"time"

	"github.com/frontier-llm/frontier/inputfile"
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// attrs reads the attributes of one block with typed getters, collecting a diagnostic for each
// problem instead of stopping at the first.
type attrs struct {
	ctx   *hcl.EvalContext
	dir   string
	block string    // how diagnostics name the block, e.g. `knob "max_num_seqs"`
	def   hcl.Range // the block's header, where a missing attribute is reported
	m     hcl.Attributes
	diags hcl.Diagnostics
}

func (a *attrs) has(name string) bool {
	_, ok := a.m[name]
	return ok
}

func (a *attrs) rangeOf(name string) hcl.Range {
	if at, ok := a.m[name]; ok {
		return at.Expr.Range()
	}
	return hcl.Range{}
}

func (a *attrs) errorf(name, summary, detail string, args ...any) {
	a.diags = a.diags.Append(errorAt(a.rangeOf(name), summary, detail, args...))
}

// value evaluates an attribute statically (variables and functions only) and converts it to
// typ. It reports false when the attribute is absent or wrong.
func (a *attrs) value(name string, typ cty.Type, what string) (cty.Value, bool) {
	at, ok := a.m[name]
	if !ok {
		return cty.NilVal, false
	}
	v, ds := at.Expr.Value(a.ctx)
	a.diags = a.diags.Extend(ds)
	if ds.HasErrors() {
		return cty.NilVal, false
	}
	if v.IsNull() {
		a.errorf(name, "Missing value", "The attribute %s of %s must not be null; give it %s.", name, a.block, what)
		return cty.NilVal, false
	}
	if !v.IsWhollyKnown() {
		// Only a variable without a value is unknown here, and that has its own diagnostic.
		return cty.NilVal, false
	}
	c, err := convert.Convert(v, typ)
	if err != nil {
		a.errorf(name, "Wrong type", "The attribute %s of %s must be %s: %s.", name, a.block, what, err)
		return cty.NilVal, false
	}
	return c, true
}

func (a *attrs) require(name, what string) bool {
	if a.has(name) {
		return true
	}
	d := &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Missing required attribute",
		Detail:   fmt.Sprintf("%s needs the attribute %s: %s.", a.block, name, what),
	}
	if a.def != (hcl.Range{}) {
		d.Subject = a.def.Ptr()
	}
	a.diags = a.diags.Append(d)
	return false
}

func (a *attrs) str(name, def string) string {
	v, ok := a.value(name, cty.String, "a string")
	if !ok {
		return def
	}
	return v.AsString()
}

// oneOf reads a string that must be one of choices.
func (a *attrs) oneOf(name, def string, choices []string) string {
	s := a.str(name, def)
	if !a.has(name) {
		return s
	}
	for _, c := range choices {
		if s == c {
			return s
		}
	}
	a.errorf(name, "Invalid value for "+name, "%q is not a valid %s; use one of %s.%s", s, name, quoteList(choices), didYouMean(s, choices))
	return def
}

func (a *attrs) number(name string, def float64) float64 {
	f, _ := a.float(name, def)
	return f
}

// float reads a finite number and reports whether the attribute was there and valid.
func (a *attrs) float(name string, def float64) (float64, bool) {
	v, ok := a.value(name, cty.Number, "a number")
	if !ok {
		return def, false
	}
	f, _ := v.AsBigFloat().Float64()
	if math.IsInf(f, 0) {
		a.errorf(name, "Invalid number", "The attribute %s of %s must be a finite number.", name, a.block)
		return def, false
	}
	return f, true
}

func (a *attrs) integer(name string, def int64) int64 {
	i, _ := a.wholeNumber(name, def)
	return i
}

// wholeNumber reads a whole number and reports whether the attribute was there and valid.
func (a *attrs) wholeNumber(name string, def int64) (int64, bool) {
	v, ok := a.value(name, cty.Number, "a whole number")
	if !ok {
		return def, false
	}
	bf := v.AsBigFloat()
	i, acc := bf.Int64()
	if !bf.IsInt() || acc != big.Exact {
		a.errorf(name, "Wrong type", "The attribute %s of %s must be a whole number, not %s.", name, a.block, bf.Text('g', -1))
		return def, false
	}
	return i, true
}

// atLeast reads a whole number that must not be below lo.
func (a *attrs) atLeast(name string, def, lo int64) int64 {
	i, ok := a.wholeNumber(name, def)
	if ok && i < lo {
		a.errorf(name, "Value out of range", "The attribute %s of %s must be at least %d, not %d.", name, a.block, lo, i)
		return def
	}
	return i
}

// fraction reads a number in [lo, hi].
func (a *attrs) fraction(name string, def, lo, hi float64) float64 {
	f, ok := a.float(name, def)
	if ok && (f < lo || f > hi || math.IsNaN(f)) {
		a.errorf(name, "Value out of range", "The attribute %s of %s must be between %g and %g, not %g.", name, a.block, lo, hi, f)
		return def
	}
	return f
}

func (a *attrs) boolean(name string, def bool) bool {
	v, ok := a.value(name, cty.Bool, "true or false")
	if !ok {
		return def
	}
	return v.True()
}

func (a *attrs) strings(name string) []string {
	v, ok := a.value(name, cty.List(cty.String), "a list of strings")
	if !ok || v.LengthInt() == 0 {
		return nil
	}
	out := make([]string, 0, v.LengthInt())
	for _, e := range v.AsValueSlice() {
		if e.IsNull() {
			a.errorf(name, "Missing value", "The list %s of %s must not contain null.", name, a.block)
			return nil
		}
		out = append(out, e.AsString())
	}
	return out
}

func (a *attrs) stringMap(name string) map[string]string {
	v, ok := a.value(name, cty.Map(cty.String), "a map of strings, such as { KEY = \"value\" }")
	if !ok || v.LengthInt() == 0 {
		return nil
	}
	out := map[string]string{}
	for k, e := range v.AsValueMap() {
		if e.IsNull() {
			a.errorf(name, "Missing value", "The value of %s in %s of %s must not be null.", k, name, a.block)
			continue
		}
		out[k] = e.AsString()
	}
	return out
}

// duration reads a Go duration string such as "600ms" or "20m".
func (a *attrs) duration(name string, def time.Duration) time.Duration {
	v, ok := a.value(name, cty.String, `a duration such as "20m"`)
	if !ok {
		return def
	}
	s := v.AsString()
	d, err := parseDuration(s)
	if err != nil {
		a.errorf(name, "Invalid duration", "The attribute %s of %s is %q, which is not a duration: %s.", name, a.block, s, err)
		return def
	}
	return d
}

func parseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("write a number with a unit, such as \"600ms\", \"2s\" or \"20m\"")
	}
	if d < 0 {
		return 0, fmt.Errorf("a duration must not be negative")
	}
	return d, nil
}

// path reads a file path, resolved against the plan's folder; the file must exist.
func (a *attrs) path(name string) string {
	s := a.str(name, "")
	if !a.has(name) || s == "" {
		return ""
	}
	p := resolvePath(a.dir, s)
	st, err := os.Stat(p)
	if err != nil {
		a.errorf(name, "File not found", "The file %q of %s (attribute %s) cannot be read: %s. A relative path is relative to the plan file's folder.", s, a.block, name, statReason(err))
		return ""
	}
	if !st.Mode().IsRegular() {
		// A pipe would block the reader until a writer comes, a device such as /dev/zero
		// never ends.
		a.errorf(name, "Not a regular file", "The file %q of %s (attribute %s) is %s; frontier reads data from regular files only.", s, a.block, name, inputfile.Kind(st.Mode()))
		return ""
	}
	return p
}

func statReason(err error) string {
	if os.IsNotExist(err) {
		return "it does not exist"
	}
	return err.Error()
}

func quoteList(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = fmt.Sprintf("%q", x)
	}
	return strings.Join(q, ", ")
}
