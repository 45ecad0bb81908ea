package workload

import "math"

// TailSamples is how many samples a percentile should have beyond it to be pinned: with
// fewer, one or two slow requests decide it.
const TailSamples = 10

// QuantileRanks says which of n sorted samples a percentile reads, as ranks from the top (1 is
// the largest value, 2 the second largest, and so on).
type QuantileRanks struct {
	// Rank is the sample nearest to where Percentile interpolates.
	Rank int
	// Low and High are the ranks of the ends of the percentile's distribution-free 95%
	// interval, as PercentileCI takes them: Low the lower value (the larger rank), High the
	// upper one (1 when it reaches the largest value).
	Low, High int
}

// RanksOf returns the ranks of the p-th percentile (0 to 100) of n samples, n at least 1:
// the order statistic Percentile reads, and those that bound its 95% interval
// (PercentileCIRanks, clamped to the sample).
func RanksOf(n int, p float64) QuantileRanks {
	n = max(n, 1)
	at := int(math.Round(float64(n-1) * p / 100)) // 0-based, ascending
	lo, hi := PercentileCIRanks(n, p)
	clamp := func(i int) int { return min(max(i, 0), n-1) }
	return QuantileRanks{Rank: n - clamp(at), Low: n - clamp(lo), High: n - clamp(hi)}
}

// SamplesFor is how many samples put about TailSamples of them beyond the p-th percentile
// (0 to 100, below 100): 10/(1-q), so 1000 for p99, 200 for p95 and 100 for p90.
func SamplesFor(p float64) int {
	if p >= 100 {
		return math.MaxInt
	}
	return int(math.Ceil(TailSamples*100/(100-p) - 1e-9))
}
