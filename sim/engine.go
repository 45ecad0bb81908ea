package sim

import (
	"github.com/frontier-llm/frontier/hw"
	"github.com/frontier-llm/frontier/workload"
)

// seq is one request inside the engine.
type seq struct {
	id        int
	prompt    int // prompt tokens
	maxOut    int // tokens to generate
	class     int // the driver's class index
	arrival   float64
	computed  int // tokens whose KV is in the cache
	generated int
	// remote is how many prompt tokens' KV a disaggregated deployment's decode instance has
	// read from the prefill instance before its first step (disagg.go); 0 otherwise.
	remote int
	// held is, for each of the sequence's computed full blocks from its start, the cached
	// block it references, or -1 for a block it holds privately (its content was already
	// cached in another block when it was computed).
	held   []int32
	blocks int // private KV blocks held beyond held: the partial block and blocks ahead
	// swBlocks are the blocks held in the sliding-window KV cache groups: those the window
	// still covers and those ahead.
	swBlocks int
	// freed is held as it was when the sequence last released its blocks: where a recompute
	// after a preemption finds its own blocks (which no other sequence can share, so they
	// are not in the hash table) if they are still cached.
	freed []int32
	// The content of the sequence's full blocks, as the block hashes vLLM chains over the
	// preceding tokens: hashes for its first blocks (the server's prompts, hashed from their
	// tokens), then prefixBlocks blocks of a shared prefix derived from prefixSeed (the
	// estimator's classes), then blocks of its own.
	hashes       []uint64
	prefixSeed   uint64
	prefixBlocks int
	// A turn of a conversation: its blocks after the prefix are the conversation's history,
	// derived from convSeed, which the conversation's next turn starts with; convLen is how
	// many of its tokens the next turn repeats (-1: all of them, the reply included).
	convSeed  uint64
	convLen   int
	ownSeed   uint64
	scheduled bool // scheduled at least once
	// loadUntil is when the blocks a load from the CPU tier brings back are on the GPU: the
	// sequence holds them and waits until then (offload.go).
	loadUntil float64
	firstSch  float64
	done      bool
	// owner is the driver's handle for the request (an index or a server-side stream).
	owner int
}

// kvBlock is a computed full block in the prefix cache: held by refs sequences, or, when
// refs is 0, free but still cached, in the LRU list that eviction takes from the front.
type kvBlock struct {
	hash       uint64 // 0 once evicted
	refs       int32
	prev, next int32 // the LRU list, while refs is 0
	indexed    bool  // in the hash table: content other sequences can share
}

// tokenEvent is one token sampled for a sequence during a step.
type tokenEvent struct {
	s        *seq
	finished bool
}

// engine is vLLM V1's scheduler over a paged KV cache, with the step-time model. It holds no
// clock: step says how long a step takes, and the driver (the estimator's event loop or the
// server's real-time loop) advances time.
type engine struct {
	cfg      EngineConfig
	st       Startup
	perf     *perfModel
	totalBlk int
	usedBlk  int // private blocks plus cached blocks, held or free
	// Sliding-window KV cache groups (vLLM's hybrid KV cache manager): the window, and the
	// groups of sliding-window and of full-attention layers. A block here is one block in
	// every full-attention group; a sequence's sliding-window blocks are counted in it.
	swWin, swGroups, fullGroups int
	running                     []*seq
	queue                       []*seq // waiting, FIFO from qhead
	qhead                       int
	preempted                   []*seq // waiting at the front of the queue, last in first out

	// The prefix cache: computed full blocks by hash; cached blocks nobody holds are free,
	// least recently freed first, and evicted when new blocks are needed.
	cache      []kvBlock
	cacheIdx   map[uint64]int32
	cacheSlots []int32 // unused indices of cache
	lruHead    int32
	lruTail    int32
	cachedFree int // cached blocks nobody holds (counted in usedBlk)
	nextSeed   uint64

	// Counters, as vLLM's /metrics has them.
	preemptions    int
	prefixQueries  int
	prefixHits     int
	promptTokens   int
	generatedTotal int

	// off is the CPU tier of the KV cache (kv_offloading_size), nil without offloading.
	off *cpuTier

	// ranks are the engine cores of a data-parallel deployment, this one first; nil
	// without data parallelism (see dataParallel).
	ranks []*engine
	// pd is a disaggregated deployment's pools, held by its first engine core; nil when
	// aggregated.
	pd *disagg

	events []tokenEvent // reused between steps
	sched  []schedItem
	hits   []int32 // reused by the prefix-cache lookup
	arena  []int32 // where sequences' held slices are cut from
}

