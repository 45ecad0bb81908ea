package redact

import (
	"bytes"
	"io"
	"strings"
)

// writerLineMax is the longest unfinished line a Writer holds back before it writes a piece.
const writerLineMax = 64 << 10

// Writer writes whole lines to an underlying writer with Text's redaction applied; Flush
// writes what is left of an unfinished line. A line longer than 64 KiB is written in pieces
// that keep the last len(longest secret)-1 bytes back, so that a secret split across writes
// is still found. It is not safe for concurrent use.
type Writer struct {
	w      io.Writer
	values []string
	keep   int
	r      *strings.Replacer
	buf    []byte
}

// NewWriter returns a Writer to w that replaces values (those of at least MinValueLen
// bytes) and token-shaped strings by Placeholder.
func NewWriter(w io.Writer, values []string) *Writer {
	values = searchable(values)
	rw := &Writer{w: w, values: values, keep: 64}
	if len(values) > 0 {
		rw.r = replacer(values)
		rw.keep = max(rw.keep, len(values[0])-1)
	}
	return rw
}

func (rw *Writer) redact(s string) string {
	if rw.r != nil {
		s = rw.r.Replace(s)
	}
	return tokenShaped.ReplaceAllString(s, Placeholder)
}

// Write buffers p and writes every line it completes, redacted.
func (rw *Writer) Write(p []byte) (int, error) {
	rw.buf = append(rw.buf, p...)
	if i := bytes.LastIndexByte(rw.buf, '\n'); i >= 0 {
		if err := rw.emit(i + 1); err != nil {
			return 0, err
		}
	}
	if len(rw.buf) > writerLineMax {
		// Replace what is complete; a secret may straddle the cut only within keep bytes.
		line := rw.redact(string(rw.buf))
		cut := max(len(line)-rw.keep, 0)
		if _, err := io.WriteString(rw.w, line[:cut]); err != nil {
			return 0, err
		}
		rw.buf = append(rw.buf[:0], line[cut:]...)
	}
	return len(p), nil
}

func (rw *Writer) emit(n int) error {
	_, err := io.WriteString(rw.w, rw.redact(string(rw.buf[:n])))
	rw.buf = append(rw.buf[:0], rw.buf[n:]...)
	return err
}

// Flush writes the rest of an unfinished line.
func (rw *Writer) Flush() error {
	if len(rw.buf) == 0 {
		return nil
	}
	return rw.emit(len(rw.buf))
}
