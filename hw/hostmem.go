package hw

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// ReadMemInfo reads the host's RAM, in bytes, from the Linux /proc/meminfo format: the
// "MemTotal:" line, in kB (the kernel's kibibytes).
func ReadMemInfo(r io.Reader) (uint64, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("meminfo: MemTotal line %q: want a number of kB", sc.Text())
		}
		n, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil || n > 1<<53 {
			return 0, fmt.Errorf("meminfo: MemTotal %q: want a whole number of kB", f[0])
		}
		return n << 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("meminfo: %w", err)
	}
	return 0, fmt.Errorf("meminfo: no MemTotal line")
}

// HostMemoryBytes is this host's RAM from /proc/meminfo; 0 where it cannot be read (not
// Linux).
func HostMemoryBytes() uint64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	n, err := ReadMemInfo(f)
	if err != nil {
		return 0
	}
	return n
}
