package launcher

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/frontier-llm/frontier/hw"
)

func TestVLLMFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		settings []Setting
		want     []string
	}{
		{"int", []Setting{{"max_num_seqs", int64(256)}}, []string{"--max-num-seqs", "256"}},
		{"float without exponent", []Setting{{"gpu_memory_utilization", 0.9}}, []string{"--gpu-memory-utilization", "0.9"}},
		{"large float", []Setting{{"kv_cache_memory_bytes", 2e10}}, []string{"--kv-cache-memory-bytes", "20000000000"}},
		{"bool true", []Setting{{"enable_chunked_prefill", true}}, []string{"--enable-chunked-prefill"}},
		{"bool false", []Setting{{"enable_prefix_caching", false}}, []string{"--no-enable-prefix-caching"}},
		{"quantization none passes nothing", []Setting{{"quantization", "none"}}, nil},
		{"quantization fp8", []Setting{{"quantization", "fp8"}}, []string{"--quantization", "fp8"}},
		{"list", []Setting{{"cudagraph_capture_sizes", []any{int64(1), int64(2)}}}, []string{"--cudagraph-capture-sizes", "1", "2"}},
		{"map as JSON", []Setting{{"compilation_config", map[string]any{"cudagraph_mode": "NONE"}}}, []string{"--compilation-config", `{"cudagraph_mode":"NONE"}`}},
		{"declaration order kept", []Setting{{"b_b", int64(1)}, {"a_a", "x"}}, []string{"--b-b", "1", "--a-a", "x"}},
		{"sku for the simulator", []Setting{{"sku", "l4"}}, []string{"--sku", "l4"}},
		{"kv offloading", []Setting{{"kv_offloading_size", 16.0}, {"kv_offloading_backend", "native"}},
			[]string{"--kv-offloading-size", "16", "--kv-offloading-backend", "native"}},
		{"kv offloading size 0 is none, the backend with it", []Setting{{"kv_offloading_backend", "lmcache"}, {"kv_offloading_size", int64(0)}, {"max_num_seqs", int64(8)}},
			[]string{"--max-num-seqs", "8"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := VLLMFlags(nil, tc.settings)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("VLLMFlags (-want +got):\n%s", diff)
			}
		})
	}
}

func TestVLLMFlagsRejectsBadNames(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"", "--port", "a b", "x;rm"} {
		if _, err := VLLMFlags(nil, []Setting{{name, int64(1)}}); err == nil {
			t.Errorf("VLLMFlags accepted knob name %q", name)
		}
	}
	if _, err := VLLMFlags(nil, []Setting{{"x", struct{}{}}}); err == nil {
		t.Error("VLLMFlags accepted a struct value")
	}
}

