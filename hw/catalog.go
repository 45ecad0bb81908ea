package hw

import (
	"sort"
	"strings"
)

// Measured rates by GPU family (hw.Achieved). Each value's source and conditions are in
// docs/sim.md ("Per-SKU physics"); values marked there as estimates had no published
// measurement to take them from.
var (
	// hopper: H100 SXM (HBM3, NVLink 4 through NVSwitch).
	hopper = Achieved{MemShare: 0.90, BF16Share: 0.80, FP8Share: 0.71,
		KernelFloorUs: 2.5, LaunchUs: 5, AllReduceUs: 8, LinkShare: 0.80}
	// hopperHBM3e: H200 SXM, the H100's die with HBM3e; its FP8 GEMMs measure a little
	// higher than the H100's.
	hopperHBM3e = Achieved{MemShare: 0.90, BF16Share: 0.80, FP8Share: 0.73,
		KernelFloorUs: 2.5, LaunchUs: 5, AllReduceUs: 8, LinkShare: 0.80}
	// hopperPCIe: H100 PCIe, whose GPUs talk over PCIe Gen5 without NVLink bridges.
	hopperPCIe = Achieved{MemShare: 0.90, BF16Share: 0.80, FP8Share: 0.71,
		KernelFloorUs: 2.5, LaunchUs: 5, AllReduceUs: 25, LinkShare: 0.80}
	// ampere: A100 SXM4 (HBM2e, NVLink 3 through NVSwitch).
	ampere = Achieved{MemShare: 0.88, BF16Share: 0.87,
		KernelFloorUs: 2.5, LaunchUs: 5, AllReduceUs: 8, LinkShare: 0.80}
	// amperePCIe: A10G, a GDDR6 card on PCIe without FP8.
	amperePCIe = Achieved{MemShare: 0.85, BF16Share: 0.70,
		KernelFloorUs: 2.5, LaunchUs: 5, AllReduceUs: 25, LinkShare: 0.80}
	// adaPCIe: L40S and L4, GDDR6 cards on PCIe.
	adaPCIe = Achieved{MemShare: 0.85, BF16Share: 0.70, FP8Share: 0.60,
		KernelFloorUs: 2.5, LaunchUs: 5, AllReduceUs: 25, LinkShare: 0.80}
	// cdna3: MI300X (HBM3 across eight XCDs, xGMI full mesh of seven links per GPU).
	cdna3 = Achieved{MemShare: 0.81, BF16Share: 0.51, FP8Share: 0.45,
		KernelFloorUs: 5, LaunchUs: 6, AllReduceUs: 7.5, LinkShare: 0.45}
	// blackwell: B200 (HBM3e, NVLink 5 through NVSwitch).
	blackwell = Achieved{MemShare: 0.92, BF16Share: 0.78, FP8Share: 0.76, FP4Share: 0.76,
		KernelFloorUs: 2.5, LaunchUs: 5, AllReduceUs: 8, LinkShare: 0.80}
)

// Host links, per direction after line coding: PCIe Gen4 runs 16 GT/s a lane and Gen5 32
// GT/s, with 128b/130b encoding, so x16 carries 31.5 and 63.0 GB/s; NVLink-C2C, Grace's link
// to a Hopper or Blackwell GPU, 900 GB/s both ways, 450 each. A DMA copy of large pinned
// buffers reaches pcieShare of a PCIe link: 256-byte payloads under 24 to 28 bytes of TLP
// header and framing (0.90), less the link layer's acknowledgements and flow-control
// credits; NVLink-C2C is given the same share, an estimate (docs/sim.md).
const (
	pcieGen4x16GBs = 16 * 16 * 128.0 / 130 / 8
	pcieGen5x16GBs = 32 * 16 * 128.0 / 130 / 8
	nvlinkC2CGBs   = 450
	pcieShare      = 0.85
)

// pcieHost is an x86 server of gpus GPUs on PCIe links of gbs with mem GiB of RAM.
func pcieHost(system, link string, gbs float64, mem float64, gpus int) Host {
	return Host{System: system, Link: link, LinkGBs: gbs, LinkShare: pcieShare, MemoryGiB: mem, GPUs: gpus}
}

