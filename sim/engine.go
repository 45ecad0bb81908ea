package sim

import (
	"github.com/frontier-llm/frontier/hw"
)

// seq is one request inside the engine.
type seq struct {
	id        int
	prompt    int // prompt tokens
	maxOut    int // tokens to generate
	prefix    int // index into engine.prefixes, or -1
	class     int // the driver's class index
	arrival   float64
	computed  int // tokens whose KV is in the cache
	generated int
	blocks    int // private KV blocks held
	shared    int // prefix-cache blocks used (held through a reference)
	// cachedOwn is, after a preemption, how many of the sequence's own full blocks are still
	// in the prefix cache (freed but not yet evicted), from its start.
	cachedOwn int
	// wantShared is the number of shared-prefix blocks the sequence's own cached blocks
	// follow; they are only reachable while that prefix is resident.
	wantShared int
	scheduled  bool // scheduled at least once
	firstSch   float64
	done       bool
	// owner is the driver's handle for the request (an index or a server-side stream).
	owner int
}

// prefixEntry is one shared prompt prefix in the prefix cache.
type prefixEntry struct {
	blocks   int // full blocks of the prefix
	resident bool
	refs     int
}

// evictItem is a run of freed but still cached blocks, in the order they were freed: vLLM
// evicts the least recently freed block first.
type evictItem struct {
	s      *seq // a preempted sequence's own blocks, or nil
	prefix int  // a shared prefix with no references, when s is nil
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
	cfg        EngineConfig
	st         Startup
	perf       *perfModel
	totalBlk   int
	usedBlk    int // private blocks plus resident prefixes
	running    []*seq
	queue      []*seq // waiting, FIFO from qhead
	qhead      int
	preempted  []*seq // waiting at the front of the queue, last in first out
	prefixes   []prefixEntry
	prefixKeys map[prefixKey]int
	evictable  []evictItem // FIFO from ehead
	ehead      int
	cachedFree int // blocks in usedBlk that are cached but evictable

	// Counters, as vLLM's /metrics has them.
	preemptions    int
	prefixQueries  int
	prefixHits     int
	promptTokens   int
	generatedTotal int

	events []tokenEvent // reused between steps
	sched  []schedItem
}

type prefixKey struct {
	class  string
	tokens int
}

type schedItem struct {
	s *seq
	n int
}

// newEngine checks the configuration and builds the engine.
func newEngine(arch Arch, sku hw.SKU, cfg EngineConfig) (*engine, error) {
	st, err := CheckStartup(arch, sku, cfg)
	if err != nil {
		return nil, err
	}
	return &engine{
		cfg:        st.Config,
		st:         st,
		perf:       newPerfModel(arch, sku, st),
		totalBlk:   st.NumGPUBlocks,
		prefixKeys: map[prefixKey]int{},
	}, nil
}

// prefixID returns the prefix-cache entry of a class's shared prefix, or -1 when there is
// nothing to share.
func (e *engine) prefixID(class string, tokens int) int {
	if !e.cfg.EnablePrefixCaching || tokens < e.cfg.BlockSize {
		return -1
	}
	k := prefixKey{class, tokens}
	if id, ok := e.prefixKeys[k]; ok {
		return id
	}
	id := len(e.prefixes)
	e.prefixes = append(e.prefixes, prefixEntry{blocks: tokens / e.cfg.BlockSize})
	e.prefixKeys[k] = id
	return id
}

