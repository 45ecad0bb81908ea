package nvml

import (
	"context"
	"testing"
	"time"

	"github.com/frontier-llm/frontier/hw"
)

// TestDetectOnThisHost runs the real NVML path: on a host without the library it must report
// that plainly, not panic; on a GPU host it must find GPUs.
func TestDetectOnThisHost(t *testing.T) {
	t.Parallel()
	inv := Detect()
	if inv.GPUs == nil {
		t.Error("GPUs is nil, want an empty list")
	}
	if !inv.Available && (inv.Reason == "" || len(inv.GPUs) != 0) {
		t.Errorf("unavailable inventory without a reason or with GPUs: %+v", inv)
	}
	if inv.Available {
		for _, g := range inv.GPUs {
			if g.UUID == "" || g.Name == "" || g.MemoryTotalBytes == 0 {
				t.Errorf("GPU %d lacks name, UUID or memory: %+v", g.Index, g)
			}
		}
	}
}

func TestWaitMemoryReleasedSkipsVirtualAndUntrackedGPUs(t *testing.T) {
	t.Parallel()
	start := time.Now()
	gpus := append(hw.VirtualGPUs(hw.SKU{Name: "l4"}, 2), hw.GPU{Index: 5}) // the last: trusted without NVML
	if err := WaitMemoryReleased(context.Background(), gpus, time.Minute); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("took %s for nothing to wait for", took)
	}
}
