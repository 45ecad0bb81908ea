package vllm

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// ExitArgError is the exit status of a command line argparse refuses.
const ExitArgError = 2

// serveUsage is the usage line of the serve subcommand (vllm/entrypoints/cli/serve.py).
const serveUsage = "usage: vllm serve [model_tag] [options]"

// topUsage is the usage line of the top-level `vllm` parser, which reports unrecognized
// arguments (argparse's parse_args runs on it).
const topUsage = "usage: vllm [-h] [-v] {chat,complete,serve,bench,collect-env,run-batch} ..."

// ArgError is a command line the version's argparse refuses: vLLM prints Usage and then
// "PROG: error: MESSAGE" on stderr and exits with status 2.
type ArgError struct {
	Prog    string // "vllm serve", or "vllm" for unrecognized arguments
	Usage   string
	Message string
}

func (e *ArgError) Error() string { return e.Prog + ": error: " + e.Message }

// Stderr returns what vLLM writes to stderr for this error: the usage line and the error.
func (e *ArgError) Stderr() string { return e.Usage + "\n" + e.Error() + "\n" }

// ExitCode is argparse's exit status, 2.
func (e *ArgError) ExitCode() int { return ExitArgError }

func serveErr(format string, args ...any) *ArgError {
	return &ArgError{Prog: "vllm serve", Usage: serveUsage, Message: fmt.Sprintf(format, args...)}
}

// Args is a parsed `vllm serve` command line.
type Args struct {
	// Model is the positional model_tag, else --model ("" when neither was given).
	Model string
	// Values are the options given, by snake_case knob name: int64 (Int, HumanInt; -1 for
	// "auto"), float64, string, bool, []string (nargs "+") or map[string]any (JSON, dotted
	// sub-keys merged in).
	Values map[string]any
	// Order lists the knob names in the order they were first given.
	Order []string
}

// ParseArgs parses the arguments of `vllm serve` (after "serve") as this version's
// argparse does: "_" and "-" interchangeable in flag names, --x=V or --x V, short forms,
// --no-x only for BooleanOptionalAction flags, -O3 / -O 3 / -O=3 for --optimization-level,
// dotted keys of JSON flags (-cc.cudagraph_mode=FULL), human-readable integers where the
// version takes them. A refused command line is an *ArgError with argparse's message.
func (v *Version) ParseArgs(argv []string) (*Args, error) {
	a := &Args{Values: map[string]any{}}
	set := func(knob string, val any) {
		if _, ok := a.Values[knob]; !ok {
			a.Order = append(a.Order, knob)
		}
		a.Values[knob] = val
	}
	var extras []string
	model := ""
	for i := 0; i < len(argv); i++ {
		raw := argv[i]
		if !strings.HasPrefix(raw, "-") || raw == "-" || isNumber(raw) {
			if model == "" {
				model = raw
			} else {
				extras = append(extras, raw)
			}
			continue
		}
		if raw == "--" {
			extras = append(extras, argv[i+1:]...)
			break
		}
		key, val, hasVal := normalize(raw)
		// Dotted sub-keys of a JSON flag.
		if base, sub, ok := strings.Cut(key, "."); ok {
			name := v.canonical(base)
			f, known := v.flags[name]
			if !known || f.Type != JSON {
				extras = append(extras, raw)
				continue
			}
			if !hasVal {
				if i+1 >= len(argv) {
					return nil, serveErr("argument %s: expected one argument", display(f))
				}
				i++
				val = argv[i]
			}
			m, _ := a.Values[f.Knob].(map[string]any)
			if m == nil {
				m = map[string]any{}
			}
			setDotted(m, sub, val)
			set(f.Knob, m)
			continue
		}
		name := key
		if long, ok := v.alias[key]; ok {
			name = long
		}
		f, known := v.flags[name]
		negated := false
		if !known {
			if base, ok := strings.CutPrefix(name, "--no-"); ok {
				if g, ok := v.flags["--"+base]; ok && g.Kind == BooleanOptional {
					f, known, negated = g, true, true
				}
			}
		}
		if !known {
			extras = append(extras, raw)
			continue
		}
		switch f.Kind {
		case StoreTrue, BooleanOptional:
			if hasVal {
				return nil, serveErr("argument %s: ignored explicit argument %s", displayBool(f), pyRepr(val))
			}
			set(f.Knob, !negated)
			continue
		}
		switch f.Nargs {
		case "+":
			var vals []string
			if hasVal {
				// --x=V is one argument: argparse gives it V alone, and what follows is
				// not this flag's ("--served-model-name=a b" leaves b unrecognized).
				vals = append(vals, val)
			}
			for !hasVal && i+1 < len(argv) && (!strings.HasPrefix(argv[i+1], "-") || isNumber(argv[i+1])) {
				i++
				vals = append(vals, argv[i])
			}
			if len(vals) == 0 {
				return nil, serveErr("argument %s: expected at least one argument", display(f))
			}
			for _, s := range vals {
				if _, err := convert(f, s); err != nil {
					return nil, err
				}
			}
			set(f.Knob, vals)
			continue
		case "?":
			if !hasVal && i+1 < len(argv) && !strings.HasPrefix(argv[i+1], "-") {
				i++
				val, hasVal = argv[i], true
			}
			if !hasVal {
				set(f.Knob, true)
			} else {
				set(f.Knob, val)
			}
			continue
		}
		if !hasVal {
			if i+1 >= len(argv) || strings.HasPrefix(argv[i+1], "-") && !isNumber(argv[i+1]) {
				return nil, serveErr("argument %s: expected one argument", display(f))
			}
			i++
			val = argv[i]
		}
		x, err := convert(f, val)
		if err != nil {
			return nil, err
		}
		if f.Type == JSON {
			// A whole JSON value, then dotted keys on top of it.
			if prev, ok := a.Values[f.Knob].(map[string]any); ok {
				if m, ok := x.(map[string]any); ok {
					for k, pv := range prev {
						if _, set := m[k]; !set {
							m[k] = pv
						}
					}
				}
			}
		}
		set(f.Knob, x)
	}
	if len(extras) > 0 {
		return nil, &ArgError{Prog: "vllm", Usage: topUsage, Message: "unrecognized arguments: " + strings.Join(extras, " ")}
	}
	a.Model = model
	if a.Model == "" {
		if m, ok := a.Values["model"].(string); ok {
			a.Model = m
		}
	}
	return a, nil
}

