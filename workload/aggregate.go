package workload

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Aggregate computes the metrics of a measurement from its Records: one Result per class
// (in the order of classes, then any other class the Records name) and one in total.
// Warm-up Records are left out. window is the measured window, the denominator of every
// rate; when it is 0 it is taken from the Records, from the first send to the last end.
//
// Definitions follow vllm bench serve: TTFT is the time from send to the first chunk with
// content, TPOT is (e2e - TTFT) / (output tokens - 1) for requests with more than one output
// token, ITL pools the gaps between chunks of every request, percentiles interpolate linearly
// between order statistics (numpy's default). Latency statistics cover completed requests;
// when there are none they are 0. Cancelled requests are counted and otherwise left out;
// failed requests count towards error_rate and Errors.
//
// Goodput counts the completed requests that meet every per-request bound of their class
// (see PerRequest), divided by the window.
//
// Aggregate depends on nothing but its arguments, so that simulated Records aggregate exactly
// as measured ones do. It does not set the metrics that come from the engine's /metrics,
// capacity_rps or cost_per_million_output_tokens.
func Aggregate(classes []Class, recs []Record, window time.Duration) *Measurement {
	if window <= 0 {
		window = measuredWindow(recs)
	}
	byName := make(map[string]*Class, len(classes))
	order := make([]string, 0, len(classes))
	for i := range classes {
		if _, dup := byName[classes[i].Name]; dup {
			continue
		}
		byName[classes[i].Name] = &classes[i]
		order = append(order, classes[i].Name)
	}
	groups := make(map[string][]*Record, len(classes))
	var all []*Record
	for i := range recs {
		r := &recs[i]
		if r.Warmup {
			continue
		}
		if _, ok := byName[r.Class]; !ok {
			byName[r.Class] = &Class{Name: r.Class}
			order = append(order, r.Class)
		}
		groups[r.Class] = append(groups[r.Class], r)
		all = append(all, r)
	}
	m := &Measurement{Workloads: make(map[string]*Result, len(order))}
	// Each class's latencies are sorted once; the total's sorted values are the merge of the
	// classes' sorted runs, the same values sorting the pooled latencies would give.
	per := make([]*stats, 0, len(order))
	var perTurn [][]*stats // turn index → the classes' stats of that turn
	bufp := floatScratch.Get().(*[]float64)
	buf := (*bufp)[:0]
	for _, name := range order {
		s := &stats{}
		s.add(byName[name], groups[name])
		s.sort()
		res := s.result(window, &buf)
		for t, ts := range turnStats(byName[name], groups[name]) {
			res.Turns = append(res.Turns, ts.turnResult(window, &buf))
			if t == len(perTurn) {
				perTurn = append(perTurn, nil)
			}
			perTurn[t] = append(perTurn[t], ts)
		}
		m.Workloads[name] = res
		per = append(per, s)
	}
	m.Total = mergeStats(per).result(window, &buf)
	for _, ts := range perTurn {
		m.Total.Turns = append(m.Total.Turns, mergeStats(ts).turnResult(window, &buf))
	}
	m.StartupWave = startupWave(classes, recs)
	// Every stats' inter-token latencies came from durationScratch (the total's are either a
	// class's own or a merge of them): back they go, with the milliseconds buffer.
	for _, s := range per {
		putDurations(s.itl)
	}
	for _, ts := range perTurn {
		for _, s := range ts {
			putDurations(s.itl)
		}
	}
	*bufp = buf[:0]
	floatScratch.Put(bufp)
	return m
}

// turnStats are the sorted stats of each turn index of a class of conversations, from the
// first turn to the last any conversation reached; nil when recs holds no turns.
func turnStats(c *Class, recs []*Record) []*stats {
	var byTurn [][]*Record
	for _, r := range recs {
		if r.Turn <= 0 {
			continue
		}
		for len(byTurn) < r.Turn {
			byTurn = append(byTurn, nil)
		}
		byTurn[r.Turn-1] = append(byTurn[r.Turn-1], r)
	}
	out := make([]*stats, len(byTurn))
	for i, rs := range byTurn {
		out[i] = &stats{}
		out[i].add(c, rs)
		out[i].sort()
	}
	return out
}

