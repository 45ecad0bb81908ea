package workload

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Names of vLLM's Prometheus metrics, newest first where they were renamed. Counters are
// looked up with and without the "_total" suffix.
var (
	promKVUsage     = []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"}
	promRunning     = []string{"vllm:num_requests_running"}
	promWaiting     = []string{"vllm:num_requests_waiting"}
	promPreemptions = []string{"vllm:num_preemptions_total", "vllm:num_preemptions"}
	promPrefixQuery = []string{"vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total"}
	promPrefixHits  = []string{"vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total"}
	// The KV connector's cache (vLLM's CPU offloading, LMCache): hits there are prompt tokens
	// not recomputed either.
	promExtPrefixHits = []string{"vllm:external_prefix_cache_hits_total"}
	promQueueSeconds  = []string{"vllm:request_queue_time_seconds"}
	// frontier's simulated vLLM only: how far it fell behind real time (a busy host).
	promSimLag = []string{"frontier_sim_lag_seconds_total"}
)

// serverSnapshot is the engine's state read from one scrape. A has* flag is false when the
// engine does not export the metric.
type serverSnapshot struct {
	t                         time.Duration
	kv, running, waiting      float64
	hasKV, hasRunning         bool
	hasWaiting                bool
	preemptions               float64
	hasPreemptions            bool
	prefixQueries, prefixHits float64
	hasPrefix                 bool
	extPrefixHits             float64 // 0 without a KV connector
	queue                     histogram
	hasQueue                  bool
	simLag                    float64
	hasSimLag                 bool
}

// histogram is a Prometheus histogram summed over its label sets.
type histogram struct {
	bounds []float64 // upper bounds, ascending; the last may be +Inf
	counts []float64 // cumulative counts
	sum    float64
	count  float64
}

// parseServerMetrics reads Prometheus text exposition into a snapshot.
func parseServerMetrics(r io.Reader) (serverSnapshot, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return serverSnapshot{}, fmt.Errorf("reading Prometheus text: %w", err)
	}
	var s serverSnapshot
	if f := family(fams, promKVUsage); f != nil {
		s.kv, s.hasKV = maxValue(f), true
	}
	if f := family(fams, promRunning); f != nil {
		s.running, s.hasRunning = sumValue(f), true
	}
	if f := family(fams, promWaiting); f != nil {
		s.waiting, s.hasWaiting = sumValue(f), true
	}
	if f := family(fams, promPreemptions); f != nil {
		s.preemptions, s.hasPreemptions = sumValue(f), true
	}
	q, h := family(fams, promPrefixQuery), family(fams, promPrefixHits)
	if q != nil && h != nil {
		s.prefixQueries, s.prefixHits, s.hasPrefix = sumValue(q), sumValue(h), true
	}
	if f := family(fams, promExtPrefixHits); f != nil {
		s.extPrefixHits = sumValue(f)
	}
	if f := family(fams, promQueueSeconds); f != nil {
		s.queue, s.hasQueue = sumHistogram(f)
	}
	if f := family(fams, promSimLag); f != nil {
		s.simLag, s.hasSimLag = sumValue(f), true
	}
	return s, nil
}

// family returns the first of names that fams has, trying each with and without "_total".
func family(fams map[string]*dto.MetricFamily, names []string) *dto.MetricFamily {
	for _, n := range names {
		for _, alt := range []string{n, n + "_total", trimTotal(n)} {
			if f, ok := fams[alt]; ok && len(f.GetMetric()) > 0 {
				return f
			}
		}
	}
	return nil
}

func trimTotal(n string) string {
	if len(n) > 6 && n[len(n)-6:] == "_total" {
		return n[:len(n)-6]
	}
	return n
}

