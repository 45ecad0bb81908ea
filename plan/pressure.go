package plan

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/frontier-llm/frontier/workload"
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// Pressure holds the plan's pressure block: the experiments run, after the search, on the
// chosen configurations to see how they behave past the happy path (see package pressure).
// A nil *Pressure means the plan has no pressure block.
type Pressure struct {
	// Pick chooses the configurations: "knee" (the recommended one), "front" (every one on
	// the Pareto front) or a trial number.
	Pick string
	// Budget bounds the wall time of each experiment; MaxRequests bounds its requests.
	Budget      time.Duration
	MaxRequests int
	// Window is the width of the sliding window over which timelines compute percentiles
	// and SLO attainment.
	Window time.Duration

	Ladder  *PressureLadder
	Burst   *PressureBurst
	Restart *PressureRestart
	Shift   *PressureShift
	// Retry is the clients' retry policy in the burst, restart and shift experiments; nil means a
	// failed request is not sent again.
	Retry *PressureRetry
}

// PressureRetry is how the clients of the burst, restart and shift experiments retry a failed
// request: after a connection error, a timeout, a cut-off stream or an HTTP 429 or 5xx,
// the request is sent again after an exponential backoff with jitter, within a budget.
type PressureRetry struct {
	// MaxRetries bounds the retries of one request (attempts are MaxRetries + 1 at most).
	MaxRetries int
	// Budget bounds the retries of the whole experiment to this share of the requests sent
	// so far (0.2: one retry for five requests); 0 allows none, and a budget at or above
	// MaxRetries leaves only MaxRetries. Every attempt, retries included, also counts
	// against the experiment's max_requests.
	Budget float64
	// Backoff is the wait before the first retry; each later retry doubles it, up to
	// MaxBackoff.
	Backoff    time.Duration
	MaxBackoff time.Duration
	// Jitter is the share of each wait drawn at random (seeded): the wait is uniform between
	// (1 - Jitter) and 1 times the backoff. 1 is "full jitter", 0 none.
	Jitter float64
}

// PressureLadder steps the arrival rate up until a boundary is crossed.
type PressureLadder struct {
	// Start is the first rate as a fraction of each class's plan rate (1 means the plan's).
	Start float64
	// Factor multiplies the rate at each step while the SLO holds.
	Factor float64
	// Past is how many steps are measured beyond the first one that misses the SLO, to show
	// the shape of the overload.
	Past int
	// Refine is how many bisection steps narrow the saturation point between the last rate
	// that met the SLO and the first that did not.
	Refine int
	// Duration is the least time each step sends for: a step sends the class's own requests
	// or rate × Duration, whichever is more, so that a high rate is held long enough to
	// fill the queue. 0 sends the class's requests, as bench --find-capacity does.
	Duration time.Duration
	// MaxSteps bounds the steps of one ladder.
	MaxSteps int
	// MaxErrorRate ends the ladder once this share of requests fails: the server refuses.
	MaxErrorRate float64
	// Classes lists the classes laddered one by one; empty means every class. The plan's mix
	// is always laddered too, unless Mix is false.
	Classes []string
	Mix     bool
}

// PressureBurst sends a burst above capacity, then the base rate again.
type PressureBurst struct {
	Factor   float64       // burst rate as a multiple of the saturation rate
	Base     float64       // base rate as a fraction of the saturation rate
	Before   time.Duration // base load before the burst
	Duration time.Duration // how long the burst lasts
	Recover  time.Duration // base load after the burst, the time recovery may take
	// CancelFraction is the share of requests whose client gives up after the first token.
	CancelFraction float64
}

// PressureRestart kills the engine under load and restarts it.
type PressureRestart struct {
	Base   float64       // load as a fraction of the saturation rate
	Before time.Duration // load before the kill
	After  time.Duration // load after the kill: restart and recovery must fit in it
}

// PressureShift changes the class mix abruptly at a constant total rate.
type PressureShift struct {
	From, To map[string]float64 // class weights before and after the shift
	Base     float64            // total load as a fraction of the mix's saturation rate
	Before   time.Duration
	After    time.Duration
}

// Defaults of the pressure block.
const (
	DefaultPressureBudget      = 2 * time.Minute
	DefaultPressureMaxRequests = 20000
	DefaultPressureWindow      = time.Second
)

