package inputfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestReadRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "plan.hcl")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for _, tc := range []struct{ path, kind string }{
		{fifo, "a named pipe (FIFO)"},
		{"/dev/zero", "a character device"},
		{dir, "a folder"},
	} {
		start := time.Now()
		_, err := Read(tc.path, 1<<20)
		if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), tc.kind) {
			t.Errorf("Read(%s) = %v, want an error wrapping ErrNotRegular that says %q", tc.path, err, tc.kind)
		}
		if took := time.Since(start); took > time.Second {
			t.Errorf("Read(%s) took %v, want at once", tc.path, took)
		}
	}
}

func TestReadRefusesAFileOverTheLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(path, make([]byte, 2049), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Read(path, 2048)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "2.001 KiB, over the limit of 2 KiB") {
		t.Errorf("Read = %v, want too large, with both sizes", err)
	}
	if b, err := Read(path, 4096); err != nil || len(b) != 2049 {
		t.Errorf("Read under the limit = %d bytes, %v", len(b), err)
	}
}

func TestCheckTextNamesTheFirstBadByte(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
	}{
		{"study {}\n", ""},
		{"héllo — ok\n", ""},
		{"SQLite format 3\x00", "byte 15 is NUL"},
		{"ab\xffcd", "byte 2 is not UTF-8"},
	} {
		err := CheckText([]byte(tc.in))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("CheckText(%q) = %v, want nil", tc.in, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrNotText)):
			t.Errorf("CheckText(%q) = %v, want ErrNotText saying %q", tc.in, err, tc.want)
		}
	}
}
