package hw

// GPU is one GPU as NVML reports it.
type GPU struct {
	Index             int          `json:"index"`
	UUID              string       `json:"uuid"`
	Name              string       `json:"name"`
	MemoryTotalBytes  uint64       `json:"memory_total_bytes"`
	MemoryFreeBytes   uint64       `json:"memory_free_bytes"`
	ComputeCapability string       `json:"compute_capability"`
	MIG               bool         `json:"mig"`
	Processes         []Process    `json:"processes"`
	Links             map[int]Link `json:"links,omitempty"` // peer index -> link
	// Virtual is true for the simulator's GPUs of a SKU nobody owns here.
	Virtual bool `json:"virtual,omitempty"`
}

// Process is a process using a GPU.
type Process struct {
	PID             int    `json:"pid"`
	UsedMemoryBytes uint64 `json:"used_memory_bytes"`
}

// Link describes how two GPUs are joined.
type Link struct {
	NVLinks  int    `json:"nvlinks"`  // active NVLink links between the pair
	Topology string `json:"topology"` // NVML topology level, e.g. "single", "multiple", "hostbridge", "system"
}

// Inventory is what NVML sees on this host.
type Inventory struct {
	Available     bool   `json:"available"` // false when NVML could not be loaded or initialised
	Reason        string `json:"reason,omitempty"`
	DriverVersion string `json:"driver_version,omitempty"`
	CUDAVersion   string `json:"cuda_version,omitempty"`
	Host          string `json:"host"`
	GPUs          []GPU  `json:"gpus"`
	// HostMemoryBytes is the host's RAM (/proc/meminfo), 0 where unknown: what KV offloading
	// (kv_offloading_size) pins must fit in it.
	HostMemoryBytes uint64 `json:"host_memory_bytes,omitempty"`
}

// SKU is an accelerator model with the published specs a performance model needs.
type SKU struct {
	Name    string `json:"name"` // catalog key, e.g. "h100-sxm"
	Display string `json:"display"`
	Vendor  string `json:"vendor"`
	// ComputeCapability is an NVIDIA GPU's CUDA compute capability (9.0 for Hopper), which
	// decides the kernels vLLM picks; 0 for other vendors.
	ComputeCapability float64 `json:"compute_capability,omitempty"`
	MemoryGiB         float64 `json:"memory_gib"`
	BandwidthGBs      float64 `json:"bandwidth_gbs"`        // HBM/GDDR bandwidth, GB/s
	BF16TFLOPS        float64 `json:"bf16_tflops"`          // dense
	FP8TFLOPS         float64 `json:"fp8_tflops"`           // dense; 0 when unsupported
	INT8TOPS          float64 `json:"int8_tops"`            // dense
	FP4TFLOPS         float64 `json:"fp4_tflops,omitempty"` // dense; 0 when unsupported
	InterconnectGBs   float64 `json:"interconnect_gbs"`
	Interconnect      string  `json:"interconnect"` // "nvlink", "pcie", "infinity-fabric"
	PricePerHour      float64 `json:"price_per_hour"`
	// Achieved is what published microbenchmarks measure of the peaks above; the step-time
	// model uses it instead of one efficiency for every GPU.
	Achieved Achieved `json:"achieved"`
	// NVMLNames are substrings of NVML device names that identify this SKU.
	NVMLNames []string `json:"nvml_names,omitempty"`
	// Host is the reference system the SKU's GPUs are sold in: what a CPU tier of the KV
	// cache (vLLM's --kv-offloading-size) has to work with.
	Host Host `json:"host"`
}

// Host is a GPU system's side of host memory: the link between each GPU and the CPU's
// memory, and that memory. docs/sim.md ("Host memory and the host link") gives the source of
// every value.
type Host struct {
	// System names the reference system the figures are taken from ("NVIDIA DGX H100").
	System string `json:"system"`
	// Link is how each GPU reaches host memory: "pcie-gen4-x16", "pcie-gen5-x16" or
	// "nvlink-c2c" (a Grace CPU's chip-to-chip link).
	Link string `json:"link"`
	// LinkGBs is the link's peak in one direction, GB/s (10^9 bytes), after line coding.
	LinkGBs float64 `json:"link_gbs"`
	// LinkShare is the share of LinkGBs a DMA copy between pinned host memory and the GPU
	// sustains (packet headers and flow control take the rest).
	LinkShare float64 `json:"link_share"`
	// MemoryGiB is the system's RAM, GiB, shared by its GPUs.
	MemoryGiB float64 `json:"memory_gib"`
	// GPUs is how many GPUs the system holds.
	GPUs int `json:"gpus"`
}

// HostLinkBytesPerSecond is what one GPU moves to or from host memory per second, in one
// direction: the link's peak times the share a DMA copy reaches.
func (s SKU) HostLinkBytesPerSecond() float64 {
	return s.Host.LinkGBs * s.Host.LinkShare * 1e9
}

// Achieved holds a SKU's measured (not marketed) rates, each from a published microbenchmark
// or, where none was found, a first-principles estimate; docs/sim.md lists the source and the
// conditions of every value. Shares are of the SKU's own peak figures.
type Achieved struct {
	// MemShare is the share of BandwidthGBs a STREAM-like copy sustains.
	MemShare float64 `json:"mem_share"`
	// BF16Share, FP8Share and FP4Share are the shares of the dense tensor peaks a GEMM sweep
	// (cuBLASLt, hipBLASLt) reaches at its best shapes; INT8 runs at FP8Share where the SKU
	// has FP8, else at BF16Share.
	BF16Share float64 `json:"bf16_share"`
	FP8Share  float64 `json:"fp8_share,omitempty"`
	FP4Share  float64 `json:"fp4_share,omitempty"`
	// KernelFloorUs is the shortest time one small kernel takes when replayed from a captured
	// graph (CUDA or HIP graphs): launch cost is gone, the grid's ramp and drain are not.
	KernelFloorUs float64 `json:"kernel_floor_us"`
	// LaunchUs is the host's cost of launching one kernel without graphs (eager mode).
	LaunchUs float64 `json:"launch_us"`
	// AllReduceUs is the latency of one small all-reduce among the GPUs of a node over the
	// SKU's fabric; LinkShare the share of the per-direction link bandwidth a large
	// collective reaches.
	AllReduceUs float64 `json:"all_reduce_us"`
	LinkShare   float64 `json:"link_share"`
}
