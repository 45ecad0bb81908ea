package plan

import (
	"strings"
	"testing"
)

func TestParseDisaggregation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in      string
		want    Disaggregation
		wantErr string
	}{
		{in: "none", want: Disaggregation{}},
		{in: "1p1d", want: Disaggregation{Prefill: 1, Decode: 1}},
		{in: "2p3d", want: Disaggregation{Prefill: 2, Decode: 3}},
		{in: "0p1d", wantErr: "from 1 to 64"},
		{in: "1p0d", wantErr: "from 1 to 64"},
		{in: "65p1d", wantErr: "from 1 to 64"},
		{in: "99999999999999999999p1d", wantErr: "from 1 to 64"},
		{in: "1P1D", wantErr: `"XpYd"`},
		{in: "", wantErr: `"none" or "XpYd"`},
		{in: "1p1d ", wantErr: `"none" or "XpYd"`},
		{in: "Nonе", wantErr: `"none" or "XpYd"`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseDisaggregation(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseDisaggregation(%q) = %v, %v; want an error saying %s", tc.in, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseDisaggregation(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
			if got.String() != tc.in {
				t.Errorf("%v.String() = %q, want %q", got, got.String(), tc.in)
			}
		})
	}
}

func FuzzParseDisaggregation(f *testing.F) {
	for _, s := range []string{"none", "1p1d", "2p1d", "0p0d", "64p64d", "1p", "p1d", "1p1d1", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDisaggregation(s)
		if err != nil {
			return
		}
		if d.Enabled() && (d.Prefill < 1 || d.Decode < 1 || d.Prefill > MaxDisaggInstances || d.Decode > MaxDisaggInstances) {
			t.Fatalf("%q parsed to %v, outside 1..%d", s, d, MaxDisaggInstances)
		}
		if again, err := ParseDisaggregation(d.String()); err != nil || again != d {
			t.Fatalf("%q -> %v does not round-trip: %v, %v", s, d, again, err)
		}
	})
}

// TestDisaggregatedConfigCountsEveryInstancesGPUs: X prefill instances of the prefill role's
// tensor_parallel_size (or the trial's) and Y decode instances of the decode role's.
func TestDisaggregatedConfigCountsEveryInstancesGPUs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg  Config
		want int
	}{
		{Config{"tensor_parallel_size": int64(2)}, 2},
		{Config{"tensor_parallel_size": int64(2), "disaggregation": "none"}, 2},
		{Config{"tensor_parallel_size": int64(2), "disaggregation": "1p1d"}, 4},
		{Config{"disaggregation": "2p1d"}, 3},
		{Config{"tensor_parallel_size": int64(1), "disaggregation": "1p2d", "decode_tensor_parallel_size": int64(2)}, 5},
		{Config{"disaggregation": "1p1d", "prefill_tensor_parallel_size": int64(4), "decode_tensor_parallel_size": int64(1), "pipeline_parallel_size": int64(2)}, 10},
	} {
		if got := tc.cfg.GPUs(); got != tc.want {
			t.Errorf("%v: %d GPUs, want %d", tc.cfg, got, tc.want)
		}
	}
	s := Config{"disaggregation": "1p1d", "prefill_tensor_parallel_size": int64(2), "sku": "h100-sxm", "max_num_seqs": int64(8)}.EngineSettings()
	if len(s) != 1 || s["max_num_seqs"] != int64(8) {
		t.Errorf("EngineSettings = %v, want only max_num_seqs: the deployment's knobs are no engine options", s)
	}
}

// TestDisaggregationOnOllamaIsRefused: Ollama has no KV connector to move a prefill's cache.
func TestDisaggregationOnOllamaIsRefused(t *testing.T) {
	t.Parallel()
	src := strings.Replace(minimal, `engine "vllm" {}`, `engine "ollama" {}`, 1)
	src = strings.Replace(src, `name = "m"`, "name = \"m\"\n  gguf = \"m.gguf\"", 1) + `knob "disaggregation" { values = ["none", "1p1d"] }` + "\n"
	_, err := loadString(t, src, LoadOptions{})
	if err == nil || !strings.Contains(strings.Join(summaries(t, err), "|"), "Disaggregation needs vLLM") {
		t.Fatalf("Load = %v, want \"Disaggregation needs vLLM\"", err)
	}
}
