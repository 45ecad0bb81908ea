package sim

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/frontier-llm/frontier/hw"
	"github.com/frontier-llm/frontier/workload"
)

// seriesInterval is how often, in simulated seconds, the estimator samples the engine's
// state for Measurement.Series; maxSeries caps the number of samples kept.
const (
	seriesInterval = 0.1
	maxSeries      = 200
)

// Estimate simulates the workload classes against one configuration, without HTTP: a
// discrete-event simulation of the engine, with each class's arrivals (open loop at the
// requests' due times, closed loop with a fixed number in flight, or all at once). Every
// request becomes a workload.Record as a client would have measured it, and
// workload.Aggregate turns them into the measurement, so simulated and measured metrics have
// one definition. The engine's own metrics (queue time, KV usage, preemptions, prefix-cache
// hit rate) and Series are filled in from the scheduler; the measurement's StartupWave says how
// much of the time to first token the requests sent at the start account for. A
// configuration that cannot start returns its *StartupError.
func Estimate(ctx context.Context, arch Arch, sku hw.SKU, cfg EngineConfig, classes []workload.Class, seed uint64) (*workload.Measurement, error) {
	e, err := newDataParallel(arch, sku, cfg)
	if err != nil {
		return nil, err
	}
	reqs, err := loadClasses(classes, seed)
	if err != nil {
		return nil, err
	}
	return e.simulate(ctx, classes, reqs)
}

// loadClasses draws every class's requests with seed.
func loadClasses(classes []workload.Class, seed uint64) ([][]workload.Request, error) {
	reqs := make([][]workload.Request, len(classes))
	for i, c := range classes {
		var err error
		if reqs[i], err = loadRequests(c, seed); err != nil {
			return nil, err
		}
	}
	return reqs, nil
}

// loadRequests draws a class's requests, as the load generator would send them.
func loadRequests(c workload.Class, seed uint64) ([]workload.Request, error) {
	r, err := workload.Load(c, seed)
	if err != nil {
		return nil, fmt.Errorf("workload %q: %w", c.Name, err)
	}
	return r, nil
}

// promptTokens is the prompt length the simulated server would count for a request, so that
// the estimate and a benchmark of `frontier sim serve` see the same prompts: one token per
// word of a text prompt, plus the chat template on the chat endpoint; synthetic prompts
// (rendered by the load generator as token ids or as that many words) have their intended
// length.
func promptTokens(req *workload.Request, endpoint string) int {
	chat := endpoint == workload.EndpointChat || len(req.Messages) > 0
	n := req.InputTokens
	switch {
	case len(req.Messages) > 0:
		n = 0
		for _, m := range req.Messages {
			n += chatTemplateTokens + len(strings.Fields(m.Content))
		}
		return n + generationPromptTokens
	case req.Prompt != "":
		n = max(len(strings.Fields(req.Prompt)), 1)
	}
	if chat {
		n += chatTemplateTokens + generationPromptTokens
	}
	return n
}

// arrival is a request due at a time.
type arrival struct {
	at    float64
	class int
	req   int
}

// simState is the estimator's bookkeeping.
type simState struct {
	classes []workload.Class
	reqs    [][]workload.Request
	recs    []workload.Record
	recIdx  [][]int // class, request → index in recs
	seqs    []seq
	next    []int // closed loop: next request (or conversation) to send, per class
	pending []arrival
	head    int
	// Classes of conversations: each conversation's turns (index ranges of reqs), and, per
	// turn, the tokens of the history it is sent with, as the server counts them (set when
	// the turn is due).
	convs [][][2]int
	hist  [][]int
}

func (e *engine) simulate(ctx context.Context, classes []workload.Class, reqs [][]workload.Request) (*workload.Measurement, error) {
	run, err := e.run(ctx, classes, reqs)
	if err != nil {
		return nil, err
	}
	m := e.measure(classes, run)
	e.recycle(run)
	return m, nil
}

// measure aggregates a run's records and adds the engine's own metrics.
func (e *engine) measure(classes []workload.Class, run *simRun) *workload.Measurement {
	m := workload.Aggregate(classes, run.state.recs, 0)
	m.Simulated = true
	m.Series = thin(run.series, maxSeries)
	e.engineMetrics(m, run.state, run.kvMax)
	return m
}

