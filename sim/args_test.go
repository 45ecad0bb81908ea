package sim

import (
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	engines "github.com/frontier-llm/frontier/engine"
	"github.com/frontier-llm/frontier/hw"
	"github.com/frontier-llm/frontier/vllm"
)

func TestParseServeArgs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		want    ServeArgs
		wantErr bool
	}{
		{"positional model and knobs in every spelling", []string{"meta-llama/Llama-3.1-8B", "--sku", "h100-sxm", "--max-num-seqs", "64",
			"--max_num_batched_tokens=8k", "--no-enable-prefix-caching", "--enforce-eager", "-tp", "2", "--port", "9000"},
			ServeArgs{Model: "meta-llama/Llama-3.1-8B", ServedModelName: "meta-llama/Llama-3.1-8B", SKU: "h100-sxm", Port: 9000,
				VLLMVersion: vllm.Current, Settings: map[string]any{"max_num_seqs": int64(64), "max_num_batched_tokens": int64(8000),
					"enable_prefix_caching": false, "enforce_eager": true, "tensor_parallel_size": int64(2)}}, false},
		{"other vLLM flags of the emulated version are accepted", []string{"--vllm-version", "v0.13.0", "--model", "m", "--disable-log-requests",
			"--swap-space", "4", "--trust-remote-code", "-O3", "--served-model-name", "a", "b", "--host", "127.0.0.1"},
			ServeArgs{Model: "m", ServedModelName: "a", Host: "127.0.0.1", Port: 8000, Settings: map[string]any{}, VLLMVersion: "0.13",
				Other: []string{"--disable-log-requests", "--swap-space", "4", "--trust-remote-code", "--optimization-level", "3"}}, false},
		{"current flags", []string{"m", "--max-model-len", "auto", "--performance-mode", "throughput", "-O", "3"},
			ServeArgs{Model: "m", ServedModelName: "m", Port: 8000, VLLMVersion: vllm.Current,
				Settings: map[string]any{"max_model_len": int64(-1), "performance_mode": "throughput"}, Other: []string{"--optimization-level", "3"}}, false},
		{"removed flag on the current line", []string{"m", "--disable-log-requests"}, ServeArgs{}, true},
		{"typo", []string{"m", "--max-num-seqz", "8"}, ServeArgs{}, true},
		{"malformed version", []string{"m", "--vllm-version", "0.x"}, ServeArgs{}, true},
		{"faults", []string{"m", "--fault-crash-after", "3", "--fault-slow-start=2s", "--fault-error-burst", "429:1:2,500:10:1",
			"--fault-malformed-stream", "0.5", "--fault-stall-after", "4", "--fault-hang-startup", "--fault-startup-oom"},
			ServeArgs{Model: "m", ServedModelName: "m", Port: 8000, Settings: map[string]any{}, VLLMVersion: vllm.Current,
				Faults: Faults{CrashAfter: 3, SlowStart: 2 * time.Second, ErrorBursts: []ErrorBurst{{429, 1, 2}, {500, 10, 1}},
					MalformedStream: 0.5, StallAfter: 4, HangStartup: true, StartupOOM: true}}, false},
		{"a port to bind instead of --port", []string{"m", "--port", "9000", "--fault-bind-port", "9001"},
			ServeArgs{Model: "m", ServedModelName: "m", Port: 9000, Settings: map[string]any{}, VLLMVersion: vllm.Current, Faults: Faults{BindPort: 9001}}, false},
		{"bad bind port", []string{"m", "--fault-bind-port", "0"}, ServeArgs{}, true},
		{"no model", []string{"--sku", "h100-sxm"}, ServeArgs{}, true},
		{"two models", []string{"a", "b"}, ServeArgs{}, true},
		{"missing value", []string{"m", "--max-num-seqs"}, ServeArgs{}, true},
		{"bad port", []string{"m", "--port", "http"}, ServeArgs{}, true},
		{"bad burst", []string{"m", "--fault-error-burst", "429:0:1"}, ServeArgs{}, true},
		{"bad fraction", []string{"m", "--fault-malformed-stream", "2"}, ServeArgs{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseServeArgs(tt.args)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("ParseServeArgs(%q) = %+v, want an error", tt.args, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseServeArgs(%q) (-want +got):\n%s", tt.args, diff)
			}
		})
	}
}