// value reads a sample of any scalar type.
func value(m *dto.Metric) float64 {
	var v float64
	switch {
	case m.Gauge != nil:
		v = m.Gauge.GetValue()
	case m.Counter != nil:
		v = m.Counter.GetValue()
	case m.Untyped != nil:
		v = m.Untyped.GetValue()
	default:
		return 0
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

func sumValue(f *dto.MetricFamily) float64 {
	var s float64
	for _, m := range f.GetMetric() {
		s += value(m)
	}
	return s
}

func maxValue(f *dto.MetricFamily) float64 {
	v := 0.0
	for i, m := range f.GetMetric() {
		if x := value(m); i == 0 || x > v {
			v = x
		}
	}
	return v
}

// sumHistogram adds a histogram family's label sets bucket by bucket.
func sumHistogram(f *dto.MetricFamily) (histogram, bool) {
	var h histogram
	idx := map[float64]int{}
	for _, m := range f.GetMetric() {
		hm := m.GetHistogram()
		if hm == nil {
			continue
		}
		h.sum += finite(hm.GetSampleSum())
		h.count += finite(float64(hm.GetSampleCount()))
		for _, b := range hm.GetBucket() {
			ub := b.GetUpperBound()
			if math.IsNaN(ub) {
				continue
			}
			i, ok := idx[ub]
			if !ok {
				i = len(h.bounds)
				idx[ub] = i
				h.bounds = append(h.bounds, ub)
				h.counts = append(h.counts, 0)
			}
			h.counts[i] += float64(b.GetCumulativeCount())
		}
	}
	if len(h.bounds) == 0 && h.count == 0 {
		return histogram{}, false
	}
	order := make([]int, len(h.bounds))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		switch {
		case h.bounds[a] < h.bounds[b]:
			return -1
		case h.bounds[a] > h.bounds[b]:
			return 1
		}
		return 0
	})
	bounds, counts := make([]float64, len(order)), make([]float64, len(order))
	for i, j := range order {
		bounds[i], counts[i] = h.bounds[j], h.counts[j]
	}
	h.bounds, h.counts = bounds, counts
	return h, true
}

func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

// minus returns the observations of h that came after base: the bucket-wise difference, or
// h itself when the counts went down (the engine restarted).
func (h histogram) minus(base histogram) histogram {
	if !slices.Equal(h.bounds, base.bounds) || base.count > h.count {
		return h
	}
	d := histogram{bounds: h.bounds, counts: make([]float64, len(h.counts)), sum: h.sum - base.sum, count: h.count - base.count}
	for i := range h.counts {
		d.counts[i] = math.Max(0, h.counts[i]-base.counts[i])
	}
	return d
}

// quantile estimates the q-th quantile (0 to 1) as Prometheus's histogram_quantile does:
// linear interpolation inside the bucket that holds the rank; the highest finite bound when
// the rank falls in the +Inf bucket.
func (h histogram) quantile(q float64) float64 {
	if len(h.bounds) == 0 {
		return 0
	}
	total := h.counts[len(h.counts)-1]
	if total <= 0 {
		return 0
	}
	rank := q * total
	lower, below := 0.0, 0.0
	for i, ub := range h.bounds {
		if h.counts[i] >= rank {
			if math.IsInf(ub, 1) {
				return lower
			}
			in := h.counts[i] - below
			if in <= 0 {
				return ub
			}
			return lower + (ub-lower)*(rank-below)/in
		}
		lower, below = ub, h.counts[i]
	}
	return lower
}

// scraper reads the engine's /metrics during a run.
type scraper struct {
	url      string
	hc       *http.Client
	start    time.Time
	interval time.Duration
	stop     chan struct{}
	stopped  chan struct{}

	mu    sync.Mutex
	snaps []serverSnapshot
	err   error // the last scrape's error
}

func newScraper(url string, hc *http.Client, start time.Time, interval time.Duration) *scraper {
	if interval <= 0 {
		interval = time.Second
	}
	return &scraper{url: url, hc: hc, start: start, interval: interval,
		stop: make(chan struct{}), stopped: make(chan struct{})}
}

// run scrapes at once and then every interval until finish or ctx ends.
func (s *scraper) run(ctx context.Context) {
	defer close(s.stopped)
	tick := time.NewTicker(s.interval)
	defer tick.Stop()
	for {
		s.scrape(ctx)
		select {
		case <-tick.C:
		case <-s.stop:
			return
		case <-ctx.Done():
			return
		}
	}
}