type schedItem struct {
	s *seq
	n int
}

// newEngine checks the configuration and builds the engine.
func newEngine(arch Arch, sku hw.SKU, cfg EngineConfig) (*engine, error) {
	return newEngineWith(arch, sku, cfg, defaultPhysics)
}

// newEngineWith is newEngine with the step-time model's fitted constants given.
func newEngineWith(arch Arch, sku hw.SKU, cfg EngineConfig, ph physics) (*engine, error) {
	st, err := CheckStartup(arch, sku, cfg)
	if err != nil {
		return nil, err
	}
	full := max(st.KVFullGroups, 1)
	return &engine{
		off:        newCPUTier(st, sku),
		cfg:        st.Config,
		st:         st,
		perf:       newPerfModelWith(arch, sku, st, ph),
		totalBlk:   st.NumGPUBlocks / full,
		swWin:      st.SlidingWindow,
		swGroups:   st.KVWindowGroups,
		fullGroups: full,
		cacheIdx:   map[uint64]int32{},
		lruHead:    -1,
		lruTail:    -1,
	}, nil
}

// mix is SplitMix64's finaliser: a block hash from a seed and a block index.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// sharedPrefix gives a sequence a class's shared prompt prefix of tokens tokens, the one of
// prefix group group: its whole blocks have the same content in every request of the class
// that starts with that prefix.
func (e *engine) sharedPrefix(s *seq, class string, group, tokens int) {
	s.prefixSeed = mix(workload.PrefixSeed(class, group) ^ uint64(tokens)<<32)
	s.prefixBlocks = min(tokens, s.prompt) / e.cfg.BlockSize
}

// blockHash is the hash of a sequence's k-th full block, and whether other sequences can
// have the same block.
func (e *engine) blockHash(s *seq, k int) (uint64, bool) {
	switch {
	case k < len(s.hashes):
		return s.hashes[k], true
	case k < s.prefixBlocks:
		return mix(s.prefixSeed + uint64(k)), true
	case s.convSeed != 0 && (s.convLen < 0 || (k+1)*e.cfg.BlockSize <= s.convLen):
		return mix(s.convSeed + uint64(k)), true
	}
	return mix(s.ownSeed + uint64(k)), false
}

// add puts a request in the waiting queue.
func (e *engine) add(s *seq) {
	e.nextSeed++
	s.ownSeed = mix(e.nextSeed<<32 | 0x5eed)
	e.queue = append(e.queue, s)
}

func (e *engine) waiting() int { return len(e.queue) - e.qhead + len(e.preempted) }

func (e *engine) idle() bool { return len(e.running) == 0 && e.waiting() == 0 }

// kvUsage is the fraction of KV blocks in use, as vllm:kv_cache_usage_perc (cached prefix
// blocks nobody references count as free).
func (e *engine) kvUsage() float64 {
	if e.totalBlk == 0 {
		return 0
	}
	return float64(e.usedBlk-e.cachedFree) / float64(e.totalBlk)
}

// windowBlocks is how many blocks a sequence with computed tokens holds in its sliding-window
// groups once it has slots for upto tokens: from the block of the oldest token its window
// still needs (vLLM's SlidingWindowManager frees the blocks before it, remove_skipped_blocks
// with max(0, computed − window + 1) skipped tokens) to the block of the last slot.
func (e *engine) windowBlocks(computed, upto int) int {
	if e.swGroups == 0 {
		return 0
	}
	bs := e.cfg.BlockSize
	n := ceilDiv(upto, bs) - max(0, computed-e.swWin+1)/bs
	return ceilDiv(e.swGroups*max(n, 0), e.fullGroups)
}

