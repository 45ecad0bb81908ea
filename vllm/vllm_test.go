package vllm

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func mustLookup(t *testing.T, v string) *Version {
	t.Helper()
	ver, err := Lookup(v)
	if err != nil {
		t.Fatal(err)
	}
	return ver
}

func TestLookupAcceptsVersionSpellings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"0.13", "0.13"}, {"v0.13.0", "0.13"}, {"0.22", "0.22"}, {"0.22.1", "0.22"},
		{"0.13.0+cu128", "0.13"}, {"V0.17.1", "0.17"}, {"0.22.0rc1", "0.22"}, {Current, Current},
	} {
		v, err := Lookup(tc.in)
		if err != nil {
			t.Errorf("Lookup(%q): %v", tc.in, err)
			continue
		}
		if v.Name != tc.want {
			t.Errorf("Lookup(%q).Name = %q, want %q", tc.in, v.Name, tc.want)
		}
	}
	for _, bad := range []string{"", "13", "x.y", "0.x", "0.2a", "1234567.1"} {
		if _, err := Lookup(bad); err == nil {
			t.Errorf("Lookup(%q) = nil error, want one", bad)
		}
	}
	// Any other version is usable, with a warning naming the line that stands in for it.
	for _, tc := range []struct{ in, want, warn string }{
		{"0.33.0", Current, "0.33.0 is newer than frontier's newest table, v" + Current + " (2026-08-14)"},
		{"1.0", Current, "is newer than"},
		{"0.30", Current, "is newer than"},
		{"0.9", "0.13", "0.9 is older than frontier's oldest table, v0.13"},
		{"0.22.3", "0.22", ""},
	} {
		v, err := Lookup(tc.in)
		if err != nil {
			t.Errorf("Lookup(%q): %v", tc.in, err)
			continue
		}
		if v.Name != tc.want || v.Asked != tc.in {
			t.Errorf("Lookup(%q) = line %q asked %q, want line %q", tc.in, v.Name, v.Asked, tc.want)
		}
		if tc.warn == "" && v.Warning != "" || !strings.Contains(v.Warning, tc.warn) {
			t.Errorf("Lookup(%q).Warning = %q, want it to say %q", tc.in, v.Warning, tc.warn)
		}
	}
	if got := Versions(); got[0] != "0.13" || got[len(got)-1] != Current {
		t.Errorf("Versions() = %v, want 0.13 ... %s", got, Current)
	}
}

func TestCheckExplainsMissingFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		version, flag string
		want          string // "" for nil; else a substring of the error
	}{
		{"0.13", "--disable-log-requests", ""},
		{"0.16", "disable_log_requests", ""},
		{"0.17", "--disable-log-requests", "removed in v0.17; did you mean --enable-log-requests?"},
		{"0.22", "--disable-log-requests", "removed in v0.17; did you mean --enable-log-requests?"},
		{"0.22", "--swap-space", "removed in v0.18"},
		{"0.17", "swap_space", ""},
		{"0.22", "--max-num-seqz", "did you mean --max-num-seqs?"},
		{"0.22", "--num-scheduler-steps", "removed in v0.11"},
		{"0.13", "--performance-mode", "added in v0.17"},
		{"0.22", "--performance-mode", ""},
		{"0.22", "max_num_seqs", ""},
		{"0.22", "-tp", ""},
		{"0.22", "--no-enable-prefix-caching", ""},
		{"0.22", "--no-disable-log-stats", "store_true switch"},
		{"0.22", "--frobnicate", "has no flag --frobnicate"},
	}
	for _, tc := range tests {
		err := mustLookup(t, tc.version).Check(tc.flag)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("v%s Check(%q) = %v, want nil", tc.version, tc.flag, err)
		case tc.want != "" && err == nil:
			t.Errorf("v%s Check(%q) = nil, want an error with %q", tc.version, tc.flag, tc.want)
		case tc.want != "" && !strings.Contains(err.Error(), tc.want):
			t.Errorf("v%s Check(%q) = %q, want it to contain %q", tc.version, tc.flag, err, tc.want)
		}
		var fe *FlagError
		if err != nil && !errors.As(err, &fe) {
			t.Errorf("v%s Check(%q) error is %T, want *FlagError", tc.version, tc.flag, err)
		}
	}
}

