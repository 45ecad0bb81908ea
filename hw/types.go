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
}

// SKU is an accelerator model with the published specs a performance model needs.
type SKU struct {
	Name            string  `json:"name"` // catalog key, e.g. "h100-sxm"
	Display         string  `json:"display"`
	Vendor          string  `json:"vendor"`
	MemoryGiB       float64 `json:"memory_gib"`
	BandwidthGBs    float64 `json:"bandwidth_gbs"` // HBM/GDDR bandwidth, GB/s
	BF16TFLOPS      float64 `json:"bf16_tflops"`   // dense
	FP8TFLOPS       float64 `json:"fp8_tflops"`    // dense; 0 when unsupported
	INT8TOPS        float64 `json:"int8_tops"`     // dense
	InterconnectGBs float64 `json:"interconnect_gbs"`
	Interconnect    string  `json:"interconnect"` // "nvlink", "pcie", "infinity-fabric"
	PricePerHour    float64 `json:"price_per_hour"`
	// NVMLNames are substrings of NVML device names that identify this SKU.
	NVMLNames []string `json:"nvml_names,omitempty"`
}