// allocate makes the sequence hold enough blocks for upto computed tokens, evicting free
// cached blocks when needed; sliding-window blocks the window has left are freed first. It
// reports false when the blocks are not there.
func (e *engine) allocate(s *seq, upto int) bool {
	bs := e.cfg.BlockSize
	need := max((upto+bs-1)/bs-len(s.held)-s.blocks, 0)
	sw := e.windowBlocks(s.computed, upto) - s.swBlocks
	if sw < 0 {
		s.swBlocks += sw
		e.usedBlk += sw
		sw = 0
	}
	if need+sw == 0 {
		return true
	}
	if e.totalBlk-e.usedBlk+e.cachedFree < need+sw {
		return false
	}
	for e.totalBlk-e.usedBlk < need+sw {
		e.evictOne()
	}
	s.blocks += need
	s.swBlocks += sw
	e.usedBlk += need + sw
	return true
}

// evictOne drops the least recently freed cached block.
func (e *engine) evictOne() {
	id := e.lruHead
	e.lruRemove(id)
	b := &e.cache[id]
	if b.indexed && e.cacheIdx[b.hash] == id {
		delete(e.cacheIdx, b.hash)
	}
	b.hash = 0
	e.cacheSlots = append(e.cacheSlots, id)
	e.usedBlk--
	e.cachedFree--
}

func (e *engine) lruRemove(id int32) {
	b := &e.cache[id]
	if b.prev >= 0 {
		e.cache[b.prev].next = b.next
	} else {
		e.lruHead = b.next
	}
	if b.next >= 0 {
		e.cache[b.next].prev = b.prev
	} else {
		e.lruTail = b.prev
	}
	b.prev, b.next = -1, -1
}

func (e *engine) lruPush(id int32) {
	b := &e.cache[id]
	b.prev, b.next = e.lruTail, -1
	if e.lruTail >= 0 {
		e.cache[e.lruTail].next = id
	} else {
		e.lruHead = id
	}
	e.lruTail = id
}

// lookup finds the longest run of a waiting sequence's leading full blocks that are cached,
// leaving at least one token to compute, in e.hits.
func (e *engine) lookup(s *seq) []int32 {
	e.hits = e.hits[:0]
	if !e.cfg.EnablePrefixCaching {
		return e.hits
	}
	limit := (s.prompt + s.generated - 1) / e.cfg.BlockSize
	for k := 0; k < limit; k++ {
		h, shared := e.blockHash(s, k)
		var id int32 = -1
		if shared {
			if i, ok := e.cacheIdx[h]; ok {
				id = i
			}
		} else if k < len(s.freed) && s.freed[k] >= 0 && e.cache[s.freed[k]].hash == h {
			id = s.freed[k]
		}
		if id < 0 {
			break
		}
		e.hits = append(e.hits, id)
	}
	return e.hits
}

// heldSlice returns an empty slice with room for n block indices.
func (e *engine) heldSlice(n int) []int32 {
	if len(e.arena)+n > cap(e.arena) {
		e.arena = make([]int32, 0, max(n, 8192))
	}
	l := len(e.arena)
	e.arena = e.arena[:l+n]
	return e.arena[l : l : l+n]
}

// commit puts a sequence's newly computed full blocks in the prefix cache, and with
// offloading copies them to the CPU tier from time at, when they are computed.
func (e *engine) commit(s *seq, at float64) {
	if !e.cfg.EnablePrefixCaching {
		return
	}
	for k := len(s.held); k < s.computed/e.cfg.BlockSize; k++ {
		h, shared := e.blockHash(s, k)
		s.blocks--
		if _, ok := e.cacheIdx[h]; shared && ok {
			s.held = append(s.held, -1) // the content is cached in another block already
			continue
		}
		var id int32
		if n := len(e.cacheSlots); n > 0 {
			id = e.cacheSlots[n-1]
			e.cacheSlots = e.cacheSlots[:n-1]
		} else {
			if cap(e.cache) == 0 {
				e.cache = make([]kvBlock, 0, e.totalBlk)
			}
			id = int32(len(e.cache))
			e.cache = append(e.cache, kvBlock{})
		}
		e.cache[id] = kvBlock{hash: h, refs: 1, prev: -1, next: -1, indexed: shared}
		if shared {
			e.cacheIdx[h] = id
		}
		s.held = append(s.held, id)
		if e.off != nil {
			e.off.store(h, at)
		}
	}
}

