package sim

import (
	"sync"
	"time"

	"github.com/frontier-llm/frontier/workload"
)

// runBuffers are the large slices one estimator run fills and drops: the records, the
// sequences, every record's chunk times and the prefix cache's blocks. The estimator runs
// thousands of configurations a minute, each a few megabytes of these; runScratch hands them
// from one run to the next instead of the garbage collector clearing and the runtime
// faulting in fresh pages every time.
type runBuffers struct {
	recs   []workload.Record
	seqs   []seq
	chunks []time.Duration
	cache  []kvBlock
}

var runScratch = sync.Pool{New: func() any { return new(runBuffers) }}

// getRunBuffers returns buffers with room for n records and sequences and the given number
// of chunk times; the sequences are zero, the other slices empty.
func getRunBuffers(n, chunks int) *runBuffers {
	b := runScratch.Get().(*runBuffers)
	if cap(b.recs) < n {
		b.recs = make([]workload.Record, 0, n)
	}
	if cap(b.seqs) < n {
		b.seqs = make([]seq, n)
	} else {
		b.seqs = b.seqs[:n]
		clear(b.seqs)
	}
	if cap(b.chunks) < chunks {
		b.chunks = make([]time.Duration, chunks)
	} else {
		b.chunks = b.chunks[:chunks]
	}
	b.recs, b.cache = b.recs[:0], b.cache[:0]
	return b
}

// recycle gives a finished run's buffers back to runScratch, with the prefix-cache blocks
// of its engine cores; neither the run nor the engine may be used afterwards.
func (e *engine) recycle(run *simRun) {
	b := run.buffers
	if b == nil {
		return
	}
	clear(b.recs) // the records' strings and chunk windows
	b.recs = b.recs[:0]
	for _, re := range e.dataParallel() {
		if cap(re.cache) > cap(b.cache) {
			b.cache = re.cache[:0]
		}
		re.cache = nil
	}
	run.buffers, run.state = nil, nil
	runScratch.Put(b)
}
