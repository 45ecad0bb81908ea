package hw

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func indices(gpus []GPU) []int {
	out := make([]int, len(gpus))
	for i, g := range gpus {
		out[i] = g.Index
	}
	return out
}

func TestAllocatorChoosesSets(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		host string
		opts AllocOptions
		// acquire these counts in turn, without releasing
		counts    []int
		want      [][]int
		wantSlots map[int]int
	}{
		{
			name:      "bridged pairs first, busy GPU 3 skipped",
			host:      "4xa100-pcie-bridged",
			counts:    []int{2},
			want:      [][]int{{0, 1}},
			wantSlots: map[int]int{1: 3, 2: 1, 4: 0},
		},
		{
			name:      "allow busy: both bridged pairs",
			host:      "4xa100-pcie-bridged",
			opts:      AllocOptions{AllowBusy: true},
			counts:    []int{2, 2},
			want:      [][]int{{0, 1}, {2, 3}},
			wantSlots: map[int]int{1: 4, 2: 2, 3: 1, 4: 1},
		},
		{
			name:   "a single GPU leaves a bridged pair free",
			host:   "4xa100-pcie-bridged",
			opts:   AllocOptions{AllowBusy: true, Indices: []int{0, 1, 2}},
			counts: []int{1, 2},
			want:   [][]int{{2}, {0, 1}},
		},
		{
			name:   "NVLink over PCIe when the pair is split",
			host:   "4xa100-pcie-bridged",
			opts:   AllocOptions{AllowBusy: true, Indices: []int{0, 2, 3}},
			counts: []int{2},
			want:   [][]int{{2, 3}},
		},
		{
			name:      "NVSwitch: closer topology wins among equals, busy GPU 1 skipped",
			host:      "hgx-4xh100-nvswitch",
			counts:    []int{2, 1},
			want:      [][]int{{2, 3}, {0}},
			wantSlots: map[int]int{1: 3, 2: 1, 3: 1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			inv := DetectWith(loadRecorded(t, tc.host), "h")
			a := NewAllocator(inv.GPUs, tc.opts)
			var got [][]int
			for _, n := range tc.counts {
				set, err := a.Acquire(context.Background(), n)
				if err != nil {
					t.Fatalf("Acquire(%d): %v", n, err)
				}
				got = append(got, indices(set))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("sets (-want +got):\n%s", diff)
			}
			for n, want := range tc.wantSlots {
				if got := a.Slots(n); got != want {
					t.Errorf("Slots(%d) = %d, want %d", n, got, want)
				}
			}
		})
	}
}

