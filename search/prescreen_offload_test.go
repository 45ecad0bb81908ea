package search

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/frontier-llm/frontier/hw"
	"github.com/frontier-llm/frontier/plan"
)

// The pre-screen counts the pinned host memory of KV offloading against the host's RAM: the
// h100-sxm's host (a DGX H100) has 2048 GiB, so 1500 GiB on each of two data-parallel engines
// do not fit, and the trial's reason says how much was asked and how much there is.
func TestPreScreenCountsPinnedHostMemory(t *testing.T) {
	t.Parallel()
	p := loadScreenPlan(t, `knob "kv_offloading_size" { values = [0, 64, 1500] }
knob "data_parallel_size" { values = [1, 2] }`)
	got, err := PreScreen(context.Background(), p, PreScreenSample)
	if err != nil {
		t.Fatal(err)
	}
	// quantization none, tensor_parallel_size 1 or 2 (4 is the rule's), 1500 GiB × 2.
	if n := got.Rejected[HostMemoryRejection]; n != 2 {
		t.Errorf("rejected for host memory: %d, want 2 (%v)", n, got.Rejected)
	}
	as, err := NewAssessor(p)
	if err != nil {
		t.Fatal(err)
	}
	a, err := as.Assess(context.Background(), plan.Config{"quantization": "none", "tensor_parallel_size": int64(1),
		"kv_offloading_size": int64(1500), "data_parallel_size": int64(2)}, ThroughMemory)
	if err != nil {
		t.Fatal(err)
	}
	if !a.HostMemory || !strings.Contains(a.Trial.Reason, "pinning 3000.0 GiB of host memory for the KV offloading buffer (1500 GiB for each of 2 data-parallel engines): the h100-sxm host, NVIDIA DGX H100, has 2048 GiB of RAM") {
		t.Errorf("host memory %v, reason %q; want the pinned and the host's memory named", a.HostMemory, a.Trial.Reason)
	}
	ok, err := as.Assess(context.Background(), plan.Config{"quantization": "none", "tensor_parallel_size": int64(1),
		"kv_offloading_size": int64(1500), "data_parallel_size": int64(1)}, ThroughMemory)
	if err != nil {
		t.Fatal(err)
	}
	if ok.HostMemory || ok.Startup == nil || ok.Startup.PinnedHostGiB != 1500 {
		t.Errorf("1500 GiB on one engine: host memory %v, startup %+v; want it to start pinning 1500 GiB", ok.HostMemory, ok.Startup)
	}
}

// On a real host, the plan's largest offloading buffer times its most data-parallel engines is
// checked against the host's RAM as NVML's inventory read it.
func TestHardwareWarningsCountPinnedHostMemory(t *testing.T) {
	t.Parallel()
	p := loadScreenPlan(t, `knob "kv_offloading_size" { values = [0, 64, 300] }
knob "data_parallel_size" { values = [1, 2] }`)
	inv := hw.Inventory{Available: true, HostMemoryBytes: 512 << 30}
	for i := range 4 {
		inv.GPUs = append(inv.GPUs, hw.GPU{Index: i, Name: "NVIDIA H100 80GB HBM3", MemoryTotalBytes: 80 << 30, MemoryFreeBytes: 80 << 30})
	}
	want := "kv_offloading_size up to 300 GiB on up to 2 data-parallel engines pins up to 600 GiB of host memory, and this host has 512 GiB"
	got := HardwareWarnings(p, inv)
	if !slices.ContainsFunc(got, func(w string) bool { return strings.Contains(w, want) }) {
		t.Errorf("warnings %q; want one with %q", got, want)
	}
	inv.HostMemoryBytes = 2048 << 30
	for _, w := range HardwareWarnings(p, inv) {
		if strings.Contains(w, "kv_offloading_size") {
			t.Errorf("a host of 2048 GiB: warning %q", w)
		}
	}
}
