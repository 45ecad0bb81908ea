package launcher

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestProcessLogKeepsSecretsOut(t *testing.T) {
	t.Parallel()
	log := filepath.Join(t.TempDir(), "engine.log")
	// An engine that echoes its flags and environment, as vLLM's "non-default args" does.
	p, err := StartProcess(context.Background(), ProcessConfig{
		Argv:    []string{"/bin/sh", "-c", `echo "non-default args: {'api_key': '$1'}"; printf 'token %s' "$HF_TOKEN"`, "sh", "key-from-flag"},
		Env:     []string{"HF_TOKEN=hf-from-env"},
		LogPath: log,
		Redact:  []string{"key-from-flag", "hf-from-env"},
	})
	if err != nil {
		t.Fatal(err)
	}
	<-p.Exited()
	raw, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	want := "non-default args: {'api_key': 'REDACTED'}\ntoken REDACTED"
	if diff := cmp.Diff(want, string(raw)); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
	if tail := p.LogTail(1 << 10); tail != want {
		t.Errorf("LogTail = %q; want %q", tail, want)
	}
}
