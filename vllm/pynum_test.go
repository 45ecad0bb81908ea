package vllm

import (
	"errors"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The expectations below are what CPython 3.11's int() and float() return for each input
// (checked against the interpreter when the cases were written).

func TestPyIntReadsAsPythonInt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want int64
		err  error
	}{
		{"plain", "64", 64, nil},
		{"one underscore between digits", "6_4", 64, nil},
		{"surrounding whitespace", " 6_4 \n", 64, nil},
		{"underscores around", "_64_", 0, ErrNotNumber},
		{"two underscores", "6__4", 0, ErrNotNumber},
		{"trailing underscore", "64_", 0, ErrNotNumber},
		{"leading underscore", "_64", 0, ErrNotNumber},
		{"underscore after the sign", "+_6", 0, ErrNotNumber},
		{"plus sign", "+6", 6, nil},
		{"minus sign", "-6", -6, nil},
		{"negative zero", "-0", 0, nil},
		{"leading zeros", "007", 7, nil},
		{"hexadecimal", "0x10", 0, ErrNotNumber},
		{"exponent", "1e3", 0, ErrNotNumber},
		{"suffix", "8k", 0, ErrNotNumber},
		{"decimal point", "6.0", 0, ErrNotNumber},
		{"empty", "", 0, ErrNotNumber},
		{"sign alone", "-", 0, ErrNotNumber},
		{"inner space", "1 2", 0, ErrNotNumber},
		{"Arabic-Indic digit", "٣", 3, nil},
		{"Arabic-Indic digits with an underscore", "٣_٣", 33, nil},
		{"mathematical digit nine", "𝟗", 9, nil},
		{"no-break space", "\u00a05", 5, nil},
		{"largest int64", "9223372036854775807", math.MaxInt64, nil},
		{"smallest int64", "-9223372036854775808", math.MinInt64, nil},
		{"past int64", "9223372036854775808", 0, ErrIntRange},
		{"far past int64", "99999999999999999999999", 0, ErrIntRange},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := PyInt(tt.in)
			if !errors.Is(err, tt.err) || got != tt.want {
				t.Errorf("PyInt(%q) = %d, %v; want %d, %v", tt.in, got, err, tt.want, tt.err)
			}
		})
	}
}

