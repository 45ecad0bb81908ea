package vllm

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The KV offloading flags by release: first in v0.12, so every table has them; a vLLM older
// than v0.12 that the oldest table stands in for refuses them, naming its version; the
// backend's default changed from none to native in v0.14.
func TestKVOffloadingFlagsByVersion(t *testing.T) {
	t.Parallel()
	for _, line := range Versions() {
		v := mustLookup(t, line)
		for _, knob := range []string{"kv_offloading_size", "kv_offloading_backend"} {
			if err := v.Check(knob); err != nil {
				t.Errorf("v%s.Check(%s) = %v, want it taken", line, knob, err)
			}
		}
		f, _ := v.Flag("kv_offloading_backend")
		if diff := cmp.Diff([]string{"native", "lmcache"}, f.Choices); diff != "" {
			t.Errorf("v%s --kv-offloading-backend choices (-want +got):\n%s", line, diff)
		}
		want := any("native")
		if line == "0.13" {
			want = nil // no default: offloading needs both flags
		}
		if f.Default != want {
			t.Errorf("v%s --kv-offloading-backend default = %v, want %v", line, f.Default, want)
		}
		if s, _ := v.Flag("kv_offloading_size"); s.Type != Float {
			t.Errorf("v%s --kv-offloading-size type = %v, want float", line, s.Type)
		}
	}
	for _, tc := range []struct {
		asked, want string
	}{
		{"0.11.0", "--kv-offloading-size is not in vLLM v0.11: it was added in v0.12"},
		{"0.10.2", "--kv-offloading-size is not in vLLM v0.10: it was added in v0.12"},
	} {
		v := mustLookup(t, tc.asked)
		err := v.Check("kv_offloading_size")
		var fe *FlagError
		if !errors.As(err, &fe) || fe.Added != "0.12" {
			t.Fatalf("Lookup(%q).Check(kv_offloading_size) = %v, want a FlagError added in v0.12", tc.asked, err)
		}
		if err.Error() != tc.want {
			t.Errorf("error = %q, want %q", err, tc.want)
		}
		if err := v.Check("--kv-offloading-backend"); err == nil || !strings.Contains(err.Error(), "added in v0.12") {
			t.Errorf("Lookup(%q).Check(--kv-offloading-backend) = %v, want refused", tc.asked, err)
		}
		// Flags every table has are still taken by the older release.
		if err := v.Check("max_num_seqs"); err != nil {
			t.Errorf("Lookup(%q).Check(max_num_seqs) = %v", tc.asked, err)
		}
	}
	if err := mustLookup(t, "0.12.0").Check("kv_offloading_size"); err != nil {
		t.Errorf("vLLM 0.12.0 refuses --kv-offloading-size: %v", err)
	}
}

// The argparse of each line takes the flags as vLLM does: a float size, a backend from the
// Literal's choices.
func TestKVOffloadingFlagsParse(t *testing.T) {
	t.Parallel()
	v := mustLookup(t, Current)
	got, err := v.ParseArgs([]string{"m", "--kv-offloading-size", "16", "--kv-offloading-backend", "lmcache"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Values["kv_offloading_size"] != 16.0 || got.Values["kv_offloading_backend"] != "lmcache" {
		t.Errorf("parsed %v, want size 16.0 and backend lmcache", got.Values)
	}
	_, err = v.ParseArgs([]string{"m", "--kv-offloading-backend", "disk"})
	if err == nil || !strings.Contains(err.Error(), "argument --kv-offloading-backend: invalid choice: 'disk' (choose from 'native', 'lmcache')") {
		t.Errorf("backend disk: %v, want argparse's invalid choice", err)
	}
	if _, err := v.ParseArgs([]string{"m", "--kv-offloading-size", "many"}); err == nil || !strings.Contains(err.Error(), "invalid float value: 'many'") {
		t.Errorf("size many: %v, want argparse's invalid float value", err)
	}
}
