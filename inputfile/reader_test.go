package inputfile

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A pipe with no writer stands in for a regular file whose read blocks (/proc/kmsg): both
// are files whose read waits for data that never comes.
func blockedFile(t *testing.T) *os.File {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close(); r.Close() })
	return r
}

func TestReaderReturnsOnCancelWhileAReadIsBlocked(t *testing.T) {
	t.Parallel()
	f := blockedFile(t)
	ctx, cancel := context.WithCancel(context.Background())
	r := newReader(ctx, f, "blocked", time.Hour)
	done := make(chan error, 1)
	go func() {
		_, err := io.ReadAll(r)
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("read after cancel = %v, want context.Canceled", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the read did not return within 2s of the cancel")
	}
	if _, err := r.Read(make([]byte, 8)); !errors.Is(err, context.Canceled) {
		t.Errorf("a later Read = %v, want context.Canceled again", err)
	}
}

func TestReaderFailsAReadThatStalls(t *testing.T) {
	t.Parallel()
	f := blockedFile(t)
	r := newReader(context.Background(), f, "kmsg", 100*time.Millisecond)
	start := time.Now()
	_, err := io.ReadAll(r)
	if !errors.Is(err, ErrStalled) {
		t.Fatalf("read of a stalled file = %v, want ErrStalled", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("the stalled read failed after %v, want about 100ms", took)
	}
}

func TestReaderReadsARegularFileWhole(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "data")
	want := make([]byte, 3<<20+17) // more than one read chunk
	for i := range want {
		want[i] = byte(i * 7)
	}
	if err := os.WriteFile(path, want, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadContext(context.Background(), path, 4<<20)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("ReadContext returned %d bytes differing from the file's %d", len(got), len(want))
	}
}

func TestReadContextOfACancelledContextReadsNothing(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ReadContext(ctx, path, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("ReadContext(cancelled) = %v, want context.Canceled", err)
	}
}

func TestTrimBOM(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{BOM + "a = 1": "a = 1", "a = 1": "a = 1", BOM: "", "\xef\xbb": "\xef\xbb"} {
		if got := string(TrimBOM([]byte(in))); got != want {
			t.Errorf("TrimBOM(%q) = %q, want %q", in, got, want)
		}
	}
}
