package workload

import (
	"math"
	"math/rand/v2"
	"time"
)

// Metric names, in plans, JSON and reports. Every package refers to these constants; no
// other place spells a metric name.
const (
	Completed             = "completed"
	Failed                = "failed"
	Cancelled             = "cancelled"
	ErrorRate             = "error_rate"
	DurationS             = "duration_s"
	RequestThroughput     = "request_throughput"
	InputTokenThroughput  = "input_token_throughput"
	OutputTokenThroughput = "output_token_throughput"
	TotalTokenThroughput  = "total_token_throughput"
	Goodput               = "goodput"
	QueueMeanMs           = "queue_mean_ms"
	QueueP99Ms            = "queue_p99_ms"
	KVCacheUsageMax       = "kv_cache_usage_max"
	Preemptions           = "preemptions"
	PrefixCacheHitRate    = "prefix_cache_hit_rate"
	CapacityRPS           = "capacity_rps"
	CostPerMillionOutput  = "cost_per_million_output_tokens"
	// KVTransferMeanMs is the mean time a disaggregated deployment's requests spend moving
	// their KV cache from the prefill instance to the decode instance, and
	// KVTransferTTFTShare its share of the mean time to first token.
	KVTransferMeanMs    = "kv_transfer_mean_ms"
	KVTransferTTFTShare = "kv_transfer_ttft_share"
	// SimLagS is how many seconds frontier's simulated engine fell behind real time during
	// the measurement (its host too busy to run its steps when due), from its /metrics; only
	// the simulator sets it, and it is not a plan metric.
	SimLagS = "sim_lag_s"
)

// MaxSimLagShare is the share of a measurement's window the simulated engine may fall behind
// real time before its latencies are called the host's rather than the model's.
const MaxSimLagShare = 0.01

// SimLagged reports whether the simulated engine behind r fell more than MaxSimLagShare of
// r's measured window behind real time, and by how many seconds.
func SimLagged(r *Result) (float64, bool) {
	if r == nil {
		return 0, false
	}
	lag, window := r.Metrics[SimLagS], r.Metrics[DurationS]
	return lag, window > 0 && lag > MaxSimLagShare*window
}

// LatencyFamilies are the per-request latencies that have a mean and percentiles:
// ttft_mean_ms, ttft_p50_ms, ... e2e_p99_ms.
var LatencyFamilies = []string{"ttft", "tpot", "itl", "e2e"}

// LatencyStats are the statistics computed for each latency family.
var LatencyStats = []string{"mean", "p50", "p90", "p95", "p99"}

// MetricNames returns every metric name a measurement can carry, in a stable order.
func MetricNames() []string {
	names := []string{Completed, Failed, Cancelled, ErrorRate, DurationS, RequestThroughput,
		InputTokenThroughput, OutputTokenThroughput, TotalTokenThroughput, Goodput}
	for _, f := range LatencyFamilies {
		for _, s := range LatencyStats {
			names = append(names, f+"_"+s+"_ms")
		}
	}
	return append(names, QueueMeanMs, QueueP99Ms, KVCacheUsageMax, Preemptions,
		PrefixCacheHitRate, CapacityRPS, CostPerMillionOutput, KVTransferMeanMs, KVTransferTTFTShare)
}

// IsMetric reports whether name is a metric name.
func IsMetric(name string) bool {
	for _, n := range MetricNames() {
		if n == name {
			return true
		}
	}
	return false
}

// DistKind is the family of a length distribution.
type DistKind string

// Length distributions of the plan language.
const (
	DistFixed     DistKind = "fixed"     // A
	DistUniform   DistKind = "uniform"   // integers in [A, B]
	DistNormal    DistKind = "normal"    // mean A, standard deviation B
	DistLogNormal DistKind = "lognormal" // arithmetic mean A, sigma B of the underlying normal
)

// Dist is a distribution of token counts. The zero Dist is "not set".
type Dist struct {
	Kind DistKind `json:"kind"`
	A    float64  `json:"a"`
	B    float64  `json:"b,omitempty"`
}

