package pressure

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/frontier-llm/frontier/plan"
	"github.com/frontier-llm/frontier/record"
	"github.com/frontier-llm/frontier/workload"
)

// Options tune Run.
type Options struct {
	// Seed draws every request (lengths and send times), so a rerun sends the same load.
	Seed uint64
	// Trial and Config identify the configuration in the record; Trial -1 means none.
	Trial  int
	Config map[string]any
	// Progress, when set, is told what each experiment is doing, one line at a time.
	Progress func(line string)
	// ScrapeInterval is how often the engine's /metrics is scraped; 0 means 250ms.
	ScrapeInterval time.Duration
	// SaturationRPS, when above 0, is the total rate of the plan's mix at saturation measured
	// earlier (a previous ladder, or bench --find-capacity); the burst, restart and shift
	// scale to it when no mix ladder runs.
	SaturationRPS float64
	// Now is the clock of the record's start and end times; nil means time.Now.
	Now func() time.Time
}

// experiment is what every experiment of one Run shares.
type experiment struct {
	server      *Server
	classes     []workload.Class
	settings    *plan.Pressure
	seed        uint64
	window      time.Duration
	maxRequests int
	scrape      time.Duration
	progress    func(string)
}

func (x *experiment) class(name string) (workload.Class, bool) {
	for _, c := range x.classes {
		if c.Name == name {
			return c, true
		}
	}
	return workload.Class{}, false
}

func (x *experiment) say(format string, args ...any) {
	if x.progress != nil {
		x.progress(fmt.Sprintf(format, args...))
	}
}

// Run runs the experiments of settings against s with the plan's workload classes: the load
// ladders first (they find the saturation rate the others are scaled to), then the burst,
// the restart and the class shift. Only the classes with an open arrival rate
// (plan.OpenArrival) are sent; the record's notes name the others. Each experiment is
// bounded by settings.Budget and settings.MaxRequests; one that cannot run or fails is noted
// in the record's Errors and the others still run. Run returns an error when ctx ends, with
// what was measured so far, and ErrNoArrivalRate, before sending anything, when no class
// has a rate. A figure that is not a finite number is stored as 0, with a note. It does not
// stop s: the caller that started it closes it.
func Run(ctx context.Context, s *Server, classes []workload.Class, settings *plan.Pressure, o Options) (*record.Pressure, error) {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	classes, leftOut, err := openClasses(classes)
	if err != nil {
		return nil, err
	}
	x := &experiment{server: s, classes: classes, settings: settings, seed: o.Seed, window: settings.Window,
		maxRequests: settings.MaxRequests, scrape: o.ScrapeInterval, progress: o.Progress}
	if x.window <= 0 {
		x.window = plan.DefaultPressureWindow
	}
	if x.scrape <= 0 {
		x.scrape = 250 * time.Millisecond
	}
	out := &record.Pressure{Trial: o.Trial, Config: o.Config, Engine: s.Engine, Simulated: s.Simulated, Started: now().UTC(), Release: record.Release(),
		Budget: record.PressureBudget{Seconds: settings.Budget.Seconds(), MaxRequests: settings.MaxRequests, WindowS: x.window.Seconds()}}
	if leftOut != "" {
		out.Notes = append(out.Notes, leftOut)
	}
	defer func() {
		out.Finished = now().UTC()
		if where := keepFinite(out); len(where) > 0 {
			out.Notes = append(out.Notes, finiteNote(where))
		}
	}()
	fail := func(what string, err error) {
		out.Errors = append(out.Errors, fmt.Sprintf("%s: %v", what, err))
	}
	bounded := func(f func(ctx context.Context) error) error {
		bctx, cancel := context.WithTimeout(ctx, settings.Budget)
		defer cancel()
		return f(bctx)
	}

	// The saturation scale of the mix: the multiple of the plan's rates at which the mix
	// stops meeting its SLO. Without a mix ladder it is estimated from the classes' own
	// saturation points (mixScale), else it is the plan's own rates.
	satScale := 0.0
	classScales := map[string]float64{}
	if o.SaturationRPS > 0 {
		satScale = o.SaturationRPS / x.planRate(classes)
	}
	if l := settings.Ladder; l != nil {
		names := l.Classes
		if len(names) == 0 {
			for _, c := range classes {
				names = append(names, c.Name)
			}
		}
		var jobs []string
		jobs = append(jobs, names...)
		if l.Mix && len(classes) > 1 {
			jobs = append(jobs, record.MixClass)
		}
		for _, name := range jobs {
			var lad *record.Ladder
			err := bounded(func(ctx context.Context) error {
				var err error
				lad, err = x.ladder(ctx, l, name)
				return err
			})
			if ctx.Err() != nil {
				fail("ladder "+name, errInterrupted)
				return out, ctx.Err()
			}
			if err != nil {
				fail("ladder "+name, err)
				continue
			}
			out.Ladders = append(out.Ladders, *lad)
			if name == record.MixClass || len(classes) == 1 {
				satScale = lad.SaturationRPS / x.planRate(classes)
			} else if c, ok := x.class(name); ok && lad.SaturationRPS > 0 && rateOf(c) > 0 {
				classScales[name] = lad.SaturationRPS / rateOf(c)
			}
		}
	}
	if satScale <= 0 && len(classScales) > 0 && (settings.Burst != nil || settings.Restart != nil || settings.Shift != nil) {
		var note string
		satScale, note = mixScale(classes, classScales)
		out.Notes = append(out.Notes, note)
	}
	if satScale <= 0 && (settings.Burst != nil || settings.Restart != nil || settings.Shift != nil) {
		satScale = 1
		out.Notes = append(out.Notes, "no saturation point was measured, so the burst, restart and shift take the plan's rates as the saturation rate")
	}
	episode := func(name string, f func(ctx context.Context) (*record.Episode, error)) *record.Episode {
		var ep *record.Episode
		err := bounded(func(ctx context.Context) error {
			var err error
			ep, err = f(ctx)
			return err
		})
		switch {
		case ctx.Err() != nil:
			fail(name, errInterrupted)
			return nil
		case err != nil:
			fail(name, err)
			return nil
		}
		return ep
	}
	if b := settings.Burst; b != nil && ctx.Err() == nil {
		out.Burst = episode("burst", func(ctx context.Context) (*record.Episode, error) { return x.burst(ctx, b, satScale) })
	}
	if r := settings.Restart; r != nil && ctx.Err() == nil {
		if !s.CanRestart() {
			out.Errors = append(out.Errors, "restart: the engine was not started by frontier, so it is not killed")
		} else {
			out.Restart = episode("restart", func(ctx context.Context) (*record.Episode, error) { return x.restart(ctx, r, satScale) })
		}
	}
	if sh := settings.Shift; sh != nil && ctx.Err() == nil {
		out.Shift = episode("shift", func(ctx context.Context) (*record.Episode, error) { return x.shift(ctx, sh, satScale) })
	}
	return out, ctx.Err()
}

