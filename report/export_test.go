package report

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/frontier-llm/frontier/record"

	"github.com/google/go-cmp/cmp"
)

func TestExportFormatsMatchGolden(t *testing.T) {
	t.Parallel()
	rec := loadFixture(t, "quickstart.json")
	for _, tc := range []struct {
		name   string
		trial  int
		format string
	}{
		{"knee", 14, FormatVLLMArgs},
		{"knee", 14, FormatVLLMYAML},
		{"knee", 14, FormatDocker},
		{"knee", 14, FormatK8s},
		{"no-chunked-prefill", 9, FormatVLLMArgs},
		{"no-chunked-prefill", 9, FormatVLLMYAML},
	} {
		t.Run(tc.name+"."+tc.format, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			if err := Export(&buf, rec, rec.Trial(tc.trial), tc.format); err != nil {
				t.Fatal(err)
			}
			golden(t, "export-"+tc.name+"."+tc.format, buf.Bytes())
		})
	}
}

func TestServeArgsMapsKnobsToVLLMFlags(t *testing.T) {
	t.Parallel()
	rec := &record.Study{Study: "s", Engine: "vllm", Model: "org/model", MaxModelLen: 4096,
		Knobs: []string{"sku", "max_num_seqs", "gpu_memory_utilization", "enable_prefix_caching", "enforce_eager", "quantization", "kv_cache_dtype"}}
	for _, tc := range []struct {
		name   string
		config map[string]any
		want   []string
	}{
		{"numbers, booleans and strings",
			map[string]any{"max_num_seqs": 64.0, "gpu_memory_utilization": 0.92, "enable_prefix_caching": false, "enforce_eager": true, "quantization": "fp8", "kv_cache_dtype": "fp8"},
			[]string{"vllm", "serve", "org/model", "--max-num-seqs", "64", "--gpu-memory-utilization", "0.92", "--no-enable-prefix-caching", "--enforce-eager", "--quantization", "fp8", "--kv-cache-dtype", "fp8", "--max-model-len", "4096"}},
		{"quantization none passes no flag",
			map[string]any{"quantization": "none"},
			[]string{"vllm", "serve", "org/model", "--max-model-len", "4096"}},
		{"the sku knob says where to deploy and is no flag",
			map[string]any{"sku": "mi300x", "max_num_seqs": int64(64)},
			[]string{"vllm", "serve", "org/model", "--max-num-seqs", "64", "--max-model-len", "4096"}},
		{"max_model_len as a knob wins over the plan's",
			map[string]any{"max_model_len": int64(2048)},
			[]string{"vllm", "serve", "org/model"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := ServeArgs(rec, &record.Trial{Config: tc.config})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ServeArgs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestExportNeverWritesSecrets(t *testing.T) {
	t.Parallel()
	const token = "hf_abcdefghijklmnopqrstuvwxyz012345"
	rec := &record.Study{Study: "s", Engine: "vllm", Model: "org/model",
		Knobs:      []string{"max_num_seqs"},
		EngineArgs: []string{"--api-key", "sekrit-value-1", "--hf-token=" + token, "--enable-log-requests"},
		EngineEnv:  map[string]string{"HF_TOKEN": token, "MY_SERVICE_PASSWORD": "sekrit-value-2", "HF_HUB_OFFLINE": "1", "NOTE": "uses " + token}}
	tr := &record.Trial{Number: 3, State: record.StateComplete, Config: map[string]any{"max_num_seqs": 8.0}}
	for _, f := range ExportFormats() {
		t.Run(f, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			if err := Export(&buf, rec, tr, f); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			for _, s := range []string{token, "sekrit-value-1", "sekrit-value-2"} {
				if strings.Contains(out, s) {
					t.Errorf("%s export contains the secret %q:\n%s", f, s, out)
				}
			}
			if !strings.Contains(out, "--enable-log-requests") && !strings.Contains(out, "\nenable-log-requests: true\n") {
				t.Errorf("%s export lost the plan's engine argument:\n%s", f, out)
			}
		})
	}
}

func TestExportRefusesOllama(t *testing.T) {
	t.Parallel()
	rec := &record.Study{Study: "s", Engine: "ollama", Model: "m"}
	err := Export(&bytes.Buffer{}, rec, &record.Trial{}, FormatVLLMArgs)
	if !errors.Is(err, ErrUnsupportedEngine) {
		t.Errorf("Export of an ollama study: error %v, want ErrUnsupportedEngine", err)
	}
}

func TestShellQuote(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"plain/model-1.5", "plain/model-1.5"},
		{"", "''"},
		{"a b", "'a b'"},
		{"it's", `'it'\''s'`},
		{`{"k": 1}`, `'{"k": 1}'`},
		{"$(rm -rf /)", "'$(rm -rf /)'"},
	} {
		if got := shellQuote(tc.in); got != tc.want {
			t.Errorf("shellQuote(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