// release frees what a sequence holds. Its cached blocks stay cached, last block first in
// the eviction order, as vLLM frees them.
func (e *engine) release(s *seq) {
	for i := len(s.held) - 1; i >= 0; i-- {
		id := s.held[i]
		if id < 0 {
			e.usedBlk--
			continue
		}
		b := &e.cache[id]
		b.refs--
		if b.refs == 0 {
			e.lruPush(id)
			e.cachedFree++
		}
	}
	s.held, s.freed = s.freed[:0], s.held
	e.usedBlk -= s.blocks + s.swBlocks
	s.blocks, s.swBlocks = 0, 0
}

// preempt stops the last running sequence, frees its blocks and puts it at the front of the
// waiting queue to be recomputed; its full blocks stay cached until evicted, so the
// recompute skips what survived.
func (e *engine) preempt() *seq {
	v := e.running[len(e.running)-1]
	e.running = e.running[:len(e.running)-1]
	e.release(v)
	v.computed, v.loadUntil = 0, 0
	e.preempted = append(e.preempted, v)
	e.preemptions++
	return v
}

// newTokens is how many tokens a sequence would compute next, before the budget.
func (e *engine) newTokens(s *seq) int {
	n := s.prompt + s.generated - s.computed
	if t := e.cfg.LongPrefillTokenThreshold; t > 0 && n > t {
		n = t
	}
	return n
}

