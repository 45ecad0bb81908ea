package inputfile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"unicode/utf8"
)

// ErrNotRegular is wrapped by the errors of a path that is not a regular file.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is wrapped by the errors of a file larger than the caller's limit.
var ErrTooLarge = errors.New("file too large")

// ErrNotText is wrapped by the errors of content that is not UTF-8 text.
var ErrNotText = errors.New("not UTF-8 text")

// Open opens the regular file at path for reading and returns it with its size. A path that
// is not a regular file (after following links) is refused with an error wrapping
// ErrNotRegular, and one larger than limit bytes (when limit > 0) with one wrapping
// ErrTooLarge. Opening never blocks: a named pipe is opened without waiting for a writer,
// then refused.
func Open(path string, limit int64) (*os.File, int64, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, 0, fmt.Errorf("%s is %s, %w: frontier reads plans and data from regular files only", path, Kind(st.Mode()), ErrNotRegular)
	}
	if limit > 0 && st.Size() > limit {
		f.Close()
		return nil, 0, fmt.Errorf("%s is %s, over the limit of %s: %w", path, Size(st.Size()), Size(limit), ErrTooLarge)
	}
	return f, st.Size(), nil
}

// Read returns the contents of the regular file at path, refused as Open refuses it. A file
// that grows while it is read is cut at limit+1 bytes and refused as too large; a read that
// waits MaxStall for data fails (see NewReader).
func Read(path string, limit int64) ([]byte, error) {
	return ReadContext(context.Background(), path, limit)
}

// ReadContext is Read that stops when ctx is done, with ctx's error, even while a read of the
// file is blocked.
func ReadContext(ctx context.Context, path string, limit int64) ([]byte, error) {
	f, size, err := Open(path, limit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := NewReader(ctx, f, path)
	if limit > 0 {
		r = io.LimitReader(r, limit+1)
	}
	buf := bytes.NewBuffer(make([]byte, 0, size+1))
	if _, err := buf.ReadFrom(r); err != nil {
		return nil, err
	}
	if limit > 0 && int64(buf.Len()) > limit {
		return nil, fmt.Errorf("%s grew over the limit of %s while it was read: %w", path, Size(limit), ErrTooLarge)
	}
	return buf.Bytes(), nil
}

// ReadText is Read for text: content with a NUL byte or that is not UTF-8 is refused with an
// error that wraps ErrNotText and gives the offset of the first bad byte.
func ReadText(path string, limit int64) ([]byte, error) {
	return ReadTextContext(context.Background(), path, limit)
}

// ReadTextContext is ReadText that stops when ctx is done, as ReadContext does.
func ReadTextContext(ctx context.Context, path string, limit int64) ([]byte, error) {
	b, err := ReadContext(ctx, path, limit)
	if err != nil {
		return nil, err
	}
	if err := CheckText(b); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return b, nil
}

// TrimBOM drops a UTF-8 byte order mark (EF BB BF) from the start of b, which some editors
// on Windows write at the start of a text file.
func TrimBOM(b []byte) []byte {
	return bytes.TrimPrefix(b, []byte(BOM))
}

// BOM is the UTF-8 encoding of U+FEFF, the byte order mark.
const BOM = "\xef\xbb\xbf"

// CheckText returns nil when b is UTF-8 text without NUL bytes, else an error that wraps
// ErrNotText and names the offset of the first bad byte.
func CheckText(b []byte) error {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return fmt.Errorf("byte %d is NUL: the file is binary (a database, an archive or a program?), %w", i, ErrNotText)
	}
	if !utf8.Valid(b) {
		i := 0
		for i < len(b) {
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			i += n
		}
		return fmt.Errorf("byte %d is not UTF-8: the file is binary or in another encoding, %w", i, ErrNotText)
	}
	return nil
}

// Size writes a byte count for people: "1.5 MiB".
func Size(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d bytes", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.4g %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// Kind names a file mode that is not a regular file, for messages ("a named pipe (FIFO)").
func Kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a folder"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "a special file"
}
