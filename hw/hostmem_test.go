package hw

import (
	"strings"
	"testing"
)

func TestReadMemInfo(t *testing.T) {
	t.Parallel()
	got, err := ReadMemInfo(strings.NewReader("MemTotal:       2113433600 kB\nMemFree:        1000 kB\n"))
	if err != nil || got != 2113433600<<10 {
		t.Errorf("ReadMemInfo = %d, %v; want %d", got, err, uint64(2113433600)<<10)
	}
	for _, bad := range []string{"", "MemFree: 10 kB\n", "MemTotal: many kB\n", "MemTotal: 10 MB\n", "MemTotal: 10\n", "MemTotal: 99999999999999999999 kB\n"} {
		if _, err := ReadMemInfo(strings.NewReader(bad)); err == nil {
			t.Errorf("ReadMemInfo(%q): no error", bad)
		}
	}
	if n := HostMemoryBytes(); n == 0 {
		t.Log("no /proc/meminfo here")
	}
}

// FuzzReadMemInfo: any input gives a size or an error, never a panic, and a size is whole kB.
func FuzzReadMemInfo(f *testing.F) {
	for _, s := range []string{"MemTotal:       2113433600 kB\n", "MemTotal: 1 kB", "MemTotal:\n", "x\nMemTotal: 12 kB\n", "MemTotal: -1 kB\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ReadMemInfo(strings.NewReader(s))
		if err == nil && n%1024 != 0 {
			t.Errorf("ReadMemInfo(%q) = %d, not whole kB", s, n)
		}
	})
}