func TestArgv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		kind string
		spec Spec
		want []string
	}{
		{
			name: "vllm default command",
			kind: KindVLLM,
			spec: Spec{Model: "meta-llama/Llama-3.1-8B-Instruct", MaxModelLen: 8192,
				Args:     []string{"--enable-log-requests"},
				Settings: []Setting{{"max_num_seqs", int64(64)}, {"enable_chunked_prefill", false}}},
			want: []string{"vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct", "--enable-log-requests",
				"--max-num-seqs", "64", "--no-enable-chunked-prefill", "--max-model-len", "8192",
				"--served-model-name", "meta-llama/Llama-3.1-8B-Instruct", "--host", "127.0.0.1", "--port", "41000"},
		},
		{
			name: "false booleans as the version's argparse takes them",
			kind: KindVLLM,
			spec: Spec{Model: "m", Version: "0.22",
				Settings: []Setting{{"disable_log_stats", false}, {"enable_prefix_caching", false}, {"enforce_eager", true}}},
			want: []string{"vllm", "serve", "m", "--no-enable-prefix-caching", "--enforce-eager",
				"--served-model-name", "m", "--host", "127.0.0.1", "--port", "41000"},
		},
		{
			name: "a vLLM-compatible server that takes --model and no --host",
			kind: KindVLLM,
			spec: Spec{Command: []string{"llm-d-inference-sim"}, Model: "m", ModelAsFlag: true, NoHostFlag: true,
				Args: []string{"--mode", "random"}},
			want: []string{"llm-d-inference-sim", "--model", "m", "--mode", "random",
				"--served-model-name", "m", "--port", "41000"},
		},
		{
			name: "a max_model_len knob replaces the model's",
			kind: KindVLLM,
			spec: Spec{Command: []string{"/opt/vllm/bin/vllm", "serve"}, Model: "m", MaxModelLen: 8192,
				Settings: []Setting{{"max_model_len", int64(4096)}}},
			want: []string{"/opt/vllm/bin/vllm", "serve", "m", "--max-model-len", "4096",
				"--served-model-name", "m", "--host", "127.0.0.1", "--port", "41000"},
		},
		{
			name: "sim adds sku and architecture",
			kind: KindSim,
			spec: Spec{Model: "m", SKU: "l4", Architecture: "llama-3.1-70b", MaxModelLen: 4096},
			want: []string{"/bin/frontier", "sim", "serve", "m", "--sku", "l4", "--architecture", "llama-3.1-70b",
				"--max-model-len", "4096", "--served-model-name", "m", "--host", "127.0.0.1", "--port", "41000"},
		},
		{
			name: "sim with a config.json instead of a catalog architecture",
			kind: KindSim,
			spec: Spec{Model: "m", SKU: "l4", ConfigJSON: "/models/m/config.json"},
			want: []string{"/bin/frontier", "sim", "serve", "m", "--sku", "l4", "--architecture", "/models/m/config.json",
				"--served-model-name", "m", "--host", "127.0.0.1", "--port", "41000"},
		},
		{
			name: "sim with an sku knob",
			kind: KindSim,
			spec: Spec{Model: "m", SKU: "l4", Settings: []Setting{{"sku", "h100-sxm"}}},
			want: []string{"/bin/frontier", "sim", "serve", "m", "--sku", "h100-sxm",
				"--served-model-name", "m", "--host", "127.0.0.1", "--port", "41000"},
		},
		{
			name: "a prefill instance from v0.28 is the NixlConnector's kv_producer",
			kind: KindVLLM,
			spec: Spec{Model: "m", Version: "0.28", Args: []string{"--enable-log-requests"}, Role: RolePrefill,
				Settings: []Setting{{"max_num_seqs", int64(8)}}},
			want: []string{"vllm", "serve", "m", "--enable-log-requests", "--kv-transfer-config", `{"kv_connector":"NixlConnector","kv_role":"kv_producer"}`,
				"--max-num-seqs", "8", "--served-model-name", "m", "--host", "127.0.0.1", "--port", "41000"},
		},
		{
			name: "a decode instance from v0.28 is the NixlConnector's kv_consumer",
			kind: KindSim,
			spec: Spec{Model: "m", SKU: "l4", Role: RoleDecode},
			want: []string{"/bin/frontier", "sim", "serve", "m", "--sku", "l4", "--kv-transfer-config", `{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}`,
				"--served-model-name", "m", "--host", "127.0.0.1", "--port", "41000"},
		},
		{
			name: "before v0.28 both roles are kv_both",
			kind: KindVLLM,
			spec: Spec{Model: "m", Version: "0.22", Role: RoleDecode},
			want: []string{"vllm", "serve", "m", "--kv-transfer-config", `{"kv_connector":"NixlConnector","kv_role":"kv_both"}`,
				"--served-model-name", "m", "--host", "127.0.0.1", "--port", "41000"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newOpenAIEngine(tc.kind, Options{FrontierBinary: "/bin/frontier"})
			got, err := e.Argv(tc.spec, 41000)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Argv (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEnvSetsVisibleDevicesFromTheSlot(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		spec Spec
		want map[string]string
	}{
		{"no slot", Spec{Env: map[string]string{"HF_HUB_OFFLINE": "1"}}, map[string]string{"HF_HUB_OFFLINE": "1"}},
		{"two GPUs", Spec{GPUs: []hw.GPU{{Index: 2}, {Index: 3}}},
			map[string]string{"CUDA_VISIBLE_DEVICES": "2,3", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}},
		{"the slot wins over the plan", Spec{Env: map[string]string{"CUDA_VISIBLE_DEVICES": "0", "CUDA_DEVICE_ORDER": "FASTEST_FIRST"},
			GPUs: []hw.GPU{{Index: 1}}},
			map[string]string{"CUDA_VISIBLE_DEVICES": "1", "CUDA_DEVICE_ORDER": "FASTEST_FIRST"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, Env(tc.spec)); diff != "" {
				t.Errorf("Env (-want +got):\n%s", diff)
			}
		})
	}
}

func TestShellQuote(t *testing.T) {
	t.Parallel()
	got := shellQuote([]string{"vllm", "serve", "org/m", "--compilation-config", `{"a": 1}`, "it's", ""})
	want := `vllm serve org/m --compilation-config '{"a": 1}' 'it'\''s' ''`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("shellQuote (-want +got):\n%s", diff)
	}
}
