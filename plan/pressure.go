package plan

import (
	"strconv"
	"time"

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
	// so far (0.2: one retry for five requests); 0 leaves only MaxRetries.
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

// Pressure block schemas.
func pressureSchema() *hcl.BodySchema {
	return &hcl.BodySchema{
		Attributes: attrSchema("pick", "budget", "max_requests", "window"),
		Blocks: []hcl.BlockHeaderSchema{
			{Type: "ladder"}, {Type: "burst"}, {Type: "restart"}, {Type: "shift"}, {Type: "retry"},
		},
	}
}

func (d *decoder) decodePressureBlock(b *hcl.Block, classes map[string]bool) (*Pressure, hcl.Diagnostics) {
	content, a := d.content(b, pressureSchema())
	ps := &Pressure{
		Pick:        a.str("pick", "knee"),
		Budget:      a.duration("budget", DefaultPressureBudget),
		MaxRequests: int(a.atLeast("max_requests", DefaultPressureMaxRequests, 1)),
		Window:      a.duration("window", DefaultPressureWindow),
	}
	if a.has("pick") && !validPick(ps.Pick) {
		a.errorf("pick", "Invalid pick", `The attribute pick of the pressure block is %q; want "knee", "front" or a trial number.`, ps.Pick)
	}
	if ps.Budget <= 0 {
		a.errorf("budget", "Value out of range", "The budget of the pressure block bounds each experiment, so it must be above zero.")
	}
	if ps.Window <= 0 {
		a.errorf("window", "Value out of range", "The window of the pressure block must be above zero.")
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
			ps.Ladder, ds = d.decodeLadderBlock(sb, classes)
		case "burst":
			ps.Burst, ds = d.decodeBurstBlock(sb)
		case "restart":
			ps.Restart, ds = d.decodeRestartBlock(sb)
		case "shift":
			ps.Shift, ds = d.decodeShiftBlock(sb, classes)
		case "retry":
			ps.Retry, ds = d.decodeRetryBlock(sb)
		}
		diags = diags.Extend(ds)
	}
	if ps.Retry != nil && ps.Burst == nil && ps.Restart == nil && ps.Shift == nil && !diags.HasErrors() {
		diags = diags.Append(warningAt(once["retry"], "Retry policy without a burst, restart or shift",
			"The retry policy applies to the clients of the burst, restart and shift experiments, and the pressure block has none of them."))
	}
	if len(content.Blocks) == 0 {
		diags = diags.Append(warningAt(b.DefRange, "Pressure block without experiments",
			"The pressure block has no ladder, burst, restart or shift block, so it runs nothing."))
	}
	return ps, diags
}

func validPick(s string) bool {
	if s == "knee" || s == "front" {
		return true
	}
	n, err := strconv.Atoi(s)
	return err == nil && n >= 0
}

func (d *decoder) decodeLadderBlock(b *hcl.Block, classes map[string]bool) (*PressureLadder, hcl.Diagnostics) {
	_, a := d.content(b, &hcl.BodySchema{Attributes: attrSchema(
		"start", "factor", "past", "refine", "duration", "max_steps", "max_error_rate", "classes", "mix")})
	l := &PressureLadder{
		Start:        a.number("start", 0.5),
		Factor:       a.number("factor", 1.5),
		Past:         int(a.atLeast("past", 2, 0)),
		Refine:       int(a.atLeast("refine", 3, 0)),
		Duration:     a.duration("duration", 5*time.Second),
		MaxSteps:     int(a.atLeast("max_steps", 12, 1)),
		MaxErrorRate: a.fraction("max_error_rate", 0.5, 0, 1),
		Classes:      a.strings("classes"),
		Mix:          a.boolean("mix", true),
	}
	if l.Start <= 0 {
		a.errorf("start", "Value out of range", "The ladder's start is a fraction of each class's rate and must be above zero, not %g.", l.Start)
	}
	if l.Factor <= 1 {
		a.errorf("factor", "Value out of range", "The ladder's factor multiplies the rate at each step and must be above 1, not %g.", l.Factor)
	}
	for _, c := range l.Classes {
		if !classes[c] {
			a.errorf("classes", "Unknown workload", "The ladder names workload %q, which the plan does not declare.", c)
		}
	}
	return l, a.diags
}