// simRun is what one discrete-event run leaves: the records and the engine's state.
type simRun struct {
	state  *simState
	series []workload.Sample
	kvMax  float64
	// buffers hold the state's records, sequences and chunk times (recycle).
	buffers *runBuffers
}

// run simulates the requests and returns their records.
func (e *engine) run(ctx context.Context, classes []workload.Class, reqs [][]workload.Request) (*simRun, error) {
	n, tokens := 0, 0
	for _, r := range reqs {
		n += len(r)
		for i := range r {
			tokens += r[i].OutputTokens
		}
	}
	buf := getRunBuffers(n, tokens+n)
	if len(e.ranks) <= 1 && e.cache == nil && cap(buf.cache) >= e.totalBlk {
		e.cache = buf.cache[:0]
	}
	s := &simState{classes: classes, reqs: reqs, recs: buf.recs, seqs: buf.seqs,
		recIdx: make([][]int, len(classes)), next: make([]int, len(classes))}
	// Every record's Chunks is a window of one buffer, sized for its output.
	chunkBuf := buf.chunks
	chunkOff := 0
	s.convs, s.hist = make([][][2]int, len(classes)), make([][]int, len(classes))
	for ci, c := range classes {
		s.recIdx[ci] = make([]int, len(reqs[ci]))
		if workload.IsConversations(reqs[ci]) {
			s.startConversations(ci)
			continue
		}
		switch c.Arrival.Kind {
		case workload.ArrivalConcurrency:
			k := max(c.Arrival.Concurrency, 1)
			for i := 0; i < k && i < len(reqs[ci]); i++ {
				s.pending = append(s.pending, arrival{0, ci, i})
			}
			s.next[ci] = min(k, len(reqs[ci]))
		case workload.ArrivalImmediate:
			for i := range reqs[ci] {
				s.pending = append(s.pending, arrival{0, ci, i})
			}
			s.next[ci] = len(reqs[ci])
		default:
			for i := range reqs[ci] {
				s.pending = append(s.pending, arrival{reqs[ci][i].At.Seconds(), ci, i})
			}
			s.next[ci] = len(reqs[ci])
		}
	}
	sort.SliceStable(s.pending, func(i, j int) bool { return s.pending[i].at < s.pending[j].at })

	var (
		now        float64
		series     []workload.Sample
		nextSample float64
		kvMax      float64
		measStart  = -1.0
		steps      int
	)
	seqN := 0
	// inbound are requests the API server has accepted and not yet handed to the engine
	// core, in order. The API server takes them one at a time (one process, one tokenizer
	// thread; docs/sim.md), apiIn each, so a burst queues there: apiFree is when it is
	// next free.
	var inbound []*seq
	inHead := 0
	// The data-parallel engine cores (one without data parallelism), each with its step in
	// flight: when it ends (-1: none) and the tokens it samples.
	ranks := e.dataParallel()
	stepEnd := make([]float64, len(ranks))
	stepEvents := make([][]tokenEvent, len(ranks))
	for r := range stepEnd {
		stepEnd[r] = -1
	}
	apiFree := 0.0
	for {
		if steps&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		steps++
		// Admit what has arrived.
		for s.head < len(s.pending) && s.pending[s.head].at <= now {
			a := s.pending[s.head]
			s.head++
			req := &reqs[a.class][a.req]
			in := promptTokens(req, classes[a.class].Endpoint)
			chat := classes[a.class].Endpoint == workload.EndpointChat
			if req.Turn > 0 {
				in = turnPromptTokens(req, chat, s.hist[a.class][a.req])
			}
			rec := workload.Record{Class: req.Class, Index: req.Index, Warmup: req.Warmup,
				Scheduled: req.At, Sent: dur(a.at), InputTokens: in}
			if !req.Warmup && measStart < 0 {
				measStart = a.at
			}
			ri := len(s.recs)
			s.recIdx[a.class][a.req] = ri
			if in >= e.cfg.MaxModelLen || in+req.OutputTokens > e.cfg.MaxModelLen {
				rec.Status, rec.ErrClass, rec.End = 400, workload.ErrHTTP, dur(a.at)
				rec.Err = contextLengthError(e.cfg.MaxModelLen, in, req.OutputTokens)
				rec.Conversation, rec.Turn = req.Conversation, req.Turn
				s.recs = append(s.recs, rec)
				s.ended(a.class, a.req, a.at, 0, false)
				continue
			}
			rec.Status = 200
			rec.Conversation, rec.Turn = req.Conversation, req.Turn
			out := max(req.OutputTokens, 1)
			rec.Chunks = chunkBuf[chunkOff:chunkOff:min(chunkOff+out, len(chunkBuf))]
			chunkOff += out
			s.recs = append(s.recs, rec)
			sq := &s.seqs[seqN]
			seqN++
			apiFree = math.Max(apiFree, a.at) + e.perf.apiIn
			*sq = seq{id: ri, prompt: in, maxOut: out, arrival: apiFree, owner: ri, class: a.class}
			if req.PrefixTokens > 0 {
				p := req.PrefixTokens
				if chat && req.Turn > 0 {
					p += chatTemplateTokens // the system message's template
				}
				e.sharedPrefix(sq, req.Class, req.PrefixGroup, p)
			}
			if req.Turn > 0 {
				e.conversation(sq, req, chat)
			}
			inbound = append(inbound, sq)
		}
		// The API server hands each request to the engine core its load balancer picks.
		for inHead < len(inbound) && inbound[inHead].arrival <= now {
			e.admit(ranks, inbound[inHead])
			inbound[inHead] = nil
			inHead++
		}
		if inHead == len(inbound) {
			inbound, inHead = inbound[:0], 0
		}
		nextHandoff := e.handoffsDue(now)
		// Every engine core that is free and has work starts a step.
		stuck := false
		for r, re := range ranks {
			if stepEnd[r] >= 0 || re.idle() {
				continue
			}
			dt, events := re.step(now)
			if dt == 0 {
				// Nothing could be scheduled (a request larger than the whole cache): fail it.
				if !re.failStuck(s, now) {
					return nil, fmt.Errorf("simulation stalled at %.3fs with %d running and %d waiting", now, len(re.running), re.waiting())
				}
				stuck = true
				continue
			}
			stepEnd[r], stepEvents[r] = now+dt, events
		}
		if stuck {
			continue
		}
		next := math.Inf(1)
		for _, t := range stepEnd {
			if t >= 0 {
				next = math.Min(next, t)
			}
		}
		if s.head < len(s.pending) {
			next = math.Min(next, s.pending[s.head].at)
		}
		if inHead < len(inbound) {
			next = math.Min(next, inbound[inHead].arrival)
		}
		next = math.Min(next, nextHandoff)
		if math.IsInf(next, 1) {
			break
		}
		now = next
		stepped := false
		for r, re := range ranks {
			if stepEnd[r] < 0 || stepEnd[r] > now {
				continue
			}
			stepped = true
			stepEnd[r] = -1
			// The client reads what this step produced apiOut later.
			seen := now + e.perf.apiOut
			for _, ev := range stepEvents[r] {
				if e.handoff(ev, seen) {
					continue // a prefill's answer: the decode instance answers the client
				}
				rec := &s.recs[ev.s.owner]
				t := dur(seen)
				if ev.s.generated == 1 {
					rec.FirstToken = t
				}
				si := e.cfg.StreamInterval
				if si <= 1 || ev.s.generated == 1 || ev.finished || (ev.s.generated-1)%si == 0 {
					rec.Chunks = append(rec.Chunks, t)
				}
				ci := ev.s.class
				req := &reqs[ci][rec.Index]
				cls := &classes[ci]
				switch {
				case ev.finished:
					rec.End, rec.OutputTokens = t, ev.s.generated
					s.ended(ci, rec.Index, seen, ev.s.generated, true)
				case req.Cancel:
					re.abort(ev.s)
					rec.End, rec.OutputTokens, rec.ErrClass = t, ev.s.generated, workload.ErrCancelled
					s.ended(ci, rec.Index, seen, ev.s.generated, true)
				case cls.Timeout > 0 && t-rec.Sent > cls.Timeout:
					re.abort(ev.s)
					rec.End, rec.OutputTokens, rec.ErrClass = rec.Sent+cls.Timeout, ev.s.generated, workload.ErrTimeout
					rec.Err = "request timed out"
					s.ended(ci, rec.Index, seen, 0, false)
				}
			}
			stepEvents[r] = nil
		}
		if stepped && measStart >= 0 {
			u, running, waiting := 0.0, 0, 0
			for _, re := range ranks {
				u = math.Max(u, re.kvUsage())
				running += len(re.running)
				waiting += re.waiting()
			}
			kvMax = math.Max(kvMax, u)
			if now >= nextSample {
				series = append(series, workload.Sample{T: now - measStart, KVCacheUsage: u,
					Running: float64(running), Waiting: float64(waiting)})
				nextSample = now + seriesInterval
			}
		}
	}

	buf.recs, buf.seqs = s.recs, s.seqs
	return &simRun{state: s, series: series, kvMax: kvMax, buffers: buf}, nil
}

