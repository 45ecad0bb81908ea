package vllm

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// HelpOption is one option line of an argparse help text, as ParseHelp reads it.
type HelpOption struct {
	// Names are the option strings in the order printed: "--tensor-parallel-size", "-tp";
	// for a BooleanOptionalAction flag "--x" and "--no-x".
	Names   []string
	Kind    Kind
	Nargs   string   // "", "?", "+" or "*"
	Choices []string // from "{a,b,c}"; nil: any value
	// Default is the text of "(default: X)" in the option's help, when argparse printed one.
	Default string
}

// ansiRE matches the terminal escape sequences of coloured help (Python 3.14's argparse
// colours its help when FORCE_COLOR is set or the output is a terminal).
var ansiRE = regexp.MustCompile("\x1b\\[[0-9;?]*[A-Za-z]")

// helpPartRE is one option string of an option line, with its metavar: "--x", "--x X",
// "--x {a,b}", "--x [X]", "--x X [X ...]", "--x [X ...]", "-tp TP".
var helpPartRE = regexp.MustCompile(`^(--?[A-Za-z0-9][A-Za-z0-9_-]*)(?: (\{[^{}\s]*\}|[A-Za-z_][A-Za-z0-9_.-]*)( \[(?:\{[^{}\s]*\}|[A-Za-z_][A-Za-z0-9_.-]*) \.\.\.\])?| \[(\{[^{}\s]*\}|[A-Za-z_][A-Za-z0-9_.-]*)( \.\.\.)?\])?$`)