func (d *decoder) decodeBurstBlock(b *hcl.Block) (*PressureBurst, hcl.Diagnostics) {
	_, a := d.content(b, &hcl.BodySchema{Attributes: attrSchema(
		"factor", "base", "before", "duration", "recover", "cancel_fraction")})
	u := &PressureBurst{
		Factor:         a.number("factor", 2),
		Base:           a.fraction("base", 0.5, 0, 1),
		Before:         a.duration("before", 3*time.Second),
		Duration:       a.duration("duration", 3*time.Second),
		Recover:        a.duration("recover", 20*time.Second),
		CancelFraction: a.fraction("cancel_fraction", 0, 0, 1),
	}
	if u.Factor <= 1 {
		a.errorf("factor", "Value out of range", "A burst's factor is a multiple of the saturation rate and must be above 1, not %g.", u.Factor)
	}
	if u.Base <= 0 {
		a.errorf("base", "Value out of range", "A burst's base rate must be above zero.")
	}
	if u.Duration <= 0 || u.Recover <= 0 {
		a.errorf("duration", "Value out of range", "A burst needs a duration and a recover time above zero.")
	}
	return u, a.diags
}

func (d *decoder) decodeRestartBlock(b *hcl.Block) (*PressureRestart, hcl.Diagnostics) {
	_, a := d.content(b, &hcl.BodySchema{Attributes: attrSchema("base", "before", "after")})
	r := &PressureRestart{
		Base:   a.fraction("base", 0.5, 0, 1),
		Before: a.duration("before", 2*time.Second),
		After:  a.duration("after", 20*time.Second),
	}
	if r.Base <= 0 {
		a.errorf("base", "Value out of range", "The restart's base rate must be above zero.")
	}
	if r.After <= 0 {
		a.errorf("after", "Value out of range", "The restart's after is the time the engine has to come back and meet its SLO; it must be above zero.")
	}
	return r, a.diags
}

func (d *decoder) decodeShiftBlock(b *hcl.Block, classes map[string]bool) (*PressureShift, hcl.Diagnostics) {
	_, a := d.content(b, &hcl.BodySchema{Attributes: attrSchema("from", "to", "base", "before", "after")})
	a.require("from", `the class weights before the shift, such as { chat = 0.9, summarize = 0.1 }`)
	a.require("to", `the class weights after the shift, such as { chat = 0.2, summarize = 0.8 }`)
	s := &PressureShift{
		From:   a.weights("from", classes),
		To:     a.weights("to", classes),
		Base:   a.fraction("base", 0.7, 0, 1),
		Before: a.duration("before", 3*time.Second),
		After:  a.duration("after", 10*time.Second),
	}
	if s.Base <= 0 {
		a.errorf("base", "Value out of range", "The shift's base rate must be above zero.")
	}
	return s, a.diags
}

func (d *decoder) decodeRetryBlock(b *hcl.Block) (*PressureRetry, hcl.Diagnostics) {
	_, a := d.content(b, &hcl.BodySchema{Attributes: attrSchema("max_retries", "budget", "backoff", "max_backoff", "jitter")})
	r := &PressureRetry{
		MaxRetries: int(a.atLeast("max_retries", 2, 0)),
		Budget:     a.number("budget", 0.2),
		Backoff:    a.duration("backoff", 100*time.Millisecond),
		MaxBackoff: a.duration("max_backoff", 2*time.Second),
		Jitter:     a.fraction("jitter", 1, 0, 1),
	}
	if r.Budget < 0 {
		a.errorf("budget", "Value out of range", "The retry budget is a share of the requests sent and must be at least 0 (0: no share limit), not %g.", r.Budget)
	}
	if r.Backoff <= 0 {
		a.errorf("backoff", "Value out of range", "The retry backoff is the wait before the first retry and must be above zero.")
	}
	if r.MaxBackoff < r.Backoff {
		a.errorf("max_backoff", "Value out of range", "The retry max_backoff (%s) must be at least the backoff (%s).", r.MaxBackoff, r.Backoff)
	}
	return r, a.diags
}

// weights reads a map of class names to weights at least 0, with a positive sum.
func (a *attrs) weights(name string, classes map[string]bool) map[string]float64 {
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
		if !classes[k] {
			a.errorf(name, "Unknown workload", "The attribute %s of %s names workload %q, which the plan does not declare.", name, a.block, k)
			continue
		}
		if f < 0 {
			a.errorf(name, "Value out of range", "The weight of %s in %s of %s must be at least 0, not %g.", k, name, a.block, f)
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
