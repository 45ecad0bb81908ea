package sim

import (
	"context"
	"fmt"
	"math"
	"sort"

	"github.com/frontier-llm/frontier/hw"
	"github.com/frontier-llm/frontier/workload"
)

// This file is prefill/decode disaggregation in the estimator: X prefill instances and Y
// decode instances, each with its own scheduler, KV cache and GPUs, behind a router that
// speaks vLLM's protocol (router/): each request is prefilled on a prefill instance with
// max_tokens 1, its KV cache is read by a decode instance over the fabric between them
// (vLLM's NixlConnector), and the decode instance generates the reply, its first step
// computing only the prompt's last token.

// Disaggregation is a prefill/decode deployment: Prefill instances of PrefillTP GPUs (times
// the pipeline and data parallel sizes) and Decode instances of DecodeTP GPUs.
type Disaggregation struct {
	Prefill, Decode     int
	PrefillTP, DecodeTP int
}

// GPUs is how many GPUs the deployment of cfg's other options uses.
func (d Disaggregation) GPUs(cfg EngineConfig) int {
	per := max(cfg.PipelineParallelSize, 1) * max(cfg.DataParallelSize, 1)
	return (d.Prefill*max(d.PrefillTP, 1) + d.Decode*max(d.DecodeTP, 1)) * per
}

// roleConfig is cfg with a role's tensor_parallel_size.
func roleConfig(cfg EngineConfig, tp int) EngineConfig {
	if tp > 0 {
		cfg.TensorParallelSize = tp
	}
	return cfg
}

// NICGBs is the network bandwidth per GPU, GB/s one way, between the instances of a
// deployment that spans nodes: one 400 Gb/s NIC per GPU (ConnectX-7 in NVIDIA's DGX H100,
// H200 and B200 systems; the DGX H100 user guide's network section).
const NICGBs = 50.0

// TransferLink is how the KV cache of one request moves from a prefill instance to a decode
// instance: Fabric ("nvlink", "pcie", "infinity-fabric" within a node, "nic" between
// nodes), BytesPerToken of KV for the model and the KV dtype (every layer, every head), and
// GBs, the achieved rate of the whole transfer in GB/s.
type TransferLink struct {
	Fabric        string
	BytesPerToken float64
	GBs           float64
}

// Seconds is the time to move tokens tokens' KV cache.
func (l TransferLink) Seconds(tokens int) float64 {
	if tokens <= 0 || l.GBs <= 0 {
		return 0
	}
	return float64(tokens) * l.BytesPerToken / (l.GBs * 1e9)
}

// NewTransferLink is the link between a deployment's instances: within a node (at most
// nodeGPUs GPUs in all) the SKU's interconnect, one way (half the catalog's aggregate of both
// directions) at the share a large transfer reaches (Achieved.LinkShare); across nodes a
// NICGBs NIC per GPU at the same share. Each prefill rank sends its shard of the heads to the
// decode rank that holds it, so min(prefill TP, decode TP) links carry the transfer at once.
func NewTransferLink(arch Arch, sku hw.SKU, st Startup, d Disaggregation, cfg EngineConfig) TransferLink {
	l := TransferLink{Fabric: sku.Interconnect, BytesPerToken: arch.KVBytesPerToken(st.KVElemBytes)}
	perGPU := sku.InterconnectGBs / 2
	if d.GPUs(cfg) > nodeGPUs {
		l.Fabric, perGPU = "nic", NICGBs
	}
	share := sku.Achieved.LinkShare
	if share <= 0 {
		share = 1
	}
	l.GBs = perGPU * share * float64(max(min(d.PrefillTP, d.DecodeTP), 1))
	return l
}

// disagg is the estimator's state of a disaggregated deployment.
type disagg struct {
	prefill, decode, all []*engine
	link                 TransferLink
	// decodeOf is the decode side's sequence of each request whose prefill runs, by the
	// prefill's sequence.
	decodeOf map[*seq]*seq
	// handoffs are decode sequences on their way to a decode instance, earliest first.
	handoffs []handoff
	// transfer is each request's KV transfer time in seconds, by record index.
	transfer map[int]float64
}

// handoff is a decode sequence that reaches its decode instance at a time.
type handoff struct {
	at   float64
	to   *engine
	s    *seq
	xfer float64
}

// newDisaggregated builds the deployment's engine cores, prefill instances first; the first
// is returned and holds the others.
func newDisaggregated(arch Arch, sku hw.SKU, cfg EngineConfig, d Disaggregation) (*engine, error) {
	if d.Prefill < 1 || d.Decode < 1 {
		return nil, fmt.Errorf("disaggregation needs at least one prefill and one decode instance, got %dp%dd", d.Prefill, d.Decode)
	}
	pd := &disagg{decodeOf: map[*seq]*seq{}, transfer: map[int]float64{}}
	for role, n := range []int{d.Prefill, d.Decode} {
		tp := d.PrefillTP
		if role == 1 {
			tp = d.DecodeTP
		}
		for i := range n {
			e, err := newDataParallel(arch, sku, roleConfig(cfg, tp))
			if err != nil {
				return nil, err
			}
			for r, re := range e.dataParallel() {
				re.nextSeed = uint64(role*instanceSeedStride+i)<<48 | uint64(r)<<40
				re.ranks = nil
				if role == 0 {
					pd.prefill = append(pd.prefill, re)
				} else {
					pd.decode = append(pd.decode, re)
				}
			}
		}
	}
	pd.all = append(append([]*engine{}, pd.prefill...), pd.decode...)
	pd.link = NewTransferLink(arch, sku, pd.decode[0].st, d, cfg)
	first := pd.all[0]
	first.pd = pd
	return first, nil
}

