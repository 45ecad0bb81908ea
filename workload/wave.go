package workload

import "time"

// StartupWave says how much of a closed-loop or all-at-once run's time to first token comes
// from its start, when every client sends at once and the first prefills queue behind each
// other. Real benchmarks start the same way, so measurements keep it; this separates it.
type StartupWave struct {
	// Requests sent at the start of the measurement: those of a closed-loop or all-at-once
	// class sent before any request of their class had finished.
	Requests int `json:"requests"`
	// TTFTMeanMs is the mean time to first token of those requests, RestTTFTMeanMs of the
	// others (0 when there are none).
	TTFTMeanMs     float64 `json:"ttft_mean_ms"`
	RestTTFTMeanMs float64 `json:"rest_ttft_mean_ms"`
	// Share is the wave's part of the sum of all times to first token, in [0, 1].
	Share float64 `json:"share"`
}

// startupWave splits the measured requests' times to first token into the start-up wave and
// the rest; nil when no class starts all at once (open-loop arrivals) or no measured request
// was part of a wave (warm-up requests had already finished when the measurement began). A
// closed-loop client sends its next request only once its last one has finished, so every
// request of such a class sent before the class's first finish was sent at the start.
func startupWave(classes []Class, recs []Record) *StartupWave {
	waveClass := map[string]bool{}
	for _, c := range classes {
		waveClass[c.Name] = c.Arrival.Kind == ArrivalConcurrency || c.Arrival.Kind == ArrivalImmediate
	}
	firstEnd := map[string]time.Duration{}
	for i := range recs {
		r := &recs[i]
		if !waveClass[r.Class] || r.End <= 0 {
			continue
		}
		if f, ok := firstEnd[r.Class]; !ok || r.End < f {
			firstEnd[r.Class] = r.End
		}
	}
	var w StartupWave
	var waveSum, restSum float64
	rest := 0
	for i := range recs {
		r := &recs[i]
		if r.Warmup || r.FirstToken <= 0 {
			continue
		}
		ttft := (r.FirstToken - r.Sent).Seconds() * 1000
		if f, ok := firstEnd[r.Class]; waveClass[r.Class] && (!ok || r.Sent < f) {
			w.Requests++
			waveSum += ttft
		} else {
			rest++
			restSum += ttft
		}
	}
	if w.Requests == 0 {
		return nil
	}
	w.TTFTMeanMs = waveSum / float64(w.Requests)
	if rest > 0 {
		w.RestTTFTMeanMs = restSum / float64(rest)
	}
	if waveSum+restSum > 0 {
		w.Share = waveSum / (waveSum + restSum)
	}
	return &w
}