// IsSet reports whether d names a distribution.
func (d Dist) IsSet() bool { return d.Kind != "" }

// Mean returns the expected value of d.
func (d Dist) Mean() float64 {
	switch d.Kind {
	case DistUniform:
		return (d.A + d.B) / 2
	default:
		return d.A
	}
}

// ArrivalKind is the family of an arrival process.
type ArrivalKind string

// Arrival processes of the plan language.
const (
	ArrivalPoisson     ArrivalKind = "poisson"     // Rate req/s, exponential gaps
	ArrivalConstant    ArrivalKind = "constant"    // Rate req/s, equal gaps
	ArrivalGamma       ArrivalKind = "gamma"       // Rate req/s, Burstiness as in vllm bench serve
	ArrivalConcurrency ArrivalKind = "concurrency" // closed loop with Concurrency requests in flight
	ArrivalImmediate   ArrivalKind = "immediate"   // every request at time zero
	ArrivalTrace       ArrivalKind = "trace"       // send times (and lengths) from TraceFile
)

// Arrival is when a class sends its requests.
type Arrival struct {
	Kind        ArrivalKind `json:"kind"`
	Rate        float64     `json:"rate,omitempty"`
	Burstiness  float64     `json:"burstiness,omitempty"`
	Concurrency int         `json:"concurrency,omitempty"`
	TraceFile   string      `json:"trace_file,omitempty"`
}

// Endpoint names an OpenAI-compatible endpoint.
const (
	EndpointCompletions = "completions"
	EndpointChat        = "chat"
)

// Bound is one SLO: Metric (a metric name such as "ttft_p99_ms") must stay at or below Max,
// or at or above Min when AtLeast is set.
type Bound struct {
	Metric  string  `json:"metric"`
	Value   float64 `json:"value"`
	AtLeast bool    `json:"at_least,omitempty"`
}

// Met reports whether v satisfies b.
func (b Bound) Met(v float64) bool {
	if b.AtLeast {
		return v >= b.Value
	}
	return v <= b.Value
}

// Class is one workload class: what requests look like, when they arrive, and the SLO they
// are held to.
type Class struct {
	Name           string        `json:"name"`
	Requests       int           `json:"requests"`
	Warmup         int           `json:"warmup"`
	InputTokens    Dist          `json:"input_tokens"`
	OutputTokens   Dist          `json:"output_tokens"`
	PrefixTokens   int           `json:"prefix_tokens,omitempty"`
	Arrival        Arrival       `json:"arrival"`
	Dataset        string        `json:"dataset,omitempty"` // absolute path
	Endpoint       string        `json:"endpoint,omitempty"`
	CancelFraction float64       `json:"cancel_fraction,omitempty"`
	Timeout        time.Duration `json:"timeout,omitempty"` // per request; 0 means none
	SLO            []Bound       `json:"slo,omitempty"`
	// Attainment is the share of requests that must meet the per-request SLOs for the class to
	// count as within SLO when searching for capacity; 0 means 0.99.
	Attainment float64 `json:"attainment,omitempty"`
	// Seed, when not 0, is the seed of the class's requests whatever the study's seed, so the
	// same requests are sent in every study; 0 means they follow the study's seed.
	Seed int64 `json:"seed,omitempty"`

	// Conversations, when above 0, makes the class a set of multi-turn conversations in place
	// of Requests independent requests (Warmup then counts warm-up conversations). The
	// arrival process starts conversations; each has Turns turns, and each turn's prompt is
	// the conversation's whole history (the prefix, the earlier turns' prompts and the
	// replies as received) plus InputTokens new tokens, answered with OutputTokens. The
	// first turn's prompt is the prefix and its new tokens.
	Conversations int `json:"conversations,omitempty"`
	// Turns is the number of turns of each conversation; unset means one.
	Turns Dist `json:"turns,omitzero"`
	// ThinkTime is the mean time between a reply and the next turn of its conversation,
	// exponentially distributed; 0 sends the next turn as soon as the reply ends.
	ThinkTime time.Duration `json:"think_time,omitempty"`
	// PrefixGroups, when above 1, spreads PrefixTokens over that many distinct shared
	// prefixes (tenants, system prompts): each request, or each conversation, starts with
	// one of them, drawn uniformly.
	PrefixGroups int `json:"prefix_groups,omitempty"`
}

