package launcher

import (
	"fmt"
	"io"
	"os"
	"sync"
)

// DefaultMaxLogBytes bounds an engine's log file when ProcessConfig.MaxLogBytes is zero. An
// engine that logs every request (vLLM with --enable-log-requests, a debug level) writes
// gigabytes in an unattended study; past the bound the log keeps its head (the command,
// the startup) and its most recent output, and says how much it left out between them.
const DefaultMaxLogBytes = 64 << 20

// HostIOError is a failure of frontier's own input or output on the host: the engine's log
// could not be created or written (a full or read-only disk). It says nothing about the
// engine or the configuration, so a trial that meets it is not a measurement: the study
// stops and the next run measures the trial again.
type HostIOError struct {
	Op   string // what frontier did: "create engine log", "write engine log"
	Path string
	Err  error
}

// Error says what failed and where.
func (e *HostIOError) Error() string { return e.Op + " " + e.Path + ": " + e.Err.Error() }

// Unwrap returns the system's error.
func (e *HostIOError) Unwrap() error { return e.Err }

// logWriter writes an engine's output to its log file within a size bound, and never
// blocks or fails the engine: once a write fails it keeps the error and discards the rest,
// so that the engine does not stall on a full pipe while it is measured.
//
// When a write would take the file over max, the file is cut back to its first max/2 bytes,
// a line saying how much was left out follows, then the last max/4 bytes written before the
// cut: the head and the most recent output stay, which is what failure classification and
// a reader need. Each cut reads max/4 bytes back once per max/4 written, so the cost is
// linear in the output.
type logWriter struct {
	f       *os.File
	max     int64
	size    int64 // bytes in the file, header included
	dropped int64

	mu  sync.Mutex
	err error
}

func newLogWriter(f *os.File, start, max int64) *logWriter {
	if max <= 0 {
		max = DefaultMaxLogBytes
	}
	return &logWriter{f: f, size: start, max: max}
}

// Write always reports success to the copy that feeds it; see Err.
func (w *logWriter) Write(p []byte) (int, error) {
	n := len(p)
	if w.Err() != nil {
		return n, nil
	}
	if w.size+int64(len(p)) > w.max {
		if err := w.cut(); err != nil {
			w.fail(err)
			return n, nil
		}
		room := w.max - w.size
		if room <= 0 {
			w.dropped += int64(len(p))
			return n, nil
		}
		if int64(len(p)) > room {
			w.dropped += int64(len(p)) - room
			p = p[int64(len(p))-room:]
		}
	}
	m, err := w.f.Write(p)
	w.size += int64(m)
	if err != nil {
		w.fail(err)
	}
	return n, nil
}

// cut shrinks the file to its head and a recent part of its tail, with a note between.
func (w *logWriter) cut() error {
	head := w.max / 2
	keep := w.max / 4
	from := max(head, w.size-keep)
	recent := make([]byte, w.size-from)
	if _, err := w.f.ReadAt(recent, from); err != nil && err != io.EOF {
		return err
	}
	w.dropped += from - head
	note := fmt.Sprintf("\n# frontier: this log is kept under %d bytes; %d bytes of the engine's output are left out here\n", w.max, w.dropped)
	if err := w.f.Truncate(head); err != nil {
		return err
	}
	if _, err := w.f.Seek(head, io.SeekStart); err != nil {
		return err
	}
	if _, err := io.WriteString(w.f, note); err != nil {
		return err
	}
	if _, err := w.f.Write(recent); err != nil {
		return err
	}
	w.size = head + int64(len(note)) + int64(len(recent))
	return nil
}

func (w *logWriter) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.err = &HostIOError{Op: "write engine log", Path: w.f.Name(), Err: err}
}

// Err is the first write error, a *HostIOError, or nil.
func (w *logWriter) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// LogError is the first failure to write inst's log, a *HostIOError, or nil; nil too for an
// instance without a log of its own.
func LogError(inst Instance) error {
	if l, ok := inst.(interface{ LogError() error }); ok {
		return l.LogError()
	}
	return nil
}