// Bounds of the pressure block, checked when the plan loads: a value beyond them is a
// diagnostic that names the attribute and the range. They keep every experiment's requests,
// rates and timelines finite and within memory whatever the plan says.
const (
	// MaxPressureDuration bounds every duration of the block (budget, window, ladder
	// duration, before, after, recover, backoff...).
	MaxPressureDuration = 24 * time.Hour
	// MaxPressureRequests bounds max_requests: the requests, retries included, of one
	// experiment.
	MaxPressureRequests = 1_000_000
	// MinPressureWindow is the narrowest timeline window; the window must also be at least
	// budget / (MaxTimelinePoints / 2), so that a timeline has at most MaxTimelinePoints points.
	MinPressureWindow = 10 * time.Millisecond
	// MaxTimelinePoints bounds the points of one timeline (one every half window).
	MaxTimelinePoints = 20_000
	// MaxLadderStart, MaxLadderFactor, MaxLadderSteps, MaxLadderPast and MaxLadderRefine
	// bound the ladder's start, factor, max_steps, past and refine.
	MaxLadderStart  = 1000
	MaxLadderFactor = 100
	MaxLadderSteps  = 100
	MaxLadderPast   = 100
	MaxLadderRefine = 50
	// MaxBurstFactor bounds the burst's factor.
	MaxBurstFactor = 1000
	// MaxShiftWeight bounds one class's weight in a shift's from and to.
	MaxShiftWeight = 1e6
	// MaxRetries bounds the retry block's max_retries, MaxRetryBudget its budget.
	MaxRetries     = 100
	MaxRetryBudget = 100
)

// Pressure block schemas.
func pressureSchema() *hcl.BodySchema {
	return &hcl.BodySchema{
		Attributes: attrSchema("pick", "budget", "max_requests", "window"),
		Blocks: []hcl.BlockHeaderSchema{
			{Type: "ladder"}, {Type: "burst"}, {Type: "restart"}, {Type: "shift"}, {Type: "retry"},
		},
	}
}

func (d *decoder) decodePressureBlock(b *hcl.Block, workloads []workload.Class) (*Pressure, hcl.Diagnostics) {
	classes := map[string]bool{}
	for _, c := range workloads {
		classes[c.Name] = true
	}
	content, a := d.content(b, pressureSchema())
	ps := &Pressure{
		Pick:        a.str("pick", "knee"),
		Budget:      a.durationIn("budget", DefaultPressureBudget, time.Second, MaxPressureDuration),
		MaxRequests: a.intIn("max_requests", DefaultPressureMaxRequests, 1, MaxPressureRequests),
	}
	// The window: wide enough that a timeline over the whole budget has at most
	// MaxTimelinePoints points (one every half window).
	minWindow := max(MinPressureWindow, (2 * ps.Budget / MaxTimelinePoints).Round(time.Millisecond))
	ps.Window = a.durationIn("window", max(DefaultPressureWindow, minWindow), minWindow, max(ps.Budget, minWindow))
	if a.has("pick") && !validPick(ps.Pick) {
		a.errorf("pick", "Invalid pick", `The attribute pick of the pressure block is %q; want "knee", "front" or a trial number.`, ps.Pick)
	}
	diags := a.diags
	once := map[string]hcl.Range{}
	for _, sb := range content.Blocks {
		if prev, dup := once[sb.Type]; dup {
			diags = diags.Append(duplicate(sb, sb.Type, prev))
			continue
		}
		once[sb.Type] = sb.DefRange
		var ds hcl.Diagnostics
		switch sb.Type {
		case "ladder":
			ps.Ladder, ds = d.decodeLadderBlock(sb, workloads)
		case "burst":
			ps.Burst, ds = d.decodeBurstBlock(sb)
		case "restart":
			ps.Restart, ds = d.decodeRestartBlock(sb)
		case "shift":
			ps.Shift, ds = d.decodeShiftBlock(sb, workloads)
		case "retry":
			ps.Retry, ds = d.decodeRetryBlock(sb)
		}
		diags = diags.Extend(ds)
	}
	if ps.Retry != nil && ps.Burst == nil && ps.Restart == nil && ps.Shift == nil && !diags.HasErrors() {
		diags = diags.Append(warningAt(once["retry"], "Retry policy without a burst, restart or shift",
			"The retry policy applies to the clients of the burst, restart and shift experiments, and the pressure block has none of them."))
	}
	if ps.Retry != nil && ps.Retry.Budget == 0 && ps.Retry.MaxRetries > 0 && !diags.HasErrors() {
		diags = diags.Append(warningAt(once["retry"], "Retry budget of zero",
			"The retry block's budget is 0, which allows no retry at all: the clients never send a request again. Give a share of the requests sent, such as budget = 0.2, or leave the retry block out."))
	}
	if len(content.Blocks) == 0 {
		diags = diags.Append(warningAt(b.DefRange, "Pressure block without experiments",
			"The pressure block has no ladder, burst, restart or shift block, so it runs nothing."))
	} else if len(workloads) > 0 {
		diags = diags.Extend(openArrivalDiags(b.DefRange, workloads))
	}
	return ps, diags
}

