package launcher

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// standinLine is a command that runs the vLLM stand-in (vLLM cannot run here) as the given
// release line: a small script that sets STANDIN_VLLM_LINE, so --version and serve
// --help=all answer as that line does.
func standinLine(t *testing.T, line string) []string {
	t.Helper()
	script := filepath.Join(t.TempDir(), "vllm")
	body := "#!/bin/sh\nSTANDIN_VLLM_LINE=" + line + " exec " + standinBin + " \"$@\"\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return []string{script, "serve"}
}

func TestPreflightVLLMReadsTheInstalledVersion(t *testing.T) {
	t.Parallel()
	knobs := []Setting{{"max_num_seqs", int64(64)}, {"enable_prefix_caching", false}, {"disable_log_stats", false}, {"sku", "h100-sxm"}}
	for _, tc := range []struct {
		name, line  string
		args        []string
		wantVersion string
		wantErr     []string // what the error must say; nil: no error
	}{
		{"v0.13 takes the old flag", "0.13", []string{"--disable-log-requests", "--swap-space=4"}, "0.13.0+standin", nil},
		{"v0.22 refuses the removed flags with advice", "0.22", []string{"--disable-log-requests", "--swap-space=4", "--long-prefill-token-threshold", "1024"}, "0.22.0",
			[]string{"engine argument --disable-log-requests: vLLM 0.22.0 does not list --disable-log-requests", "did you mean --enable-log-requests",
				"engine argument --swap-space", "removed in v0."}},
		{"a knob the installed vLLM lacks is named", "0.22", nil, "0.22.0", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ks := knobs
			if tc.name == "a knob the installed vLLM lacks is named" {
				ks = append(ks, Setting{"swap_space", int64(4)})
				tc.wantErr = []string{`knob "swap_space": vLLM 0.22.0 does not list --swap-space`}
			}
			pf, err := PreflightVLLM(context.Background(), standinLine(t, tc.line), ks, tc.args)
			if pf.Version != tc.wantVersion {
				t.Errorf("Version = %q, want %q", pf.Version, tc.wantVersion)
			}
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("PreflightVLLM: %v", err)
				}
				for _, f := range []string{"--max-num-seqs", "--no-enable-prefix-caching", "--disable-log-stats"} {
					if !slices.Contains(pf.Flags, f) {
						t.Errorf("flags %v lack %s", pf.Flags, f)
					}
				}
				return
			}
			if !errors.Is(err, ErrPreflight) {
				t.Fatalf("error %v, want ErrPreflight", err)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
			if strings.Contains(err.Error(), "long-prefill") || strings.Contains(err.Error(), "disable-log-stats") {
				t.Errorf("error names a flag the installed vLLM takes:\n%v", err)
			}
		})
	}
}

func TestPreflightVLLMMissingProgram(t *testing.T) {
	t.Parallel()
	_, err := PreflightVLLM(context.Background(), []string{filepath.Join(t.TempDir(), "no-vllm"), "serve"}, nil, nil)
	if err == nil || errors.Is(err, ErrPreflight) {
		t.Errorf("error %v, want a plain error for a missing program", err)
	}
}