// sendNext sends a closed-loop class's next request at time at.
func (s *simState) sendNext(class int, at float64) {
	if s.classes[class].Arrival.Kind != workload.ArrivalConcurrency || s.next[class] >= len(s.reqs[class]) {
		return
	}
	s.pending = append(s.pending, arrival{at, class, s.next[class]})
	s.next[class]++
	// Keep pending sorted from head: closed-loop sends happen at the current time, which is
	// not earlier than any pending arrival already admitted.
	for i := len(s.pending) - 1; i > s.head && s.pending[i].at < s.pending[i-1].at; i-- {
		s.pending[i], s.pending[i-1] = s.pending[i-1], s.pending[i]
	}
}

// failStuck fails the first waiting request when nothing can be scheduled at all.
func (e *engine) failStuck(s *simState, now float64) bool {
	var v *seq
	switch {
	case len(e.preempted) > 0:
		v = e.preempted[len(e.preempted)-1]
	case e.qhead < len(e.queue):
		v = e.queue[e.qhead]
	default:
		return false
	}
	e.abort(v)
	rec := &s.recs[v.owner]
	rec.End, rec.ErrClass, rec.Status = dur(now), workload.ErrHTTP, 500
	rec.Err = "request does not fit in the KV cache"
	s.ended(v.class, rec.Index, now, 0, false)
	return true
}

