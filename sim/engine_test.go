package sim

import "testing"

// schedEngine is Llama-3.1-8B on an H100 with a KV cache of blocks blocks of 16 tokens, as
// long a context as they hold, and a token budget of 512 a step.
func schedEngine(t *testing.T, blocks int) *engine {
	t.Helper()
	cfg := DefaultConfig()
	cfg.MaxModelLen = blocks * 16
	cfg.MaxNumBatchedTokens = 512
	cfg.MaxNumSeqs = 16
	cfg.EnablePrefixCaching = false
	cfg.NumGPUBlocksOverride = blocks
	e, err := newEngine(mustArch(t, "llama-3.1-8b"), mustSKU(t, "h100-sxm"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// scheduled is how many tokens the last step gave each sequence (0 when none).
func scheduled(e *engine, s *seq) int {
	for _, it := range e.sched {
		if it.s == s {
			return it.n
		}
	}
	return 0
}

// TestAdmissionNeedsOnlyTheFirstChunksBlocks pins the admission rule of vLLM V1's scheduler
// in v0.10 to v0.13 (vllm/v1/core/sched/scheduler.py, Scheduler.schedule): a waiting request
// is admitted when KVCacheManager.allocate_slots finds blocks for the tokens it computes in
// this step, not for its whole prompt. A long prompt therefore starts prefilling, chunk by
// chunk inside the running requests' decode steps, as soon as a chunk's blocks are free; when
// even the chunk's blocks are missing it waits and the step is decode only.
func TestAdmissionNeedsOnlyTheFirstChunksBlocks(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		running  int // prompt of the request decoding when the long one arrives
		wantLong int // tokens the long prompt gets in the next step
	}{
		// Of 100 blocks the decoding request holds 31; the long prompt needs 75 of the 69
		// free, its first chunk (511 tokens beside the decode) 32.
		{"the chunk fits, the prompt does not", 480, 511},
		// The decoding request holds 69 blocks: 31 free, one short of the chunk.
		{"not even the chunk fits", 1100, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := schedEngine(t, 100)
			short := &seq{prompt: tt.running, maxOut: 200}
			e.add(short)
			for short.generated == 0 {
				if dt, _ := e.step(0); dt == 0 {
					t.Fatal("the first request's prefill stalled")
				}
			}
			long := &seq{prompt: 1200, maxOut: 10}
			e.add(long)
			if dt, _ := e.step(0); dt == 0 {
				t.Fatal("the step after the long prompt arrived scheduled nothing")
			}
			if got := scheduled(e, short); got != 1 {
				t.Errorf("decoding request got %d tokens, want 1", got)
			}
			if got := scheduled(e, long); got != tt.wantLong {
				t.Errorf("long prompt got %d tokens, want %d", got, tt.wantLong)
			}
			if e.preemptions != 0 {
				t.Errorf("%d preemptions, want none", e.preemptions)
			}
			if tt.wantLong == 0 && e.waiting() != 1 {
				t.Errorf("%d waiting, want the long prompt", e.waiting())
			}
			drain(t, e)
		})
	}
}
