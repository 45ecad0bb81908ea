package pressure

import (
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/frontier-llm/frontier/plan"
	"github.com/frontier-llm/frontier/record"
	"github.com/frontier-llm/frontier/workload"
)

// retrier is the clients' retry policy during one episode: exponential backoff with seeded
// jitter, at most MaxRetries per request, retries at most Budget times the requests sent
// so far (none when Budget is 0), and every attempt, retries included, within the
// experiment's max_requests.
type retrier struct {
	p plan.PressureRetry
	// sends are the first attempts' send times in seconds, sorted: how many requests had
	// been sent by a moment is how many are at or before it.
	sends []float64
	// maxRetries is what max_requests leaves for retries once every first attempt is sent.
	maxRetries int

	mu      sync.Mutex
	rng     *rand.Rand
	retries int
	denied  int
}

// newRetrier is the policy p over the first attempts at stamps, for an experiment of at
// most maxRequests attempts.
func newRetrier(p *plan.PressureRetry, stamps map[string][]float64, seed uint64, maxRequests int) *retrier {
	r := &retrier{p: *p, rng: rand.New(rand.NewPCG(seed, 0x7e7a1e5))}
	for _, st := range stamps {
		r.sends = append(r.sends, st...)
	}
	slices.Sort(r.sends)
	r.maxRetries = max(0, maxRequests-len(r.sends))
	return r
}

// retryable reports whether a failure is worth sending again: a connection that failed, a
// timeout, a stream cut short or reporting an error, an HTTP 429 or 5xx. Other HTTP
// statuses (a 400 for a bad request) would fail again.
func retryable(rec *workload.Record) bool {
	switch rec.ErrClass {
	case workload.ErrConnect, workload.ErrTimeout, workload.ErrMalformed, workload.ErrStream:
		return true
	case workload.ErrHTTP:
		return rec.Status == http.StatusTooManyRequests || rec.Status >= 500
	}
	return false
}

// decide is workload.RunOptions.Retry: whether rec's request is sent again, and after what
// wait.
func (r *retrier) decide(rec *workload.Record) (time.Duration, bool) {
	if !retryable(rec) || rec.Attempt >= r.p.MaxRetries {
		return 0, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	// The share of the requests sent so far (a budget of 0 allows none), and the
	// experiment's max_requests, which counts every attempt.
	sent := sort.SearchFloat64s(r.sends, rec.End.Seconds()+1e-9)
	if float64(r.retries+1) > r.p.Budget*float64(sent) || r.retries >= r.maxRetries {
		r.denied++
		return 0, false
	}
	r.retries++
	wait := float64(r.p.Backoff) * math.Pow(2, float64(rec.Attempt))
	wait = math.Min(wait, float64(r.p.MaxBackoff))
	wait *= 1 - r.p.Jitter*r.rng.Float64()
	return time.Duration(wait), true
}

// outcome summarises the retries of an episode: how many were sent and refused by the
// budget, and how much they added to the offered load, overall and in the worst window.
func (r *retrier) outcome(reqs []record.RequestTimes, timeline []record.Point) *record.RetryOutcome {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := &record.RetryOutcome{MaxRetries: r.p.MaxRetries, Budget: r.p.Budget, BackoffS: r.p.Backoff.Seconds(),
		MaxBackoffS: r.p.MaxBackoff.Seconds(), Jitter: r.p.Jitter, Denied: r.denied}
	first := 0
	for _, q := range reqs {
		if q.Attempt == 0 {
			first++
		} else {
			out.Retries++
		}
	}
	if first > 0 {
		out.LoadFactor = round3(float64(first+out.Retries) / float64(first))
	}
	for _, p := range timeline {
		if p.Offered > 0 {
			out.PeakLoadFactor = math.Max(out.PeakLoadFactor, round3((p.Offered+p.Retries)/p.Offered))
		}
	}
	return out
}
