package launcher

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A chatty engine's log stays under its bound, and keeps both its head and its last lines.
func TestEngineLogIsKeptUnderItsBound(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "engine.log")
	const limit = 64 << 10
	// 4,000 numbered lines of 100 bytes: about 400 KB, six times the bound.
	script := `i=0; while [ $i -lt 4000 ]; do printf 'line %05d %090d\n' $i 0; i=$((i+1)); done; echo last words`
	p, err := StartProcess(context.Background(), ProcessConfig{Argv: []string{"/bin/sh", "-c", script}, LogPath: log, LogHeader: "# header\n", MaxLogBytes: limit})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Exited():
	case <-time.After(30 * time.Second):
		t.Fatal("the engine did not finish")
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > limit {
		t.Errorf("the log is %d bytes, over its bound of %d", len(b), limit)
	}
	s := string(b)
	for _, want := range []string{"# header\nline 00000 ", "bytes of the engine's output are left out here", "line 03999 ", "last words\n"} {
		if !strings.Contains(s, want) {
			t.Errorf("the log lacks %q", want)
		}
	}
	if err := p.LogError(); err != nil {
		t.Errorf("LogError = %v", err)
	}
	if tail := p.LogTail(200); !strings.Contains(tail, "last words") {
		t.Errorf("LogTail = %q", tail)
	}
}

// A log that cannot be written at start (the disk is full: /dev/full answers every write
// with ENOSPC) is frontier's own failure, a *HostIOError, not the engine's; nothing runs.
func TestAFullLogDiskAtStartIsAHostIOError(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	log := filepath.Join(t.TempDir(), "trial-0.log")
	if err := os.Symlink("/dev/full", log); err != nil {
		t.Fatal(err)
	}
	_, err := StartProcess(context.Background(), ProcessConfig{Argv: []string{"/bin/sh", "-c", "sleep 30"}, LogPath: log, LogHeader: "# header\n"})
	var he *HostIOError
	if !errors.As(err, &he) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("StartProcess = %v, want a *HostIOError wrapping ENOSPC", err)
	}
}

// A log that fills up while the engine runs is kept as an error, and the engine goes on: it
// is not blocked on a full pipe.
func TestAFullLogDiskMidRunIsKeptAndDoesNotBlockTheEngine(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	log := filepath.Join(t.TempDir(), "trial-0.log")
	if err := os.Symlink("/dev/full", log); err != nil {
		t.Fatal(err)
	}
	// 1 MB of output: far more than a pipe holds, so a copy that stopped would block it.
	p, err := StartProcess(context.Background(), ProcessConfig{Argv: []string{"/bin/sh", "-c", "head -c 1000000 /dev/zero | tr '\\0' x; exit 0"}, LogPath: log})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Exited():
	case <-time.After(30 * time.Second):
		t.Fatal("the engine blocked on its output once the log could not be written")
	}
	var he *HostIOError
	if err := p.LogError(); !errors.As(err, &he) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("LogError = %v, want a *HostIOError wrapping ENOSPC", err)
	}
	if err := p.ExitErr(); err != nil {
		t.Errorf("the engine failed: %v", err)
	}
}
