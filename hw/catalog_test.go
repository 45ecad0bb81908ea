package hw

import (
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSKUsSortedAndComplete(t *testing.T) {
	t.Parallel()
	skus := SKUs()
	names := make([]string, len(skus))
	for i, s := range skus {
		names[i] = s.Name
	}
	if !sort.StringsAreSorted(names) {
		t.Errorf("SKUs() not sorted: %v", names)
	}
	want := []string{"a100-40gb", "a100-80gb", "a10g", "b200", "h100-pcie", "h100-sxm", "h200", "l4", "l40s", "mi300x"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("SKU names (-want +got):\n%s", diff)
	}
	for _, s := range skus {
		if s.MemoryGiB <= 0 || s.BandwidthGBs <= 0 || s.BF16TFLOPS <= 0 || s.PricePerHour <= 0 || s.InterconnectGBs <= 0 {
			t.Errorf("%s: incomplete specs %+v", s.Name, s)
		}
		if s.FP8TFLOPS != 0 && s.FP8TFLOPS < s.BF16TFLOPS {
			t.Errorf("%s: FP8 %v below BF16 %v", s.Name, s.FP8TFLOPS, s.BF16TFLOPS)
		}
	}
}

func TestLookupSKU(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		in     string
		want   string
		wantOK bool
	}{
		{"exact", "h100-sxm", "h100-sxm", true},
		{"upper case and underscore", "H100_SXM", "h100-sxm", true},
		{"h200 specs", "h200", "h200", true},
		{"unknown", "tpu-v5e", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := LookupSKU(tt.in)
			if ok != tt.wantOK || got.Name != tt.want {
				t.Errorf("LookupSKU(%q) = %q, %v; want %q, %v", tt.in, got.Name, ok, tt.want, tt.wantOK)
			}
		})
	}
	h100, _ := LookupSKU("h100-sxm")
	if diff := cmp.Diff([]float64{3350, 989.4, 1978.9, 900}, []float64{h100.BandwidthGBs, h100.BF16TFLOPS, h100.FP8TFLOPS, h100.InterconnectGBs}); diff != "" {
		t.Errorf("h100-sxm specs (-want +got):\n%s", diff)
	}
}

func TestMatchSKU(t *testing.T) {
	t.Parallel()
	tests := []struct {
		nvml   string
		want   string
		wantOK bool
	}{
		{"NVIDIA H100 80GB HBM3", "h100-sxm", true},
		{"NVIDIA H100 PCIe", "h100-pcie", true},
		{"NVIDIA H200", "h200", true},
		{"NVIDIA A100-SXM4-80GB", "a100-80gb", true},
		{"NVIDIA A100-SXM4-40GB", "a100-40gb", true},
		{"NVIDIA A100 80GB PCIe", "a100-80gb", true},
		{"NVIDIA L40S", "l40s", true},
		{"NVIDIA L4", "l4", true},
		{"NVIDIA A10G", "a10g", true},
		{"AMD Instinct MI300X", "mi300x", true},
		{"NVIDIA B200", "b200", true},
		{"NVIDIA L40", "", false},
		{"NVIDIA GeForce RTX 4090", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.nvml, func(t *testing.T) {
			t.Parallel()
			got, ok := MatchSKU(tt.nvml)
			if ok != tt.wantOK || got.Name != tt.want {
				t.Errorf("MatchSKU(%q) = %q, %v; want %q, %v", tt.nvml, got.Name, ok, tt.want, tt.wantOK)
			}
		})
	}
}