func TestAllocatorNotes(t *testing.T) {
	t.Parallel()
	gpus := []GPU{
		{Index: 0, Name: "NVIDIA A100 80GB PCIe"},
		{Index: 1, Name: "NVIDIA A100 80GB PCIe", MIG: true},
		{Index: 2, Name: "NVIDIA A100 80GB PCIe", Processes: []Process{{PID: 77}}},
	}
	a := NewAllocator(gpus, AllocOptions{})
	want := []string{
		"GPU 1 (NVIDIA A100 80GB PCIe) is in MIG mode; frontier does not use MIG devices",
		"GPU 2 (NVIDIA A100 80GB PCIe) is used by 1 other process(es) (pids [77]); set allow_busy = true in the hardware block to use it anyway",
	}
	if diff := cmp.Diff(want, a.Notes()); diff != "" {
		t.Errorf("Notes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{0}, indices(a.Usable())); diff != "" {
		t.Errorf("Usable (-want +got):\n%s", diff)
	}
}

func TestAllocatorTooManyFailsAtOnce(t *testing.T) {
	t.Parallel()
	a := NewAllocator(VirtualGPUs(SKU{Name: "l4"}, 2), AllocOptions{})
	for _, n := range []int{3, 0, -1} {
		if _, err := a.Acquire(context.Background(), n); err == nil {
			t.Errorf("Acquire(%d) succeeded", n)
		}
	}
	if _, err := a.Acquire(context.Background(), 3); !errors.Is(err, ErrTooFewGPUs) {
		t.Errorf("Acquire(3) = %v, want ErrTooFewGPUs", err)
	}
}

func TestAllocatorBlocksUntilRelease(t *testing.T) {
	t.Parallel()
	a := NewAllocator(VirtualGPUs(SKU{Name: "h100-sxm", Interconnect: "nvlink"}, 2), AllocOptions{})
	first, err := a.Acquire(context.Background(), 2)
	if err != nil {
		t.Fatal(err)
	}
	// While all are in use, Acquire waits, and gives up with its context.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := a.Acquire(ctx, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire while full = %v, want context.DeadlineExceeded", err)
	}
	got := make(chan []int)
	go func() {
		set, err := a.Acquire(context.Background(), 1)
		if err != nil {
			t.Error(err)
		}
		got <- indices(set)
	}()
	time.Sleep(50 * time.Millisecond)
	a.Release(first[1:])
	select {
	case set := <-got:
		if diff := cmp.Diff([]int{1}, set); diff != "" {
			t.Errorf("set after release (-want +got):\n%s", diff)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Acquire did not wake up after Release")
	}
}

func TestAllocatorSetsAreDisjointUnderContention(t *testing.T) {
	t.Parallel()
	a := NewAllocator(VirtualGPUs(SKU{Name: "h100-sxm", Interconnect: "nvlink"}, 8), AllocOptions{})
	var mu sync.Mutex
	held := map[int]bool{}
	var wg sync.WaitGroup
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 30; i++ {
				n := 1 + (w+i)%3
				set, err := a.Acquire(context.Background(), n)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, g := range set {
					if held[g.Index] {
						t.Errorf("GPU %d handed out twice", g.Index)
					}
					held[g.Index] = true
				}
				mu.Unlock()
				time.Sleep(time.Millisecond)
				mu.Lock()
				for _, g := range set {
					held[g.Index] = false
				}
				mu.Unlock()
				a.Release(set)
			}
		}(w)
	}
	wg.Wait()
}

func TestPickSetGreedyOnLargeHosts(t *testing.T) {
	t.Parallel()
	// 32 GPUs in NVLink-joined groups of 4 (0-3, 4-7, ...): too many to try every set of 8.
	gpus := make([]GPU, 32)
	for i := range gpus {
		gpus[i] = GPU{Index: i, Links: map[int]Link{}}
		for j := 0; j < 32; j++ {
			if j == i {
				continue
			}
			l := Link{Topology: "system"}
			if i/4 == j/4 {
				l = Link{NVLinks: 4, Topology: "single"}
			}
			gpus[i].Links[j] = l
		}
	}
	got := indices(pickSet(gpus[2:], 4))
	if diff := cmp.Diff([]int{4, 5, 6, 7}, got); diff != "" {
		t.Errorf("pickSet (-want +got):\n%s", diff)
	}
}

func TestVirtualGPUs(t *testing.T) {
	t.Parallel()
	got := VirtualGPUs(SKU{Name: "l4", Display: "NVIDIA L4", MemoryGiB: 24, Interconnect: "pcie"}, 2)
	want := []GPU{
		{Index: 0, UUID: "virtual-l4-0", Name: "NVIDIA L4", MemoryTotalBytes: 24 << 30, MemoryFreeBytes: 24 << 30,
			Processes: []Process{}, Links: map[int]Link{1: {Topology: "system"}}, Virtual: true},
		{Index: 1, UUID: "virtual-l4-1", Name: "NVIDIA L4", MemoryTotalBytes: 24 << 30, MemoryFreeBytes: 24 << 30,
			Processes: []Process{}, Links: map[int]Link{0: {Topology: "system"}}, Virtual: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("VirtualGPUs (-want +got):\n%s", diff)
	}
}

func TestAllocatorServesWaitersInOrder(t *testing.T) {
	t.Parallel()
	a := NewAllocator(VirtualGPUs(SKU{Name: "h100-sxm", Interconnect: "nvlink"}, 4), AllocOptions{})
	held, err := a.Acquire(context.Background(), 3)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		Who string
		Set []int
	}
	results := make(chan result, 2)
	acquire := func(who string, n int) {
		set, err := a.Acquire(context.Background(), n)
		if err != nil {
			t.Error(err)
		}
		results <- result{who, indices(set)}
	}
	go acquire("four", 4)
	waitForWaiters(t, a, 1)
	// One GPU is free, but the trial that needs four came first.
	go acquire("one", 1)
	waitForWaiters(t, a, 2)
	select {
	case r := <-results:
		t.Fatalf("%s was served out of turn with %v", r.Who, r.Set)
	case <-time.After(50 * time.Millisecond):
	}
	a.Release(held)
	first := <-results
	if diff := cmp.Diff(result{"four", []int{0, 1, 2, 3}}, first); diff != "" {
		t.Fatalf("first served (-want +got):\n%s", diff)
	}
	a.Release(VirtualGPUs(SKU{Name: "h100-sxm"}, 4))
	second := <-results
	if diff := cmp.Diff(result{"one", []int{0}}, second); diff != "" {
		t.Errorf("second served (-want +got):\n%s", diff)
	}
}