// instanceSeedStride spaces the instances' own block seeds apart.
const instanceSeedStride = 128

// EstimateDisaggregated is Estimate for a prefill/decode deployment: the prefill pool's
// queueing and prefills, the KV transfer of each request over NewTransferLink, and the
// decode pool's steps without prefills of long prompts in them. The measurement's TTFT is
// the client's: prefill, transfer and the decode instance's first step; KVTransferMeanMs and
// KVTransferTTFTShare say how much of it the transfer is.
func EstimateDisaggregated(ctx context.Context, arch Arch, sku hw.SKU, cfg EngineConfig, d Disaggregation, classes []workload.Class, seed uint64) (*workload.Measurement, error) {
	e, err := newDisaggregated(arch, sku, cfg, d)
	if err != nil {
		return nil, err
	}
	reqs, err := loadClasses(classes, seed)
	if err != nil {
		return nil, err
	}
	run, err := e.run(ctx, classes, reqs)
	if err != nil {
		return nil, err
	}
	m := e.measure(classes, run)
	e.pd.transferMetrics(m, run.state)
	return m, nil
}

// leastLoaded picks the instance with the fewest requests in it, the first on a tie, as
// frontier's router does with the requests it has in flight to each.
func leastLoaded(pool []*engine) *engine {
	best := pool[0]
	for _, e := range pool[1:] {
		if len(e.running)+e.waiting() < len(best.running)+best.waiting() {
			best = e
		}
	}
	return best
}

// admit hands a request the API server has taken to an engine core: the data-parallel load
// balancer's pick, or, disaggregated, a prefill instance, with its decode side kept for the
// handoff.
func (e *engine) admit(ranks []*engine, s *seq) {
	if e.pd == nil {
		ranks[balance(ranks)].add(s)
		return
	}
	d := new(seq)
	*d = *s
	e.pd.decodeOf[s] = d
	s.maxOut = 1 // the router's prefill request: max_tokens 1
	leastLoaded(e.pd.prefill).add(s)
}

// handoff takes a token event of a prefill request: the prefill's answer reaches the router
// at seen, which sends the decode request to a decode instance; the decode instance's API
// server takes it (apiIn) and reads the KV cache its prefix cache lacks over the link before
// it schedules the request. It reports false for an event of any other sequence.
func (e *engine) handoff(ev tokenEvent, seen float64) bool {
	if e.pd == nil {
		return false
	}
	d, ok := e.pd.decodeOf[ev.s]
	if !ok {
		return false
	}
	delete(e.pd.decodeOf, ev.s)
	to := leastLoaded(e.pd.decode)
	local := len(to.lookup(d)) * to.cfg.BlockSize
	xfer := e.pd.link.Seconds(d.prompt - local)
	d.remote = max(d.prompt-1, 0) // vLLM recomputes the last prompt token for its logits
	h := handoff{at: seen + e.perf.apiIn + xfer, to: to, s: d, xfer: xfer}
	e.pd.transfer[d.owner] = xfer
	i := sort.Search(len(e.pd.handoffs), func(i int) bool { return e.pd.handoffs[i].at > h.at })
	e.pd.handoffs = append(e.pd.handoffs, handoff{})
	copy(e.pd.handoffs[i+1:], e.pd.handoffs[i:])
	e.pd.handoffs[i] = h
	return true
}

// handoffsDue puts the decode sequences whose KV cache has arrived by now in their decode
// instances' queues, and returns when the next one is due (+Inf: none).
func (e *engine) handoffsDue(now float64) float64 {
	if e.pd == nil {
		return math.Inf(1)
	}
	k := 0
	for k < len(e.pd.handoffs) && e.pd.handoffs[k].at <= now {
		h := e.pd.handoffs[k]
		h.s.arrival = h.at
		h.to.add(h.s)
		k++
	}
	e.pd.handoffs = e.pd.handoffs[k:]
	if len(e.pd.handoffs) == 0 {
		return math.Inf(1)
	}
	return e.pd.handoffs[0].at
}

// transferMetrics adds the KV transfer's mean and its share of the mean TTFT, per class and
// in total.
func (pd *disagg) transferMetrics(m *workload.Measurement, s *simState) {
	sum, n := map[string]float64{}, map[string]int{}
	for ri, x := range pd.transfer {
		rec := &s.recs[ri]
		if rec.Warmup || rec.FirstToken == 0 {
			continue
		}
		sum[rec.Class] += x * 1000
		n[rec.Class]++
		sum[""] += x * 1000
		n[""]++
	}
	set := func(r *workload.Result, key string) {
		if r == nil || n[key] == 0 {
			return
		}
		mean := sum[key] / float64(n[key])
		r.Metrics[workload.KVTransferMeanMs] = mean
		if ttft := r.Metrics["ttft_mean_ms"]; ttft > 0 {
			r.Metrics[workload.KVTransferTTFTShare] = mean / ttft
		}
	}
	for name, r := range m.Workloads {
		set(r, name)
	}
	set(m.Total, "")
}
