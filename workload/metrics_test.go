package workload

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/frontier-llm/frontier/workload/workloadtest"
)

// vllmMetrics renders a vLLM exposition, in the names of a version from 0.11 on (current)
// or of 0.10 and before (old), as prometheus_client writes it.
func vllmMetrics(current bool, kv, running, waiting, preempt, queries, hits float64, queue [4]float64, sum float64) string {
	kvName, pq, ph := "vllm:kv_cache_usage_perc", "vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total"
	if !current {
		kvName, pq, ph = "vllm:gpu_cache_usage_perc", "vllm:gpu_prefix_cache_queries_total", "vllm:gpu_prefix_cache_hits_total"
	}
	var b strings.Builder
	w := func(format string, args ...any) {
		b.WriteString(strings.TrimSpace(fmt.Sprintf(format, args...)) + "\n")
	}
	w("# HELP %s KV-cache usage. 1 means 100 percent usage.", kvName)
	w("# TYPE %s gauge", kvName)
	w(`%s{engine="0",model_name="m"} %g`, kvName, kv)
	w("# TYPE vllm:num_requests_running gauge")
	w(`vllm:num_requests_running{engine="0",model_name="m"} %g`, running)
	w("# TYPE vllm:num_requests_waiting gauge")
	w(`vllm:num_requests_waiting{engine="0",model_name="m"} %g`, waiting)
	w("# TYPE vllm:num_preemptions_total counter")
	w(`vllm:num_preemptions_total{engine="0",model_name="m"} %g`, preempt)
	w("# TYPE vllm:num_preemptions_created gauge")
	w(`vllm:num_preemptions_created{engine="0",model_name="m"} 1.7e+09`)
	w("# TYPE %s counter", pq)
	w(`%s{engine="0",model_name="m"} %g`, pq, queries)
	w("# TYPE %s counter", ph)
	w(`%s{engine="0",model_name="m"} %g`, ph, hits)
	w("# HELP vllm:request_queue_time_seconds Histogram of time spent in WAITING phase for request.")
	w("# TYPE vllm:request_queue_time_seconds histogram")
	for i, le := range []string{"0.01", "0.1", "1.0", "+Inf"} {
		w(`vllm:request_queue_time_seconds_bucket{engine="0",le="%s",model_name="m"} %g`, le, queue[i])
	}
	w(`vllm:request_queue_time_seconds_count{engine="0",model_name="m"} %g`, queue[3])
	w(`vllm:request_queue_time_seconds_sum{engine="0",model_name="m"} %g`, sum)
	return b.String()
}

func TestParseServerMetricsReadsBothNamings(t *testing.T) {
	t.Parallel()
	for _, current := range []bool{true, false} {
		text := vllmMetrics(current, 0.42, 3, 2, 7, 1000, 250, [4]float64{1, 5, 9, 10}, 2.5)
		s, err := parseServerMetrics(strings.NewReader(text))
		if err != nil {
			t.Fatalf("current=%v: %v", current, err)
		}
		want := serverSnapshot{kv: 0.42, running: 3, waiting: 2, hasKV: true, hasRunning: true, hasWaiting: true,
			preemptions: 7, hasPreemptions: true, prefixQueries: 1000, prefixHits: 250, hasPrefix: true,
			queue: histogram{bounds: []float64{0.01, 0.1, 1, math.Inf(1)}, counts: []float64{1, 5, 9, 10}, sum: 2.5, count: 10}, hasQueue: true}
		if diff := cmp.Diff(want, s, cmp.AllowUnexported(serverSnapshot{}, histogram{})); diff != "" {
			t.Errorf("current=%v (-want +got):\n%s", current, diff)
		}
	}
}

func TestParseServerMetricsSumsEngines(t *testing.T) {
	t.Parallel()
	text := `# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0"} 3
vllm:num_requests_running{engine="1"} 4
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0"} 0.2
vllm:kv_cache_usage_perc{engine="1"} 0.7
`
	s, err := parseServerMetrics(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if s.running != 7 || s.kv != 0.7 || s.hasWaiting || s.hasQueue {
		t.Errorf("running %v (want 7, summed), kv %v (want 0.7, the fullest engine), waiting %v, queue %v", s.running, s.kv, s.hasWaiting, s.hasQueue)
	}
}

func TestParseServerMetricsRejectsGarbage(t *testing.T) {
	t.Parallel()
	if _, err := parseServerMetrics(strings.NewReader("<html>not found</html>\n")); err == nil {
		t.Error("HTML parsed as Prometheus text")
	}
}

func TestHistogramQuantile(t *testing.T) {
	t.Parallel()
	h := histogram{bounds: []float64{0.01, 0.1, 1, math.Inf(1)}, counts: []float64{0, 50, 100, 100}, count: 100}
	tests := []struct {
		name string
		h    histogram
		q    float64
		want float64
	}{
		{"median at the top of a bucket", h, 0.5, 0.1},
		{"p99 interpolated inside a bucket", h, 0.99, 0.1 + 0.9*49.0/50},
		{"the +Inf bucket gives the highest finite bound", histogram{bounds: []float64{1, math.Inf(1)}, counts: []float64{1, 10}}, 0.99, 1},
		{"empty", histogram{}, 0.99, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.h.quantile(tt.q); math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("quantile(%v) = %v, want %v", tt.q, got, tt.want)
			}
		})
	}
}