// engineMetrics adds the metrics a real engine's /metrics would give.
func (e *engine) engineMetrics(m *workload.Measurement, s *simState, kvMax float64) {
	byClass := map[string][]float64{}
	var all []float64
	for i := range s.seqs {
		q := &s.seqs[i]
		if q.maxOut == 0 || !q.scheduled {
			continue
		}
		rec := &s.recs[q.owner]
		if rec.Warmup {
			continue
		}
		ms := (q.firstSch - q.arrival) * 1000
		byClass[rec.Class] = append(byClass[rec.Class], ms)
		all = append(all, ms)
	}
	set := func(r *workload.Result, q []float64) {
		if r == nil {
			return
		}
		slices.Sort(q)
		r.Metrics[workload.QueueMeanMs] = meanOf(q)
		r.Metrics[workload.QueueP99Ms] = workload.Percentile(q, 99)
		r.Metrics[workload.KVCacheUsageMax] = kvMax
		preemptions, queries, hits := 0, 0, 0
		for _, re := range e.dataParallel() {
			preemptions += re.preemptions
			queries += re.prefixQueries
			// The share of prompt tokens not recomputed: the GPU cache's hits and the CPU
			// tier's, as workload reads vLLM's prefix and external prefix cache counters.
			hits += re.prefixHits + re.off.hitTokens()
		}
		r.Metrics[workload.Preemptions] = float64(preemptions)
		rate := 0.0
		if queries > 0 {
			rate = float64(hits) / float64(queries)
		}
		r.Metrics[workload.PrefixCacheHitRate] = rate
	}
	for name, r := range m.Workloads {
		set(r, byClass[name])
	}
	set(m.Total, all)
}

func meanOf(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// thin keeps at most n samples, evenly spaced.
func thin(s []workload.Sample, n int) []workload.Sample {
	if len(s) <= n {
		return s
	}
	out := make([]workload.Sample, n)
	for i := range out {
		out[i] = s[int(math.Round(float64(i)*float64(len(s)-1)/float64(n-1)))]
	}
	return out
}

func dur(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// contextLengthError is vLLM's HTTP 400 message for a request that does not fit in
// max_model_len.
func contextLengthError(maxLen, in, out int) string {
	if in >= maxLen {
		return fmt.Sprintf("This model's maximum context length is %d tokens. However, your request has %d input tokens. Please reduce the length of the input messages.", maxLen, in)
	}
	return fmt.Sprintf("'max_tokens' or 'max_completion_tokens' is too large: %d. This model's maximum context length is %d tokens and your request has %d input tokens (%d > %d - %d).", out, maxLen, in, out, maxLen, in)
}