func TestPyFloatReadsAsPythonFloat(t *testing.T) {
	t.Parallel()
	nan := math.NaN()
	tests := []struct {
		name string
		in   string
		want float64
		ok   bool
	}{
		{"plain", "0.5", 0.5, true},
		{"surrounding whitespace", " 0.5 ", 0.5, true},
		{"nan", "nan", nan, true},
		{"NaN", "NaN", nan, true},
		{"negative nan", "-nan", nan, true},
		{"inf", "inf", math.Inf(1), true},
		{"negative Inf", "-Inf", math.Inf(-1), true},
		{"infinity", "+infinity", math.Inf(1), true},
		{"misspelt infinity", "infinit", 0, false},
		{"underscore in the whole part", "1_0.5", 10.5, true},
		{"underscore in the fraction", "0.9_2", 0.92, true},
		{"two underscores", "1__0.5", 0, false},
		{"leading underscore", "_1.5", 0, false},
		{"underscore before the point", "1_.5", 0, false},
		{"underscore after the point", "1._5", 0, false},
		{"trailing underscore", "1.5_", 0, false},
		{"no whole part", ".5", 0.5, true},
		{"no fraction", "5.", 5, true},
		{"point alone", ".", 0, false},
		{"exponent", "1e3", 1000, true},
		{"capital exponent", "1E3", 1000, true},
		{"signed exponent", "1e-3", 0.001, true},
		{"underscore in the exponent", "1e3_0", 1e30, true},
		{"underscore starting the exponent", "1e_3", 0, false},
		{"empty exponent", "1e", 0, false},
		{"exponent alone", "e3", 0, false},
		{"hexadecimal, which Go reads", "0x1p-2", 0, false},
		{"too large is inf", "1e400", math.Inf(1), true},
		{"too large negative is -inf", "-1e400", math.Inf(-1), true},
		{"too small is 0", "1e-400", 0, true},
		{"two points", "1.5.5", 0, false},
		{"two signs", "++1", 0, false},
		{"inner space", "1 2", 0, false},
		{"Arabic-Indic digits", "٣.٥", 3.5, true},
		{"empty", "", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := PyFloat(tt.in)
			if (err == nil) != tt.ok {
				t.Fatalf("PyFloat(%q) = %v, %v; want ok %v", tt.in, got, err, tt.ok)
			}
			same := got == tt.want || math.IsNaN(got) && math.IsNaN(tt.want)
			if tt.ok && !same {
				t.Errorf("PyFloat(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

func TestParseHumanIntReadsAsHumanReadableInt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"8192", 8192, true}, {"8_192", 8192, true}, {"_8192", 0, false}, {"81__92", 0, false},
		{"1k", 1000, true}, {"1K", 1024, true}, {"25.6k", 25600, true}, {" 8k ", 8000, true},
		{"1.5K", 0, false}, {"-1k", 0, false}, {"+1k", 0, false}, {"1_0k", 0, false}, {"1e3k", 0, false},
		{".5k", 0, false}, {"5.k", 0, false}, {"-1", -1, true}, {"k", 0, false}, {"", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseHumanInt(tt.in)
			if (err == nil) != tt.ok || got != tt.want {
				t.Errorf("ParseHumanInt(%q) = %d, %v; want %d, ok %v", tt.in, got, err, tt.want, tt.ok)
			}
		})
	}
}

// pyIntGrammar and pyFloatGrammar are Python's grammars for int() and float() of a string,
// over ASCII, written as regular expressions: the oracle of the fuzz tests.
var (
	pyIntGrammar   = regexp.MustCompile(`^[ \t\n\r\f\v]*[+-]?[0-9](_?[0-9])*[ \t\n\r\f\v]*$`)
	pyFloatGrammar = regexp.MustCompile(`^[ \t\n\r\f\v]*[+-]?((?i:inf|infinity|nan)|(([0-9](_?[0-9])*)?\.[0-9](_?[0-9])*|[0-9](_?[0-9])*\.?)([eE][+-]?[0-9](_?[0-9])*)?)[ \t\n\r\f\v]*$`)
)

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func FuzzPyInt(f *testing.F) {
	for _, s := range []string{"64", "6_4", "_64_", "6__4", " -7 ", "+0", "٣_٣", "9223372036854775808", "1e3", "0x10", "\t12\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := PyInt(s)
		if !isASCII(s) {
			return // the grammar's oracle is ASCII; other scripts' digits are in the table test
		}
		if want := pyIntGrammar.MatchString(s); want != (err == nil || errors.Is(err, ErrIntRange)) {
			t.Fatalf("PyInt(%q) = %d, %v; Python's grammar says well-formed: %v", s, n, err, want)
		}
		if err == nil {
			plain := strings.ReplaceAll(strings.TrimSpace(s), "_", "")
			if m, perr := strconv.ParseInt(plain, 10, 64); perr != nil || m != n {
				t.Fatalf("PyInt(%q) = %d, but %q reads %d, %v", s, n, plain, m, perr)
			}
		}
	})
}

func FuzzPyFloat(f *testing.F) {
	for _, s := range []string{"0.92", "1_0.5", "nan", "-Infinity", ".5", "5.", "1e3_0", "1e_3", "0x1p-2", "1e400", " 1 ", "."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		g, err := PyFloat(s)
		if !isASCII(s) {
			return
		}
		if want := pyFloatGrammar.MatchString(s); want != (err == nil) {
			t.Fatalf("PyFloat(%q) = %v, %v; Python's grammar says well-formed: %v", s, g, err, want)
		}
		if err == nil && !math.IsNaN(g) && !math.IsInf(g, 0) {
			plain := strings.ReplaceAll(strings.TrimSpace(s), "_", "")
			if h, perr := strconv.ParseFloat(plain, 64); (perr != nil && !errors.Is(perr, strconv.ErrRange)) || h != g {
				t.Fatalf("PyFloat(%q) = %v, but %q reads %v, %v", s, g, plain, h, perr)
			}
		}
	})
}
