package record

import "time"

// Pressure is what the pressure experiments found about one configuration: how it behaves
// as load passes its capacity, after a burst, through an engine restart and when the class
// mix shifts. The JSON of `frontier pressure --json` is a list of these.
type Pressure struct {
	// Trial is the trial number of the configuration; -1 when it was measured at a URL.
	Trial  int            `json:"trial"`
	Config map[string]any `json:"config,omitempty"`
	// Engine is the engine kind the figures came from (vllm, sim, ollama); Simulated is
	// true when that engine is frontier's simulator.
	Engine    string    `json:"engine"`
	Simulated bool      `json:"simulated"`
	Started   time.Time `json:"started"`
	Finished  time.Time `json:"finished"`
	// Release is the release of frontier that ran the experiments (Release), as every trial
	// records its own.
	Release string `json:"release,omitempty"`

	Ladders []Ladder       `json:"ladders,omitempty"`
	Burst   *Episode       `json:"burst,omitempty"`
	Restart *Episode       `json:"restart,omitempty"`
	Shift   *Episode       `json:"shift,omitempty"`
	Notes   []string       `json:"notes,omitempty"`
	Errors  []string       `json:"errors,omitempty"` // experiments that could not run, and why
	Budget  PressureBudget `json:"budget"`
}

// PressureBudget is what bounded each experiment.
type PressureBudget struct {
	Seconds     float64 `json:"seconds"`
	MaxRequests int     `json:"max_requests"`
	WindowS     float64 `json:"window_s"`
}

// MixClass names the ladder, and the figures, of the plan's classes sent together.
const MixClass = "mix"

// Ladder is one load ladder: a class (or the mix) at rates stepped up past capacity.
type Ladder struct {
	Class string `json:"class"`
	// Steps are in the order they were measured: the ladder up, then the bisection.
	Steps []LadderStep `json:"steps"`
	// SaturationRPS is the highest offered rate that met the SLO (0 when none did); for the
	// mix it is the total rate of every class.
	SaturationRPS float64 `json:"saturation_rps"`
	// Boundary says what ended the ladder: "slo" (the SLO was missed, and Past more steps were
	// measured), "errors" (the error bound was passed), "queue" (the queue grew without end),
	// "budget" (the time or request budget ran out) or "max_steps".
	Boundary string `json:"boundary"`
	// Shape says what happens past saturation: "graceful" (latency grows, goodput holds),
	// "refuses" (the server rejects requests), "collapse" (goodput falls below half its
	// peak) or "" when nothing past saturation was measured.
	Shape string `json:"shape,omitempty"`
	// FirstBroken names, for the mix, the class whose SLO broke first.
	FirstBroken string `json:"first_broken,omitempty"`
}

// LadderStep is one measurement of a ladder.
type LadderStep struct {
	// Rate is the offered rate in req/s (for the mix, all classes together); Scale is the
	// multiple of the plan's rates it is.
	Rate  float64 `json:"rate"`
	Scale float64 `json:"scale"`
	// MetSLO is true when every class of the step met its SLO with the capacity-search rule
	// (attainment of the per-request SLO, and every other bound).
	MetSLO bool `json:"met_slo"`
	// Metrics are the step's total metrics (workload metric names), Classes those of each
	// class, Errors the failed requests by class of error.
	Metrics map[string]float64            `json:"metrics"`
	Classes map[string]map[string]float64 `json:"classes,omitempty"`
	Errors  map[string]int                `json:"errors,omitempty"`
	// FinishReasons counts the step's completed requests by the finish_reason their stream
	// ended with ("stop", "length", ...; "none" when it sent none).
	FinishReasons map[string]int `json:"finish_reasons,omitempty"`
	// MaxRunning and MaxWaiting are the most requests the engine ran and queued, and
	// WaitingEnd the queue at the end: a queue still long at the end grew without bound.
	MaxRunning float64 `json:"max_running"`
	MaxWaiting float64 `json:"max_waiting"`
	WaitingEnd float64 `json:"waiting_end"`
	// BacklogGrowth, for a step held for a set time, is how fast the requests sent and not
	// yet ended grew while the rate was held, as a share of the offered rate (the class whose
	// backlog grew fastest), and BacklogGrowthSE its standard error: above 0.1 by more than
	// the error, the server fell behind, and the step missed whatever its latencies. Nil
	// when the step was too short to tell.
	BacklogGrowth   *float64 `json:"backlog_growth,omitempty"`
	BacklogGrowthSE *float64 `json:"backlog_growth_se,omitempty"`
	Seconds         float64  `json:"seconds"`
}