// MaxTurns is the most turns a conversation has: a draw of Turns is cut to it.
const MaxTurns = 10000

// Sessions is how many independent units the class sends, warm-up included: conversations
// for a class of conversations, requests otherwise.
func (c *Class) Sessions() int {
	if c.Conversations > 0 {
		return c.Warmup + c.Conversations
	}
	return c.Warmup + c.Requests
}

// AtLeast makes the class measure at least n sessions (conversations for a class of
// conversations, requests otherwise), warm-up aside.
func (c *Class) AtLeast(n int) {
	if c.Conversations > 0 {
		c.Conversations = max(c.Conversations, n)
	} else {
		c.Requests = max(c.Requests, n)
	}
}

// SetSessions makes the class measure exactly n sessions, with no warm-up.
func (c *Class) SetSessions(n int) {
	if c.Conversations > 0 {
		c.Conversations = n
	} else {
		c.Requests = n
	}
	c.Warmup = 0
}

// RequestsPerSession is how many requests a session of the class sends on average: its
// mean number of turns for a class of conversations, else 1.
func (c *Class) RequestsPerSession() float64 {
	if c.Conversations > 0 && c.Turns.IsSet() {
		return max(1, c.Turns.Mean())
	}
	return 1
}

// RequestsOf is how many requests n sessions of the class send on average, rounded up.
func (c *Class) RequestsOf(n int) int {
	return int(math.Ceil(float64(n) * c.RequestsPerSession()))
}

// Sample draws one length from d, at least 1 and at most MaxTokens.
func (d Dist) Sample(r *rand.Rand) int {
	var v float64
	switch d.Kind {
	case DistFixed:
		v = d.A
	case DistUniform:
		v = d.A + r.Float64()*(d.B-d.A+1)
		if v > d.B {
			v = d.B
		}
	case DistNormal:
		v = d.A + r.NormFloat64()*d.B
	case DistLogNormal:
		// A is the arithmetic mean: mu = ln(A) - sigma^2/2.
		mu := math.Log(d.A) - d.B*d.B/2
		v = math.Exp(mu + d.B*r.NormFloat64())
	default:
		v = 1
	}
	if !(v < MaxTokens) { // also NaN
		return MaxTokens
	}
	return max(int(v), 1)
}

// Measurement is the result of driving a workload: one Result per class and one in total.
// Its JSON is the measurement JSON of DESIGN.md.
type Measurement struct {
	Workloads map[string]*Result `json:"workloads"`
	Total     *Result            `json:"total"`
	// Series is the engine's state over the measured window, from /metrics scrapes (or from the
	// simulator's scheduler).
	Series []Sample `json:"series,omitempty"`
	// Simulated is true when the numbers come from the performance model, not a real engine.
	Simulated bool `json:"simulated,omitempty"`
	// StartupWave is the part of the time to first token that comes from the requests sent
	// at the start of a closed-loop or all-at-once class; nil when no class starts that way.
	StartupWave *StartupWave `json:"startup_wave,omitempty"`
}

