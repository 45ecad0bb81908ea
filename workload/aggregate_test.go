package workload

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestPercentileMatchesNumpyLinear(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		sorted []float64
		p      float64
		want   float64
	}{
		{"empty is zero", nil, 50, 0},
		{"single value", []float64{7}, 99, 7},
		{"median of even count", []float64{1, 2, 3, 4}, 50, 2.5},
		{"p99 of four", []float64{1, 2, 3, 4}, 99, 3.97},
		{"p90 of ten", []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 90, 9.1},
		{"p0 is min", []float64{3, 5, 9}, 0, 3},
		{"p100 is max", []float64{3, 5, 9}, 100, 9},
		{"p25 of five", []float64{10, 20, 30, 40, 50}, 25, 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Percentile(tt.sorted, tt.p)
			if math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("Percentile(%v, %v) = %v, want %v", tt.sorted, tt.p, got, tt.want)
			}
		})
	}
}

func TestPercentileCIBracketsTheEstimate(t *testing.T) {
	t.Parallel()
	v := make([]float64, 1000)
	for i := range v {
		v[i] = float64(i + 1)
	}
	tests := []struct {
		name   string
		p      float64
		lo, hi float64
	}{
		// n*q = 500, half-width 1.96*sqrt(250) = 30.99: ranks 469 and 531.
		{"median", 50, 469, 531},
		// n*q = 990, half-width 1.96*sqrt(9.9) = 6.17: ranks 983 and 997.
		{"p99", 99, 983, 997},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			lo, hi := PercentileCI(v, tt.p)
			if diff := cmp.Diff([2]float64{tt.lo, tt.hi}, [2]float64{lo, hi}); diff != "" {
				t.Errorf("PercentileCI(1..1000, %v) (-want +got):\n%s", tt.p, diff)
			}
			if est := Percentile(v, tt.p); est < lo || est > hi {
				t.Errorf("estimate %v outside [%v, %v]", est, lo, hi)
			}
		})
	}
}

// rec builds a completed Record: sent at sent ms, first chunk at ttft ms after, then chunks
// every gap ms, out tokens, one chunk per token.
func rec(class string, idx int, sent, ttft, gap float64, out int) Record {
	d := func(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }
	r := Record{Class: class, Index: idx, Sent: d(sent), Scheduled: d(sent), InputTokens: 100, OutputTokens: out, Status: 200}
	for i := 0; i < out; i++ {
		r.Chunks = append(r.Chunks, d(sent+ttft+float64(i)*gap))
	}
	r.FirstToken = r.Chunks[0]
	r.End = r.Chunks[len(r.Chunks)-1]
	return r
}

