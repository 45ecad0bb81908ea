package vllm

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/agext/levenshtein"
)

// ValueError says why a version does not take a value for one of its flags.
type ValueError struct {
	Flag  string // the flag's --name
	Value string // the value as it would be written on the command line
	// Choices are the values the flag takes, when it has a list of them (argparse's choices or
	// the methods of --quantization); nil otherwise.
	Choices []string
	// Suggest is the choice nearest in spelling to Value, when one is near.
	Suggest string
	// Message says what is wrong: argparse's own message where argparse refuses the value.
	Message string
	// Err is argparse's refusal (an *ArgError, whose message lists any choices) where argparse
	// refuses the value; nil where vLLM would take it on the command line.
	Err error
}

func (e *ValueError) Error() string { return e.Message }

// Unwrap returns argparse's refusal, if any.
func (e *ValueError) Unwrap() error { return e.Err }

// CheckValue reports whether the version takes value (int64, int, float64, string or bool)
// for the flag called name, as a knob sets it: a bool for a switch (store_true or
// BooleanOptionalAction: --x for true, --no-x or nothing for false), else the value written
// out and read by the flag's type and choices as argparse reads it (argparse's own message
// when it refuses it, such as "argument --kv-offloading-backend: invalid choice: ”
// (choose from 'native', 'lmcache')"), and, for a flag whose values vLLM checks only at
// startup (--quantization), one of those. A name the version does not have is Check's
// error. A version built from a host's help (WithHost) checks the choices the help lists.
func (v *Version) CheckValue(name string, value any) error {
	if err := v.Check(name); err != nil {
		return err
	}
	f, ok := v.Flag(name)
	if !ok {
		return nil // a --no-x form: Check took it, and it takes no value
	}
	b, isBool := value.(bool)
	switch {
	case f.Kind != Store:
		if !isBool {
			return &ValueError{Flag: f.Name, Value: fmt.Sprint(value),
				Message: fmt.Sprintf("%s is a switch (%s): its values are true and false, not %s", f.Name, f.Kind, quoted(value))}
		}
		return nil
	case isBool:
		if f.Nargs == "?" && b {
			return nil // the flag alone: its optional value left out
		}
		return &ValueError{Flag: f.Name, Value: strconv.FormatBool(b), Choices: f.Choices,
			Message: fmt.Sprintf("%s takes a value (%s), not true or false", f.Name, f.Type)}
	}
	s, err := FormatValue(value)
	if err != nil {
		return &ValueError{Flag: f.Name, Value: fmt.Sprint(value), Message: fmt.Sprintf("%s: %v", f.Name, err)}
	}
	if _, err := convert(f, s); err != nil {
		e := &ValueError{Flag: f.Name, Value: s, Choices: f.Choices, Message: err.Error(), Err: err}
		e.Suggest = nearestChoice(s, f.Choices)
		return e
	}
	if f.Valid != nil && !slices.Contains(f.Valid, s) && s != "None" {
		return &ValueError{Flag: f.Name, Value: s, Choices: f.Valid, Suggest: nearestChoice(s, f.Valid),
			Message: fmt.Sprintf("%s is not a value of %s that vLLM knows: argparse takes any string, and the engine refuses it at startup", pyRepr(s), f.Name)}
	}
	return nil
}

// quoted shows a knob value as a plan writes it: strings quoted, numbers bare.
func quoted(value any) string {
	if s, ok := value.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(value)
}

// nearestChoice returns the choice closest in spelling to s, when one is as close as a typo
// (case ignored: "FP8" is near "fp8"); none for a number.
func nearestChoice(s string, choices []string) string {
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return ""
	}
	best, bestD := "", max(1, len(s)/4)+1
	for _, c := range choices {
		d := levenshtein.Distance(strings.ToLower(s), strings.ToLower(c), nil)
		if d < bestD && c != s {
			best, bestD = c, d
		}
	}
	return best
}

// Nearest returns up to n of the version's flags closest in spelling to name (a --kebab
// name, a snake_case knob name or a short form), nearest first: those within a few edits,
// as a typo would be. It is empty when none is that close.
func (v *Version) Nearest(name string, n int) []Flag {
	want := v.canonical(name)
	limit := max(2, len(want)/5)
	type near struct {
		f Flag
		d int
	}
	var found []near
	for fn, f := range v.flags {
		if fn == want {
			continue
		}
		if d := levenshtein.Distance(want, fn, nil); d <= limit {
			found = append(found, near{f, d})
		}
	}
	sort.Slice(found, func(i, j int) bool {
		if found[i].d != found[j].d {
			return found[i].d < found[j].d
		}
		return found[i].f.Name < found[j].f.Name
	})
	out := make([]Flag, 0, min(n, len(found)))
	for _, x := range found[:min(n, len(found))] {
		out = append(out, x.f)
	}
	return out
}