// Result holds the metrics of one class, or of all classes together.
type Result struct {
	Metrics map[string]float64 `json:"metrics"`
	// CI holds 95% confidence intervals [low, high] of the latency percentiles (p50, p90, p95,
	// p99) and means, by metric name (PercentileCI, MeanCI).
	CI map[string][2]float64 `json:"ci,omitempty"`
	// Quantiles holds, for "ttft_ms", "tpot_ms", "itl_ms" and "e2e_ms", the 0th, 5th, ...,
	// 100th percentiles (21 values): the latency distribution, for plots.
	Quantiles map[string][]float64 `json:"quantiles,omitempty"`
	// Errors counts failed requests by error class.
	Errors map[string]int `json:"errors,omitempty"`
	// ErrorMessages holds, per error class, what the first request that failed with it was
	// told, such as "HTTP 400: This model's maximum context length is 2048 tokens. ..." (at
	// most MaxErrorMessage characters of the server's message): why requests failed, not
	// only how many.
	ErrorMessages map[string]string `json:"error_messages,omitempty"`
	// Turns holds, for a class of conversations, the metrics of each turn index: Turns[0]
	// covers every conversation's first turn, Turns[1] the second, and so on; nil for
	// classes of independent requests. Its Results have Metrics and Errors only.
	Turns []*Result `json:"turns,omitempty"`
}

// Sample is the engine's state at one moment of a measurement.
type Sample struct {
	T            float64 `json:"t"` // seconds since the start of the measured window
	KVCacheUsage float64 `json:"kv_cache_usage"`
	Running      float64 `json:"running"`
	Waiting      float64 `json:"waiting"`
}

// Error classes of a failed request.
const (
	ErrConnect = "connect" // the connection could not be made or was reset before a response
	ErrHTTP    = "http"    // the server answered with a status other than 200
	// ErrUnauthorized: the server answered 401 or 403, refusing the API key sent, or its
	// absence (the target's APIKey).
	ErrUnauthorized = "unauthorized"
	ErrTimeout      = "timeout"   // the request's timeout passed
	ErrMalformed    = "malformed" // the stream could not be parsed or ended without [DONE]
	ErrCancelled    = "cancelled" // the client abandoned the request (cancel_fraction or the run's end)
	ErrStream       = "stream"    // the server reported an error inside a 200 stream
	// ErrNotSent: a turn of a conversation never sent because an earlier turn failed (a
	// history past the context, an error): the conversation the service broke, counted
	// as failed.
	ErrNotSent = "not_sent"
)

// Record is what happened to one request. Times are offsets from the start of the run, on
// one monotonic clock.
type Record struct {
	Class     string        `json:"class"`
	Index     int           `json:"index"`
	Warmup    bool          `json:"warmup"`
	Scheduled time.Duration `json:"scheduled"` // when the request was due (open loop)
	Sent      time.Duration `json:"sent"`      // when it was actually sent
	// FirstToken is when the first chunk with content arrived; 0 when none did.
	FirstToken time.Duration `json:"first_token"`
	// Chunks are the arrival times of every chunk with content, FirstToken included.
	Chunks       []time.Duration `json:"chunks,omitempty"`
	End          time.Duration   `json:"end"`
	InputTokens  int             `json:"input_tokens"`  // from the server's usage
	OutputTokens int             `json:"output_tokens"` // from the server's usage
	Status       int             `json:"status"`        // HTTP status; 0 when none
	// FinishReason is the stream's finish_reason ("stop", "length", "abort", ...); empty
	// when it sent none.
	FinishReason string `json:"finish_reason,omitempty"`
	ErrClass     string `json:"err_class,omitempty"`
	Err          string `json:"err,omitempty"`
	// Attempt counts the earlier attempts of the same request (RunOptions.Retry): 0 for
	// the first; a retry keeps the request's Scheduled time.
	Attempt int `json:"attempt,omitempty"`
	// Conversation and Turn place a turn of a class of conversations: the conversation's
	// position in the class, and the turn's number from 1. Turn is 0 for a request that is
	// not a turn.
	Conversation int `json:"conversation,omitempty"`
	Turn         int `json:"turn,omitempty"`

	// reply is the text the stream carried, kept for a turn so that the conversation's next
	// prompt holds it as received.
	reply string
}

// OK reports whether the request completed.
func (r *Record) OK() bool { return r.ErrClass == "" }

// Finish is the stream's finish_reason, or "none" when it sent none: the name a request is
// counted under by finish reason.
func (r *Record) Finish() string {
	if r.FinishReason == "" {
		return "none"
	}
	return r.FinishReason
}
