package k8sjob

import (
	"encoding/base64"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A manifest is built as a tree of mapping, seq and scalars, written by emit in the order
// it was built: YAML's block style, every string double-quoted.

// field is one key and value of a mapping.
type field struct {
	key string
	val any
}

// mapping is a YAML mapping whose keys keep their order.
type mapping []field

// seq is a YAML sequence.
type seq []any

// expand marks a string of a container's command, args or env value that Kubernetes expands
// $(VAR) references in: it is written with every $ doubled, so that it reaches the process
// as it is.
type expand string

// varRef is a $(VAR) reference that Kubernetes is meant to expand (the storage URL taken
// from its Secret): written as it is, never escaped.
type varRef string

// binary is a binaryData value: written base64-encoded.
type binary []byte

// add appends a field, leaving out nil values and empty mappings and sequences.
func (m mapping) add(key string, val any) mapping {
	switch v := val.(type) {
	case nil:
		return m
	case mapping:
		if len(v) == 0 {
			return m
		}
	case seq:
		if len(v) == 0 {
			return m
		}
	}
	return append(m, field{key, val})
}

// quote writes s as a YAML double-quoted scalar: printable characters as they are, and every
// character YAML does not allow raw (C0 and C1 controls, DEL, U+2028 and U+2029, U+FEFF,
// U+FFFE, U+FFFF, invalid UTF-8), the quote and the backslash escaped. An invalid byte is
// written as U+FFFD, since a YAML stream is Unicode text.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\uFFFD`)
		case !printable(r):
			if r > 0xFFFF {
				fmt.Fprintf(&b, `\U%08X`, r)
			} else {
				fmt.Fprintf(&b, `\u%04X`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// printable reports whether YAML 1.2 allows r raw in a double-quoted scalar; a few it
// allows (NEL, line and paragraph separators, the byte order mark) are escaped anyway, since
// some readers take them for line breaks.
func printable(r rune) bool {
	switch {
	case r >= 0x20 && r <= 0x7E:
		return true
	case r == 0x85, r == 0x2028, r == 0x2029, r == 0xFEFF:
		return false
	case r >= 0xA0 && r <= 0xD7FF, r >= 0xE000 && r <= 0xFFFD, r >= 0x10000 && r <= 0x10FFFF:
		return true
	}
	return false
}

// comment makes s safe for one comment line: every control character, and every character
// quote would escape, written as its Go escape instead of raw.
func comment(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if (r == utf8.RuneError && size == 1) || !printable(r) {
			q := strconv.QuoteRune(r)
			if r == utf8.RuneError && size == 1 {
				q = `'\ufffd'`
			}
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// plainKey reports whether a mapping key can be written without quotes.
func plainKey(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_' || r == '/') {
			return false
		}
	}
	return true
}

func key(k string) string {
	if plainKey(k) {
		return k
	}
	return quote(k)
}

// scalar writes a leaf value.
func scalar(v any) string {
	switch x := v.(type) {
	case string:
		return quote(x)
	case expand:
		return quote(strings.ReplaceAll(string(x), "$", "$$"))
	case varRef:
		return quote(string(x))
	case binary:
		return quote(base64.StdEncoding.EncodeToString(x))
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case bool:
		return strconv.FormatBool(x)
	}
	panic(fmt.Sprintf("k8sjob: no YAML for %T", v))
}

// emit writes v at indentation ind (a mapping's fields, or a sequence's items).
func emit(w *strings.Builder, v any, ind int) {
	pad := strings.Repeat(" ", ind)
	switch x := v.(type) {
	case mapping:
		for _, f := range x {
			w.WriteString(pad + key(f.key) + ":")
			emitValue(w, f.val, ind)
		}
	case seq:
		for _, item := range x {
			w.WriteString(pad + "-")
			switch it := item.(type) {
			case mapping:
				if len(it) == 0 {
					w.WriteString(" {}\n")
					continue
				}
				// The first field on the dash's line, the others below it.
				var sub strings.Builder
				emit(&sub, it, ind+2)
				w.WriteString(" " + strings.TrimPrefix(sub.String(), pad+"  "))
			case seq:
				w.WriteString("\n")
				emit(w, it, ind+2)
			default:
				w.WriteString(" " + scalar(it) + "\n")
			}
		}
	}
}

func emitValue(w *strings.Builder, v any, ind int) {
	switch x := v.(type) {
	case mapping:
		if len(x) == 0 {
			w.WriteString(" {}\n")
			return
		}
		w.WriteString("\n")
		emit(w, x, ind+2)
	case seq:
		if len(x) == 0 {
			w.WriteString(" []\n")
			return
		}
		w.WriteString("\n")
		emit(w, x, ind+2)
	default:
		w.WriteString(" " + scalar(x) + "\n")
	}
}

// document writes one YAML document.
func document(w io.Writer, m mapping) error {
	var b strings.Builder
	emit(&b, m, 0)
	_, err := io.WriteString(w, b.String())
	return err
}
