// Package ollamatest finds the ollama executable for the tests that run a real Ollama server:
// $FRONTIER_OLLAMA, or the build of scripts/ollama.sh in the repository's .cache. It is for
// tests only; the engine adapter finds ollama on its own (package launcher).
package ollamatest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/frontier-llm/frontier/launcher"
)

// Binary returns the absolute path of the ollama executable: $FRONTIER_OLLAMA, else
// repoRoot/.cache/ollama/bin/ollama (repoRoot relative to the test's package folder, such as
// ".." or "../.."). Without one the test is skipped, except under CI, where it fails: CI
// builds Ollama with scripts/ollama.sh, so a missing one there is a broken set-up.
func Binary(t testing.TB, repoRoot string) string {
	t.Helper()
	bin := os.Getenv(launcher.OllamaBinaryEnv)
	if bin == "" {
		bin = filepath.Join(repoRoot, ".cache", "ollama", "bin", "ollama")
	}
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("no ollama at %s (set %s or run scripts/ollama.sh): %v", bin, launcher.OllamaBinaryEnv, err)
		}
		t.Skipf("no ollama at %s: run scripts/ollama.sh or set %s", bin, launcher.OllamaBinaryEnv)
	}
	abs, err := filepath.Abs(bin)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}