// add puts a request in the waiting queue.
func (e *engine) add(s *seq) {
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

// allocate makes the sequence hold enough blocks for upto computed tokens, evicting
// unreferenced cached prefixes when needed. It reports false when the blocks are not there.
func (e *engine) allocate(s *seq, upto int) bool {
	bs := e.cfg.BlockSize
	need := (upto+bs-1)/bs - s.shared - s.blocks
	if need <= 0 {
		return true
	}
	if e.totalBlk-e.usedBlk+e.cachedFree < need {
		return false
	}
	for e.totalBlk-e.usedBlk < need {
		e.evict(need - (e.totalBlk - e.usedBlk))
	}
	s.blocks += need
	e.usedBlk += need
	return true
}

// evict frees up to n cached blocks, least recently freed first.
func (e *engine) evict(n int) {
	for n > 0 && e.ehead < len(e.evictable) {
		it := &e.evictable[e.ehead]
		if it.s != nil {
			k := min(n, it.s.cachedOwn)
			it.s.cachedOwn -= k
			e.usedBlk -= k
			e.cachedFree -= k
			n -= k
			if it.s.cachedOwn > 0 {
				return
			}
		} else if p := &e.prefixes[it.prefix]; p.resident && p.refs == 0 {
			p.resident = false
			e.usedBlk -= p.blocks
			e.cachedFree -= p.blocks
			n -= p.blocks
		}
		e.ehead++
	}
	if e.ehead > 1024 && e.ehead*2 > len(e.evictable) {
		e.evictable = append(e.evictable[:0], e.evictable[e.ehead:]...)
		e.ehead = 0
	}
}

// release frees what a sequence holds.
func (e *engine) release(s *seq) {
	e.usedBlk -= s.blocks
	s.blocks = 0
	if s.shared > 0 {
		p := &e.prefixes[s.prefix]
		p.refs--
		if p.refs == 0 {
			e.cachedFree += p.blocks
			e.evictable = append(e.evictable, evictItem{prefix: s.prefix})
		}
		s.shared = 0
	}
}

// preempt stops the last running sequence, frees its blocks and puts it at the front of the
// waiting queue to be recomputed.
func (e *engine) preempt() *seq {
	v := e.running[len(e.running)-1]
	e.running = e.running[:len(e.running)-1]
	if e.cfg.EnablePrefixCaching {
		// The full blocks stay cached until evicted; a recompute finds them again.
		v.cachedOwn = min(v.blocks, v.computed/e.cfg.BlockSize-v.shared)
		v.wantShared = v.shared
		v.blocks -= v.cachedOwn
		e.cachedFree += v.cachedOwn
		e.evictable = append(e.evictable, evictItem{s: v})
	}
	e.release(v)
	v.computed = 0
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
	}

	// Running requests first, in order; preempt from the back when blocks run out.
	preempted := false
	for i := 0; i < len(e.running) && budget > 0; i++ {
		s := e.running[i]
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
		// Prefix-cache lookup for a request that has nothing computed.
		hit, sharedHit, ownHit := 0, 0, 0
		bs := e.cfg.BlockSize
		if s.computed == 0 && e.cfg.EnablePrefixCaching {
			limit := (s.prompt + s.generated - 1) / bs // at least one token is computed
			if s.prefix >= 0 && e.prefixes[s.prefix].resident {
				sharedHit = min(e.prefixes[s.prefix].blocks, limit)
			}
			if s.cachedOwn > 0 && sharedHit == s.wantShared {
				ownHit = min(s.cachedOwn, limit-sharedHit)
			}
			hit = (sharedHit + ownHit) * bs
		}
		n := s.prompt + s.generated - s.computed - hit
		if t := e.cfg.LongPrefillTokenThreshold; t > 0 && n > t {
			n = t
		}
		if n > budget {
			if !e.cfg.EnableChunkedPrefill {
				break
			}
			n = budget
		}
		// Take the hits: referenced prefix blocks and reclaimed own blocks are no longer
		// evictable.
		takeHits := func(sign int) {
			if sharedHit > 0 {
				p := &e.prefixes[s.prefix]
				if sign > 0 && p.refs == 0 {
					e.cachedFree -= p.blocks
				}
				p.refs += sign
				if sign < 0 && p.refs == 0 {
					e.cachedFree += p.blocks
				}
				s.shared = max(sign, 0) * sharedHit
			}
			if ownHit > 0 {
				s.cachedOwn -= sign * ownHit
				s.blocks += sign * ownHit
				e.cachedFree -= sign * ownHit
			}
			s.computed = max(sign, 0) * hit
		}
		takeHits(1)
		if !e.allocate(s, s.computed+n) {
			takeHits(-1)
			break
		}
		// Own blocks beyond the hit are not reachable any more.
		if s.cachedOwn > 0 {
			e.usedBlk -= s.cachedOwn
			e.cachedFree -= s.cachedOwn
			s.cachedOwn = 0
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
		}
		if !s.scheduled {
			s.scheduled = true
			s.firstSch = now
		}
		e.running = append(e.running, s)
		schedule(s, n)
	}

	if len(e.sched) == 0 {
		return 0, nil
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
		e.cachePrefix(s)
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

// cachePrefix makes a sequence's computed shared prefix a cache entry the first time it is
// computed.
func (e *engine) cachePrefix(s *seq) {
	if s.prefix < 0 || s.shared > 0 {
		return
	}
	p := &e.prefixes[s.prefix]
	if p.resident || s.computed < p.blocks*e.cfg.BlockSize || s.blocks < p.blocks {
		return
	}
	p.resident = true
	p.refs++
	s.blocks -= p.blocks
	s.shared = p.blocks
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
	if s.cachedOwn > 0 {
		e.usedBlk -= s.cachedOwn
		e.cachedFree -= s.cachedOwn
		s.cachedOwn = 0
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
