package vllm

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckValue(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		line, flag string
		value      any
		want       string // "" for a value the line takes
		suggest    string
	}{
		{"0.28", "kv_offloading_backend", "native", "", ""},
		{"0.28", "kv_offloading_backend", "", "argument --kv-offloading-backend: invalid choice: '' (choose from 'native', 'lmcache')", ""},
		{"0.28", "kv_cache_dtype", "fp-8", "invalid choice: 'fp-8'", "fp8"},
		{"0.13", "kv_cache_dtype", "nvfp4", "invalid choice: 'nvfp4'", ""},
		{"0.28", "kv_cache_dtype", "nvfp4", "", ""},
		{"0.13", "block_size", int64(24), "invalid choice: 24 (choose from 1, 8, 16, 32, 64, 128, 256)", ""},
		{"0.28", "block_size", int64(24), "", ""},
		{"0.28", "max_num_seqs", 0.5, "invalid int value: '0.5'", ""},
		{"0.28", "max_num_seqs", int64(256), "", ""},
		{"0.28", "max_num_batched_tokens", "8k", "", ""},
		{"0.28", "max_model_len", "auto", "", ""},
		{"0.13", "max_model_len", "auto", "invalid human_readable_int value: 'auto'", ""},
		{"0.28", "gpu_memory_utilization", int64(1), "", ""},
		{"0.28", "enforce_eager", "yes", "--enforce-eager is a switch (BooleanOptionalAction): its values are true and false, not \"yes\"", ""},
		{"0.28", "enforce_eager", false, "", ""},
		{"0.28", "disable_log_stats", true, "", ""},
		{"0.28", "kv_cache_dtype", true, "--kv-cache-dtype takes a value (str), not true or false", ""},
		{"0.28", "hf_token", true, "", ""}, // nargs "?": the flag alone
		{"0.28", "quantization", "fp8", "", ""},
		{"0.28", "quantization", "None", "", ""},
		{"0.28", "quantization", "FP8", "'FP8' is not a value of --quantization", "fp8"},
		{"0.28", "quantization", "hqq", "'hqq' is not a value of --quantization", ""},
		{"0.13", "quantization", "hqq", "", ""},
		{"0.13", "quantization", "online", "'online' is not a value of --quantization", ""},
		{"0.20", "quantization", "online", "", ""}, // a derived line takes the methods of both neighbours
		{"0.20", "quantization", "hqq", "", ""},
		{"0.28", "mamba_cache_dtype", "fp8", "invalid choice: 'fp8'", ""},
		{"0.13", "mamba_cache_dtype", "fp8", "", ""}, // the choices were not read before v0.22
		{"0.28", "max_num_seq", int64(8), "vLLM v0.28 has no flag --max-num-seq; did you mean --max-num-seqs?", ""},
	} {
		v, err := Lookup(tc.line)
		if err != nil {
			t.Fatal(err)
		}
		err = v.CheckValue(tc.flag, tc.value)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("v%s %s = %v: %v, want it taken", tc.line, tc.flag, tc.value, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("v%s %s = %v: %v, want %q", tc.line, tc.flag, tc.value, err, tc.want)
		}
		var ve *ValueError
		if errors.As(err, &ve) && ve.Suggest != tc.suggest {
			t.Errorf("v%s %s = %v: suggests %q, want %q", tc.line, tc.flag, tc.value, ve.Suggest, tc.suggest)
		}
	}
}

func TestNearestFlags(t *testing.T) {
	t.Parallel()
	v, err := Lookup("0.28")
	if err != nil {
		t.Fatal(err)
	}
	near := v.Nearest("max_num_seq", 3)
	if len(near) == 0 || near[0].Name != "--max-num-seqs" || near[0].Knob != "max_num_seqs" {
		t.Errorf("Nearest(max_num_seq) = %v, want --max-num-seqs first", near)
	}
	if near := v.Nearest("frobnicate", 3); len(near) != 0 {
		t.Errorf("Nearest(frobnicate) = %v, want none", near)
	}
	if near := v.Nearest("--max-num-seqs", 3); len(near) > 0 && near[0].Name == "--max-num-seqs" {
		t.Errorf("Nearest offers the flag itself: %v", near)
	}
}
