package vllm

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"unicode"
)

// ErrNotNumber is returned by PyInt and PyFloat for text that Python's int() or float()
// refuses ("invalid literal for int() with base 10").
var ErrNotNumber = errors.New("not a number as Python reads it")

// ErrIntRange is returned by PyInt for a well-formed integer outside int64. Python's int()
// takes it (its integers are unbounded); the values it sets here never need more.
var ErrIntRange = errors.New("integer out of the 64-bit range")

// PyInt parses s as Python's int(s) does, which is argparse's type=int in vLLM: surrounding
// whitespace, an optional sign, then decimal digits (any Unicode decimal digit) with single
// underscores allowed between digits only ("6_4" is 64; "_64_", "6__4", "64_" and "+_6"
// are refused). Leading zeros are allowed ("007" is 7); "0x10", "1e3" and "8k" are not.
func PyInt(s string) (int64, error) {
	digits, neg, ok := pyDigits(strings.TrimFunc(s, unicode.IsSpace), true)
	if !ok {
		return 0, ErrNotNumber
	}
	n, err := strconv.ParseUint(digits, 10, 64)
	switch {
	case err != nil, neg && n > 1<<63, !neg && n > math.MaxInt64:
		return 0, ErrIntRange
	case neg && n == 1<<63:
		return math.MinInt64, nil
	case neg:
		return -int64(n), nil
	}
	return int64(n), nil
}

// PyFloat parses s as Python's float(s) does, which is argparse's type=float in vLLM:
// surrounding whitespace, an optional sign, then "inf", "infinity" or "nan" in any case, or a
// decimal number with an optional fraction and exponent whose digit groups may hold single
// underscores between digits ("1_0.5" is 10.5). Hexadecimal ("0x1p-2"), which Go's
// strconv.ParseFloat takes, is refused. A number too large for a float64 is ±Inf, as in
// Python ("1e400" is inf).
func PyFloat(s string) (float64, error) {
	t := strings.TrimFunc(s, unicode.IsSpace)
	body := t
	neg := false
	if body != "" && (body[0] == '+' || body[0] == '-') {
		neg = body[0] == '-'
		body = body[1:]
	}
	switch strings.ToLower(body) {
	case "inf", "infinity":
		if neg {
			return math.Inf(-1), nil
		}
		return math.Inf(1), nil
	case "nan":
		return math.NaN(), nil
	}
	mant, exp, hasExp := strings.Cut(body, "e")
	if !hasExp {
		mant, exp, hasExp = strings.Cut(body, "E")
	}
	whole, frac, _ := strings.Cut(mant, ".")
	if whole == "" && frac == "" {
		return 0, ErrNotNumber // "." and "" are not numbers; "5." and ".5" are
	}
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, part := range []string{whole, frac} {
		if i == 1 {
			b.WriteByte('.')
		}
		if part == "" {
			b.WriteByte('0')
			continue
		}
		d, _, ok := pyDigits(part, false)
		if !ok {
			return 0, ErrNotNumber // a second ".", a sign or a stray "_" inside the number
		}
		b.WriteString(d)
	}
	if hasExp {
		d, eneg, ok := pyDigits(exp, true)
		if !ok {
			return 0, ErrNotNumber
		}
		b.WriteByte('e')
		if eneg {
			b.WriteByte('-')
		}
		b.WriteString(d)
	}
	f, err := strconv.ParseFloat(b.String(), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, ErrNotNumber
	}
	return f, nil // on ErrRange f is ±Inf or the nearest subnormal, as Python gives
}

// pyDigits reads Python's digitpart (digits with single underscores between them) after an
// optional sign when signed is set, and returns the digits in ASCII without underscores.
func pyDigits(s string, signed bool) (digits string, neg, ok bool) {
	if signed && s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	var b strings.Builder
	prevDigit := false
	for _, r := range s {
		if r == '_' {
			if !prevDigit {
				return "", false, false
			}
			prevDigit = false
			continue
		}
		d, isDigit := decimalValue(r)
		if !isDigit {
			return "", false, false
		}
		b.WriteByte('0' + d)
		prevDigit = true
	}
	if !prevDigit {
		return "", false, false // empty, or a trailing underscore
	}
	return b.String(), neg, true
}

// decimalValue is the value of a Unicode decimal digit (category Nd), which Python's int()
// and float() accept in any script: "٣" is 3. Unicode puts each script's digits 0 to 9 on
// consecutive code points, so a digit's value is its distance from the start of its run,
// modulo 10 (runs of several digit sets follow each other, as the mathematical digits do).
func decimalValue(r rune) (byte, bool) {
	if r >= '0' && r <= '9' {
		return byte(r - '0'), true
	}
	if r < 0x80 || !unicode.IsDigit(r) {
		return 0, false
	}
	start := r
	for unicode.IsDigit(start - 1) {
		start--
	}
	return byte((r - start) % 10), true
}