// OpenArrival reports whether a class's arrival process has a rate that the pressure
// experiments can scale: poisson, constant or gamma. A closed loop (concurrency), an
// immediate() class and a trace have none.
func OpenArrival(c workload.Class) bool {
	switch c.Arrival.Kind {
	case workload.ArrivalPoisson, workload.ArrivalConstant, workload.ArrivalGamma:
		return c.Arrival.Rate > 0 && !math.IsInf(c.Arrival.Rate, 0)
	}
	return false
}

// ArrivalText is how a diagnostic names a class's arrival process: concurrency(4),
// immediate(), trace("f.jsonl") or poisson(8).
func ArrivalText(c workload.Class) string {
	switch c.Arrival.Kind {
	case workload.ArrivalConcurrency:
		return fmt.Sprintf("concurrency(%d)", c.Arrival.Concurrency)
	case workload.ArrivalImmediate:
		return "immediate()"
	case workload.ArrivalTrace:
		return fmt.Sprintf("trace(%q)", c.Arrival.TraceFile)
	}
	return fmt.Sprintf("%s(%g)", c.Arrival.Kind, c.Arrival.Rate)
}

// openArrivalDiags refuses a pressure block when no workload class has an open arrival
// rate (the experiments scale rates, and a closed loop or immediate() has none), and warns
// of the classes it leaves out when some do.
func openArrivalDiags(rng hcl.Range, workloads []workload.Class) hcl.Diagnostics {
	var closed []string
	for _, c := range workloads {
		if !OpenArrival(c) {
			closed = append(closed, fmt.Sprintf("%q (%s)", c.Name, ArrivalText(c)))
		}
	}
	switch {
	case len(closed) == 0:
		return nil
	case len(closed) == len(workloads):
		return hcl.Diagnostics{errorAt(rng, "No workload with an arrival rate",
			"The pressure experiments scale each workload's arrival rate (a ladder of rates, a burst at a multiple of the saturation rate), and no workload of the plan has one: %s. A closed loop keeps its requests in flight whatever the rate, and immediate() or a trace sends at times of its own. Give a workload an open arrival such as poisson(8), constant(8) or gamma(8, 1), or leave the pressure block out.",
			strings.Join(closed, ", "))}
	}
	return hcl.Diagnostics{warningAt(rng, "Workloads left out of the pressure experiments",
		"The pressure experiments scale arrival rates, so the workloads without one are not sent: %s. Only the workloads with poisson, constant or gamma arrivals are measured.",
		strings.Join(closed, ", "))}
}

func validPick(s string) bool {
	if s == "knee" || s == "front" {
		return true
	}
	n, err := strconv.Atoi(s)
	return err == nil && n >= 0
}

func (d *decoder) decodeLadderBlock(b *hcl.Block, workloads []workload.Class) (*PressureLadder, hcl.Diagnostics) {
	_, a := d.content(b, &hcl.BodySchema{Attributes: attrSchema(
		"start", "factor", "past", "refine", "duration", "max_steps", "max_error_rate", "classes", "mix")})
	l := &PressureLadder{
		Start:        a.numberIn("start", 0.5, 0, true, MaxLadderStart),
		Factor:       a.numberIn("factor", 1.5, 1, true, MaxLadderFactor),
		Past:         a.intIn("past", 2, 0, MaxLadderPast),
		Refine:       a.intIn("refine", 3, 0, MaxLadderRefine),
		Duration:     a.durationIn("duration", 5*time.Second, 0, MaxPressureDuration),
		MaxSteps:     a.intIn("max_steps", 12, 1, MaxLadderSteps),
		MaxErrorRate: a.fraction("max_error_rate", 0.5, 0, 1),
		Classes:      a.strings("classes"),
		Mix:          a.boolean("mix", true),
	}
	for _, name := range l.Classes {
		i := slicesIndexFunc(workloads, name)
		switch {
		case i < 0:
			a.errorf("classes", "Unknown workload", "The ladder names workload %q, which the plan does not declare.", name)
		case !OpenArrival(workloads[i]):
			a.errorf("classes", "Workload without an arrival rate",
				"The ladder names workload %q, whose arrival is %s: the ladder steps an arrival rate up, and a closed loop or immediate() has none. Ladder a workload with a poisson, constant or gamma arrival, or measure a closed loop's capacity with frontier bench --find-capacity.",
				name, ArrivalText(workloads[i]))
		}
	}
	return l, a.diags
}

