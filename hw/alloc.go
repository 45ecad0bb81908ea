package hw

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
)

// ErrTooFewGPUs is returned when a trial needs more GPUs than a study may use at all.
var ErrTooFewGPUs = errors.New("not enough usable GPUs")

// AllocOptions restrict which GPUs an Allocator hands out.
type AllocOptions struct {
	// AllowBusy lets trials use GPUs that other processes already use.
	AllowBusy bool
	// Indices, when not empty, are the only GPU indices to use.
	Indices []int
}

// Allocator hands out disjoint sets of GPUs to trials that run at the same time. It is safe
// for concurrent use.
type Allocator struct {
	usable []GPU
	notes  []string

	mu      sync.Mutex
	inUse   map[int]bool
	waiting []*int        // tickets of blocked Acquire calls, first come first
	changed chan struct{} // closed and replaced when GPUs are released or a waiter leaves
}

// NewAllocator makes an allocator over inv. GPUs in MIG mode are left out (a trial would need
// MIG device UUIDs, which frontier does not hand out), and so are GPUs that other processes
// use, unless opts.AllowBusy; Notes says which and why.
func NewAllocator(inv []GPU, opts AllocOptions) *Allocator {
	a := &Allocator{inUse: map[int]bool{}, changed: make(chan struct{})}
	for _, g := range inv {
		switch {
		case len(opts.Indices) > 0 && !slices.Contains(opts.Indices, g.Index):
		case g.MIG:
			a.notes = append(a.notes, fmt.Sprintf("GPU %d (%s) is in MIG mode; frontier does not use MIG devices", g.Index, g.Name))
		case len(g.Processes) > 0 && !opts.AllowBusy:
			a.notes = append(a.notes, fmt.Sprintf("GPU %d (%s) is used by %d other process(es) (pids %v); set allow_busy = true in the hardware block to use it anyway",
				g.Index, g.Name, len(g.Processes), pids(g.Processes)))
		default:
			a.usable = append(a.usable, g)
		}
	}
	return a
}

func pids(ps []Process) []int {
	out := make([]int, len(ps))
	for i, p := range ps {
		out[i] = p.PID
	}
	return out
}

// Usable lists the GPUs the allocator hands out, in index order of the inventory.
func (a *Allocator) Usable() []GPU { return slices.Clone(a.usable) }

// Notes says which GPUs of the inventory were left out, and why.
func (a *Allocator) Notes() []string { return slices.Clone(a.notes) }

// Slots is how many trials of n GPUs each can run at once.
func (a *Allocator) Slots(n int) int {
	if n <= 0 {
		return 0
	}
	return len(a.usable) / n
}

// Acquire blocks until n GPUs are free and returns them, marked as in use until Release.
// Among the free GPUs it prefers the set with the most pairs joined by NVLink, then the
// closest PCIe topology, then the set that breaks the fewest NVLink pairs among the GPUs left
// free, then the lowest indices. Blocked calls are served first come, first served, so that a
// trial that needs many GPUs is not starved by a stream of trials that need few. Acquire fails
// at once, with ErrTooFewGPUs, when n is more than the usable GPUs, and with ctx's error when
// ctx ends first.
func (a *Allocator) Acquire(ctx context.Context, n int) ([]GPU, error) {
	return a.AcquireGroups(ctx, 1, n)
}

// AcquireGroups is Acquire for a deployment of groups instances of size GPUs each (vLLM's
// data_parallel_size ranks of tensor_parallel_size x pipeline_parallel_size GPUs): it
// returns groups x size GPUs, the first group's first, each group chosen as Acquire chooses
// a set, one after another from the GPUs the groups before it left. vLLM gives data-parallel
// rank r the devices r x size to (r+1) x size - 1 of CUDA_VISIBLE_DEVICES, so in this order
// each rank's tensor-parallel GPUs are the ones joined best, whatever joins the ranks.
func (a *Allocator) AcquireGroups(ctx context.Context, groups, size int) ([]GPU, error) {
	if groups <= 0 || size <= 0 {
		return nil, fmt.Errorf("acquire %d groups of %d GPUs: the counts must be positive", groups, size)
	}
	n := groups * size
	if n > len(a.usable) {
		return nil, fmt.Errorf("acquire %d GPUs: %w: %d usable", n, ErrTooFewGPUs, len(a.usable))
	}
	a.mu.Lock()
	if len(a.waiting) == 0 {
		if set := a.take(groups, size); set != nil {
			a.mu.Unlock()
			return set, nil
		}
	}
	ticket := new(int)
	a.waiting = append(a.waiting, ticket)
	for {
		changed := a.changed
		a.mu.Unlock()
		select {
		case <-ctx.Done():
			a.mu.Lock()
			a.leave(ticket)
			a.mu.Unlock()
			return nil, fmt.Errorf("acquire %d GPUs: %w", n, ctx.Err())
		case <-changed:
		}
		a.mu.Lock()
		if a.waiting[0] != ticket {
			continue
		}
		if set := a.take(groups, size); set != nil {
			a.leave(ticket)
			a.mu.Unlock()
			return set, nil
		}
	}
}

