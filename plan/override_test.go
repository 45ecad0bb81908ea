package plan

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// overridePlan has an integer knob, a float range, a categorical knob and a knob with one
// value.
const overridePlan = `
model {
  name = "m"
}
engine "vllm" {}
knob "max_num_seqs" { values = [8, 16, 32] }
knob "gpu_memory_utilization" {
  min  = 0.8
  max  = 0.9
  step = 0.05
}
knob "kv_cache_dtype" { values = ["auto", "fp8"] }
knob "block_size" { values = [16] }
workload "chat" {
  requests      = 10
  input_tokens  = fixed(100)
  output_tokens = fixed(10)
  arrival       = poisson(1)
}
objective "throughput" {
  maximize = metric.total.output_token_throughput
}
`

func TestParseKnobOverridesTypesValuesByTheirKnob(t *testing.T) {
	t.Parallel()
	p := mustLoad(t, overridePlan, LoadOptions{})
	tests := []struct {
		name     string
		settings []string
		want     Config
		wantErr  string
	}{
		{name: "integer knob", settings: []string{"max_num_seqs=16"}, want: Config{"max_num_seqs": int64(16)}},
		{name: "float knob", settings: []string{"gpu_memory_utilization = 0.85"}, want: Config{"gpu_memory_utilization": 0.85}},
		{name: "categorical knob", settings: []string{"kv_cache_dtype=fp8"}, want: Config{"kv_cache_dtype": "fp8"}},
		{
			name:     "options that are no knob read as what they look like",
			settings: []string{"max_model_len=4096", "cpu_offload_gb=0.5", "enforce_eager=true", "dtype=half"},
			want:     Config{"max_model_len": int64(4096), "cpu_offload_gb": 0.5, "enforce_eager": true, "dtype": "half"},
		},
		{name: "the last setting of a knob wins", settings: []string{"max_num_seqs=8", "max_num_seqs=32"}, want: Config{"max_num_seqs": int64(32)}},
		{name: "no equals sign", settings: []string{"max_num_seqs"}, wantErr: `--knob "max_num_seqs": want NAME=VALUE`},
		{name: "no name", settings: []string{"=3"}, wantErr: "want NAME=VALUE"},
		{name: "not a whole number", settings: []string{"max_num_seqs=lots"}, wantErr: `--knob max_num_seqs: want a whole number, got "lots"`},
		{name: "not a number", settings: []string{"gpu_memory_utilization=high"}, wantErr: `want a number, got "high"`},
		{name: "not a listed value", settings: []string{"kv_cache_dtype=int4"}, wantErr: `--knob kv_cache_dtype: want one of auto, fp8, got "int4"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := p.ParseKnobOverrides(tt.settings)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("overrides (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSingleConfigNeedsAValueForEveryKnobWithMany(t *testing.T) {
	t.Parallel()
	p := mustLoad(t, overridePlan, LoadOptions{})
	tests := []struct {
		name      string
		overrides Config
		want      Config
		missing   string
	}{
		{
			name:      "every knob with many values set, the one-value knob filled in",
			overrides: Config{"max_num_seqs": int64(8), "gpu_memory_utilization": 0.9, "kv_cache_dtype": "auto"},
			want:      Config{"max_num_seqs": int64(8), "gpu_memory_utilization": 0.9, "kv_cache_dtype": "auto", "block_size": int64(16)},
		},
		{
			name:      "an option that is no knob is kept",
			overrides: Config{"max_num_seqs": int64(8), "gpu_memory_utilization": 0.9, "kv_cache_dtype": "auto", "max_model_len": int64(2048)},
			want:      Config{"max_num_seqs": int64(8), "gpu_memory_utilization": 0.9, "kv_cache_dtype": "auto", "block_size": int64(16), "max_model_len": int64(2048)},
		},
		{name: "knobs left open are named in order", overrides: Config{"kv_cache_dtype": "fp8"}, missing: "max_num_seqs, gpu_memory_utilization (set them"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := p.SingleConfig(tt.overrides)
			if tt.missing != "" {
				if err == nil || !strings.Contains(err.Error(), tt.missing) {
					t.Fatalf("error %v, want one naming %q", err, tt.missing)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGridWithFixesTheOverriddenKnobs(t *testing.T) {
	t.Parallel()
	p := mustLoad(t, overridePlan, LoadOptions{})
	full, ok := p.GridSize()
	if !ok || full != 3*3*2*1 {
		t.Fatalf("GridSize = %d, %v; want 18, true", full, ok)
	}
	overrides := Config{"max_num_seqs": int64(16), "kv_cache_dtype": "fp8"}
	if got := p.GridSizeWith(overrides); got != 3 {
		t.Errorf("GridSizeWith = %d, want 3 (the memory utilisation's values)", got)
	}
	if got := p.GridSizeWith(nil); got != full {
		t.Errorf("GridSizeWith(nil) = %d, want the grid size %d", got, full)
	}
	grid, err := p.GridWith(overrides)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, cfg := range grid {
		got = append(got, cfg.String())
	}
	want := []string{
		"block_size=16 gpu_memory_utilization=0.8 kv_cache_dtype=fp8 max_num_seqs=16",
		"block_size=16 gpu_memory_utilization=0.85 kv_cache_dtype=fp8 max_num_seqs=16",
		"block_size=16 gpu_memory_utilization=0.9 kv_cache_dtype=fp8 max_num_seqs=16",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("grid with overrides, each configuration once (-want +got):\n%s", diff)
	}
}

func TestGridSizeWithIsZeroForAContinuousKnobAndSaturates(t *testing.T) {
	t.Parallel()
	p := &Plan{Knobs: []Knob{
		{Name: "a", Kind: KnobFloat, Min: 0, Max: 1},
		{Name: "b", Kind: KnobInt, Min: 1, Max: 1 << 40},
		{Name: "c", Kind: KnobInt, Min: 1, Max: 1 << 40},
	}}
	if got := p.GridSizeWith(nil); got != 0 {
		t.Errorf("with a continuous knob: %d, want 0", got)
	}
	if got := p.GridSizeWith(Config{"a": 0.5}); got != math.MaxInt {
		t.Errorf("with two huge ranges: %d, want math.MaxInt", got)
	}
}

func TestKnobAlternatives(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		knob    Knob
		current Value
		want    []Value
	}{
		{
			name: "listed values but the current one", knob: Knob{Kind: KnobInt, Values: []Value{int64(8), int64(16), int64(32)}},
			current: int64(16), want: []Value{int64(8), int64(32)},
		},
		{
			name: "an integer range: its ends, half and twice the current value", knob: Knob{Kind: KnobInt, Min: 1, Max: 512, Step: 1},
			current: int64(64), want: []Value{int64(1), int64(32), int64(128), int64(512)},
		},
		{
			name: "values outside the range are left out", knob: Knob{Kind: KnobInt, Min: 100, Max: 150, Step: 1},
			current: int64(120), want: []Value{int64(100), int64(150)},
		},
		{
			name: "a float range on its step", knob: Knob{Kind: KnobFloat, Min: 0.3, Max: 0.95, Step: 0.05},
			current: 0.8, want: []Value{0.3, 0.4, 0.95},
		},
		{
			name: "the current value at an end is left out", knob: Knob{Kind: KnobFloat, Min: 0.5, Max: 0.9, Step: 0.05},
			current: 0.9, want: []Value{0.5},
		},
		{
			name: "a categorical knob", knob: Knob{Kind: KnobCategorical, Values: []Value{"auto", "fp8"}},
			current: "fp8", want: []Value{"auto"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := tt.knob.Alternatives(tt.current)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Alternatives(%v) (-want +got):\n%s", tt.current, diff)
			}
		})
	}
}