// step schedules one engine step at time now, as vLLM V1's scheduler does, and returns its
// modelled duration and the tokens it samples (valid until the next call). A step with
// nothing to do returns 0.
func (e *engine) step(now float64) (float64, []tokenEvent) {
	budget := e.cfg.MaxNumBatchedTokens
	e.sched = e.sched[:0]
	var load stepLoad
	schedule := func(s *seq, n int) {
		e.sched = append(e.sched, schedItem{s, n})
		budget -= n
		load.tokens += n
		c := float64(s.computed)
		load.kvRead += c + float64(n)
		load.attn += float64(n) * (c + float64(n+1)/2)
		if s.computed+n == s.prompt+s.generated {
			load.samples++
		}
		if w := e.swWin; w > 0 {
			load.swKVRead += float64(min(s.computed, w-1) + n)
			load.swAttn += windowPairs(s.computed, n, w)
		}
	}

	// Running requests first, in order; preempt from the back when blocks run out.
	preempted := false
	for i := 0; i < len(e.running) && budget > 0; i++ {
		s := e.running[i]
		if s.loadUntil > now {
			continue // its blocks are still on their way from the CPU tier
		}
		n := min(e.newTokens(s), budget)
		if n <= 0 {
			continue
		}
		ok := true
		for !e.allocate(s, s.computed+n) {
			preempted = true
			if v := e.preempt(); v == s {
				ok = false
				break
			}
		}
		if !ok {
			break
		}
		schedule(s, n)
	}

	// Then waiting requests, only when nothing was preempted in this step.
	for !preempted && budget > 0 && len(e.running) < e.cfg.MaxNumSeqs && e.waiting() > 0 {
		var s *seq
		fromPreempted := len(e.preempted) > 0
		if fromPreempted {
			s = e.preempted[len(e.preempted)-1]
		} else {
			s = e.queue[e.qhead]
		}
		// Prefix-cache lookup: the leading full blocks computed by the end of the previous
		// step, held by running requests or free.
		hits := e.lookup(s)
		hit := len(hits) * e.cfg.BlockSize
		// Then the CPU tier: the blocks after the GPU's hit that it holds are loaded (not
		// when a prefill instance computed more of the prompt than the GPU's hit).
		ext := 0
		if e.off != nil && e.cfg.EnablePrefixCaching && s.remote <= hit {
			ext = e.extend(s, len(hits), now) * e.cfg.BlockSize
		}
		// start: the tokens whose KV is there, cached, loaded from the CPU tier or read from a
		// prefill instance.
		start := max(hit+ext, s.remote)
		n := s.prompt + s.generated - start
		if t := e.cfg.LongPrefillTokenThreshold; t > 0 && n > t {
			n = t
		}
		if n > budget {
			if !e.cfg.EnableChunkedPrefill {
				break
			}
			n = budget
		}
		// Free cached blocks the hit takes are no longer free.
		revive := 0
		for _, id := range hits {
			if e.cache[id].refs == 0 {
				revive++
			}
		}
		bs := e.cfg.BlockSize
		if need := (start+n+bs-1)/bs - len(hits) + e.windowBlocks(start, start+n); e.totalBlk-e.usedBlk+e.cachedFree-revive < need {
			break
		}
		for _, id := range hits {
			b := &e.cache[id]
			if b.refs == 0 {
				e.lruRemove(id)
				e.cachedFree--
			}
			b.refs++
		}
		if s.held == nil && e.cfg.EnablePrefixCaching {
			s.held = e.heldSlice((s.prompt + s.maxOut) / bs)
		}
		s.held = append(s.held, hits...)
		s.computed = max(hit, s.remote)
		e.allocate(s, start+n)
		s.remote = 0 // a recompute after a preemption computes the prompt here
		if ext > 0 {
			// The loaded blocks are the sequence's, cached on the GPU as computed ones.
			s.computed += ext
			e.commit(s, now)
			s.loadUntil = e.off.load(ext/bs, now)
		}
		if fromPreempted {
			e.preempted = e.preempted[:len(e.preempted)-1]
		} else {
			e.queue[e.qhead] = nil
			e.qhead++
			if e.qhead > 1024 && e.qhead*2 > len(e.queue) {
				e.queue = append(e.queue[:0], e.queue[e.qhead:]...)
				e.qhead = 0
			}
		}
		if e.cfg.EnablePrefixCaching {
			e.prefixQueries += s.prompt + s.generated
			e.prefixHits += hit
			if e.off != nil {
				e.off.queries += s.prompt + s.generated
				e.off.hits += ext
			}
		}
		if !s.scheduled {
			s.scheduled = true
			s.firstSch = now
		}
		e.running = append(e.running, s)
		if ext > 0 {
			continue // its prefill waits for the load
		}
		schedule(s, n)
	}

	if len(e.sched) == 0 {
		// Only loads from the CPU tier are under way: the step waits for the first.
		return e.loadWait(now), nil
	}
	dt := e.perf.step(load)

	// Apply the step: KV computed, tokens sampled, finished requests freed.
	e.events = e.events[:0]
	for _, it := range e.sched {
		s := it.s
		if s.computed < s.prompt {
			e.promptTokens += min(it.n, s.prompt-s.computed)
		}
		s.computed += it.n
		e.commit(s, now+dt)
		if s.computed == s.prompt+s.generated {
			s.generated++
			e.generatedTotal++
			fin := s.generated >= s.maxOut
			e.events = append(e.events, tokenEvent{s, fin})
			if fin {
				e.finish(s)
			}
		}
	}
	e.compact()
	return dt, e.events
}

// finish frees a finished or aborted sequence; compact removes it from the running list.
func (e *engine) finish(s *seq) {
	s.done = true
	e.release(s)
}

// abort stops a sequence wherever it is (a cancelled or timed-out request).
func (e *engine) abort(s *seq) {
	if s.done {
		return
	}
	e.finish(s)
	e.compact()
	e.dropWaiting(s)
}

func (e *engine) dropWaiting(s *seq) {
	for i := e.qhead; i < len(e.queue); i++ {
		if e.queue[i] == s {
			copy(e.queue[i:], e.queue[i+1:])
			e.queue = e.queue[:len(e.queue)-1]
			return
		}
	}
	for i, p := range e.preempted {
		if p == s {
			e.preempted = append(e.preempted[:i], e.preempted[i+1:]...)
			return
		}
	}
}

func (e *engine) compact() {
	k := 0
	for _, s := range e.running {
		if !s.done {
			e.running[k] = s
			k++
		}
	}
	clear(e.running[k:])
	e.running = e.running[:k]
}
