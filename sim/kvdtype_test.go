package sim

import (
	"errors"
	"strings"
	"testing"

	"github.com/frontier-llm/frontier/hw"
)

// TestKVCacheDTypeChoicesFollowTheLine: the memory check takes the --kv-cache-dtype choices of
// the configuration's vLLM line (one list, the version table's): nvfp4 and the per-token-head
// dtypes on v0.22, int4_per_token_head only from the lines that have it, v0.13's seven for
// v0.13. A quantised KV cache holds more tokens than a 16-bit one.
func TestKVCacheDTypeChoicesFollowTheLine(t *testing.T) {
	t.Parallel()
	arch := mustArch(t, "llama-3.1-8b")
	sku, ok := hw.LookupSKU("h100-sxm")
	if !ok {
		t.Fatal("no h100-sxm")
	}
	tokens := map[string]int{}
	for _, tc := range []struct {
		line, dtype string
		ok          bool
	}{
		{"0.22", "nvfp4", true}, {"0.22", "int8_per_token_head", true}, {"0.22", "fp8_per_token_head", true},
		{"0.22", "turboquant_k8v4", true}, {"0.22", "int4_per_token_head", false},
		{"0.28", "int4_per_token_head", true}, {"0.28", "nvfp4_4over6", true}, {"0.28", "auto", true},
		{"0.13", "nvfp4", false}, {"0.13", "fp8", true},
	} {
		cfg, err := ConfigFromSettings(map[string]any{"vllm_version": tc.line, "kv_cache_dtype": tc.dtype, "max_model_len": int64(8192)}, 0)
		if err != nil {
			t.Fatalf("v%s %s: %v", tc.line, tc.dtype, err)
		}
		st, err := CheckStartup(arch, sku, cfg)
		var se *StartupError
		bad := errors.As(err, &se) && se.Class == ClassInvalidArgs && strings.Contains(se.Message, "invalid choice")
		if tc.ok == bad {
			t.Errorf("v%s --kv-cache-dtype %s: error %v, want accepted = %v", tc.line, tc.dtype, err, tc.ok)
		}
		if tc.ok && err == nil {
			tokens[tc.line+"/"+tc.dtype] = st.KVCacheTokens
		}
	}
	if tokens["0.28/int4_per_token_head"] <= tokens["0.28/auto"] || tokens["0.22/nvfp4"] == 0 {
		t.Errorf("KV tokens %v: want a 4-bit cache to hold more than a 16-bit one", tokens)
	}
}

// TestLongPrefillThresholdBoundFrom028: from v0.28 --long-prefill-token-threshold above
// max_model_len is refused; v0.22 takes it.
func TestLongPrefillThresholdBoundFrom028(t *testing.T) {
	t.Parallel()
	arch := mustArch(t, "llama-3.1-8b")
	sku, _ := hw.LookupSKU("h100-sxm")
	for _, tc := range []struct {
		line string
		bad  bool
	}{{"0.22", false}, {"0.28", true}} {
		cfg, err := ConfigFromSettings(map[string]any{"vllm_version": tc.line, "long_prefill_token_threshold": int64(9000), "max_model_len": int64(8192)}, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, err = CheckStartup(arch, sku, cfg)
		var se *StartupError
		got := errors.As(err, &se) && strings.Contains(se.Message, "cannot be greater than the max_model_len (8192)")
		if got != tc.bad {
			t.Errorf("v%s threshold 9000 > max_model_len 8192: %v, want refused = %v", tc.line, err, tc.bad)
		}
	}
}
