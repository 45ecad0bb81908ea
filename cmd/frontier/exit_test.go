package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/frontier-llm/frontier/search/storage"
	"github.com/frontier-llm/frontier/workload"
)

func TestExitCodeAndMessagePrintedOnce(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "bad.hcl")
	if err := os.WriteFile(path, []byte("knob \"x\" {\n  values = []\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var pf planFlags
	_, diags := pf.load(&cli{}, path)
	if diags == nil {
		t.Fatal("the bad plan loaded")
	}
	badData := &workload.InputError{File: "d.jsonl", Line: 3, Msg: "no prompt"}
	tests := []struct {
		name     string
		err      error
		wantCode int
		wantOut  string
	}{
		{"success", nil, exitOK, ""},
		{"help", fmt.Errorf("parse: %w", flag.ErrHelp), exitOK, ""},
		{"invalid input", invalidf("--trials must be positive"), exitInvalid, "frontier apply: --trials must be positive\n"},
		{"runtime failure", runtimef("interrupted"), exitRuntime, "frontier apply: interrupted\n"},
		{"an error of a library is a runtime failure", errors.New("disk full"), exitRuntime, "frontier apply: disk full\n"},
		{"no feasible configuration", noFeasiblef("no configuration met every SLO"), exitNoFeasible, "frontier apply: no configuration met every SLO\n"},
		{"already printed", silent(exitInvalid), exitInvalid, ""},
		{"a subcommand's name", as("frontier quality score", invalidf("--scorer is required")), exitInvalid, "frontier quality score: --scorer is required\n"},
		{"a plain error under a subcommand's name", as("frontier sim serve", errors.New("bind: address in use")), exitRuntime, "frontier sim serve: bind: address in use\n"},
		{"a study whose space changed is invalid input", fmt.Errorf("study s: %w", storage.ErrSpaceChanged), exitInvalid, "frontier apply: study s: " + storage.ErrSpaceChanged.Error() + "\n"},
		{"a bad dataset is invalid input", fmt.Errorf("class chat: %w", badData), exitInvalid, "frontier apply: class chat: " + badData.Error() + "\n"},
		{"wrapped twice keeps its code", fmt.Errorf("study: %w", invalidf("bad dataset")), exitInvalid, "frontier apply: study: bad dataset\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stderr bytes.Buffer
			if got := finish(&stderr, "frontier apply", tt.err); got != tt.wantCode {
				t.Errorf("exit code %d, want %d", got, tt.wantCode)
			}
			if got := stderr.String(); got != tt.wantOut {
				t.Errorf("stderr %q, want %q", got, tt.wantOut)
			}
		})
	}
	t.Run("plan diagnostics print with their file and line", func(t *testing.T) {
		t.Parallel()
		var stderr bytes.Buffer
		if got := finish(&stderr, "frontier validate", diags); got != exitInvalid {
			t.Errorf("exit code %d, want %d", got, exitInvalid)
		}
		if out := stderr.String(); !bytes.Contains(stderr.Bytes(), []byte("bad.hcl line")) || bytes.Contains(stderr.Bytes(), []byte("frontier validate:")) {
			t.Errorf("stderr:\n%s\nwant the diagnostics with the file's line, without the command's prefix", out)
		}
	})
}