// catalog returns the built-in SKUs. Specs are the vendors' published dense (no-sparsity)
// figures; memory is what the driver reports as usable (a little under the marketing
// figure); bandwidths are in GB/s (10^9 bytes). Interconnect is the published aggregate
// (both directions) per GPU. Prices are typical on-demand prices per GPU-hour and are only
// defaults: plans set their own.
func catalog() []SKU {
	return []SKU{
		{
			Name: "h100-sxm", Display: "NVIDIA H100 SXM5 80GB", Vendor: "nvidia", ComputeCapability: 9.0,
			MemoryGiB: 79.2, BandwidthGBs: 3350, BF16TFLOPS: 989.4, FP8TFLOPS: 1978.9, INT8TOPS: 1978.9,
			InterconnectGBs: 900, Interconnect: "nvlink", PricePerHour: 2.99,
			Achieved:  hopper,
			NVMLNames: []string{"H100 80GB HBM3", "H100 SXM", "H100-SXM"},
			Host:      pcieHost("NVIDIA DGX H100", "pcie-gen5-x16", pcieGen5x16GBs, 2048, 8),
		},
		{
			Name: "h100-pcie", Display: "NVIDIA H100 PCIe 80GB", Vendor: "nvidia", ComputeCapability: 9.0,
			MemoryGiB: 79.2, BandwidthGBs: 2000, BF16TFLOPS: 756, FP8TFLOPS: 1513, INT8TOPS: 1513,
			InterconnectGBs: 128, Interconnect: "pcie", PricePerHour: 2.49,
			Achieved:  hopperPCIe,
			NVMLNames: []string{"H100 PCIe", "H100-PCIE"},
			Host:      pcieHost("8-GPU PCIe Gen5 server (estimate)", "pcie-gen5-x16", pcieGen5x16GBs, 1024, 8),
		},
		{
			Name: "h200", Display: "NVIDIA H200 SXM 141GB", Vendor: "nvidia", ComputeCapability: 9.0,
			MemoryGiB: 139.8, BandwidthGBs: 4800, BF16TFLOPS: 989.4, FP8TFLOPS: 1978.9, INT8TOPS: 1978.9,
			InterconnectGBs: 900, Interconnect: "nvlink", PricePerHour: 3.29,
			Achieved:  hopperHBM3e,
			NVMLNames: []string{"H200"},
			Host:      pcieHost("NVIDIA DGX H200", "pcie-gen5-x16", pcieGen5x16GBs, 2048, 8),
		},
		{
			Name: "a100-80gb", Display: "NVIDIA A100 SXM4 80GB", Vendor: "nvidia", ComputeCapability: 8.0,
			MemoryGiB: 79.2, BandwidthGBs: 2039, BF16TFLOPS: 312, FP8TFLOPS: 0, INT8TOPS: 624,
			InterconnectGBs: 600, Interconnect: "nvlink", PricePerHour: 2.49,
			Achieved:  ampere,
			NVMLNames: []string{"A100-SXM4-80GB", "A100 80GB", "A100-PCIE-80GB", "A100-80GB"},
			Host:      pcieHost("NVIDIA DGX A100 640GB", "pcie-gen4-x16", pcieGen4x16GBs, 2048, 8),
		},
		{
			Name: "a100-40gb", Display: "NVIDIA A100 SXM4 40GB", Vendor: "nvidia", ComputeCapability: 8.0,
			MemoryGiB: 39.4, BandwidthGBs: 1555, BF16TFLOPS: 312, FP8TFLOPS: 0, INT8TOPS: 624,
			InterconnectGBs: 600, Interconnect: "nvlink", PricePerHour: 1.844,
			Achieved:  ampere,
			NVMLNames: []string{"A100-SXM4-40GB", "A100 40GB", "A100-PCIE-40GB", "A100-40GB"},
			Host:      pcieHost("NVIDIA DGX A100 320GB", "pcie-gen4-x16", pcieGen4x16GBs, 1024, 8),
		},
		{
			Name: "l40s", Display: "NVIDIA L40S 48GB", Vendor: "nvidia", ComputeCapability: 8.9,
			MemoryGiB: 44.4, BandwidthGBs: 864, BF16TFLOPS: 362.05, FP8TFLOPS: 733, INT8TOPS: 733,
			InterconnectGBs: 64, Interconnect: "pcie", PricePerHour: 1.58,
			Achieved:  adaPCIe,
			NVMLNames: []string{"L40S"},
			Host:      pcieHost("AWS g6e.48xlarge", "pcie-gen4-x16", pcieGen4x16GBs, 1536, 8),
		},
		{
			Name: "l4", Display: "NVIDIA L4 24GB", Vendor: "nvidia", ComputeCapability: 8.9,
			MemoryGiB: 22.0, BandwidthGBs: 300, BF16TFLOPS: 121, FP8TFLOPS: 242.5, INT8TOPS: 242.5,
			InterconnectGBs: 64, Interconnect: "pcie", PricePerHour: 0.80,
			Achieved:  adaPCIe,
			NVMLNames: []string{"L4"},
			Host:      pcieHost("AWS g6.48xlarge", "pcie-gen4-x16", pcieGen4x16GBs, 768, 8),
		},
		{
			Name: "a10g", Display: "NVIDIA A10G 24GB", Vendor: "nvidia", ComputeCapability: 8.6,
			MemoryGiB: 22.0, BandwidthGBs: 600, BF16TFLOPS: 70, FP8TFLOPS: 0, INT8TOPS: 140,
			InterconnectGBs: 64, Interconnect: "pcie", PricePerHour: 1.01,
			Achieved:  amperePCIe,
			NVMLNames: []string{"A10G"},
			Host:      pcieHost("AWS g5.48xlarge", "pcie-gen4-x16", pcieGen4x16GBs, 768, 8),
		},
		{
			Name: "mi300x", Display: "AMD Instinct MI300X 192GB", Vendor: "amd",
			MemoryGiB: 191.5, BandwidthGBs: 5300, BF16TFLOPS: 1307.4, FP8TFLOPS: 2614.9, INT8TOPS: 2614.9,
			InterconnectGBs: 896, Interconnect: "infinity-fabric", PricePerHour: 1.85,
			Achieved:  cdna3,
			NVMLNames: []string{"MI300X"},
			Host:      pcieHost("Azure ND MI300X v5", "pcie-gen5-x16", pcieGen5x16GBs, 1850, 8),
		},
		{
			Name: "gh200", Display: "NVIDIA GH200 Grace Hopper 96GB", Vendor: "nvidia", ComputeCapability: 9.0,
			MemoryGiB: 95.0, BandwidthGBs: 4000, BF16TFLOPS: 989.4, FP8TFLOPS: 1978.9, INT8TOPS: 1978.9,
			InterconnectGBs: 900, Interconnect: "nvlink", PricePerHour: 1.49,
			Achieved:  hopper,
			NVMLNames: []string{"GH200"},
			Host: Host{System: "NVIDIA GH200 Grace Hopper Superchip", Link: "nvlink-c2c", LinkGBs: nvlinkC2CGBs,
				LinkShare: pcieShare, MemoryGiB: 480e9 / (1 << 30), GPUs: 1},
		},
		{
			Name: "b200", Display: "NVIDIA B200 180GB", Vendor: "nvidia", ComputeCapability: 10.0,
			MemoryGiB: 178.4, BandwidthGBs: 8000, BF16TFLOPS: 2250, FP8TFLOPS: 4500, INT8TOPS: 4500, FP4TFLOPS: 9000,
			InterconnectGBs: 1800, Interconnect: "nvlink", PricePerHour: 5.25,
			Achieved:  blackwell,
			NVMLNames: []string{"B200"},
			Host:      pcieHost("NVIDIA DGX B200", "pcie-gen5-x16", pcieGen5x16GBs, 2048, 8),
		},
	}
}

