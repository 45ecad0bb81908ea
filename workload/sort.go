package workload

import (
	"cmp"
	"math/bits"
	"slices"
	"sync"
	"time"
)

// Scratch slices reused between aggregations (the estimator aggregates tens of thousands of
// latencies per configuration, thousands of configurations a minute): what Aggregate and
// sortDurations would otherwise allocate, and the garbage collector clear, every time.
var (
	durationScratch = sync.Pool{New: func() any { return new([]time.Duration) }}
	floatScratch    = sync.Pool{New: func() any { return new([]float64) }}
)

// getDurations returns an empty slice with room for n durations, from durationScratch.
func getDurations(n int) []time.Duration {
	v := *durationScratch.Get().(*[]time.Duration)
	if cap(v) < n {
		return make([]time.Duration, 0, n)
	}
	return v[:0]
}

// putDurations gives v back to durationScratch; v must not be used afterwards.
func putDurations(v []time.Duration) {
	if cap(v) == 0 {
		return
	}
	durationScratch.Put(&v)
}

// radixMin is the length below which sortDurations uses a comparison sort.
const radixMin = 512

// sortDurations sorts v in ascending order: a least-significant-digit radix sort on 11-bit
// digits of each value's offset from the minimum, with as many passes as the range needs
// (three for latencies under 8.6 s), and a comparison sort for short slices.
func sortDurations(v []time.Duration) {
	if len(v) < radixMin {
		slices.Sort(v)
		return
	}
	lo, hi := slices.Min(v), slices.Max(v)
	span := uint64(hi) - uint64(lo)
	if span == 0 {
		return
	}
	const digit = 11
	const buckets = 1 << digit
	passes := (bits.Len64(span) + digit - 1) / digit
	dst := getDurations(len(v))[:len(v)]
	defer putDurations(dst)
	src := v
	var count [buckets]int
	for p := range passes {
		shift := uint(p * digit)
		clear(count[:])
		for _, x := range src {
			count[((uint64(x)-uint64(lo))>>shift)&(buckets-1)]++
		}
		pos := 0
		for i, c := range count {
			count[i] = pos
			pos += c
		}
		for _, x := range src {
			k := ((uint64(x) - uint64(lo)) >> shift) & (buckets - 1)
			dst[count[k]] = x
			count[k]++
		}
		src, dst = dst, src
	}
	if passes%2 == 1 {
		copy(v, src)
	}
}

// mergeSorted merges ascending runs into one ascending slice. A single run is returned as
// it is, not copied.
func mergeSorted[T cmp.Ordered](runs [][]T) []T {
	runs = slices.DeleteFunc(slices.Clone(runs), func(r []T) bool { return len(r) == 0 })
	switch len(runs) {
	case 0:
		return nil
	case 1:
		return runs[0]
	}
	for len(runs) > 1 {
		next := make([][]T, 0, (len(runs)+1)/2)
		for i := 0; i < len(runs); i += 2 {
			if i+1 == len(runs) {
				next = append(next, runs[i])
				continue
			}
			next = append(next, merge2(runs[i], runs[i+1]))
		}
		runs = next
	}
	return runs[0]
}

// merge2 merges two ascending slices into a new one; on ties a's values come first.
func merge2[T cmp.Ordered](a, b []T) []T {
	out := make([]T, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		if b[j] < a[i] {
			out = append(out, b[j])
			j++
		} else {
			out = append(out, a[i])
			i++
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}
