package sim

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/frontier-llm/frontier/hw"
)

func TestConfigFromSettings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		settings map[string]any
		maxLen   int
		want     func(c *EngineConfig)
		wantErr  bool
	}{
		{"defaults", nil, 8192, func(c *EngineConfig) {}, false},
		{"knobs of every type", map[string]any{
			"max_num_seqs": int64(64), "max_num_batched_tokens": "8k", "gpu_memory_utilization": 0.85,
			"tensor_parallel_size": int64(2), "quantization": "fp8", "kv_cache_dtype": "fp8",
			"enable_chunked_prefill": false, "enforce_eager": "true", "sku": "h200",
		}, 8192, func(c *EngineConfig) {
			c.MaxNumSeqs, c.MaxNumBatchedTokens, c.GPUMemoryUtilization = 64, 8000, 0.85
			c.TensorParallelSize, c.Quantization, c.KVCacheDType = 2, "fp8", "fp8"
			c.EnableChunkedPrefill, c.EnforceEager, c.SKU = false, true, "h200"
			c.Given = []string{"enable_chunked_prefill", "enforce_eager", "gpu_memory_utilization", "kv_cache_dtype",
				"max_num_batched_tokens", "max_num_seqs", "quantization", "tensor_parallel_size"}
		}, false},
		{"dashes and binary suffix", map[string]any{"max-num-batched-tokens": "8K", "max-model-len": float64(4096)}, 8192,
			func(c *EngineConfig) {
				c.MaxNumBatchedTokens, c.MaxModelLen = 8192, 4096
				c.Given = []string{"max_model_len", "max_num_batched_tokens"}
			}, false},
		{"quantization none is no flag", map[string]any{"quantization": "none"}, 0, func(c *EngineConfig) {
			c.MaxModelLen, c.Given = 0, []string{"quantization"}
		}, false},
		{"unknown knobs are kept aside", map[string]any{"swap_space": int64(4), "disable_log_requests": true}, 8192,
			func(c *EngineConfig) { c.Ignored = []string{"disable_log_requests", "swap_space"} }, false},
		{"fractional int", map[string]any{"max_num_seqs": 1.5}, 8192, nil, true},
		{"bad bool", map[string]any{"enforce_eager": "maybe"}, 8192, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ConfigFromSettings(tt.settings, tt.maxLen)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("ConfigFromSettings(%v) = nil error, want one", tt.settings)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := DefaultConfig()
			want.MaxModelLen = 8192
			tt.want(&want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResolveDefaultsByGPU(t *testing.T) {
	t.Parallel()
	arch, _ := LookupArch("llama-3.1-8b")
	tests := []struct {
		name          string
		sku           string
		chunked       bool
		maxLen        int
		seqs, batched int
	}{
		{"large non-A100 GPU", "h100-sxm", true, 8192, 1024, 8192},
		{"A100", "a100-80gb", true, 8192, 256, 2048},
		{"small GPU", "l40s", true, 8192, 256, 2048},
		{"chunked prefill off raises the budget to max_model_len", "l40s", false, 16384, 256, 16384},
		{"short max_model_len caps the budget", "h100-sxm", true, 4, 1024, 4096},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sku, _ := hw.LookupSKU(tt.sku)
			c := DefaultConfig()
			c.EnableChunkedPrefill = tt.chunked
			c.MaxModelLen = tt.maxLen
			r := c.Resolve(arch, sku)
			if diff := cmp.Diff([2]int{tt.seqs, tt.batched}, [2]int{r.MaxNumSeqs, r.MaxNumBatchedTokens}); diff != "" {
				t.Errorf("max_num_seqs, max_num_batched_tokens (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseHumanInt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{"8192", 8192, false}, {"1k", 1000, false}, {"1K", 1024, false}, {"25.6k", 25600, false},
		{"2M", 2 << 20, false}, {"1.5K", 0, true}, {"", 0, true}, {"abc", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseHumanInt(tt.in)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("ParseHumanInt(%q) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func FuzzParseConfigJSON(f *testing.F) {
	f.Add([]byte(`{"num_hidden_layers":32,"hidden_size":4096,"num_attention_heads":32,"num_key_value_heads":8,"intermediate_size":14336,"vocab_size":128256,"max_position_embeddings":131072}`))
	f.Add([]byte(`{"text_config":{"num_hidden_layers":2,"hidden_size":64,"num_attention_heads":4,"intermediate_size":128,"vocab_size":100,"max_position_embeddings":512}}`))
	f.Add([]byte(`{"num_local_experts":8,"num_experts_per_tok":2,"quantization_config":{"quant_method":"fp8"}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := parseConfigJSON(data)
		if err != nil {
			return
		}
		if a.Layers <= 0 || a.Heads <= 0 || a.KVHeads <= 0 || a.Heads%a.KVHeads != 0 {
			t.Errorf("accepted an unusable architecture: %+v", a)
		}
	})
}