// finish stops the periodic scrapes and takes the last one.
func (s *scraper) finish(ctx context.Context) {
	close(s.stop)
	<-s.stopped
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	s.scrape(ctx)
}

func (s *scraper) scrape(ctx context.Context) {
	snap, err := scrapeOnce(ctx, s.hc, s.url)
	snap.t = time.Since(s.start)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.err = err
		return
	}
	s.snaps = append(s.snaps, snap)
}

// scrapeOnce fetches and parses one exposition.
func scrapeOnce(ctx context.Context, hc *http.Client, url string) (serverSnapshot, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return serverSnapshot{}, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := hc.Do(req)
	if err != nil {
		return serverSnapshot{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		return serverSnapshot{}, fmt.Errorf("%s: HTTP %d", url, resp.StatusCode)
	}
	snap, err := parseServerMetrics(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return serverSnapshot{}, fmt.Errorf("%s: %w", url, err)
	}
	return snap, nil
}

// errNoScrape says that no scrape succeeded.
var errNoScrape = errors.New("no scrape of the metrics endpoint succeeded")

// apply adds the server metrics and Series of the window [from, to] to m, and returns
// errNoScrape (only informative) when there is nothing to add.
func (s *scraper) apply(m *Measurement, from, to time.Duration) error {
	s.mu.Lock()
	snaps := slices.Clone(s.snaps)
	s.mu.Unlock()
	if len(snaps) == 0 {
		return errNoScrape
	}
	return applySnapshots(m, snaps, from, to)
}

// applySnapshots computes the server metrics from snapshots in time order: gauges over the
// window (and the last scrape, taken just after it), counters and the queue histogram as the
// difference between the last scrape at or before the window's start and the last scrape.
func applySnapshots(m *Measurement, snaps []serverSnapshot, from, to time.Duration) error {
	base := snaps[0]
	for _, sn := range snaps {
		if sn.t <= from {
			base = sn
		}
	}
	last := snaps[len(snaps)-1]
	metrics := m.Total.Metrics
	kvMax, hasKV := 0.0, false
	for i, sn := range snaps {
		inWindow := sn.t >= from && (sn.t <= to || i == len(snaps)-1)
		if !inWindow {
			continue
		}
		if sn.hasKV || sn.hasRunning || sn.hasWaiting {
			m.Series = append(m.Series, Sample{T: (sn.t - from).Seconds(), KVCacheUsage: sn.kv, Running: sn.running, Waiting: sn.waiting})
		}
		if sn.hasKV {
			kvMax, hasKV = math.Max(kvMax, sn.kv), true
		}
	}
	if hasKV {
		metrics[KVCacheUsageMax] = kvMax
	}
	if last.hasPreemptions && base.hasPreemptions {
		metrics[Preemptions] = counterDelta(last.preemptions, base.preemptions)
	}
	if last.hasPrefix && base.hasPrefix {
		dq := counterDelta(last.prefixQueries, base.prefixQueries)
		// The share of prompt tokens served from a cache: the GPU's prefix cache, and the KV
		// connector's (CPU offloading), whose queries are the same requests' tokens.
		dh := counterDelta(last.prefixHits, base.prefixHits) + counterDelta(last.extPrefixHits, base.extPrefixHits)
		if dq > 0 {
			metrics[PrefixCacheHitRate] = math.Min(1, dh/dq)
		} else {
			metrics[PrefixCacheHitRate] = 0
		}
	}
	if last.hasSimLag && base.hasSimLag {
		metrics[SimLagS] = counterDelta(last.simLag, base.simLag)
	}
	if last.hasQueue {
		d := last.queue
		if base.hasQueue {
			d = last.queue.minus(base.queue)
		}
		if d.count > 0 {
			metrics[QueueMeanMs] = d.sum / d.count * 1000
			metrics[QueueP99Ms] = d.quantile(0.99) * 1000
		}
	}
	return nil
}

// counterDelta is the increase of a counter, or its value when it was reset.
func counterDelta(now, before float64) float64 {
	if now < before {
		return now
	}
	return now - before
}
