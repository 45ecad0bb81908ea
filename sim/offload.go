package sim

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/frontier-llm/frontier/hw"
)

// This file is KV offloading to CPU memory (vLLM's --kv-offloading-size and
// --kv-offloading-backend): a second tier of the prefix cache in pinned host memory, behind
// the GPU's, as vLLM's OffloadingConnector keeps it (vllm/v1/kv_offload and
// vllm/distributed/kv_transfer/kv_connector/v1/offloading_connector.py).
//
//   - Capacity: kv_offloading_size GiB, the total over the engine's tensor- and
//     pipeline-parallel ranks (CacheConfig's doc; VllmConfig._post_init_kv_transfer_config
//     hands the native backend cpu_bytes_to_use = size × 2^30), in blocks of the GPU cache's
//     block_size, so as many blocks as the size holds of the model's KV pages at the KV
//     cache dtype. Each data-parallel engine core pins its own.
//   - Stores: every full block the GPU computes is copied to the CPU tier as it is produced,
//     not when the GPU evicts it, on a stream of its own (cudaMemcpyAsync, GPU to host), so
//     a store overlaps the steps and costs them nothing; it occupies the host link, and a
//     block is in the CPU tier only once its copy has ended. The tier evicts least recently
//     used blocks (LRUOffloadingManager).
//   - Loads: a request whose prompt continues, past the GPU cache's hit, in blocks the CPU
//     tier holds, has them copied back (host to GPU) before its prefill: it waits for the
//     copy (vLLM's WAITING_FOR_REMOTE_KVS) while the other requests' steps go on, then its
//     prefill computes only what neither tier had.
//   - A miss costs a recompute: the blocks neither tier holds are prefilled as without
//     offloading.
//   - The copies run over each GPU's own link to host memory (hw.Host: PCIe Gen4 or Gen5
//     x16, or a Grace system's NVLink-C2C), the GPUs of a tensor-parallel engine in
//     parallel, each moving its share of a block.
//   - Metrics: vLLM counts the GPU cache in vllm:prefix_cache_queries/hits and the
//     connector's hits in vllm:external_prefix_cache_queries/hits (the tokens of every
//     request scheduled from waiting, and of those the tokens found in the CPU tier).

// Offloading backends (CacheConfig.kv_offloading_backend).
const (
	OffloadNative  = "native"
	OffloadLMCache = "lmcache"
)

// offloadBackends are the backends the simulator models when the version table has no list.
var offloadBackends = []string{OffloadNative, OffloadLMCache}

// offloadArgs validates the KV offloading options as vLLM does and returns the backend that
// offloads, "" for none.
func offloadArgs(c EngineConfig) (string, error) {
	backend := c.KVOffloadingBackend
	size := c.KVOffloadingSize
	if backend == "" && size == 0 {
		return "", nil // the common case, without a look at the version table
	}
	f, hasFlag := c.Version().Flag("kv_offloading_backend")
	if backend != "" {
		choices := offloadBackends
		if hasFlag && f.Choices != nil {
			choices = f.Choices
		}
		if !slices.Contains(choices, backend) {
			return "", &StartupError{Class: ClassInvalidArgs, Message: fmt.Sprintf("vllm serve: error: argument --kv-offloading-backend: invalid choice: '%s' (choose from '%s')", backend, strings.Join(choices, "', '"))}
		}
	}
	if math.IsNaN(size) || math.IsInf(size, 0) || size < 0 {
		// vLLM's offloading config parser: "kv_offloading_size must be positive".
		return "", &StartupError{Class: ClassInvalidArgs, Message: "ValueError: kv_offloading_size must be positive, got " + pyFloatRepr(size)}
	}
	if size == 0 {
		// A size of 0 given is no offloading, as frontier passes no flag for it (and none for
		// the backend); a backend alone is vLLM's case.
		if backend != "" && hasFlag && f.Default == nil && !c.given("kv_offloading_size") {
			// Up to v0.13 the backend turns offloading on and needs a size.
			return "", &StartupError{Class: ClassInvalidArgs, Message: "ValueError: You must set kv_offloading_size when kv_offloading_backend is set."}
		}
		return "", nil // no offloading; from v0.14 a backend alone is ignored
	}
	if backend == "" && hasFlag {
		backend, _ = f.Default.(string)
	}
	return backend, nil
}

