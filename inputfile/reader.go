package inputfile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// MaxStall is how long one read of a user's file may wait for data before the read fails
// with an error wrapping ErrStalled. A regular file on a working disk answers in
// milliseconds; a read that waits longer is on a file that only looks regular (/proc/kmsg,
// a FUSE or network mount that hangs).
const MaxStall = 30 * time.Second

// maxReadChunk bounds the bytes one read asks for, and so the buffer a read left waiting
// after cancellation holds.
const maxReadChunk = 1 << 20

// ErrStalled is wrapped by the error of a read that waited MaxStall for data.
var ErrStalled = errors.New("the file gave no data")

// NewReader returns a reader of the file f (named path in errors) that honours ctx: once ctx
// is done, Read returns ctx's error at once, even while a read of f is blocked (a regular
// file whose read waits, such as /proc/kmsg); a read that gets no data for MaxStall fails
// with an error wrapping ErrStalled. Each read of f runs in its own goroutine into a buffer
// of its own, at most 1 MiB; a read abandoned on cancellation or stall is left to end when f
// is closed or the process exits, and nothing it reads is used. The caller still closes f.
func NewReader(ctx context.Context, f *os.File, path string) io.Reader {
	return newReader(ctx, f, path, MaxStall)
}

func newReader(ctx context.Context, f *os.File, path string, stall time.Duration) *ctxReader {
	return &ctxReader{ctx: ctx, f: f, path: path, stall: stall}
}

type readResult struct {
	b   []byte
	err error
}

type ctxReader struct {
	ctx   context.Context
	f     io.Reader
	path  string
	stall time.Duration
	buf   []byte
	// failed is the error of an abandoned read; every later Read returns it.
	failed error
}

func (r *ctxReader) Read(p []byte) (int, error) {
	if r.failed != nil {
		return 0, r.failed
	}
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	if len(p) == 0 {
		return 0, nil
	}
	n := min(len(p), maxReadChunk)
	if cap(r.buf) < n {
		r.buf = make([]byte, n)
	}
	buf := r.buf[:n]
	done := make(chan readResult, 1)
	go func() {
		m, err := r.f.Read(buf)
		done <- readResult{buf[:m], err}
	}()
	timer := time.NewTimer(r.stall)
	defer timer.Stop()
	select {
	case res := <-done:
		return copy(p, res.b), res.err
	case <-r.ctx.Done():
		r.buf = nil // the abandoned read owns it now
		r.failed = r.ctx.Err()
	case <-timer.C:
		r.buf = nil
		r.failed = fmt.Errorf("%s: %w for %v: frontier reads regular files on a local or working disk", r.path, ErrStalled, r.stall)
	}
	return 0, r.failed
}