func TestAllocatorWaiterThatGivesUpLetsTheNextIn(t *testing.T) {
	t.Parallel()
	a := NewAllocator(VirtualGPUs(SKU{Name: "l4"}, 2), AllocOptions{})
	if _, err := a.Acquire(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error)
	go func() {
		_, err := a.Acquire(ctx, 2)
		gaveUp <- err
	}()
	waitForWaiters(t, a, 1)
	got := make(chan []int)
	go func() {
		set, err := a.Acquire(context.Background(), 1)
		if err != nil {
			t.Error(err)
		}
		got <- indices(set)
	}()
	waitForWaiters(t, a, 2)
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Errorf("Acquire after cancel = %v, want context.Canceled", err)
	}
	select {
	case set := <-got:
		if diff := cmp.Diff([]int{1}, set); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the next waiter was not served after the first gave up")
	}
}

// waitForWaiters waits until n Acquire calls are blocked in a.
func waitForWaiters(t *testing.T, a *Allocator, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		a.mu.Lock()
		w := len(a.waiting)
		a.mu.Unlock()
		if w == n {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("never %d waiters", n)
}

// TestAcquireGroupsGivesEachRankItsLinkedPair checks the order of a data-parallel
// deployment's GPUs: on a host whose NVLink bridges join 0 with 2 and 1 with 3, two ranks of
// two GPUs get the bridged pairs, each rank's pair next to each other, where one set of four
// in index order would give rank 0 the GPUs 0 and 1, which no bridge joins.
func TestAcquireGroupsGivesEachRankItsLinkedPair(t *testing.T) {
	t.Parallel()
	bridge := func(peer int) map[int]Link {
		return map[int]Link{peer: {NVLinks: 4, Topology: "hostbridge"}}
	}
	gpus := []GPU{
		{Index: 0, Name: "NVIDIA A100 80GB PCIe", Links: bridge(2)},
		{Index: 1, Name: "NVIDIA A100 80GB PCIe", Links: bridge(3)},
		{Index: 2, Name: "NVIDIA A100 80GB PCIe", Links: bridge(0)},
		{Index: 3, Name: "NVIDIA A100 80GB PCIe", Links: bridge(1)},
	}
	a := NewAllocator(gpus, AllocOptions{})
	set, err := a.AcquireGroups(context.Background(), 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{0, 2, 1, 3}, indices(set)); diff != "" {
		t.Errorf("GPUs of two ranks of two (-want +got):\n%s", diff)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := a.AcquireGroups(ctx, 1, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a fifth GPU of four: %v, want to wait until the context ends", err)
	}
	a.Release(set)
	one, err := a.AcquireGroups(context.Background(), 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{0, 2}, indices(one)); diff != "" {
		t.Errorf("one rank of two (-want +got):\n%s", diff)
	}
	if _, err := a.AcquireGroups(context.Background(), 0, 2); err == nil {
		t.Error("zero groups accepted")
	}
}
