package workload

import (
	"math/rand/v2"
	"testing"
	"time"
)

// queueRecords simulates a FIFO server with `servers` slots, each request taking `service`,
// offered Poisson arrivals at rate for hold: the Records a run against it would produce.
func queueRecords(rate float64, hold time.Duration, servers int, service time.Duration, seed uint64) []Record {
	rng := rand.New(rand.NewPCG(seed, 1))
	free := make([]time.Duration, servers) // when each slot is next free
	var recs []Record
	t := time.Duration(0)
	for i := 0; t < hold; i++ {
		t += time.Duration(rng.ExpFloat64() / rate * float64(time.Second))
		k := 0
		for j := range free {
			if free[j] < free[k] {
				k = j
			}
		}
		start := max(t, free[k])
		free[k] = start + service
		recs = append(recs, Record{Class: "chat", Index: i, Scheduled: t, Sent: t, FirstToken: start + service/10, End: start + service})
	}
	return recs
}

func TestBacklogGrowthTellsAKeptUpLoadFromAGrowingQueue(t *testing.T) {
	// 10 slots of 200 ms: the server completes at most 50 req/s.
	for _, tc := range []struct {
		rate     float64
		min, max float64
		sustains bool
	}{
		{rate: 20, min: -0.1, max: 0.1, sustains: true},  // 40% busy
		{rate: 40, min: -0.1, max: 0.1, sustains: true},  // 80% busy
		{rate: 100, min: 0.4, max: 0.6, sustains: false}, // completes half of it: grows at 0.5 of λ
		{rate: 200, min: 0.65, max: 0.85, sustains: false},
	} {
		recs := queueRecords(tc.rate, 10*time.Second, 10, 200*time.Millisecond, 7)
		g, se, ok := BacklogGrowthOf(recs, "chat")
		if !ok {
			t.Fatalf("rate %g: growth not measured over %d requests", tc.rate, len(recs))
		}
		if g < tc.min || g > tc.max {
			t.Errorf("rate %g: backlog growth %.3f ± %.3f, want within [%g, %g]", tc.rate, g, se, tc.min, tc.max)
		}
		if se <= 0 || se > 0.1 {
			t.Errorf("rate %g: standard error %.3f of the growth over 10 s, want above 0 and at most 0.1", tc.rate, se)
		}
		// Every request met its (empty) SLO: only the backlog can fail the rate.
		n := float64(len(recs))
		m := &Measurement{Workloads: map[string]*Result{"chat": {Metrics: map[string]float64{Completed: n, DurationS: 10, Goodput: n / 10}}}}
		MeasureBacklog(m, recs)
		if got := m.Workloads["chat"].Metrics[BacklogGrowth]; got != g {
			t.Errorf("rate %g: MeasureBacklog set %g, BacklogGrowthOf says %g", tc.rate, got, g)
		}
		if got := MeetsCapacitySLO(Class{Name: "chat"}, m.Workloads["chat"]); got != tc.sustains {
			t.Errorf("rate %g: MeetsCapacitySLO = %v with backlog growth %.3f ± %.3f, want %v", tc.rate, got, g, se, tc.sustains)
		}
	}
}

// TestBacklogVerdictIsRobustToArrivalNoise holds loads for 3 s, as short as a pressure
// ladder's steps get, over many seeds: a load at 80% of capacity must not be judged as
// falling behind, nor one at twice capacity as keeping up.
func TestBacklogVerdictIsRobustToArrivalNoise(t *testing.T) {
	behindAt80, keptAt200 := 0, 0
	const seeds = 40
	for seed := uint64(1); seed <= seeds; seed++ {
		if g, se, ok := BacklogGrowthOf(queueRecords(40, 3*time.Second, 10, 200*time.Millisecond, seed), "chat"); ok && FellBehind(g, se) {
			behindAt80++
		}
		if g, se, ok := BacklogGrowthOf(queueRecords(100, 3*time.Second, 10, 200*time.Millisecond, seed), "chat"); !ok || !FellBehind(g, se) {
			keptAt200++
		}
	}
	if behindAt80 > seeds/20 {
		t.Errorf("a load at 80%% of capacity fell behind in %d of %d draws", behindAt80, seeds)
	}
	if keptAt200 > seeds/20 {
		t.Errorf("a load at twice capacity kept up in %d of %d draws", keptAt200, seeds)
	}
}

func TestBacklogGrowthNeedsAHeldLoad(t *testing.T) {
	// 30 requests sent within 0.1 s: too few in the held part to tell growth from noise.
	recs := queueRecords(300, 100*time.Millisecond, 4, time.Second, 3)
	if g, _, ok := BacklogGrowthOf(recs, "chat"); ok {
		t.Fatalf("growth %g measured on a burst of %d requests; want none", g, len(recs))
	}
	// Requests of another class are not the class's load.
	recs = queueRecords(100, 10*time.Second, 10, 200*time.Millisecond, 5)
	for i := range recs {
		recs[i].Class = "other"
	}
	if _, _, ok := BacklogGrowthOf(recs, "chat"); ok {
		t.Fatal("growth measured for a class with no requests")
	}
	// A load shorter than one service time: nothing left to read once the backlog formed.
	recs = queueRecords(100, 2*time.Second, 1000, 5*time.Second, 5)
	if g, _, ok := BacklogGrowthOf(recs, "chat"); ok {
		t.Fatalf("growth %g measured though every request outlasted the load", g)
	}
}
