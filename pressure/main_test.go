package pressure

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// frontierBin is the frontier binary, whose `frontier sim serve` is the simulated vLLM the
// tests drive: a real subprocess on loopback standing in for vLLM, which needs a GPU.
var frontierBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "pressure-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	bin := filepath.Join(dir, "frontier")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/frontier").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build frontier: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(2)
	}
	frontierBin = bin
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// processAlive reports whether process pid exists and is not a zombie.
func processAlive(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	s := string(b)
	rest := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(rest) > 0 && rest[0] != "Z"
}