func FuzzParseServeArgs(f *testing.F) {
	f.Add("m --sku h100-sxm --max-num-seqs 64 --no-enable-prefix-caching")
	f.Add("--model m --max_num_batched_tokens=8K -tp 2 --fault-error-burst 429:1:2")
	f.Add("m --served-model-name a b --swap-space 4 -O3")
	f.Add("m --served-model-name=a b --max-num-seqs 6_4")
	f.Add("m --max-num-seqs _64_ --gpu-memory-utilization nan")
	f.Add("m --max-num-seqs 9223372036854775807 --block-size 0 --stream-interval 0")
	f.Add("m --num-gpu-blocks-override 0 --kv-cache-memory-bytes -5 --gpu-memory-utilization 1e400")
	f.Add("m -q FP8 --max-num-batched-tokens 8__192 --long-prefill-token-threshold -5")
	arch, _ := LookupArch("llama-3.1-8b")
	sku, _ := hw.LookupSKU("h100-sxm")
	f.Fuzz(func(t *testing.T, line string) {
		a, err := ParseServeArgs(splitFields(line))
		if err != nil {
			return
		}
		if a.Model == "" || a.ServedModelName == "" {
			t.Errorf("accepted %q without a model: %+v", line, a)
		}
		// Whatever parses must either configure or be refused with an error, never panic,
		// and a configuration either starts or is refused with a class.
		cfg, err := ConfigFromSettings(a.Settings, 0)
		if err != nil {
			return
		}
		st, err := CheckStartup(arch, sku, cfg)
		var se *StartupError
		switch {
		case errors.As(err, &se):
			if se.Class == "" || se.Message == "" {
				t.Errorf("%q: refused without a class or message: %+v", line, se)
			}
		case err == nil && (st.Config.MaxNumSeqs < 1 || st.Config.MaxNumBatchedTokens < 1 || st.Config.BlockSize < 1 || st.Config.StreamInterval < 1):
			t.Errorf("%q: started with values vLLM refuses: %+v", line, st.Config)
		}
	})
}

func splitFields(s string) []string {
	var out []string
	cur := []rune{}
	for _, r := range s {
		if r == ' ' {
			if len(cur) > 0 {
				out = append(out, string(cur))
				cur = cur[:0]
			}
			continue
		}
		cur = append(cur, r)
	}
	if len(cur) > 0 {
		out = append(out, string(cur))
	}
	return out
}

// TestParseServeArgsTakesAnyVersion: a release newer than the newest table is emulated as
// that table's line, with a warning for the log; v0.22 takes both per-token-head KV dtypes of
// its commit and refuses --disable-frontend-multiprocessing, removed before it.
func TestParseServeArgsTakesAnyVersion(t *testing.T) {
	t.Parallel()
	a, err := ParseServeArgs([]string{"m", "--vllm-version", "0.33.0", "--max-num-scheduled-tokens", "4096", "--grpc"})
	if err != nil {
		t.Fatal(err)
	}
	if a.VLLMVersion != vllm.Current || a.VersionWarning == "" {
		t.Errorf("--vllm-version 0.33.0 = line %q warning %q, want %s and a warning", a.VLLMVersion, a.VersionWarning, vllm.Current)
	}
	if _, err := ParseServeArgs([]string{"m", "--vllm-version", "0.22", "--kv-cache-dtype", "int8_per_token_head"}); err != nil {
		t.Errorf("v0.22 --kv-cache-dtype int8_per_token_head: %v", err)
	}
	if _, err := ParseServeArgs([]string{"m", "--vllm-version", "0.22", "--disable-frontend-multiprocessing"}); err == nil {
		t.Errorf("v0.22 took --disable-frontend-multiprocessing, removed in v0.19")
	}
}

// TestOwnFlagsAreDescribed: the plan checks a sim engine's args against vLLM's flags and the
// simulator's own, which package engine lists for it; the two lists must agree.
func TestOwnFlagsAreDescribed(t *testing.T) {
	t.Parallel()
	described := engines.MustLookup(engines.Sim).OwnFlags
	if !maps.Equal(described, ownFlags) {
		t.Errorf("engine.Sim's OwnFlags %v, want the simulator's own flags %v", described, ownFlags)
	}
}