// normalize applies FlexibleArgumentParser's rewriting to one argument: "_" becomes "-" in
// a --flag's name, -O3 / -O=3 become --optimization-level, -O.x becomes a dotted key of
// --compilation-config. It returns the flag, and its value when it came with "=".
func normalize(raw string) (key, val string, hasVal bool) {
	if strings.HasPrefix(raw, "-O") && !strings.HasPrefix(raw, "--") {
		rest := raw[2:]
		switch {
		case rest == "":
			return "--optimization-level", "", false
		case strings.HasPrefix(rest, "."):
			k, v, ok := strings.Cut(rest[1:], "=")
			return "--compilation-config." + k, v, ok
		case strings.HasPrefix(rest, "="):
			return "--optimization-level", rest[1:], true
		default:
			return "--optimization-level", rest, true
		}
	}
	key, val, hasVal = strings.Cut(raw, "=")
	if strings.HasPrefix(key, "--") {
		base, sub, dotted := strings.Cut(key, ".")
		base = strings.ReplaceAll(base, "_", "-")
		if dotted {
			key = base + "." + sub
		} else {
			key = base
		}
	} else if strings.HasPrefix(key, "-") {
		// Short forms with dotted keys: -cc.mode=3.
		if base, sub, ok := strings.Cut(key, "."); ok {
			key = base + "." + sub
		}
	}
	return key, val, hasVal
}

// setDotted sets a dotted key path in m; a key ending in "+" appends comma-separated values.
func setDotted(m map[string]any, path, val string) {
	keys := strings.Split(path, ".")
	for _, k := range keys[:len(keys)-1] {
		sub, ok := m[k].(map[string]any)
		if !ok {
			sub = map[string]any{}
			m[k] = sub
		}
		m = sub
	}
	last := keys[len(keys)-1]
	if name, ok := strings.CutSuffix(last, "+"); ok {
		list, _ := m[name].([]any)
		for _, p := range strings.Split(val, ",") {
			list = append(list, jsonScalar(p))
		}
		m[name] = list
		return
	}
	m[last] = jsonScalar(val)
}

// jsonScalar reads a dotted key's value as JSON when it is JSON, else as a string.
func jsonScalar(s string) any {
	var x any
	if err := json.Unmarshal([]byte(s), &x); err == nil {
		return x
	}
	return s
}