func TestAggregateComputesTheDesignMetrics(t *testing.T) {
	t.Parallel()
	classes := []Class{
		{Name: "chat", SLO: []Bound{{Metric: "ttft_p99_ms", Value: 150}, {Metric: "error_rate", Value: 0.5}}},
		{Name: "batch"},
	}
	recs := []Record{
		{Class: "chat", Index: 0, Warmup: true, Sent: 0, FirstToken: time.Hour, End: time.Hour, OutputTokens: 1000},
		rec("chat", 1, 0, 100, 10, 11),  // ttft 100, e2e 200, tpot 10
		rec("chat", 2, 100, 200, 20, 6), // ttft 200, e2e 300, tpot 20
		rec("batch", 0, 0, 50, 5, 1),    // ttft 50, e2e 50, one token: no tpot, no itl
		{Class: "chat", Index: 3, Sent: 10, End: 20, ErrClass: ErrHTTP, Status: 500},
		{Class: "chat", Index: 4, Sent: 10, FirstToken: 30, End: 40, ErrClass: ErrCancelled},
	}
	m := Aggregate(classes, recs, 2*time.Second)

	chat := m.Workloads["chat"].Metrics
	want := map[string]float64{
		Completed: 2, Failed: 1, Cancelled: 1, ErrorRate: 1.0 / 3, DurationS: 2,
		RequestThroughput: 1, InputTokenThroughput: 100, OutputTokenThroughput: 8.5,
		TotalTokenThroughput: 108.5,
		Goodput:              0.5, // only the request with TTFT 100 ms meets ttft <= 150
		"ttft_mean_ms":       150, "ttft_p50_ms": 150, "ttft_p90_ms": 190, "ttft_p95_ms": 195, "ttft_p99_ms": 199,
		"tpot_mean_ms": 15, "tpot_p50_ms": 15, "tpot_p90_ms": 19, "tpot_p95_ms": 19.5, "tpot_p99_ms": 19.9,
		// 10 gaps of 10 ms and 5 of 20 ms, pooled.
		"itl_mean_ms": 200.0 / 15, "itl_p50_ms": 10, "itl_p90_ms": 20, "itl_p95_ms": 20, "itl_p99_ms": 20,
		"e2e_mean_ms": 250, "e2e_p50_ms": 250, "e2e_p90_ms": 290, "e2e_p95_ms": 295, "e2e_p99_ms": 299,
	}
	approx := cmpopts.EquateApprox(0, 1e-9)
	if diff := cmp.Diff(want, chat, approx); diff != "" {
		t.Errorf("chat metrics (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{ErrHTTP: 1}, m.Workloads["chat"].Errors); diff != "" {
		t.Errorf("chat errors (-want +got):\n%s", diff)
	}
	if got := len(m.Workloads["chat"].Quantiles["ttft_ms"]); got != 21 {
		t.Errorf("ttft quantiles: %d values, want 21", got)
	}
	if diff := cmp.Diff([2]float64{100, 200}, m.Workloads["chat"].CI["ttft_p50_ms"]); diff != "" {
		t.Errorf("ttft_p50 CI (-want +got):\n%s", diff)
	}

	total := m.Total.Metrics
	for name, w := range map[string]float64{
		Completed: 3, Failed: 1, Cancelled: 1, RequestThroughput: 1.5, Goodput: 1,
		OutputTokenThroughput: 9, "ttft_p50_ms": 100, "tpot_mean_ms": 15,
	} {
		if math.Abs(total[name]-w) > 1e-9 {
			t.Errorf("total %s = %v, want %v", name, total[name], w)
		}
	}
	if _, ok := m.Workloads["batch"].Quantiles["tpot_ms"]; ok {
		t.Errorf("batch has tpot quantiles without any request of more than one token")
	}
}

func TestAggregateWindowFromRecordsWhenZero(t *testing.T) {
	t.Parallel()
	recs := []Record{rec("a", 0, 1000, 10, 1, 2), rec("a", 1, 1500, 10, 1, 2)}
	m := Aggregate([]Class{{Name: "a"}}, recs, 0)
	// From the first send (1000 ms) to the last end (1511 ms).
	if got := m.Total.Metrics[DurationS]; math.Abs(got-0.511) > 1e-9 {
		t.Errorf("duration_s = %v, want 0.511", got)
	}
}

func TestAggregateNamesClassesMissingFromTheList(t *testing.T) {
	t.Parallel()
	m := Aggregate(nil, []Record{rec("x", 0, 0, 1, 1, 1)}, time.Second)
	if _, ok := m.Workloads["x"]; !ok {
		t.Fatalf("workloads = %v, want class x", m.Workloads)
	}
}

func TestGoodputPerRequestBounds(t *testing.T) {
	t.Parallel()
	// One request: TTFT 100 ms, 11 tokens every 10 ms (TPOT 10), e2e 200 ms.
	r := rec("c", 0, 0, 100, 10, 11)
	tests := []struct {
		name  string
		slo   []Bound
		meets bool
	}{
		{"no bounds", nil, true},
		{"ttft met", []Bound{{Metric: "ttft_p99_ms", Value: 100}}, true},
		{"ttft missed", []Bound{{Metric: "ttft_p50_ms", Value: 99}}, false},
		{"tpot met", []Bound{{Metric: "tpot_p99_ms", Value: 10}}, true},
		{"tpot missed", []Bound{{Metric: "tpot_mean_ms", Value: 9}}, false},
		{"itl by the request's own p99", []Bound{{Metric: "itl_p99_ms", Value: 10.5}}, true},
		{"e2e missed", []Bound{{Metric: "e2e_p95_ms", Value: 150}}, false},
		{"aggregate bounds do not apply per request", []Bound{{Metric: "error_rate", Value: 0}}, true},
		{"every bound must hold", []Bound{{Metric: "ttft_p99_ms", Value: 500}, {Metric: "e2e_p99_ms", Value: 1}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := Class{Name: "c", SLO: tt.slo}
			if got := c.MeetsRequestSLO(&r); got != tt.meets {
				t.Errorf("MeetsRequestSLO = %v, want %v", got, tt.meets)
			}
			m := Aggregate([]Class{c}, []Record{r}, time.Second)
			want := 0.0
			if tt.meets {
				want = 1
			}
			if got := m.Total.Metrics[Goodput]; got != want {
				t.Errorf("goodput = %v, want %v", got, want)
			}
		})
	}
}

func TestAttainmentAndMissed(t *testing.T) {
	t.Parallel()
	c := Class{Name: "c", SLO: []Bound{{Metric: "ttft_p99_ms", Value: 150}, {Metric: "error_rate", Value: 0.2}}}
	recs := []Record{
		rec("c", 0, 0, 100, 1, 2),
		rec("c", 1, 0, 100, 1, 2),
		rec("c", 2, 0, 200, 1, 2),
		{Class: "c", Index: 3, ErrClass: ErrTimeout},
	}
	res := Aggregate([]Class{c}, recs, time.Second).Workloads["c"]
	if got := Attainment(res); math.Abs(got-0.5) > 1e-9 {
		t.Errorf("Attainment = %v, want 0.5 (2 good of 4)", got)
	}
	// ttft_p99 is 197 ms and error_rate 0.25: both missed.
	if diff := cmp.Diff(c.SLO, c.Missed(res)); diff != "" {
		t.Errorf("Missed (-want +got):\n%s", diff)
	}
	none := Aggregate([]Class{c}, []Record{{Class: "c", ErrClass: ErrConnect}}, time.Second).Workloads["c"]
	if got := c.Missed(none); len(got) != 2 {
		t.Errorf("Missed with nothing completed = %v, want both bounds", got)
	}
}

// TestStartupWaveIsWhatWasSentBeforeTheFirstFinish: in a closed loop the requests sent before
// any of their class had finished are the clients' first ones; an all-at-once class is all
// wave; open-loop arrivals and a measurement that began after warm-up requests had finished
// have none.
func TestStartupWaveIsWhatWasSentBeforeTheFirstFinish(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	rec := func(sent, first, end time.Duration, warm bool) Record {
		return Record{Class: "c", Sent: sent, FirstToken: first, End: end, Warmup: warm, Status: 200, OutputTokens: 4}
	}
	closed := []Class{{Name: "c", Arrival: Arrival{Kind: ArrivalConcurrency, Concurrency: 2}}}
	// Two clients: their first requests wait 300 and 500 ms for a first token, their second
	// ones (sent when the first finished) 100 ms each.
	recs := []Record{
		rec(0, 300*ms, 400*ms, false),
		rec(0, 500*ms, 600*ms, false),
		rec(400*ms, 500*ms, 700*ms, false),
		rec(600*ms, 700*ms, 900*ms, false),
	}
	w := Aggregate(closed, recs, time.Second).StartupWave
	if w == nil || w.Requests != 2 || w.TTFTMeanMs != 400 || w.RestTTFTMeanMs != 100 || math.Abs(w.Share-0.8) > 1e-9 {
		t.Errorf("closed loop: wave %+v, want 2 requests at 400 ms, the rest 100 ms, share 0.8", w)
	}
	all := []Class{{Name: "c", Arrival: Arrival{Kind: ArrivalImmediate}}}
	if w := Aggregate(all, recs[:2], time.Second).StartupWave; w == nil || w.Requests != 2 || w.Share != 1 {
		t.Errorf("all at once: wave %+v, want both requests, share 1", w)
	}
	open := []Class{{Name: "c", Arrival: Arrival{Kind: ArrivalPoisson, Rate: 4}}}
	if w := Aggregate(open, recs, time.Second).StartupWave; w != nil {
		t.Errorf("Poisson arrivals: wave %+v, want none", w)
	}
	// Warm-up requests finished before the measured ones were sent: no wave is measured.
	warm := append([]Record{rec(0, 300*ms, 400*ms, true), rec(0, 300*ms, 400*ms, true)}, recs[2:]...)
	if w := Aggregate(closed, warm, time.Second).StartupWave; w != nil {
		t.Errorf("after warm-up: wave %+v, want none", w)
	}
}

func TestPercentileCIRanksSayWhenTheSampleCannotBoundTheTail(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name      string
		n         int
		p         float64
		openAbove bool
	}{
		{"p99 of 120 requests", 120, 99, true},
		{"p99 of 1000 requests", 1000, 99, false},
		{"p95 of 200 requests", 200, 95, false},
		{"p50 of 10 requests", 10, 50, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			lo, hi := PercentileCIRanks(tt.n, tt.p)
			if lo < 0 || lo > hi {
				t.Fatalf("PercentileCIRanks(%d, %v) = %d, %d: want 0 <= lo <= hi", tt.n, tt.p, lo, hi)
			}
			if got := hi > tt.n-1; got != tt.openAbove {
				t.Errorf("PercentileCIRanks(%d, %v) = %d, %d: upper rank past the sample = %v, want %v", tt.n, tt.p, lo, hi, got, tt.openAbove)
			}
		})
	}
}

func TestMeanCIShrinksWithTheSample(t *testing.T) {
	t.Parallel()
	small := []float64{10, 12, 8, 11, 9}
	var large []float64
	for range 20 {
		large = append(large, small...)
	}
	slo, shi := MeanCI(small)
	llo, lhi := MeanCI(large)
	if !(slo < 10 && shi > 10 && llo < 10 && lhi > 10) {
		t.Fatalf("MeanCI does not bracket the mean 10: small [%v, %v], large [%v, %v]", slo, shi, llo, lhi)
	}
	if lhi-llo >= (shi-slo)/3 {
		t.Errorf("MeanCI of 100 values is %v wide, of 5 values %v: want under a third (sqrt(20) = 4.5x narrower)", lhi-llo, shi-slo)
	}
	if lo, hi := MeanCI([]float64{7}); lo != 7 || hi != 7 {
		t.Errorf("MeanCI of one value = [%v, %v], want [7, 7]", lo, hi)
	}
}
