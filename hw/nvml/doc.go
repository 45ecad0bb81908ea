// Package nvml reads the GPU inventory and waits for GPU memory through NVIDIA's management
// library (go-nvml, which loads libnvidia-ml.so.1 at run time). It is the one place that
// touches NVML: package hw keeps the inventory, the SKU catalog and the allocator free of it,
// behind hw.Library, so that what reads a study needs no NVML.
package nvml

import (
	"context"
	"os"
	"time"

	"github.com/frontier-llm/frontier/hw"
)

// Detect reads the GPU inventory through NVML. Where NVML is absent or fails to initialise,
// the inventory has Available false, a Reason a person can act on, and no GPUs.
func Detect() hw.Inventory {
	host, err := os.Hostname()
	if err != nil {
		host = ""
	}
	inv := hw.DetectWith(New(), host)
	inv.HostMemoryBytes = hw.HostMemoryBytes()
	return inv
}

// WaitMemoryReleased waits until the memory a stopped engine held on gpus is free again (see
// hw.WaitReleased). It returns at once for virtual GPUs and where NVML is not available.
func WaitMemoryReleased(ctx context.Context, gpus []hw.GPU, timeout time.Duration) error {
	real := make([]hw.GPU, 0, len(gpus))
	for _, g := range gpus {
		if !g.Virtual && g.UUID != "" {
			real = append(real, g)
		}
	}
	if len(real) == 0 {
		return nil
	}
	lib := New()
	if err := lib.Init(); err != nil {
		return nil // nothing to wait with; the plan was trusted with a warning
	}
	defer lib.Shutdown()
	return hw.WaitReleased(ctx, lib, real, timeout, hw.MemoryPoll)
}