// take marks and returns the best groups sets of size free GPUs, one after another, or nil
// if fewer are free. a.mu is held.
func (a *Allocator) take(groups, size int) []GPU {
	free := make([]GPU, 0, len(a.usable))
	for _, g := range a.usable {
		if !a.inUse[g.Index] {
			free = append(free, g)
		}
	}
	if len(free) < groups*size {
		return nil
	}
	var out []GPU
	for range groups {
		set := pickSet(free, size)
		for _, g := range set {
			a.inUse[g.Index] = true
		}
		free = slices.DeleteFunc(free, func(g GPU) bool { return containsIndex(set, g.Index) })
		out = append(out, set...)
	}
	return out
}

// leave removes ticket from the queue and wakes the others: the next in line may now be
// served. a.mu is held.
func (a *Allocator) leave(ticket *int) {
	a.waiting = slices.DeleteFunc(a.waiting, func(t *int) bool { return t == ticket })
	a.broadcast()
}

// broadcast wakes every blocked Acquire. a.mu is held.
func (a *Allocator) broadcast() {
	close(a.changed)
	a.changed = make(chan struct{})
}

// Release returns gpus to the allocator. Releasing GPUs that are not in use does nothing.
func (a *Allocator) Release(gpus []GPU) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, g := range gpus {
		delete(a.inUse, g.Index)
	}
	a.broadcast()
}

// maxCombinations bounds the exhaustive search of pickSet; beyond it, sets are grown greedily.
const maxCombinations = 20000

// pickSet chooses n of free (len(free) >= n), best first by setScore.
func pickSet(free []GPU, n int) []GPU {
	if n == len(free) {
		return slices.Clone(free)
	}
	if binomial(len(free), n) > maxCombinations {
		return greedySet(free, n)
	}
	var best []GPU
	var bestScore score
	idx := make([]int, n)
	var rec func(start, depth int)
	rec = func(start, depth int) {
		if depth == n {
			set := make([]GPU, n)
			for i, j := range idx {
				set[i] = free[j]
			}
			if s := setScore(set, free); best == nil || s.better(bestScore) {
				best, bestScore = set, s
			}
			return
		}
		for i := start; i <= len(free)-(n-depth); i++ {
			idx[depth] = i
			rec(i+1, depth+1)
		}
	}
	rec(0, 0)
	return best
}

// greedySet grows a set from each GPU by adding the GPU that scores best with it.
func greedySet(free []GPU, n int) []GPU {
	var best []GPU
	var bestScore score
	for i := range free {
		set := []GPU{free[i]}
		for len(set) < n {
			var next int = -1
			var nextScore score
			for j := range free {
				if containsIndex(set, free[j].Index) {
					continue
				}
				s := setScore(append(slices.Clone(set), free[j]), free)
				if next < 0 || s.better(nextScore) {
					next, nextScore = j, s
				}
			}
			set = append(set, free[next])
		}
		slices.SortFunc(set, func(a, b GPU) int { return a.Index - b.Index })
		if s := setScore(set, free); best == nil || s.better(bestScore) {
			best, bestScore = set, s
		}
	}
	return best
}

func containsIndex(set []GPU, index int) bool {
	for _, g := range set {
		if g.Index == index {
			return true
		}
	}
	return false
}

// score ranks a set of GPUs: more NVLink pairs within the set first, then a closer
// topology, then fewer NVLink pairs broken between the set and the GPUs left free (so that
// later trials still find joined sets), then lower indices.
type score struct {
	nvlinkPairs  int
	topologyCost int
	brokenLinks  int
	indexSum     int
}

func (s score) better(t score) bool {
	if s.nvlinkPairs != t.nvlinkPairs {
		return s.nvlinkPairs > t.nvlinkPairs
	}
	if s.topologyCost != t.topologyCost {
		return s.topologyCost < t.topologyCost
	}
	if s.brokenLinks != t.brokenLinks {
		return s.brokenLinks < t.brokenLinks
	}
	return s.indexSum < t.indexSum
}

// setScore scores set, chosen among free.
func setScore(set, free []GPU) score {
	var s score
	for i, a := range set {
		s.indexSum += a.Index
		for _, b := range set[i+1:] {
			l := link(a, b)
			if l.NVLinks > 0 {
				s.nvlinkPairs++
			}
			s.topologyCost += topologyCost(l.Topology)
		}
		for _, b := range free {
			if !containsIndex(set, b.Index) && link(a, b).NVLinks > 0 {
				s.brokenLinks++
			}
		}
	}
	return s
}

// link is how a and b are joined, as either of them reports it.
func link(a, b GPU) Link {
	if l, ok := a.Links[b.Index]; ok {
		return l
	}
	return b.Links[a.Index]
}

// topologyCost orders NVML topology levels from closest to farthest; unknown is farthest.
func topologyCost(t string) int {
	switch t {
	case "internal":
		return 0
	case "single":
		return 1
	case "multiple":
		return 2
	case "hostbridge":
		return 3
	case "node":
		return 4
	case "system":
		return 5
	}
	return 6
}

func binomial(n, k int) int {
	if k < 0 || k > n {
		return 0
	}
	r := 1
	for i := 1; i <= k; i++ {
		r = r * (n - k + i) / i
		if r > maxCombinations*10 {
			return r
		}
	}
	return r
}