// convert applies the flag's type and choices to one value.
func convert(f Flag, s string) (any, error) {
	var x any
	bad := func() error {
		return serveErr("argument %s: invalid %s value: %s", display(f), f.Type, pyRepr(s))
	}
	switch f.Type {
	case Int:
		n, err := PyInt(s)
		if err != nil {
			return nil, bad()
		}
		x = n
	case HumanInt, HumanIntOrAuto:
		if f.Type == HumanIntOrAuto && (strings.TrimSpace(s) == "auto" || strings.TrimSpace(s) == "-1") {
			x = int64(-1)
			break
		}
		n, err := ParseHumanInt(s)
		if err != nil {
			return nil, bad()
		}
		x = n
	case Float:
		g, err := PyFloat(s)
		if err != nil {
			return nil, bad()
		}
		x = g
	case JSON:
		var m any
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			return nil, bad()
		}
		x = m
	default:
		x = s
	}
	if f.Choices != nil {
		shown := s
		if n, ok := x.(int64); ok {
			shown = strconv.FormatInt(n, 10)
		}
		if !f.choiceOK(shown) {
			quoted := make([]string, len(f.Choices))
			for i, c := range f.Choices {
				if f.Type == Int {
					quoted[i] = c
				} else {
					quoted[i] = pyRepr(c)
				}
			}
			got := pyRepr(s)
			if f.Type == Int {
				got = shown
			}
			return nil, serveErr("argument %s: invalid choice: %s (choose from %s)", display(f), got, strings.Join(quoted, ", "))
		}
	}
	return x, nil
}

// display is how argparse names a flag in an error: its option strings joined with "/".
func display(f Flag) string {
	return strings.Join(append([]string{f.Name}, f.Short...), "/")
}

// displayBool names a BooleanOptionalAction flag as argparse does: --x/--no-x.
func displayBool(f Flag) string {
	if f.Kind == BooleanOptional {
		return f.Name + "/--no-" + strings.TrimPrefix(f.Name, "--")
	}
	return display(f)
}

// pyRepr quotes a string as Python's repr does for plain text.
func pyRepr(s string) string {
	if strings.Contains(s, "'") && !strings.Contains(s, `"`) {
		return `"` + s + `"`
	}
	return "'" + strings.ReplaceAll(s, "'", `\'`) + "'"
}

var numberRE = regexp.MustCompile(`^-\d+$|^-\d*\.\d+$`)

// isNumber reports whether an argument that starts with "-" is a negative number, which
// argparse takes as a value (the parser has no option that looks like one).
func isNumber(s string) bool { return numberRE.MatchString(s) }

// ParseHumanInt parses an integer the way vLLM's human_readable_int does: a plain integer
// as Python's int() reads it (see PyInt), or digits with an optional decimal fraction and one
// suffix, a decimal one (k=10^3, m=10^6, g=10^9, t=10^12; "25.6k") or a binary one (K=2^10,
// M=2^20, G=2^30, T=2^40; whole numbers only). The suffixed form takes no sign, underscore
// or exponent, as its regular expression (\d+(?:\.\d+)?)([kKmMgGtT]) does not.
func ParseHumanInt(s string) (int64, error) {
	s = strings.TrimFunc(s, unicode.IsSpace)
	if s == "" {
		return 0, fmt.Errorf("want a whole number, got an empty string")
	}
	if n, err := PyInt(s); err == nil {
		return n, nil
	} else if errors.Is(err, ErrIntRange) {
		return 0, fmt.Errorf("out of range: %q", s)
	}
	decimal := map[byte]float64{'k': 1e3, 'm': 1e6, 'g': 1e9, 't': 1e12}
	binary := map[byte]int64{'K': 1 << 10, 'M': 1 << 20, 'G': 1 << 30, 'T': 1 << 40}
	num, suf := s[:len(s)-1], s[len(s)-1]
	whole, frac, hasFrac := strings.Cut(num, ".")
	if !asciiDigits(whole) || hasFrac && !asciiDigits(frac) {
		return 0, fmt.Errorf("want a whole number such as 8192 or 8k, got %q", s)
	}
	if mult, ok := decimal[suf]; ok {
		f, err := strconv.ParseFloat(num, 64)
		if err != nil || f*mult > math.MaxInt64/2 {
			return 0, fmt.Errorf("out of range: %q", s)
		}
		return int64(f * mult), nil
	}
	if mult, ok := binary[suf]; ok {
		if hasFrac {
			return 0, fmt.Errorf("decimals are not allowed with binary suffixes: %q", s)
		}
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil || n > math.MaxInt64/mult {
			return 0, fmt.Errorf("out of range: %q", s)
		}
		return n * mult, nil
	}
	return 0, fmt.Errorf("want a whole number such as 8192 or 8k, got %q", s)
}

// asciiDigits reports whether s is one or more of 0-9. Python's \d also matches other
// scripts' digits: a suffixed number written in another script ("٨k") is refused here and
// taken by vLLM, the one difference of this reading.
func asciiDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