// turnResult is result without the intervals and quantiles, for a per-turn breakdown.
func (s *stats) turnResult(window time.Duration, buf *[]float64) *Result {
	r := s.result(window, buf)
	r.CI, r.Quantiles = nil, nil
	return r
}

// measuredWindow is the time from the first send to the last end of the measured Records.
func measuredWindow(recs []Record) time.Duration {
	w, _ := windowOf(recs)
	return w
}

// stats accumulates the Records of one class, or of several.
type stats struct {
	completed, failed, cancelled int
	good                         int
	inTokens, outTokens          int
	ttft, itl, e2e               []time.Duration
	tpot                         []float64 // ms
	errors                       map[string]int
	// firstErr is, per error class, the message of the first request that failed with it.
	firstErr map[string]string
}

func (s *stats) add(c *Class, recs []*Record) {
	bounds := c.perRequestBounds()
	gaps := 0
	for _, r := range recs {
		if r.OK() && len(r.Chunks) > 1 {
			gaps += len(r.Chunks) - 1
		}
	}
	s.ttft = make([]time.Duration, 0, len(recs))
	s.e2e = make([]time.Duration, 0, len(recs))
	s.tpot = make([]float64, 0, len(recs))
	s.itl = getDurations(gaps)
	for _, r := range recs {
		switch {
		case r.ErrClass == ErrCancelled:
			s.cancelled++
			continue
		case !r.OK():
			s.failed++
			if s.errors == nil {
				s.errors = make(map[string]int)
			}
			s.errors[r.ErrClass]++
			if _, ok := s.firstErr[r.ErrClass]; !ok && r.Err != "" {
				if s.firstErr == nil {
					s.firstErr = make(map[string]string)
				}
				s.firstErr[r.ErrClass] = r.Err
			}
			continue
		}
		s.completed++
		s.inTokens += r.InputTokens
		s.outTokens += r.OutputTokens
		s.ttft = append(s.ttft, r.FirstToken-r.Sent)
		s.e2e = append(s.e2e, r.End-r.Sent)
		if r.OutputTokens > 1 {
			s.tpot = append(s.tpot, ms(r.End-r.FirstToken)/float64(r.OutputTokens-1))
		}
		for i := 1; i < len(r.Chunks); i++ {
			s.itl = append(s.itl, r.Chunks[i]-r.Chunks[i-1])
		}
		if meetsAll(bounds, r) {
			s.good++
		}
	}
}

// sort sorts s's latencies in place.
func (s *stats) sort() {
	sortDurations(s.ttft)
	sortDurations(s.itl)
	sortDurations(s.e2e)
	slices.Sort(s.tpot)
}

// mergeStats adds up the sorted stats of several classes into sorted stats of all of them.
func mergeStats(per []*stats) *stats {
	t := &stats{}
	var ttft, itl, e2e [][]time.Duration
	var tpot [][]float64
	for _, o := range per {
		t.completed += o.completed
		t.failed += o.failed
		t.cancelled += o.cancelled
		t.good += o.good
		t.inTokens += o.inTokens
		t.outTokens += o.outTokens
		ttft, itl, e2e = append(ttft, o.ttft), append(itl, o.itl), append(e2e, o.e2e)
		tpot = append(tpot, o.tpot)
		for k, v := range o.errors {
			if t.errors == nil {
				t.errors = make(map[string]int)
			}
			t.errors[k] += v
		}
		for k, v := range o.firstErr {
			if _, ok := t.firstErr[k]; !ok {
				if t.firstErr == nil {
					t.firstErr = make(map[string]string)
				}
				t.firstErr[k] = v
			}
		}
	}
	t.ttft, t.itl, t.e2e = mergeSorted(ttft), mergeSorted(itl), mergeSorted(e2e)
	t.tpot = mergeSorted(tpot)
	return t
}