func TestFlagDescribesArgparse(t *testing.T) {
	t.Parallel()
	v := mustLookup(t, Current)
	for _, tc := range []struct {
		name string
		want Flag
	}{
		{"max_num_seqs", Flag{Name: "--max-num-seqs", Knob: "max_num_seqs", Type: Int}},
		{"--disable-log-stats", Flag{Name: "--disable-log-stats", Knob: "disable_log_stats", Kind: StoreTrue, Default: false}},
		{"-tp", Flag{Name: "--tensor-parallel-size", Knob: "tensor_parallel_size", Short: []string{"-tp"}, Type: Int, Default: int64(1)}},
		{"performance_mode", Flag{Name: "--performance-mode", Knob: "performance_mode", Type: String,
			Choices: []string{"balanced", "interactivity", "throughput"}, Default: "balanced", Since: "0.17"}},
	} {
		got, ok := v.Flag(tc.name)
		if !ok {
			t.Errorf("Flag(%q) not found", tc.name)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("Flag(%q) (-want +got):\n%s", tc.name, diff)
		}
	}
	if _, ok := v.Flag("--swap-space"); ok {
		t.Errorf("v%s has --swap-space; it was removed in v0.18", v.Name)
	}
}

func TestBoolArgsOnlyNegatesBooleanOptionalFlags(t *testing.T) {
	t.Parallel()
	v := mustLookup(t, Current)
	for _, tc := range []struct {
		name string
		val  bool
		want []string
	}{
		{"enable_prefix_caching", false, []string{"--no-enable-prefix-caching"}},
		{"enable_prefix_caching", true, []string{"--enable-prefix-caching"}},
		{"disable_log_stats", false, nil},
		{"disable_log_stats", true, []string{"--disable-log-stats"}},
		{"enforce_eager", false, []string{"--no-enforce-eager"}},
		{"some_future_flag", false, []string{"--no-some-future-flag"}},
	} {
		if diff := cmp.Diff(tc.want, v.BoolArgs(tc.name, tc.val)); diff != "" {
			t.Errorf("BoolArgs(%q, %v) (-want +got):\n%s", tc.name, tc.val, diff)
		}
	}
}

func TestDefaultsByVersionAndGPU(t *testing.T) {
	t.Parallel()
	v13, v22 := mustLookup(t, "0.13"), mustLookup(t, "0.22")
	for _, tc := range []struct {
		v    *Version
		knob string
		gpu  GPUClass
		want any
		ok   bool
	}{
		{v13, "gpu_memory_utilization", GPUUnknown, 0.9, true},
		{v22, "gpu_memory_utilization", GPUUnknown, 0.92, true},
		{mustLookup(t, "0.20"), "gpu_memory_utilization", GPUUnknown, 0.9, true},
		{mustLookup(t, "0.21"), "gpu_memory_utilization", GPUUnknown, 0.92, true},
		{v13, "async_scheduling", GPUUnknown, false, true},
		{v22, "async_scheduling", GPUUnknown, true, true},
		{v22, "max_num_seqs", GPULarge, int64(1024), true},
		{v22, "max_num_batched_tokens", GPULarge, int64(8192), true},
		{v22, "max_num_seqs", GPUSmall, int64(256), true},
		{v22, "max_num_batched_tokens", GPUSmall, int64(2048), true},
		{v22, "max_num_seqs", GPUUnknown, nil, false},
		{v22, "max_model_len", GPULarge, nil, false},
		{v22, "quantization", GPULarge, "none", true},
		{v22, "kv_cache_dtype", GPULarge, "auto", true},
		{v22, "enable_chunked_prefill", GPULarge, true, true},
		{v22, "block_size", GPULarge, int64(16), true},
		{v13, "swap_space", GPULarge, 4.0, true},
		{v22, "swap_space", GPULarge, nil, false},
		{v22, "optimization_level", GPULarge, int64(2), true},
	} {
		got, ok := tc.v.Default(tc.knob, tc.gpu)
		if ok != tc.ok || !cmp.Equal(got, tc.want) {
			t.Errorf("v%s Default(%q, %v) = %v, %v; want %v, %v", tc.v.Name, tc.knob, tc.gpu, got, ok, tc.want, tc.ok)
		}
	}
	if v13.GraphsInMemoryBudget() || !v22.GraphsInMemoryBudget() {
		t.Errorf("GraphsInMemoryBudget: v0.13 %v, v0.22 %v; want false, true", v13.GraphsInMemoryBudget(), v22.GraphsInMemoryBudget())
	}
	if tok, seqs, ok := v22.BatchDefaults(GPULarge, APIServer, "throughput"); !ok || tok != 16384 || seqs != 2048 {
		t.Errorf("v0.22 throughput batch defaults = %d, %d, %v; want 16384, 2048, true", tok, seqs, ok)
	}
	if _, _, ok := v13.BatchDefaults(GPULarge, APIServer, "throughput"); ok {
		t.Errorf("v0.13 has no --performance-mode, yet BatchDefaults took throughput")
	}
	for _, tc := range []struct {
		name string
		mem  float64
		want GPUClass
	}{{"NVIDIA H100 80GB HBM3", 80, GPULarge}, {"NVIDIA A100-SXM4-80GB", 80, GPUSmall}, {"l40s", 48, GPUSmall}, {"x", 0, GPUUnknown}} {
		if got := ClassifyGPU(tc.name, tc.mem); got != tc.want {
			t.Errorf("ClassifyGPU(%q, %v) = %v, want %v", tc.name, tc.mem, got, tc.want)
		}
	}
}