func slicesIndexFunc(workloads []workload.Class, name string) int {
	for i, c := range workloads {
		if c.Name == name {
			return i
		}
	}
	return -1
}

func (d *decoder) decodeBurstBlock(b *hcl.Block) (*PressureBurst, hcl.Diagnostics) {
	_, a := d.content(b, &hcl.BodySchema{Attributes: attrSchema(
		"factor", "base", "before", "duration", "recover", "cancel_fraction")})
	u := &PressureBurst{
		Factor:         a.numberIn("factor", 2, 1, true, MaxBurstFactor),
		Base:           a.numberIn("base", 0.5, 0, true, 1),
		Before:         a.durationIn("before", 3*time.Second, 0, MaxPressureDuration),
		Duration:       a.durationIn("duration", 3*time.Second, time.Millisecond, MaxPressureDuration),
		Recover:        a.durationIn("recover", 20*time.Second, time.Millisecond, MaxPressureDuration),
		CancelFraction: a.fraction("cancel_fraction", 0, 0, 1),
	}
	return u, a.diags
}

func (d *decoder) decodeRestartBlock(b *hcl.Block) (*PressureRestart, hcl.Diagnostics) {
	_, a := d.content(b, &hcl.BodySchema{Attributes: attrSchema("base", "before", "after")})
	r := &PressureRestart{
		Base:   a.numberIn("base", 0.5, 0, true, 1),
		Before: a.durationIn("before", 2*time.Second, 0, MaxPressureDuration),
		// after is the time the engine has to come back and meet its SLO.
		After: a.durationIn("after", 20*time.Second, time.Millisecond, MaxPressureDuration),
	}
	return r, a.diags
}

func (d *decoder) decodeShiftBlock(b *hcl.Block, workloads []workload.Class) (*PressureShift, hcl.Diagnostics) {
	_, a := d.content(b, &hcl.BodySchema{Attributes: attrSchema("from", "to", "base", "before", "after")})
	a.require("from", `the class weights before the shift, such as { chat = 0.9, summarize = 0.1 }`)
	a.require("to", `the class weights after the shift, such as { chat = 0.2, summarize = 0.8 }`)
	s := &PressureShift{
		From:   a.weights("from", workloads),
		To:     a.weights("to", workloads),
		Base:   a.numberIn("base", 0.7, 0, true, 1),
		Before: a.durationIn("before", 3*time.Second, 0, MaxPressureDuration),
		After:  a.durationIn("after", 10*time.Second, time.Millisecond, MaxPressureDuration),
	}
	return s, a.diags
}

func (d *decoder) decodeRetryBlock(b *hcl.Block) (*PressureRetry, hcl.Diagnostics) {
	_, a := d.content(b, &hcl.BodySchema{Attributes: attrSchema("max_retries", "budget", "backoff", "max_backoff", "jitter")})
	r := &PressureRetry{
		MaxRetries: a.intIn("max_retries", 2, 0, MaxRetries),
		// budget is a share of the requests sent so far: 0 allows no retry.
		Budget:     a.numberIn("budget", 0.2, 0, false, MaxRetryBudget),
		Backoff:    a.durationIn("backoff", 100*time.Millisecond, time.Millisecond, MaxPressureDuration),
		MaxBackoff: a.durationIn("max_backoff", 2*time.Second, time.Millisecond, MaxPressureDuration),
		Jitter:     a.fraction("jitter", 1, 0, 1),
	}
	if a.has("max_backoff") && r.MaxBackoff < r.Backoff {
		a.errorf("max_backoff", "Value out of range", "The retry max_backoff (%s) must be at least the backoff (%s).", r.MaxBackoff, r.Backoff)
	}
	return r, a.diags
}