// result computes the metrics of s, whose latencies are sorted; buf is scratch space.
func (s *stats) result(window time.Duration, buf *[]float64) *Result {
	d := window.Seconds()
	rate := func(n int) float64 {
		if d <= 0 {
			return 0
		}
		return float64(n) / d
	}
	m := map[string]float64{
		Completed:             float64(s.completed),
		Failed:                float64(s.failed),
		Cancelled:             float64(s.cancelled),
		DurationS:             d,
		RequestThroughput:     rate(s.completed),
		InputTokenThroughput:  rate(s.inTokens),
		OutputTokenThroughput: rate(s.outTokens),
		TotalTokenThroughput:  rate(s.inTokens + s.outTokens),
		Goodput:               rate(s.good),
	}
	if n := s.completed + s.failed; n > 0 {
		m[ErrorRate] = float64(s.failed) / float64(n)
	} else {
		m[ErrorRate] = 0
	}
	res := &Result{Metrics: m, CI: map[string][2]float64{}, Quantiles: map[string][]float64{}}
	for _, f := range []struct {
		name string
		d    []time.Duration
		v    []float64
	}{{"ttft", s.ttft, nil}, {"tpot", nil, s.tpot}, {"itl", s.itl, nil}, {"e2e", s.e2e, nil}} {
		v := f.v
		if f.d != nil {
			// ms is monotone, so the durations in order give the milliseconds in order.
			v = slices.Grow((*buf)[:0], len(f.d))[:len(f.d)]
			for i, d := range f.d {
				v[i] = ms(d)
			}
			*buf = v
		}
		m[f.name+"_mean_ms"] = mean(v)
		for _, p := range []float64{50, 90, 95, 99} {
			m[f.name+"_p"+strconv.Itoa(int(p))+"_ms"] = Percentile(v, p)
		}
		if len(v) > 0 {
			for _, p := range []float64{50, 90, 95, 99} {
				lo, hi := PercentileCI(v, p)
				res.CI[f.name+"_p"+strconv.Itoa(int(p))+"_ms"] = [2]float64{lo, hi}
			}
			lo, hi := MeanCI(v)
			res.CI[f.name+"_mean_ms"] = [2]float64{lo, hi}
		}
		if len(v) > 0 {
			q := make([]float64, 21)
			for i := range q {
				q[i] = Percentile(v, float64(i*5))
			}
			res.Quantiles[f.name+"_ms"] = q
		}
	}
	if len(s.errors) > 0 {
		res.Errors = s.errors
	}
	if len(s.firstErr) > 0 {
		res.ErrorMessages = s.firstErr
	}
	return res
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func mean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	var sum float64
	for _, x := range v {
		sum += x
	}
	return sum / float64(len(v))
}

// Percentile returns the p-th percentile (0 to 100) of sorted, interpolating linearly between
// the two nearest order statistics, as numpy.percentile does by default; 0 when sorted is
// empty.
func Percentile(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	h := (float64(n) - 1) * p / 100
	if h <= 0 {
		return sorted[0]
	}
	if h >= float64(n-1) {
		return sorted[n-1]
	}
	lo := int(math.Floor(h))
	return sorted[lo] + (h-float64(lo))*(sorted[lo+1]-sorted[lo])
}

// PercentileCI returns a distribution-free 95% confidence interval of the p-th percentile
// (0 to 100) of sorted, from order statistics (PercentileCIRanks), clamped to the sample: where
// a rank falls outside it, the sample's extreme stands in and the interval is narrower than the
// data can support.
func PercentileCI(sorted []float64, p float64) (lo, hi float64) {
	n := len(sorted)
	if n == 0 {
		return 0, 0
	}
	l, u := PercentileCIRanks(n, p)
	l = min(max(l, 0), n-1)
	u = min(max(u, 0), n-1)
	return sorted[l], sorted[u]
}

// PercentileCIRanks returns the 0-based ranks, in a sorted sample of n values, of the ends of
// a distribution-free 95% confidence interval of the p-th percentile (0 to 100): the ranks
// n*q -/+ 1.96*sqrt(n*q*(1-q)), rounded outwards. They are not clamped: lo < 0 or hi > n-1
// says the sample is too small to bound the percentile on that side.
func PercentileCIRanks(n int, p float64) (lo, hi int) {
	q := p / 100
	nf := float64(n)
	half := 1.96 * math.Sqrt(nf*q*(1-q))
	return int(math.Floor(nf*q-half)) - 1, int(math.Ceil(nf*q+half)) - 1
}

// MeanCI returns a 95% confidence interval of the mean of v: the mean -/+ 1.96 standard
// errors; both ends are the mean for fewer than two values.
func MeanCI(v []float64) (lo, hi float64) {
	m := mean(v)
	if len(v) < 2 {
		return m, m
	}
	var ss float64
	for _, x := range v {
		ss += (x - m) * (x - m)
	}
	se := math.Sqrt(ss/float64(len(v)-1)) / math.Sqrt(float64(len(v)))
	return m - 1.96*se, m + 1.96*se
}