// Episode is one timeline experiment: a burst and recovery, a restart, or a class shift.
type Episode struct {
	// Kind is "burst", "restart" or "shift".
	Kind string `json:"kind"`
	// Rates are the offered rates of each class in each phase, in req/s.
	Phases []Phase `json:"phases"`
	// Events mark what happened and when, in seconds from the start of the episode.
	Events []Event `json:"events"`
	// Classes are the per-class outcomes.
	Classes []EpisodeClass `json:"classes"`
	// Timeline is the series over time, one point per window step.
	Timeline []Point `json:"timeline"`
	// Requests are the request-level timestamps of every request sent.
	Requests []RequestTimes `json:"requests,omitempty"`
	// ReadyS is, for a restart, the seconds from the kill to the engine serving again; -1
	// when it did not come back.
	ReadyS float64 `json:"ready_s,omitempty"`
	// ClientSaw counts, for a restart, what the clients got: failed requests by class of
	// error (connect, malformed for a truncated stream, http, timeout).
	ClientSaw map[string]int `json:"client_saw,omitempty"`
	// FirstBroken names, for a shift, the class whose SLO broke first after it; "" when
	// none did.
	FirstBroken string `json:"first_broken,omitempty"`
	// Retry is what the clients' retry policy did; nil when the plan states none.
	Retry *RetryOutcome `json:"retry,omitempty"`
	// SimLagS is how many seconds the simulated engine fell behind real time during the
	// episode (its host too busy to run its steps when due); 0 for a real engine.
	SimLagS float64 `json:"sim_lag_s,omitempty"`
}

// RetryOutcome is the plan's retry policy and what it added to the load of an episode.
type RetryOutcome struct {
	MaxRetries  int     `json:"max_retries"`
	Budget      float64 `json:"budget"`
	BackoffS    float64 `json:"backoff_s"`
	MaxBackoffS float64 `json:"max_backoff_s"`
	Jitter      float64 `json:"jitter"`
	// Retries are the attempts sent again; Denied the retries the budget refused.
	Retries int `json:"retries"`
	Denied  int `json:"denied"`
	// LoadFactor is every attempt over the requests' first attempts: 2 means retries doubled
	// the load. PeakLoadFactor is the same ratio in the timeline's worst window.
	LoadFactor     float64 `json:"load_factor"`
	PeakLoadFactor float64 `json:"peak_load_factor"`
}

// Phase is a stretch of constant offered load.
type Phase struct {
	Name  string             `json:"name"`
	From  float64            `json:"from"` // seconds
	To    float64            `json:"to"`
	Rates map[string]float64 `json:"rates"`
}

// Event is one moment of an episode: "burst", "burst_end", "kill", "ready", "shift".
type Event struct {
	Name string  `json:"name"`
	T    float64 `json:"t"`
}

// EpisodeClass is what an episode did to one class.
type EpisodeClass struct {
	Class string `json:"class"`
	// Sent, Completed, Failed, Cancelled and TimedOut count the class's requests (by the
	// last attempt of each, when the clients retry); Lost are those that failed (timeouts
	// included) other than by the client's own cancellation; Retries the attempts sent again.
	Sent      int `json:"sent"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	Cancelled int `json:"cancelled"`
	TimedOut  int `json:"timed_out"`
	Lost      int `json:"lost"`
	Retries   int `json:"retries,omitempty"`
	// BrokeS is when the class first missed its SLO in a window after the disturbance; -1
	// when it never did.
	BrokeS float64 `json:"broke_s"`
	// RecoveredS is the seconds from the disturbance (the burst's end, the kill, the shift)
	// until the class met its SLO again in every later window; -1 when it did not within the
	// experiment.
	RecoveredS float64 `json:"recovered_s"`
	// Errors are the class's failures by class of error.
	Errors map[string]int `json:"errors,omitempty"`
	// FinishReasons counts the completed requests by the finish_reason their stream ended
	// with ("stop", "length", ...; "none" when it sent none).
	FinishReasons map[string]int `json:"finish_reasons,omitempty"`
}

// Point is the state of an episode over one window, ending at T.
type Point struct {
	T float64 `json:"t"`
	// Offered, Accepted (first token), Completed and Failed are per second over the window.
	// Offered counts each request's first attempt when it was due; Retries the attempts
	// sent again (the retry policy), so Offered + Retries is the load with retries.
	Offered   float64 `json:"offered"`
	Retries   float64 `json:"retries,omitempty"`
	Accepted  float64 `json:"accepted"`
	Completed float64 `json:"completed"`
	Failed    float64 `json:"failed"`
	Goodput   float64 `json:"goodput"`
	// TTFTP99Ms and E2EP99Ms are over requests that ended in the window; 0 when none did.
	TTFTP99Ms float64 `json:"ttft_p99_ms"`
	E2EP99Ms  float64 `json:"e2e_p99_ms"`
	// Running, Waiting and KVCacheUsage are the engine's, from /metrics, when it has them.
	Running      float64 `json:"running"`
	Waiting      float64 `json:"waiting"`
	KVCacheUsage float64 `json:"kv_cache_usage"`
}

// RequestTimes are the timestamps of one request, in seconds from the start of the episode:
// scheduled, sent, first token (0 when none) and end, with its error class when it failed.
type RequestTimes struct {
	Class string  `json:"c"`
	Sched float64 `json:"q"`
	Sent  float64 `json:"s"`
	First float64 `json:"f,omitempty"`
	End   float64 `json:"e"`
	Err   string  `json:"x,omitempty"`
	// MetSLO is true when the request completed within every per-request bound of its class,
	// its latency counted from its first attempt.
	MetSLO bool `json:"ok,omitempty"`
	// Attempt counts the earlier attempts of the same request: 0 for the first.
	Attempt int `json:"a,omitempty"`
}

// Saturation returns the saturation rate of the ladder of class (or MixClass), and whether
// there is one.
func (p *Pressure) Saturation(class string) (float64, bool) {
	for _, l := range p.Ladders {
		if l.Class == class {
			return l.SaturationRPS, l.SaturationRPS > 0
		}
	}
	return 0, false
}