// SKUs returns the built-in SKU catalog sorted by name. The slice is a fresh copy.
func SKUs() []SKU {
	s := catalog()
	sort.Slice(s, func(i, j int) bool { return s[i].Name < s[j].Name })
	return s
}

// LookupSKU returns the catalog SKU with the given name (case-insensitive; "_" and "-" are
// interchangeable).
func LookupSKU(name string) (SKU, bool) {
	key := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(name)), "_", "-")
	for _, s := range catalog() {
		if s.Name == key {
			return s, true
		}
	}
	return SKU{}, false
}

// MatchSKU returns the catalog SKU whose NVML name patterns match nvmlName, e.g.
// "NVIDIA H100 80GB HBM3" is h100-sxm. A pattern matches case-insensitively as a whole
// word: "L4" does not match "NVIDIA L40S". When several patterns match, the longest wins.
func MatchSKU(nvmlName string) (SKU, bool) {
	name := strings.ToUpper(nvmlName)
	var best SKU
	bestLen := 0
	for _, s := range catalog() {
		for _, pat := range s.NVMLNames {
			p := strings.ToUpper(pat)
			if len(p) > bestLen && containsWord(name, p) {
				best, bestLen = s, len(p)
			}
		}
	}
	return best, bestLen > 0
}

// containsWord reports whether word occurs in s with no letter or digit right before or
// after it.
func containsWord(s, word string) bool {
	for off := 0; off+len(word) <= len(s); {
		i := strings.Index(s[off:], word)
		if i < 0 {
			return false
		}
		start, end := off+i, off+i+len(word)
		if (start == 0 || !isAlnum(s[start-1])) && (end == len(s) || !isAlnum(s[end])) {
			return true
		}
		off = start + 1
	}
	return false
}

func isAlnum(b byte) bool {
	return b >= '0' && b <= '9' || b >= 'A' && b <= 'Z' || b >= 'a' && b <= 'z'
}

// SKUNames lists the catalog's SKUs by name.
func SKUNames() []string {
	var n []string
	for _, s := range SKUs() {
		n = append(n, s.Name)
	}
	return n
}
