// Package hw knows the GPUs of this host and hands them out to trials.
//
// Detect reads the inventory through NVML (go-nvml): each GPU's index, UUID, name, memory,
// compute capability, MIG mode, the processes using it, and how each pair of GPUs is joined
// (NVLink or PCIe topology), with the driver and CUDA versions. Where NVML cannot be loaded
// (no NVIDIA driver, no GPU) the inventory says so in Reason and is empty; nothing panics.
// Resolve turns a plan's hardware.gpus into the GPUs a study may use, under the rule that a
// plan listing indices is trusted where NVML is absent and "all" is not.
//
// An Allocator hands out disjoint sets of GPUs to trials that run at the same time,
// preferring sets joined by NVLink and skipping GPUs that other processes use.
// WaitMemoryReleased waits until a stopped engine's memory is free again before the slot is
// reused. VirtualGPUs makes GPUs of a catalog SKU for the simulator.
//
// The SKU catalog (LookupSKU, MatchSKU) lives in catalog.go. Which engine runs on the GPUs,
// and with what, is the launcher's business.
package hw