// sizeOffload sizes the CPU tier of a configuration whose options offloadArgs passed: its
// blocks, the bytes one block moves over each GPU's host link, and the pinned host memory,
// which must fit in the host's RAM. layerPages is one block of the GPU cache on one GPU;
// fullGroups the GPU cache's full-attention groups (a block of the engine is one page in
// each).
func sizeOffload(c EngineConfig, sku hw.SKU, st *Startup, layerPages float64, fullGroups int) error {
	backend, err := offloadArgs(c)
	if err != nil || c.KVOffloadingSize == 0 {
		return err
	}
	size := c.KVOffloadingSize
	if backend == "" {
		// Up to v0.13 the size alone offloads nothing: _post_init_kv_transfer_config returns
		// when no backend is set.
		st.Warnings = append(st.Warnings, "kv_offloading_size is set without kv_offloading_backend: vLLM "+c.Version().Name+" offloads the KV cache only when both are given, so nothing is offloaded")
		return nil
	}
	ranks := float64(c.TensorParallelSize * c.PipelineParallelSize)
	blockBytes := layerPages * float64(max(fullGroups, 1)) // one engine block on one GPU
	blocks := int(size * gib / ranks / blockBytes)
	pinned := size * float64(max(c.DataParallelSize, 1))
	if h := sku.Host; h.MemoryGiB > 0 && pinned > h.MemoryGiB {
		per := ""
		if c.DataParallelSize > 1 {
			per = fmt.Sprintf(" (%g GiB for each of %d data-parallel engines)", size, c.DataParallelSize)
		}
		return &StartupError{Class: ClassOOM, HostMemory: true, Message: fmt.Sprintf("RuntimeError: CUDA error: out of memory (pinning %.1f GiB of host memory for the KV offloading buffer%s: the %s host, %s, has %.0f GiB of RAM; lower kv_offloading_size)",
			pinned, per, sku.Name, h.System, h.MemoryGiB)}
	}
	if blocks < 1 {
		return &StartupError{Class: ClassInvalidArgs, Message: fmt.Sprintf("ValueError: kv_offloading_size %s GiB holds no KV block of %.2f MiB per rank", pyFloatRepr(size), blockBytes/(1<<20))}
	}
	st.OffloadBackend = backend
	st.CPUBlocks = blocks
	st.OffloadBlockBytes = blockBytes
	st.PinnedHostGiB = pinned
	return nil
}

// cpuTier is one engine core's CPU tier of the KV cache: cached blocks by hash, least
// recently used first, and the host link's two directions.
type cpuTier struct {
	capacity    int
	secPerBlock float64 // one block over one GPU's host link, one direction
	index       map[uint64]int32
	nodes       []cpuBlock
	free        []int32
	head, tail  int32
	// d2hFree and h2dFree are when the link is next free in each direction: copies queue
	// behind each other.
	d2hFree, h2dFree float64
	// vLLM's external prefix cache counters, in tokens.
	queries, hits int
}

type cpuBlock struct {
	hash       uint64
	ready      float64 // when its copy from the GPU ends
	prev, next int32
}

// newCPUTier is the CPU tier a start-up sized, or nil without offloading.
func newCPUTier(st Startup, sku hw.SKU) *cpuTier {
	if st.CPUBlocks <= 0 {
		return nil
	}
	bps := sku.HostLinkBytesPerSecond()
	if bps <= 0 {
		bps = 63e9 * 0.85 // PCIe Gen5 x16, for a SKU outside the catalog
	}
	return &cpuTier{capacity: st.CPUBlocks, secPerBlock: st.OffloadBlockBytes / bps,
		index: map[uint64]int32{}, head: -1, tail: -1}
}