// mixScale estimates the saturation scale of the plan's mix from the scales at which its
// classes saturate alone. When every class was laddered, by the utilisation law: at scale s
// class i takes s/s_i of the server, so the mix saturates where those shares add up to one,
// s = 1 / Σ 1/s_i (exact when the classes share one bottleneck, an upper bound otherwise).
// When some class was not laddered, the weakest laddered class's scale stands for it, an
// upper bound (the mix saturates no later than its weakest class). The note says which.
func mixScale(classes []workload.Class, scales map[string]float64) (float64, string) {
	inv, weakest, every := 0.0, 0.0, true
	for _, c := range classes {
		s, ok := scales[c.Name]
		if !ok {
			every = false
			continue
		}
		inv += 1 / s
		if weakest == 0 || s < weakest {
			weakest = s
		}
	}
	if every && len(classes) > 1 {
		return 1 / inv, fmt.Sprintf("without a ladder of the mix, the burst, restart and shift take the mix's saturation from its classes' by the utilisation law (1 / Σ 1/s_i): %.3g × the plan's rates", 1/inv)
	}
	return weakest, fmt.Sprintf("without a ladder of the mix or of every class, the burst, restart and shift take the weakest laddered class's saturation, %.3g × the plan's rates, as the mix's (an upper bound)", weakest)
}

// ErrNoArrivalRate is a plan none of whose workload classes has an open arrival rate
// (poisson, constant, gamma): the experiments scale rates, and a closed loop
// (concurrency(n)), immediate() or a trace has none.
var ErrNoArrivalRate = errors.New("no workload has an arrival rate to scale")

// openClasses returns the classes with an open arrival rate and a note naming the others,
// or ErrNoArrivalRate when none has one.
func openClasses(classes []workload.Class) ([]workload.Class, string, error) {
	var open []workload.Class
	var closed []string
	for _, c := range classes {
		if plan.OpenArrival(c) {
			open = append(open, c)
		} else {
			closed = append(closed, fmt.Sprintf("%q (%s)", c.Name, plan.ArrivalText(c)))
		}
	}
	if len(open) == 0 {
		return nil, "", fmt.Errorf("%w: %s; the experiments scale arrival rates, so give a workload a poisson, constant or gamma arrival", ErrNoArrivalRate, strings.Join(closed, ", "))
	}
	if len(closed) == 0 {
		return open, "", nil
	}
	return open, "the workloads without an arrival rate were not sent: " + strings.Join(closed, ", "), nil
}

// CheckArrivals returns ErrNoArrivalRate, with the classes' arrivals, when none of classes
// has an open arrival rate: nothing to start an engine for.
func CheckArrivals(classes []workload.Class) error {
	_, _, err := openClasses(classes)
	return err
}

// errInterrupted is the note of an experiment that frontier was told to stop (a signal)
// before it finished: what it measured is not kept, the experiments before it are.
var errInterrupted = errors.New("interrupted before it finished; run frontier pressure again to measure it")

// rateOf is a class's offered rate in the plan: its arrival rate, or 1 req/s for a class
// without one (closed loop, immediate, trace).
func rateOf(c workload.Class) float64 {
	switch c.Arrival.Kind {
	case workload.ArrivalPoisson, workload.ArrivalConstant, workload.ArrivalGamma:
		if c.Arrival.Rate > 0 {
			return c.Arrival.Rate
		}
	}
	return 1
}

// planRate is the total rate of classes in the plan.
func (x *experiment) planRate(classes []workload.Class) float64 {
	sum := 0.0
	for _, c := range classes {
		sum += rateOf(c)
	}
	return sum
}

// scaled returns every class's rate at scale times the plan's.
func (x *experiment) scaled(scale float64) map[string]float64 {
	m := map[string]float64{}
	for _, c := range x.classes {
		m[c.Name] = scale * rateOf(c)
	}
	return m
}