// latencyBound is a per-request bound: a latency family, the statistic its metric names and
// the bound.
type latencyBound struct {
	family string // ttft, tpot, itl, e2e
	stat   string // mean, p50, ...
	bound  Bound
}

// PerRequest reports whether b is applied to each request rather than to the whole
// measurement: the bounds on ttft, tpot, itl and e2e metrics (any statistic). A request meets
// such a bound when its own TTFT, TPOT or e2e latency does (TPOT of a request with at most
// one output token counts as 0, as in vllm bench serve), or, for itl, when the same statistic
// over its own inter-chunk gaps does. This is goodput as vllm bench serve defines it.
func (b Bound) PerRequest() bool {
	_, _, ok := latencyMetric(b.Metric)
	return ok
}

// latencyMetric splits "ttft_p99_ms" into "ttft" and "p99".
func latencyMetric(name string) (family, stat string, ok bool) {
	rest, found := strings.CutSuffix(name, "_ms")
	if !found {
		return "", "", false
	}
	family, stat, found = strings.Cut(rest, "_")
	if !found || !slices.Contains(LatencyFamilies, family) || !slices.Contains(LatencyStats, stat) {
		return "", "", false
	}
	return family, stat, true
}

// statQuantile is the percentile a statistic names (p99 -> 99); -1 for the mean.
func statQuantile(stat string) float64 {
	if stat == "mean" {
		return -1
	}
	p, err := strconv.ParseFloat(strings.TrimPrefix(stat, "p"), 64)
	if err != nil {
		return -1
	}
	return p
}

func (c *Class) perRequestBounds() []latencyBound {
	var out []latencyBound
	for _, b := range c.SLO {
		if f, s, ok := latencyMetric(b.Metric); ok {
			out = append(out, latencyBound{family: f, stat: s, bound: b})
		}
	}
	return out
}

// MeetsRequestSLO reports whether a completed request meets every per-request bound of c;
// false for a request that did not complete.
func (c Class) MeetsRequestSLO(r *Record) bool {
	return r.OK() && meetsAll(c.perRequestBounds(), r)
}

func meetsAll(bounds []latencyBound, r *Record) bool {
	for _, b := range bounds {
		if !b.bound.Met(requestLatency(r, b.family, b.stat)) {
			return false
		}
	}
	return true
}

// requestLatency is one request's value of a latency family, in ms.
func requestLatency(r *Record, family, stat string) float64 {
	switch family {
	case "ttft":
		return ms(r.FirstToken - r.Sent)
	case "tpot":
		if r.OutputTokens <= 1 {
			return 0
		}
		return ms(r.End-r.FirstToken) / float64(r.OutputTokens-1)
	case "e2e":
		return ms(r.End - r.Sent)
	case "itl":
		if len(r.Chunks) < 2 {
			return 0
		}
		gaps := make([]float64, len(r.Chunks)-1)
		for i := range gaps {
			gaps[i] = ms(r.Chunks[i+1] - r.Chunks[i])
		}
		if q := statQuantile(stat); q >= 0 {
			slices.Sort(gaps)
			return Percentile(gaps, q)
		}
		return mean(gaps)
	}
	return 0
}

// Attainment is the share of a result's requests, completed or failed, that completed and met
// every per-request bound of their class: goodput over the rate of completed and failed
// requests. It is 0 when there were no such requests.
func Attainment(r *Result) float64 {
	if r == nil {
		return 0
	}
	d := r.Metrics[DurationS]
	n := r.Metrics[Completed] + r.Metrics[Failed]
	if n <= 0 || d <= 0 {
		return 0
	}
	return math.Min(1, r.Metrics[Goodput]*d/n)
}

// Missed returns the bounds of c's SLO that r does not meet, in the SLO's order. A bound on a
// metric r does not carry is missed: it cannot be shown to hold. A latency bound is missed
// when no request completed.
func (c Class) Missed(r *Result) []Bound {
	var out []Bound
	for _, b := range c.SLO {
		v, ok := r.Metrics[b.Metric]
		if !ok || !b.Met(v) || (b.PerRequest() && r.Metrics[Completed] == 0) {
			out = append(out, b)
		}
	}
	return out
}
