package sim

import "github.com/frontier-llm/frontier/hw"

// This file is data parallelism (vLLM's --data-parallel-size): N engine cores, each with its
// own scheduler, KV cache and tensor_parallel_size GPUs, behind one API server whose load
// balancer hands each request to one of them.

// newDataParallel builds the configuration's engine cores: one, or data_parallel_size of
// them. The first is returned; it holds the others (dataParallel).
func newDataParallel(arch Arch, sku hw.SKU, cfg EngineConfig) (*engine, error) {
	e, err := newEngine(arch, sku, cfg)
	if err != nil {
		return nil, err
	}
	n := max(e.cfg.DataParallelSize, 1)
	if n == 1 {
		return e, nil
	}
	e.ranks = make([]*engine, n)
	e.ranks[0] = e
	for r := 1; r < n; r++ {
		// Every rank has the same configuration, so the same start-up; only its state is
		// its own.
		o := *e
		o.cacheIdx, o.cache, o.cacheSlots, o.ranks = map[uint64]int32{}, nil, nil, nil
		o.running, o.queue, o.preempted, o.events, o.sched, o.hits, o.arena = nil, nil, nil, nil, nil, nil, nil
		o.nextSeed = uint64(r) << 40 // sequences' own blocks differ between ranks
		o.off = e.off.fresh()        // each engine core pins a CPU tier of its own
		e.ranks[r] = &o
	}
	return e, nil
}

// dataParallel returns the engine cores of e's deployment: e alone without data parallelism,
// every instance's when disaggregated (prefill instances first).
func (e *engine) dataParallel() []*engine {
	if e.pd != nil {
		return e.pd.all
	}
	if len(e.ranks) > 0 {
		return e.ranks
	}
	return []*engine{e}
}

// balance picks the engine core for a new request as vLLM's data-parallel load balancer does
// (DPLBAsyncMPClient.get_core_engine_for_request in vllm/v1/engine/core_client.py): the
// lowest score waiting × 4 + running, the first such core on a tie. vLLM reads the counts
// from the coordinator's periodic stats and adds its own assignments in between; the
// simulator reads them live.
func balance(ranks []*engine) int {
	best, bestScore := 0, -1
	for r, re := range ranks {
		score := 4*re.waiting() + len(re.running)
		if bestScore < 0 || score < bestScore {
			best, bestScore = r, score
		}
	}
	return best
}
