package hw

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// ErrMemoryNotReleased is returned by WaitReleased when a GPU's memory is still in use
// at the timeout.
var ErrMemoryNotReleased = errors.New("GPU memory not released")

// MemoryPoll is how often a wait for GPU memory asks NVML.
const MemoryPoll = 250 * time.Millisecond

// WaitReleased waits until the memory a stopped engine held on gpus is free again, asking
// lib every poll: no process uses a GPU that was not already using it when the inventory was
// read, and free memory is back within a small margin of what it was then. After timeout it
// returns an error wrapping ErrMemoryNotReleased that names the GPUs and the processes still
// holding memory.
func WaitReleased(ctx context.Context, lib Library, gpus []GPU, timeout, poll time.Duration) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		busy := busyGPUs(lib, gpus)
		if len(busy) == 0 {
			return nil
		}
		select {
		case <-deadline.C:
			return fmt.Errorf("%w after %s: %s", ErrMemoryNotReleased, timeout, strings.Join(busy, "; "))
		case <-ctx.Done():
			return fmt.Errorf("wait for GPU memory: %w", ctx.Err())
		case <-tick.C:
		}
	}
}

// releaseMargin is how much less memory may be free than at inventory time, for the driver's
// own allocations and other users' drift.
func releaseMargin(total uint64) uint64 {
	m := total / 50 // 2%
	if m < 512<<20 {
		m = 512 << 20
	}
	return m
}

// busyGPUs describes each GPU of gpus that is not yet released.
func busyGPUs(lib Library, gpus []GPU) []string {
	var busy []string
	for _, g := range gpus {
		d, err := lib.DeviceByUUID(g.UUID)
		if err != nil {
			continue // gone or unreadable: nothing to wait for
		}
		known := make([]int, 0, len(g.Processes))
		for _, p := range g.Processes {
			known = append(known, p.PID)
		}
		var newPIDs []int
		if ps, err := d.Processes(); err == nil {
			for _, p := range ps {
				if !slices.Contains(known, p.PID) {
					newPIDs = append(newPIDs, p.PID)
				}
			}
		}
		if len(newPIDs) > 0 {
			busy = append(busy, fmt.Sprintf("GPU %d used by pids %v", g.Index, newPIDs))
			continue
		}
		_, free, err := d.Memory()
		if err == nil && g.MemoryFreeBytes > 0 && free+releaseMargin(g.MemoryTotalBytes) < g.MemoryFreeBytes {
			busy = append(busy, fmt.Sprintf("GPU %d has %d MiB free, %d MiB before", g.Index, free>>20, g.MemoryFreeBytes>>20))
		}
	}
	return busy
}
