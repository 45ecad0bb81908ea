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
	want := []string{"a100-40gb", "a100-80gb", "a10g", "b200", "gh200", "h100-pcie", "h100-sxm", "h200", "l4", "l40s", "mi300x"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("SKU names (-want +got):\n%s", diff)
	}
	for _, s := range skus {
		if s.MemoryGiB <= 0 || s.BandwidthGBs <= 0 || s.BF16TFLOPS <= 0 || s.PricePerHour <= 0 || s.InterconnectGBs <= 0 {
			t.Errorf("%s: incomplete specs %+v", s.Name, s)
		}
		a := s.Achieved
		for _, v := range []struct {
			name string
			v    float64
		}{{"mem_share", a.MemShare}, {"bf16_share", a.BF16Share}, {"link_share", a.LinkShare}} {
			if v.v <= 0 || v.v > 1 {
				t.Errorf("%s: achieved %s %v outside (0, 1]", s.Name, v.name, v.v)
			}
		}
		if (s.FP8TFLOPS > 0) != (a.FP8Share > 0) || (s.FP4TFLOPS > 0) != (a.FP4Share > 0) {
			t.Errorf("%s: achieved shares %+v do not match the precisions the SKU has", s.Name, a)
		}
		if a.KernelFloorUs <= 0 || a.LaunchUs <= 0 || a.AllReduceUs <= 0 {
			t.Errorf("%s: kernel floor, launch cost and all-reduce latency must be positive: %+v", s.Name, a)
		}
		if (s.Vendor == "nvidia") != (s.ComputeCapability > 0) {
			t.Errorf("%s: compute capability %v; every NVIDIA GPU has one, no other", s.Name, s.ComputeCapability)
		}
		if s.FP8TFLOPS != 0 && s.FP8TFLOPS < s.BF16TFLOPS {
			t.Errorf("%s: FP8 %v below BF16 %v", s.Name, s.FP8TFLOPS, s.BF16TFLOPS)
		}
	}
}

// TestAchievedDiffersByFabric pins the physics the catalog is for: a PCIe all-reduce is slower
// than an NVSwitch one; MI300X's all-reduce reaches a smaller share of its links' bandwidth
// than H100's, and MI300X a smaller share of its memory and GEMM peaks, as the published
// microbenchmarks measure.
func TestAchievedDiffersByFabric(t *testing.T) {
	t.Parallel()
	h100, _ := LookupSKU("h100-sxm")
	mi, _ := LookupSKU("mi300x")
	pcie, _ := LookupSKU("h100-pcie")
	if !(pcie.Achieved.AllReduceUs > h100.Achieved.AllReduceUs && mi.Achieved.LinkShare < h100.Achieved.LinkShare) {
		t.Errorf("all-reduce: latency h100-pcie %v, h100-sxm %v µs; link share mi300x %v, h100-sxm %v",
			pcie.Achieved.AllReduceUs, h100.Achieved.AllReduceUs, mi.Achieved.LinkShare, h100.Achieved.LinkShare)
	}
	if !(mi.Achieved.MemShare < h100.Achieved.MemShare && mi.Achieved.BF16Share < h100.Achieved.BF16Share) {
		t.Errorf("mi300x achieved %+v not below h100 %+v", mi.Achieved, h100.Achieved)
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
		{"NVIDIA GH200 480GB", "gh200", true},
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

// TestHostLinks pins the host side a CPU tier of the KV cache uses: every SKU has a link to
// host memory and RAM; PCIe Gen5 x16 carries twice Gen4's 31.5 GB/s a direction, and a Grace
// system's NVLink-C2C several times PCIe Gen5.
func TestHostLinks(t *testing.T) {
	t.Parallel()
	for _, s := range SKUs() {
		h := s.Host
		if h.System == "" || h.LinkGBs <= 0 || h.LinkShare <= 0 || h.LinkShare > 1 || h.MemoryGiB <= 0 || h.GPUs < 1 {
			t.Errorf("%s: incomplete host %+v", s.Name, h)
		}
		switch h.Link {
		case "pcie-gen4-x16", "pcie-gen5-x16", "nvlink-c2c":
		default:
			t.Errorf("%s: host link %q, want pcie-gen4-x16, pcie-gen5-x16 or nvlink-c2c", s.Name, h.Link)
		}
	}
	a100, _ := LookupSKU("a100-80gb")
	h100, _ := LookupSKU("h100-sxm")
	gh, _ := LookupSKU("gh200")
	if got := a100.Host.LinkGBs; got < 31.4 || got > 31.6 {
		t.Errorf("PCIe Gen4 x16 = %v GB/s a direction, want 31.5", got)
	}
	if got := h100.Host.LinkGBs / a100.Host.LinkGBs; got != 2 {
		t.Errorf("PCIe Gen5 / Gen4 = %v, want 2", got)
	}
	if gh.Host.Link != "nvlink-c2c" || gh.HostLinkBytesPerSecond() < 7*h100.HostLinkBytesPerSecond() {
		t.Errorf("gh200 host link %s at %v B/s against h100-sxm's %v: want NVLink-C2C, about 7 times PCIe Gen5",
			gh.Host.Link, gh.HostLinkBytesPerSecond(), h100.HostLinkBytesPerSecond())
	}
}