// helpHeaderRE is a group title line: "options:", "ModelConfig:", "positional arguments:".
var helpHeaderRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9 _./-]{0,60}:$`)

var helpDefaultRE = regexp.MustCompile(`\(default: (.*)\)\s*$`)

// ParseHelp reads the options of an argparse help text (`vllm serve --help=all`) the way
// argparse lays them out: under a group title ("options:", "ModelConfig:"), an option line is
// indented by 2, 4 or 6 spaces and holds the option strings separated by ", ", each with its
// metavar, then the help after two spaces or on the lines below. Only such lines are read: a
// flag named in a description, the usage line or the epilog is not an option (a title
// follows a blank line, as argparse prints it). Colour codes
// are removed first. A text with no option line is an error.
func ParseHelp(text string) ([]HelpOption, error) {
	text = ansiRE.ReplaceAllString(strings.ReplaceAll(text, "\r\n", "\n"), "")
	var out []HelpOption
	inGroup := false
	var cur *HelpOption
	var helpText strings.Builder
	flush := func() {
		if cur == nil {
			return
		}
		if m := helpDefaultRE.FindStringSubmatch(strings.Join(strings.Fields(helpText.String()), " ")); m != nil {
			cur.Default = m[1]
		}
		out = append(out, *cur)
		cur = nil
		helpText.Reset()
	}
	prevBlank := true
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimLeft(line, " ")
		indent := len(line) - len(trimmed)
		blank := strings.TrimSpace(line) == ""
		wasBlank := prevBlank
		prevBlank = blank
		switch {
		case blank:
			continue
		case indent == 0:
			// argparse puts a blank line before each group title.
			flush()
			inGroup = wasBlank && helpHeaderRE.MatchString(strings.TrimRight(line, " "))
			continue
		}
		if inGroup && (indent == 2 || indent == 4 || indent == 6) && strings.HasPrefix(trimmed, "-") {
			if opt, rest, ok := parseOptionLine(trimmed); ok {
				flush()
				cur = &opt
				helpText.WriteString(rest)
				continue
			}
		}
		if cur != nil {
			if indent <= 6 {
				flush() // a description line of the group, not this option's help
				continue
			}
			helpText.WriteString(" " + trimmed)
		}
	}
	flush()
	if len(out) == 0 {
		return nil, fmt.Errorf("no argparse option line found (an option line is indented by two spaces under a title such as \"options:\")")
	}
	return out, nil
}

// parseOptionLine reads the invocation part of an option line, "--x X, -x X  help", and
// returns the option and the help text after it.
func parseOptionLine(s string) (HelpOption, string, bool) {
	inv, rest := s, ""
	if i := strings.Index(s, "  "); i >= 0 {
		inv, rest = s[:i], strings.TrimSpace(s[i:])
	}
	var opt HelpOption
	valued := false
	for _, part := range strings.Split(inv, ", ") {
		m := helpPartRE.FindStringSubmatch(part)
		if m == nil {
			return HelpOption{}, "", false
		}
		opt.Names = append(opt.Names, m[1])
		switch {
		case m[2] != "" && m[3] != "":
			valued, opt.Nargs = true, "+"
			opt.Choices = choicesOf(m[2])
		case m[2] != "":
			valued = true
			opt.Choices = choicesOf(m[2])
		case m[4] != "" && m[5] != "":
			valued, opt.Nargs = true, "*"
			opt.Choices = choicesOf(m[4])
		case m[4] != "":
			valued, opt.Nargs = true, "?"
			opt.Choices = choicesOf(m[4])
		}
	}
	switch {
	case valued:
		opt.Kind = Store
	case len(opt.Names) >= 2 && strings.HasPrefix(opt.Names[0], "--") &&
		slices.Contains(opt.Names, "--no-"+strings.TrimPrefix(opt.Names[0], "--")):
		// argparse.BooleanOptionalAction: "--x, --no-x" (short forms after them).
		opt.Kind = BooleanOptional
	default:
		opt.Kind = StoreTrue
	}
	return opt, rest, true
}

func choicesOf(metavar string) []string {
	inner, ok := strings.CutPrefix(metavar, "{")
	if !ok {
		return nil
	}
	inner = strings.TrimSuffix(inner, "}")
	return strings.Split(inner, ",")
}

// WithHost returns the version as the installed vLLM describes itself in its help text
// (`vllm serve --help=all`): the host's flags, kinds (store_true, BooleanOptionalAction),
// short forms and choices replace the table's, the table keeps the value types and the
// history (which line removed or added a flag, for Check's advice). host is the installed
// version as it reported it ("0.33.0"), named in Check's errors.
func (v *Version) WithHost(host, help string) (*Version, error) {
	opts, err := ParseHelp(help)
	if err != nil {
		return nil, err
	}
	h := &Version{Name: v.Name, Exact: v.Exact, Commit: v.Commit, Asked: host, Warning: v.Warning, host: true,
		flags: map[string]Flag{}, alias: map[string]string{}, gone: map[string]spec{}, later: map[string]spec{}}
	for _, o := range opts {
		long := ""
		var short []string
		for _, n := range o.Names {
			switch {
			case o.Kind == BooleanOptional && long != "" && n == "--no-"+strings.TrimPrefix(long, "--"):
			case strings.HasPrefix(n, "--") && long == "":
				long = n
			case strings.HasPrefix(n, "--"):
				short = append(short, n) // a second long alias is taken as another spelling
			default:
				short = append(short, n)
			}
		}
		if long == "" || long == "--help" {
			continue
		}
		f := Flag{Name: long, Knob: knobOf(long), Short: short, Kind: o.Kind, Nargs: o.Nargs, Choices: o.Choices}
		if t, ok := v.flags[long]; ok {
			f.Type, f.Since = t.Type, t.Since
			if t.Kind == o.Kind {
				f.Default = t.Default
			}
			if f.Nargs == "*" {
				f.Nargs = "+"
			}
		} else if f.Nargs == "*" {
			f.Nargs = "+"
		}
		h.flags[long] = f
		for _, s := range short {
			h.alias[s] = long
		}
	}
	for n, s := range v.gone {
		if _, ok := h.flags[n]; !ok {
			h.gone[n] = s
		}
	}
	for n, s := range v.later {
		if _, ok := h.flags[n]; !ok {
			h.later[n] = s
		}
	}
	// A flag of the table that the host does not list: the host is newer and dropped it.
	for n := range v.flags {
		if _, ok := h.flags[n]; !ok {
			h.gone[n] = spec{name: n, note: fmt.Sprintf("frontier's table of v%s has it; the installed vLLM %s does not list it", v.Name, host)}
		}
	}
	return h, nil
}

// Host reports whether the version's flags are the installed vLLM's own (WithHost).
func (v *Version) Host() bool { return v.host }

// metavar is how argparse shows a flag's value: {choices}, or the upper-case name.
func metavar(f Flag) string {
	m := strings.ToUpper(f.Knob)
	if f.Choices != nil {
		m = "{" + strings.Join(f.Choices, ",") + "}"
	}
	switch f.Nargs {
	case "+":
		return m + " [" + m + " ...]"
	case "?":
		return "[" + m + "]"
	}
	return m
}

// invocation is a flag's option strings as argparse prints them in help.
func invocation(f Flag) string {
	switch f.Kind {
	case BooleanOptional:
		parts := []string{f.Name, "--no-" + strings.TrimPrefix(f.Name, "--")}
		return strings.Join(append(parts, f.Short...), ", ")
	case StoreTrue:
		return strings.Join(append([]string{f.Name}, f.Short...), ", ")
	}
	mv := metavar(f)
	parts := []string{f.Name + " " + mv}
	for _, s := range f.Short {
		parts = append(parts, s+" "+mv)
	}
	return strings.Join(parts, ", ")
}

// HelpGroup is a titled group of options for Help.
type HelpGroup struct {
	Title string
	Flags []Flag
	// Texts are the options' help texts, by flag name.
	Texts map[string]string
}

// Help renders the version's `serve` options in argparse's layout (usage line, the
// positional model_tag, then every option of the line under "options:", each with its
// default), followed by the extra groups: a stand-in for `vllm serve --help=all` that
// ParseHelp reads back.
func (v *Version) Help(usage string, extra ...HelpGroup) string {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: %s\n\n", usage)
	b.WriteString("positional arguments:\n")
	writeHelpItem(&b, "model_tag", "The model tag to serve (optional if specified in config)")
	b.WriteString("\noptions:\n")
	writeHelpItem(&b, "-h, --help", "show this help message and exit")
	for _, f := range v.Flags() {
		text := ""
		if f.Default != nil {
			text = fmt.Sprintf("(default: %v)", pyValue(f.Default))
		}
		writeHelpItem(&b, invocation(f), text)
	}
	for _, g := range extra {
		fmt.Fprintf(&b, "\n%s:\n", g.Title)
		sort.Slice(g.Flags, func(i, j int) bool { return g.Flags[i].Name < g.Flags[j].Name })
		for _, f := range g.Flags {
			writeHelpItem(&b, invocation(f), g.Texts[f.Name])
		}
	}
	return b.String()
}

// writeHelpItem writes one option as argparse does: the invocation at indent 2, the help at
// column 24, on the next line when the invocation is longer.
func writeHelpItem(b *strings.Builder, inv, text string) {
	const col = 24
	if text == "" {
		fmt.Fprintf(b, "  %s\n", inv)
		return
	}
	if len(inv)+4 <= col {
		fmt.Fprintf(b, "  %-*s%s\n", col-2, inv, text)
		return
	}
	fmt.Fprintf(b, "  %s\n%s%s\n", inv, strings.Repeat(" ", col), text)
}

// pyValue prints a default as Python's str() would.
func pyValue(x any) string {
	switch x := x.(type) {
	case bool:
		if x {
			return "True"
		}
		return "False"
	case string:
		return x
	}
	return fmt.Sprint(x)
}
