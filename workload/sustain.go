package workload

import (
	"math"
	"slices"
	"time"
)

// BacklogGrowth is the rate at which a class's backlog (requests sent and not yet ended)
// grew while its load was held, as a share of the rate it was offered: about 0 when the
// server keeps up, 1 - μ/λ when it completes μ req/s of λ offered. BacklogGrowthSE is the
// standard error of that estimate (the backlog of a server that keeps up still wanders with
// the arrivals). Held-load capacity searches (CapacityOptions.Hold, the pressure ladder) set
// both; they are not plan metrics.
const (
	BacklogGrowth   = "backlog_growth"
	BacklogGrowthSE = "backlog_growth_se"
)

// MaxBacklogGrowth is the most a held load's backlog may grow, as a share of the offered
// rate, for the rate to count as sustained: a server that completes less than 90% of what
// it is offered is past its capacity however well the SLO looked while the queue built.
const MaxBacklogGrowth = 0.10

// FellBehind reports whether a held load's backlog grew faster than MaxBacklogGrowth by more
// than one standard error of the estimate: growth that the arrivals' own noise does not
// explain.
func FellBehind(growth, se float64) bool {
	return growth-se > MaxBacklogGrowth
}

// backlogSamples is how many times the backlog is read across the held part of a run.
const backlogSamples = 64

// MeasureBacklog sets BacklogGrowth and BacklogGrowthSE in the measurement of each class
// with a held load, from the run's Records. See BacklogGrowthOf.
func MeasureBacklog(m *Measurement, recs []Record) {
	if m == nil {
		return
	}
	for name, r := range m.Workloads {
		if r == nil {
			continue
		}
		if g, se, ok := BacklogGrowthOf(recs, name); ok {
			if r.Metrics == nil {
				r.Metrics = map[string]float64{}
			}
			r.Metrics[BacklogGrowth] = g
			r.Metrics[BacklogGrowthSE] = se
		}
	}
}

// BacklogGrowthOf measures how fast class's backlog grew while its load was held, and the
// standard error of that figure. The backlog at t is the class's measured requests sent by
// t less those ended (failed or not) by t. It is read from when a request sent at the start
// could have been served without queueing (the shortest time to first token plus the
// median time from first token to end, the service time) to the last send; its
// least-squares slope over that span, divided by the rate the requests were sent at in it,
// is the growth. The standard error takes the backlog's residuals about that line as
// correlated over one service time. It reports false when fewer than 20 requests were sent
// in the span, too few to tell growth from the arrivals' noise.
func BacklogGrowthOf(recs []Record, class string) (growth, se float64, ok bool) {
	var sent, ended, decode []time.Duration
	minTTFT := time.Duration(-1)
	for i := range recs {
		r := &recs[i]
		if r.Warmup || r.Class != class || r.Attempt > 0 {
			continue
		}
		sent = append(sent, r.Sent)
		end := max(r.End, r.Sent)
		ended = append(ended, end)
		if r.FirstToken > r.Sent && r.OK() {
			if ttft := r.FirstToken - r.Sent; minTTFT < 0 || ttft < minTTFT {
				minTTFT = ttft
			}
			decode = append(decode, end-r.FirstToken)
		}
	}
	if len(sent) < 2 || len(decode) == 0 {
		return 0, 0, false
	}
	slices.Sort(sent)
	slices.Sort(ended)
	slices.Sort(decode)
	service := minTTFT + decode[len(decode)/2]
	t0, t1 := sent[0], sent[len(sent)-1]
	from := t0 + service
	if from >= t1 {
		return 0, 0, false
	}
	arrivals := count(sent, t1) - count(sent, from)
	if arrivals < 20 {
		return 0, 0, false
	}
	span := (t1 - from).Seconds()
	rate := float64(arrivals) / span
	xs := make([]float64, backlogSamples)
	ys := make([]float64, backlogSamples)
	var mx, my float64
	for i := range backlogSamples {
		t := from + time.Duration(float64(t1-from)*float64(i)/float64(backlogSamples-1))
		xs[i] = (t - from).Seconds()
		ys[i] = float64(count(sent, t) - count(ended, t))
		mx += xs[i] / backlogSamples
		my += ys[i] / backlogSamples
	}
	var sxx, sxy float64
	for i := range xs {
		sxx += (xs[i] - mx) * (xs[i] - mx)
		sxy += (xs[i] - mx) * (ys[i] - my)
	}
	if sxx <= 0 || rate <= 0 {
		return 0, 0, false
	}
	slope := sxy / sxx
	var rss float64
	for i := range xs {
		d := ys[i] - my - slope*(xs[i]-mx)
		rss += d * d
	}
	// Residuals one service time apart are about independent: the span holds
	// span/service of them, at least two.
	nEff := math.Max(2, span/math.Max(service.Seconds(), 1e-3))
	nEff = math.Min(nEff, backlogSamples)
	slopeSE := math.Sqrt(rss / float64(backlogSamples-2) * 12 / (nEff * span * span))
	round := func(v float64) float64 { return math.Round(v*1000) / 1000 }
	return round(slope / rate), round(slopeSE / rate), true
}

// count is how many of the sorted times are at or before t.
func count(sorted []time.Duration, t time.Duration) int {
	i, _ := slices.BinarySearch(sorted, t+1)
	return i
}