func TestApplySnapshotsUsesTheWindow(t *testing.T) {
	t.Parallel()
	parse := func(at time.Duration, text string) serverSnapshot {
		s, err := parseServerMetrics(strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		s.t = at
		return s
	}
	snaps := []serverSnapshot{
		parse(0, vllmMetrics(true, 0.9, 1, 0, 5, 100, 10, [4]float64{2, 2, 2, 2}, 0.01)), // warm-up
		parse(time.Second, vllmMetrics(true, 0.1, 2, 1, 6, 200, 20, [4]float64{4, 4, 4, 4}, 0.02)),
		parse(2*time.Second, vllmMetrics(true, 0.5, 8, 3, 9, 600, 220, [4]float64{4, 54, 104, 104}, 5.02)),
		parse(3*time.Second, vllmMetrics(true, 0.3, 0, 0, 10, 1200, 520, [4]float64{4, 54, 104, 104}, 5.02)),
	}
	m := &Measurement{Total: &Result{Metrics: map[string]float64{}}}
	if err := applySnapshots(m, snaps, time.Second+500*time.Millisecond, 2500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		KVCacheUsageMax:    0.5, // the warm-up's 0.9 is outside the window
		Preemptions:        4,   // 10 - 6, from the last scrape before the window
		PrefixCacheHitRate: 0.5, // (520-20) / (1200-200)
		QueueMeanMs:        50,  // 5 s over 100 requests
		QueueP99Ms:         (0.1 + 0.9*49.0/50) * 1000,
	}
	if diff := cmp.Diff(want, m.Total.Metrics, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
	wantSeries := []Sample{{T: 0.5, KVCacheUsage: 0.5, Running: 8, Waiting: 3}, {T: 1.5, KVCacheUsage: 0.3}}
	if diff := cmp.Diff(wantSeries, m.Series, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("series (-want +got):\n%s", diff)
	}
}

func TestRunScrapesTheEngine(t *testing.T) {
	t.Parallel()
	var scrapes atomic.Int64
	s, err := workloadtest.Start(workloadtest.Options{TTFT: 10 * time.Millisecond, Tokens: 2, Metrics: func() string {
		n := float64(scrapes.Add(1))
		return vllmMetrics(true, 0.1*n, n, 0, n, 100*n, 50*n, [4]float64{n, n, n, n}, 0)
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := Class{Name: "c", Requests: 20, InputTokens: Dist{Kind: DistFixed, A: 4}, OutputTokens: Dist{Kind: DistFixed, A: 2},
		Arrival: Arrival{Kind: ArrivalConstant, Rate: 100}}
	res, err := Run(context.Background(), Target{URL: s.URL(), Model: "m", MetricsURL: s.URL() + "/metrics"}, []Class{c},
		RunOptions{ScrapeInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	tot := res.Measurement.Total.Metrics
	for _, name := range []string{KVCacheUsageMax, Preemptions, PrefixCacheHitRate} {
		if _, ok := tot[name]; !ok {
			t.Errorf("no %s in %v", name, tot)
		}
	}
	if tot[PrefixCacheHitRate] != 0.5 || tot[Preemptions] < 1 {
		t.Errorf("prefix_cache_hit_rate %v (want 0.5), preemptions %v (want the scrapes' increase)", tot[PrefixCacheHitRate], tot[Preemptions])
	}
	if len(res.Measurement.Series) < 2 {
		t.Errorf("series of %d samples over a 0.2 s run scraped every 20 ms", len(res.Measurement.Series))
	}
}

func TestRunWithoutMetricsEndpoint(t *testing.T) {
	t.Parallel()
	s, err := workloadtest.Start(workloadtest.Options{Tokens: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := Class{Name: "c", Requests: 3, InputTokens: Dist{Kind: DistFixed, A: 4}, OutputTokens: Dist{Kind: DistFixed, A: 2}}
	res, err := Run(context.Background(), Target{URL: s.URL(), Model: "m", MetricsURL: s.URL() + "/metrics"}, []Class{c}, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := res.Measurement.Total.Metrics[KVCacheUsageMax]; ok || len(res.Measurement.Series) > 0 {
		t.Errorf("server metrics from a server without /metrics: %v", res.Measurement.Total.Metrics)
	}
	if res.Measurement.Total.Metrics[Completed] != 3 {
		t.Errorf("completed %v, want 3", res.Measurement.Total.Metrics[Completed])
	}
}

// FuzzParseServerMetrics checks that no exposition makes the parser panic or produce values
// that are not finite.
func FuzzParseServerMetrics(f *testing.F) {
	f.Add(vllmMetrics(true, 0.5, 1, 2, 3, 4, 5, [4]float64{1, 2, 3, 4}, 1))
	f.Add(vllmMetrics(false, 0.5, 1, 2, 3, 4, 5, [4]float64{1, 2, 3, 4}, 1))
	f.Add("vllm:num_requests_running NaN\nvllm:kv_cache_usage_perc +Inf\n")
	f.Add("# TYPE vllm:request_queue_time_seconds histogram\nvllm:request_queue_time_seconds_bucket{le=\"NaN\"} 3\n")
	f.Add("{\"vllm:num_requests_running\"} 1\n")
	f.Fuzz(func(t *testing.T, text string) {
		s, err := parseServerMetrics(strings.NewReader(text))
		if err != nil {
			return
		}
		for _, v := range []float64{s.kv, s.running, s.waiting, s.preemptions, s.prefixQueries, s.prefixHits, s.queue.sum, s.queue.count, s.queue.quantile(0.99)} {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("non-finite value from %q: %+v", text, s)
			}
		}
	})
}

func TestApplySnapshotsReadsTheSimulatorsLag(t *testing.T) {
	t.Parallel()
	snap := func(at time.Duration, lag float64) serverSnapshot {
		text := fmt.Sprintf("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{engine=\"0\"} 1\n# TYPE frontier_sim_lag_seconds_total counter\nfrontier_sim_lag_seconds_total{engine=\"0\"} %g\n", lag)
		s, err := parseServerMetrics(strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		s.t = at
		return s
	}
	m := &Measurement{Total: &Result{Metrics: map[string]float64{}}}
	if err := applySnapshots(m, []serverSnapshot{snap(0, 0.5), snap(time.Second, 0.75), snap(2*time.Second, 1.25)}, time.Second, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if got := m.Total.Metrics[SimLagS]; math.Abs(got-0.5) > 1e-9 {
		t.Errorf("%s = %g, want 0.5 (1.25 at the end less 0.75 at the window's start)", SimLagS, got)
	}
	// A real vLLM exports no such counter: no figure.
	m = &Measurement{Total: &Result{Metrics: map[string]float64{}}}
	text := "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{engine=\"0\"} 1\n"
	s, err := parseServerMetrics(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if err := applySnapshots(m, []serverSnapshot{s, s}, 0, time.Second); err != nil {
		t.Fatal(err)
	}
	if _, ok := m.Total.Metrics[SimLagS]; ok {
		t.Errorf("%s set for an engine without the counter", SimLagS)
	}
}

// A KV connector's cache (vLLM's CPU offloading, LMCache) adds its hits to the prefix cache
// hit rate: vllm:external_prefix_cache_hits counts tokens of the same requests that the GPU's
// cache missed.
func TestApplySnapshotsCountsTheExternalPrefixCache(t *testing.T) {
	t.Parallel()
	snap := func(at time.Duration, queries, hits, extHits float64) serverSnapshot {
		text := vllmMetrics(true, 0.5, 1, 0, 0, queries, hits, [4]float64{1, 1, 1, 1}, 0.01) +
			fmt.Sprintf("# TYPE vllm:external_prefix_cache_queries_total counter\nvllm:external_prefix_cache_queries_total{engine=\"0\",model_name=\"m\"} %g\n", queries) +
			fmt.Sprintf("# TYPE vllm:external_prefix_cache_hits_total counter\nvllm:external_prefix_cache_hits_total{engine=\"0\",model_name=\"m\"} %g\n", extHits)
		s, err := parseServerMetrics(strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		s.t = at
		return s
	}
	m := &Measurement{Total: &Result{Metrics: map[string]float64{}}}
	if err := applySnapshots(m, []serverSnapshot{snap(0, 100, 10, 0), snap(time.Second, 1100, 210, 500)}, 0, time.Second); err != nil {
		t.Fatal(err)
	}
	if got := m.Total.Metrics[PrefixCacheHitRate]; math.Abs(got-0.7) > 1e-9 {
		t.Errorf("prefix_cache_hit_rate = %v, want (200 GPU + 500 external) / 1000 = 0.7", got)
	}
}