// fresh is an empty tier of the same size, for another engine core.
func (t *cpuTier) fresh() *cpuTier {
	if t == nil {
		return nil
	}
	return &cpuTier{capacity: t.capacity, secPerBlock: t.secPerBlock, index: map[uint64]int32{}, head: -1, tail: -1}
}

func (t *cpuTier) unlink(id int32) {
	b := &t.nodes[id]
	if b.prev >= 0 {
		t.nodes[b.prev].next = b.next
	} else {
		t.head = b.next
	}
	if b.next >= 0 {
		t.nodes[b.next].prev = b.prev
	} else {
		t.tail = b.prev
	}
	b.prev, b.next = -1, -1
}

func (t *cpuTier) pushBack(id int32) {
	b := &t.nodes[id]
	b.prev, b.next = t.tail, -1
	if t.tail >= 0 {
		t.nodes[t.tail].next = id
	} else {
		t.head = id
	}
	t.tail = id
}

// store copies a block the GPU computed by time at to the CPU tier, unless the tier has it.
func (t *cpuTier) store(h uint64, at float64) {
	if id, ok := t.index[h]; ok {
		t.unlink(id)
		t.pushBack(id)
		return
	}
	t.d2hFree = math.Max(t.d2hFree, at) + t.secPerBlock
	var id int32
	switch {
	case len(t.index) >= t.capacity:
		id = t.head // evict the least recently used
		t.unlink(id)
		delete(t.index, t.nodes[id].hash)
	case len(t.free) > 0:
		id = t.free[len(t.free)-1]
		t.free = t.free[:len(t.free)-1]
	default:
		id = int32(len(t.nodes))
		t.nodes = append(t.nodes, cpuBlock{})
	}
	t.nodes[id] = cpuBlock{hash: h, ready: t.d2hFree, prev: -1, next: -1}
	t.index[h] = id
	t.pushBack(id)
}

// has reports whether the tier holds a block whose copy had ended by now, and marks it used.
func (t *cpuTier) has(h uint64, now float64) bool {
	id, ok := t.index[h]
	if !ok || t.nodes[id].ready > now {
		return false
	}
	t.unlink(id)
	t.pushBack(id)
	return true
}

// load copies n blocks back to the GPU from time now and returns when the copy ends.
func (t *cpuTier) load(n int, now float64) float64 {
	t.h2dFree = math.Max(t.h2dFree, now) + float64(n)*t.secPerBlock
	return t.h2dFree
}

// extend counts the blocks of a waiting sequence that follow its GPU cache hit of gpuHit
// blocks and that the CPU tier holds, leaving at least one token to compute, as the
// connector's get_num_new_matched_tokens does.
func (e *engine) extend(s *seq, gpuHit int, now float64) int {
	limit := (s.prompt + s.generated - 1) / e.cfg.BlockSize
	n := 0
	for k := gpuHit; k < limit; k++ {
		h, _ := e.blockHash(s, k)
		if !e.off.has(h, now) {
			break
		}
		n++
	}
	return n
}

// loadWait is, when nothing could be scheduled, how long until the first sequence waiting
// for a load from the CPU tier is ready; 0 when none waits.
func (e *engine) loadWait(now float64) float64 {
	first := math.Inf(1)
	for _, s := range e.running {
		if s.loadUntil > now {
			first = math.Min(first, s.loadUntil)
		}
	}
	if math.IsInf(first, 1) {
		return 0
	}
	return first - now
}

// hitTokens is the tier's hits in tokens; 0 without a tier.
func (t *cpuTier) hitTokens() int {
	if t == nil {
		return 0
	}
	return t.hits
}

// queryTokens is the tokens looked up in the tier; 0 without a tier.
func (t *cpuTier) queryTokens() int {
	if t == nil {
		return 0
	}
	return t.queries
}