func TestParseArgsAcceptsWhatVLLMAccepts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		version string
		argv    []string
		want    map[string]any
	}{
		{"positional model and values", "0.22", []string{"m", "--max-num-seqs", "8", "--max_num_batched_tokens=8k", "-tp", "2"},
			map[string]any{"max_num_seqs": int64(8), "max_num_batched_tokens": int64(8000), "tensor_parallel_size": int64(2)}},
		{"booleans", "0.22", []string{"m", "--no-enable-prefix-caching", "--enforce-eager", "--disable-log-stats"},
			map[string]any{"enable_prefix_caching": false, "enforce_eager": true, "disable_log_stats": true}},
		{"-O 3", "0.22", []string{"m", "-O", "3"}, map[string]any{"optimization_level": int64(3)}},
		{"-O3", "0.22", []string{"m", "-O3"}, map[string]any{"optimization_level": int64(3)}},
		{"-O.x dotted compilation config", "0.22", []string{"m", "-O.cudagraph_mode=FULL"},
			map[string]any{"compilation_config": map[string]any{"cudagraph_mode": "FULL"}}},
		{"-cc json then dotted", "0.22", []string{"m", "-cc", `{"mode": 3}`, "--compilation-config.cudagraph_capture_sizes+=1,2"},
			map[string]any{"compilation_config": map[string]any{"mode": float64(3), "cudagraph_capture_sizes": []any{float64(1), float64(2)}}}},
		{"max-model-len auto", "0.22", []string{"m", "--max-model-len", "auto"}, map[string]any{"max_model_len": int64(-1)}},
		{"max-model-len -1", "0.22", []string{"m", "--max-model-len", "-1"}, map[string]any{"max_model_len": int64(-1)}},
		{"max-model-len 1k", "0.13", []string{"m", "--max-model-len", "1k"}, map[string]any{"max_model_len": int64(1000)}},
		{"performance mode", "0.22", []string{"m", "--performance-mode", "throughput"}, map[string]any{"performance_mode": "throughput"}},
		{"served names", "0.22", []string{"m", "--served-model-name", "a", "b", "--port", "9000"},
			map[string]any{"served_model_name": []string{"a", "b"}, "port": int64(9000)}},
		{"disable-log-requests on v0.13", "0.13", []string{"m", "--disable-log-requests"}, map[string]any{"disable_log_requests": true}},
		{"swap space on v0.17", "0.17", []string{"m", "--swap-space", "8"}, map[string]any{"swap_space": 8.0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := mustLookup(t, tc.version).ParseArgs(tc.argv)
			if err != nil {
				t.Fatalf("ParseArgs(%q): %v", tc.argv, err)
			}
			if got.Model != "m" {
				t.Errorf("Model = %q, want m", got.Model)
			}
			if diff := cmp.Diff(tc.want, got.Values); diff != "" {
				t.Errorf("ParseArgs(%q) values (-want +got):\n%s", tc.argv, diff)
			}
		})
	}
}

