package vllm

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestKVRolesFollowTheLine: the NixlConnector's roles are kv_producer for prefill and
// kv_consumer for decode from v0.28 (kv_both deprecated on 2026-06-05), kv_both on every
// older line, and a newer release is modelled by the newest line.
func TestKVRolesFollowTheLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		version         string
		prefill, decode string
		deprecated      bool
	}{
		{"0.13.0", "kv_both", "kv_both", false},
		{"0.22.1", "kv_both", "kv_both", false},
		{"0.27", "kv_both", "kv_both", false},
		{"0.28.0", "kv_producer", "kv_consumer", true},
		{"0.33.0", "kv_producer", "kv_consumer", true},
	} {
		v, err := Lookup(tc.version)
		if err != nil {
			t.Fatal(err)
		}
		got := []any{v.KVRole(true), v.KVRole(false), v.KVRoleDeprecated()}
		if diff := cmp.Diff([]any{tc.prefill, tc.decode, tc.deprecated}, got); diff != "" {
			t.Errorf("vLLM %s: prefill, decode, deprecated (-want +got):\n%s", tc.version, diff)
		}
	}
	v, _ := Lookup("0.28")
	if got, want := v.KVTransferConfig(false), `{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}`; got != want {
		t.Errorf("KVTransferConfig(decode) = %s, want %s", got, want)
	}
}

// TestKnobArgsPassNoOffloadingAtSizeZero: kv_offloading_size 0 (no offloading) passes no
// flag and takes the backend with it; a store_true switch set false passes nothing on a
// line that knows it; frontier's knobs are the caller's to leave out.
func TestKnobArgsPassNoOffloadingAtSizeZero(t *testing.T) {
	t.Parallel()
	v, _ := Lookup("0.28")
	got, err := KnobArgs(v, []Setting{{"kv_offloading_size", 0.0}, {"kv_offloading_backend", "native"}, {"max_num_seqs", 64.0},
		{"enable_prefix_caching", false}, {"quantization", "none"}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"--max-num-seqs", "64", "--no-enable-prefix-caching"}, got); diff != "" {
		t.Errorf("KnobArgs (-want +got):\n%s", diff)
	}
}