// weights reads a map of class names to weights between 0 and MaxShiftWeight, with a
// positive sum; every class named must have an open arrival rate.
func (a *attrs) weights(name string, workloads []workload.Class) map[string]float64 {
	v, ok := a.value(name, cty.Map(cty.Number), "a map of workload names to weights, such as { chat = 0.9 }")
	if !ok {
		return nil
	}
	out := map[string]float64{}
	sum := 0.0
	for k, e := range v.AsValueMap() {
		if e.IsNull() {
			a.errorf(name, "Missing value", "The weight of %s in %s of %s must not be null.", k, name, a.block)
			continue
		}
		f, _ := e.AsBigFloat().Float64()
		i := slicesIndexFunc(workloads, k)
		if i < 0 {
			a.errorf(name, "Unknown workload", "The attribute %s of %s names workload %q, which the plan does not declare.", name, a.block, k)
			continue
		}
		if !OpenArrival(workloads[i]) {
			a.errorf(name, "Workload without an arrival rate", "The attribute %s of %s names workload %q, whose arrival is %s: a shift divides a total arrival rate among the workloads, and a closed loop or immediate() has none.", name, a.block, k, ArrivalText(workloads[i]))
			continue
		}
		if f < 0 || f > MaxShiftWeight || math.IsNaN(f) {
			a.errorf(name, "Value out of range", "The weight of %s in %s of %s must be between 0 and %g, not %g.", k, name, a.block, float64(MaxShiftWeight), f)
			continue
		}
		out[k] = f
		sum += f
	}
	if sum <= 0 && !a.diags.HasErrors() {
		a.errorf(name, "No traffic", "The weights in %s of %s add up to zero, so no request would be sent.", name, a.block)
	}
	return out
}

// DefaultPressure is what `frontier pressure` runs for a plan without a pressure block: a
// ladder of every class and of the mix, a 2x burst and an engine restart, with the
// defaults of each block.
func DefaultPressure() *Pressure {
	return &Pressure{
		Pick: "knee", Budget: DefaultPressureBudget, MaxRequests: DefaultPressureMaxRequests, Window: DefaultPressureWindow,
		Ladder:  &PressureLadder{Start: 0.5, Factor: 1.5, Past: 2, Refine: 3, Duration: 5 * time.Second, MaxSteps: 12, MaxErrorRate: 0.5, Mix: true},
		Burst:   &PressureBurst{Factor: 2, Base: 0.5, Before: 3 * time.Second, Duration: 3 * time.Second, Recover: 20 * time.Second},
		Restart: &PressureRestart{Base: 0.5, Before: 2 * time.Second, After: 20 * time.Second},
	}
}

// numberIn reads a finite number between lo and hi: above lo when open, at lo or above it
// otherwise, and at most hi. A value outside is a diagnostic that names the range.
func (a *attrs) numberIn(name string, def, lo float64, open bool, hi float64) float64 {
	f, ok := a.float(name, def)
	if !ok {
		return def
	}
	if math.IsNaN(f) || f < lo || (open && f == lo) || f > hi {
		from := fmt.Sprintf("at least %g", lo)
		if open {
			from = fmt.Sprintf("above %g", lo)
		}
		a.errorf(name, "Value out of range", "The attribute %s of %s must be %s and at most %g, not %g.", name, a.block, from, hi, f)
		return def
	}
	return f
}

// intIn reads a whole number between lo and hi.
func (a *attrs) intIn(name string, def, lo, hi int) int {
	i, ok := a.wholeNumber(name, int64(def))
	if ok && (i < int64(lo) || i > int64(hi)) {
		a.errorf(name, "Value out of range", "The attribute %s of %s must be between %d and %d, not %d.", name, a.block, lo, hi, i)
		return def
	}
	return int(i)
}

// durationIn reads a duration between lo and hi.
func (a *attrs) durationIn(name string, def, lo, hi time.Duration) time.Duration {
	if !a.has(name) {
		return def
	}
	n := len(a.diags)
	d := a.duration(name, def)
	if len(a.diags) > n {
		return def
	}
	if d < lo || d > hi {
		from := "at least " + lo.String()
		if lo == 0 {
			from = "at least 0s"
		}
		a.errorf(name, "Value out of range", "The attribute %s of %s is %s; it must be %s and at most %s.", name, a.block, d, from, hi)
		return def
	}
	return d
}