func TestParseArgsRefusesAsArgparseDoes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		version string
		argv    []string
		want    string // the whole error line
	}{
		{"removed flag", "0.22", []string{"m", "--disable-log-requests"}, "vllm: error: unrecognized arguments: --disable-log-requests"},
		{"typo with its value", "0.22", []string{"m", "--max-num-seqz", "8"}, "vllm: error: unrecognized arguments: --max-num-seqz 8"},
		{"v0.10 flag", "0.13", []string{"m", "--num-scheduler-steps", "8"}, "vllm: error: unrecognized arguments: --num-scheduler-steps 8"},
		{"swap space on v0.22", "0.22", []string{"m", "--swap-space", "4"}, "vllm: error: unrecognized arguments: --swap-space 4"},
		{"no- of store_true", "0.22", []string{"m", "--no-disable-log-stats"}, "vllm: error: unrecognized arguments: --no-disable-log-stats"},
		{"bad int", "0.22", []string{"m", "--max-num-seqs", "8k"}, "vllm serve: error: argument --max-num-seqs: invalid int value: '8k'"},
		{"bad short int", "0.22", []string{"m", "-tp", "two"}, "vllm serve: error: argument --tensor-parallel-size/-tp: invalid int value: 'two'"},
		{"bad choice", "0.22", []string{"m", "--kv-cache-dtype", "fp4"}, "vllm serve: error: argument --kv-cache-dtype: invalid choice: 'fp4'"},
		{"bad -O", "0.22", []string{"m", "-O7"}, "vllm serve: error: argument --optimization-level/-O: invalid choice: 7 (choose from 0, 1, 2, 3)"},
		{"auto before v0.14", "0.13", []string{"m", "--max-model-len", "auto"}, "vllm serve: error: argument --max-model-len: invalid human_readable_int value: 'auto'"},
		{"bool with value", "0.22", []string{"m", "--enforce-eager=false"}, "vllm serve: error: argument --enforce-eager/--no-enforce-eager: ignored explicit argument 'false'"},
		{"missing value", "0.22", []string{"m", "--max-num-seqs"}, "vllm serve: error: argument --max-num-seqs: expected one argument"},
		{"performance mode on v0.13", "0.13", []string{"m", "--performance-mode", "throughput"}, "vllm: error: unrecognized arguments: --performance-mode throughput"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := mustLookup(t, tc.version).ParseArgs(tc.argv)
			var ae *ArgError
			if !errors.As(err, &ae) {
				t.Fatalf("ParseArgs(%q) = %v, want an *ArgError", tc.argv, err)
			}
			if !strings.HasPrefix(ae.Error(), tc.want) {
				t.Errorf("ParseArgs(%q) error\n got %q\nwant %q", tc.argv, ae.Error(), tc.want)
			}
			if !strings.HasPrefix(ae.Stderr(), "usage: vllm") || ae.ExitCode() != 2 {
				t.Errorf("Stderr() = %q, ExitCode() = %d; want a usage line first and 2", ae.Stderr(), ae.ExitCode())
			}
		})
	}
}

func FuzzParseArgs(f *testing.F) {
	for _, s := range []string{"m --max-num-seqs 8", "m -O3 -cc.mode=3", "--served-model-name a b", "m --max-model-len auto", "-O", "m --hf-token"} {
		f.Add(s)
	}
	v, err := Lookup(Current)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, line string) {
		a, err := v.ParseArgs(strings.Fields(line))
		if err == nil && a == nil {
			t.Fatal("nil Args without an error")
		}
		var ae *ArgError
		if err != nil && !errors.As(err, &ae) {
			t.Fatalf("error %T, want *ArgError", err)
		}
	})
}

// TestHugeGPUBatchDefaults: from v0.28 (#51726) a GPU of 160 GiB or more defaults to 16384
// batched tokens in the API server; before, it is a large GPU (8192).
func TestHugeGPUBatchDefaults(t *testing.T) {
	t.Parallel()
	if c := ClassifyGPU("NVIDIA B200", 178); c != GPUHuge {
		t.Errorf("B200 178 GiB = %v, want GPUHuge", c)
	}
	if c := ClassifyGPU("NVIDIA H200", 139.8); c != GPULarge {
		t.Errorf("H200 = %v, want GPULarge", c)
	}
	if tok, seqs, ok := mustLookup(t, "0.28").BatchDefaults(GPUHuge, APIServer, ""); !ok || tok != 16384 || seqs != 1024 {
		t.Errorf("v0.28 huge GPU = %d, %d, %v, want 16384, 1024", tok, seqs, ok)
	}
	if tok, _, ok := mustLookup(t, "0.22").BatchDefaults(GPUHuge, APIServer, ""); !ok || tok != 8192 {
		t.Errorf("v0.22 huge GPU = %d, %v, want 8192", tok, ok)
	}
	if tok, _, ok := mustLookup(t, "0.28").BatchDefaults(GPUHuge, APIServer, "throughput"); !ok || tok != 32768 {
		t.Errorf("v0.28 huge GPU throughput = %d, %v, want 32768", tok, ok)
	}
}
