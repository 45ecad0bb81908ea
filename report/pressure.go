package report

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"

	"github.com/frontier-llm/frontier/record"
	"github.com/frontier-llm/frontier/workload"
)

// pressureSection is the report's part on the pressure experiments of the study's
// configurations; ok is false when none were run.
func pressureSection(rec *record.Study) (section, bool) {
	if len(rec.Pressure) == 0 {
		return section{}, false
	}
	s := section{Title: "Behaviour under pressure", ID: "pressure",
		Lines: []string{"How each configuration behaves past the happy path: a load ladder to its saturation point and beyond, a burst above capacity, the engine killed under load and restarted, and a sudden shift of the class mix."}}
	for i := range rec.Pressure {
		s.Tables = append(s.Tables, pressureTables(&rec.Pressure[i])...)
		s.Notes = append(s.Notes, pressureNotes(&rec.Pressure[i])...)
	}
	return s, true
}

// pressureLabel names a configuration and the engine its figures came from.
func pressureLabel(p *record.Pressure) string {
	who := "trial " + strconv.Itoa(p.Trial)
	if p.Trial < 0 {
		who = "the server"
	}
	eng := p.Engine
	if p.Simulated {
		eng += ", simulated"
	}
	return fmt.Sprintf("%s (engine %s)", who, eng)
}

func secondsCell(v float64, sim bool) string {
	if v < 0 {
		return "not within the experiment"
	}
	return withSim(num(v)+" s", sim)
}

func withSim(s string, sim bool) string {
	if sim {
		return s + simMark
	}
	return s
}

func pressureTables(p *record.Pressure) []table {
	label := pressureLabel(p)
	sim := p.Simulated
	var out []table
	if len(p.Ladders) > 0 {
		t := table{Caption: "Saturation of " + label,
			Header: []string{"class", "saturation (req/s)", "boundary", "past saturation", "first broken"}}
		for _, l := range p.Ladders {
			t.Rows = append(t.Rows, []string{l.Class, withSim(num(l.SaturationRPS), sim), l.Boundary, orDash(l.Shape), orDash(l.FirstBroken)})
		}
		out = append(out, t)
		for _, l := range p.Ladders {
			st := table{Caption: fmt.Sprintf("Load ladder of %s, %s", l.Class, label),
				Header: []string{"offered (req/s)", "met SLO", "goodput (req/s)", "TTFT p99 (ms)", "ITL p99 (ms)", "E2E p99 (ms)", "queue mean (ms)", "running max", "waiting max", "backlog growth", "KV max", "preemptions", "finish reasons", "errors"}}
			for _, s := range sortedSteps(l.Steps) {
				m := s.Metrics
				growth := "-"
				if s.BacklogGrowth != nil {
					growth = num(*s.BacklogGrowth)
					if s.BacklogGrowthSE != nil {
						growth += " ± " + num(*s.BacklogGrowthSE)
					}
				}
				st.Rows = append(st.Rows, []string{withSim(num(s.Rate), sim), yesNo(s.MetSLO), withSim(num(m[workload.Goodput]), sim),
					num(m["ttft_p99_ms"]), num(m["itl_p99_ms"]), num(m["e2e_p99_ms"]), num(m[workload.QueueMeanMs]),
					num(s.MaxRunning), num(s.MaxWaiting), growth, num(m[workload.KVCacheUsageMax]), num(m[workload.Preemptions]), countsCell(s.FinishReasons), countsCell(s.Errors)})
			}
			out = append(out, st)
		}
	}
	for _, ep := range []*record.Episode{p.Burst, p.Restart, p.Shift} {
		if ep == nil {
			continue
		}
		t := table{Caption: episodeTitle(ep) + " of " + label,
			Header: []string{"class", "sent", "completed", "lost", "timed out", "cancelled", "SLO broke at", "met SLO again after", "finish reasons", "errors"}}
		for _, c := range ep.Classes {
			broke := "never"
			if c.BrokeS >= 0 {
				broke = "+" + num(c.BrokeS) + " s"
			}
			t.Rows = append(t.Rows, []string{c.Class, strconv.Itoa(c.Sent), strconv.Itoa(c.Completed), strconv.Itoa(c.Lost),
				strconv.Itoa(c.TimedOut), strconv.Itoa(c.Cancelled), broke, secondsCell(c.RecoveredS, sim), countsCell(c.FinishReasons), countsCell(c.Errors)})
		}
		out = append(out, t)
	}
	return out
}

func episodeTitle(ep *record.Episode) string {
	switch ep.Kind {
	case "burst":
		return "Burst and recovery"
	case "restart":
		if ep.ReadyS >= 0 {
			return fmt.Sprintf("Engine restart (ready %s s after the kill)", num(ep.ReadyS))
		}
		return "Engine restart (the engine did not come back)"
	case "shift":
		return "Class shift"
	}
	return ep.Kind
}

// simLag is how many seconds the simulated engine fell behind real time over every ladder
// step and episode of p, as the measurement of a whole: the lag summed, and the seconds
// measured (each step's window and each episode's phases) as its window, so that the same
// rule as a trial's (workload.SimLagged) says whether it lagged.
func simLag(p *record.Pressure) *workload.Result {
	lag, window := 0.0, 0.0
	for _, l := range p.Ladders {
		for _, st := range l.Steps {
			lag += st.Metrics[workload.SimLagS]
			window += st.Metrics[workload.DurationS]
		}
	}
	for _, ep := range []*record.Episode{p.Burst, p.Restart, p.Shift} {
		if ep == nil {
			continue
		}
		lag += ep.SimLagS
		if n := len(ep.Phases); n > 0 {
			window += ep.Phases[n-1].To
		}
	}
	return &workload.Result{Metrics: map[string]float64{workload.SimLagS: lag, workload.DurationS: window}}
}

func pressureNotes(p *record.Pressure) []string {
	var out []string
	label := pressureLabel(p)
	if r := p.Restart; r != nil && len(r.ClientSaw) > 0 {
		out = append(out, fmt.Sprintf("%s: during the restart the clients saw %s (connect: refused or reset connections; malformed: streams cut short).", label, countsCell(r.ClientSaw)))
	}
	if lag, ok := workload.SimLagged(simLag(p)); ok {
		out = append(out, fmt.Sprintf("%s: the simulated engine fell %s s behind real time during these experiments (its host was too busy to run its steps when due), so latencies measured then are slower than the model's.", label, num(lag)))
	}
	for _, ep := range []*record.Episode{p.Burst, p.Restart, p.Shift} {
		if ep == nil || ep.Retry == nil {
			continue
		}
		r := ep.Retry
		verdict := "did not double the load"
		if r.PeakLoadFactor >= 2 {
			verdict = "doubled the load at their peak"
		}
		out = append(out, fmt.Sprintf("%s: during the %s the clients retried %d times (%d more refused by the budget of %s of the requests, at most %d per request, backoff %s s to %s s, jitter %s): the load was %s× the offered load overall and %s× in the worst window, so retries %s.",
			label, ep.Kind, r.Retries, r.Denied, num(r.Budget), r.MaxRetries, num(r.BackoffS), num(r.MaxBackoffS), num(r.Jitter), num(r.LoadFactor), num(r.PeakLoadFactor), verdict))
	}
	if s := p.Shift; s != nil {
		if s.FirstBroken != "" {
			out = append(out, fmt.Sprintf("%s: after the class shift, %s missed its SLO first.", label, s.FirstBroken))
		} else {
			out = append(out, fmt.Sprintf("%s: no class missed its SLO after the class shift.", label))
		}
	}
	for _, n := range p.Notes {
		out = append(out, label+": "+n)
	}
	for _, e := range p.Errors {
		out = append(out, label+": not measured: "+e)
	}
	if p.Simulated {
		out = append(out, simNote)
	}
	return out
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// countsCell lists counts by name: "connect 2, http 1".
func countsCell(m map[string]int) string {
	if len(m) == 0 {
		return "-"
	}
	s := ""
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if s != "" {
			s += ", "
		}
		s += fmt.Sprintf("%s %d", k, m[k])
	}
	return s
}

// sortedSteps returns a ladder's steps by offered rate.
func sortedSteps(steps []record.LadderStep) []record.LadderStep {
	out := append([]record.LadderStep(nil), steps...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].Rate < out[j-1].Rate; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// WritePressureText writes pressure results for a terminal; WritePressureMarkdown as
// Markdown.
func WritePressureText(w io.Writer, ps []record.Pressure) error {
	return writeText(w, "frontier pressure", []section{pressureOnly(ps)})
}

// WritePressureMarkdown writes pressure results as Markdown.
func WritePressureMarkdown(w io.Writer, ps []record.Pressure) error {
	return writeMarkdown(w, "frontier pressure", []section{pressureOnly(ps)})
}

func pressureOnly(ps []record.Pressure) section {
	s, _ := pressureSection(&record.Study{Pressure: ps})
	return s
}

// pressurePlots draws, per configuration, latency and goodput against offered load with the
// saturation point marked, and the timeline of each recovery experiment.
func pressurePlots(rec *record.Study) []*plot {
	var out []*plot
	for i := range rec.Pressure {
		p := &rec.Pressure[i]
		for _, l := range p.Ladders {
			out = append(out, ladderPlots(p, l)...)
		}
		for _, ep := range []*record.Episode{p.Burst, p.Restart, p.Shift} {
			if ep != nil && len(ep.Timeline) > 0 {
				out = append(out, timelinePlot(p, ep))
			}
		}
	}
	return out
}

func ladderPlots(p *record.Pressure, l record.Ladder) []*plot {
	steps := sortedSteps(l.Steps)
	if len(steps) == 0 {
		return nil
	}
	xhi := 0.0
	var lat, good, p99 float64
	for _, s := range steps {
		xhi = math.Max(xhi, s.Rate)
		lat = math.Max(lat, s.Metrics["ttft_p99_ms"])
		p99 = math.Max(p99, s.Metrics["e2e_p99_ms"])
		good = math.Max(good, math.Max(s.Metrics[workload.Goodput], s.Metrics[workload.RequestThroughput]))
	}
	id := fmt.Sprintf("pressure-%d-%s", p.Trial, l.Class)
	name := fmt.Sprintf("%s, %s%s", l.Class, pressureLabel(p), simSuffix(p.Simulated))
	mk := func(suffix, title, yl string, yhi float64, keys []string) *plot {
		pl, x, y := newPlot(id+"-"+suffix, title+": "+name, "offered load (req/s)", yl, 0, xhi*1.05, 0, math.Max(yhi*1.1, 1))
		for k, key := range keys {
			var pts []point
			for _, s := range steps {
				pts = append(pts, point{X: round2(x.px(s.Rate)), Y: round2(y.px(s.Metrics[key])),
					Title: fmt.Sprintf("%s req/s: %s %s", num(s.Rate), key, num(s.Metrics[key]))})
			}
			pl.Series = append(pl.Series, series{Name: key, Color: palette[k%len(palette)], Marker: "dot", Points: pts, Path: linePath(pts)})
		}
		if l.SaturationRPS > 0 {
			sx := round2(x.px(l.SaturationRPS))
			mark := []point{{X: sx, Y: pl.Y1}, {X: sx, Y: pl.Y0}}
			pl.Series = append(pl.Series, series{Name: "saturation " + num(l.SaturationRPS) + " req/s", Color: "#555555", Marker: "line", Points: mark, Path: linePath(mark)})
		}
		return pl
	}
	return []*plot{
		mk("latency", "Latency against offered load", "latency (ms)", math.Max(lat, p99), []string{"ttft_p99_ms", "e2e_p99_ms"}),
		mk("goodput", "Goodput against offered load", "req/s", good, []string{workload.Goodput, workload.RequestThroughput}),
	}
}

func timelinePlot(p *record.Pressure, ep *record.Episode) *plot {
	xhi, yhi := 0.0, 1.0
	for _, pt := range ep.Timeline {
		xhi = math.Max(xhi, pt.T)
		yhi = math.Max(yhi, math.Max(pt.Offered+pt.Retries, math.Max(pt.Completed, pt.Failed)))
		yhi = math.Max(yhi, pt.Waiting)
	}
	pl, x, y := newPlot(fmt.Sprintf("pressure-%d-%s", p.Trial, ep.Kind), episodeTitle(ep)+": "+pressureLabel(p)+simSuffix(p.Simulated),
		"time (s)", "req/s, or requests waiting", 0, xhi, 0, yhi*1.1)
	keys := []struct {
		name string
		get  func(record.Point) float64
	}{
		{"offered", func(pt record.Point) float64 { return pt.Offered }},
		{"offered with retries", func(pt record.Point) float64 { return pt.Offered + pt.Retries }},
		{"completed", func(pt record.Point) float64 { return pt.Completed }},
		{"goodput", func(pt record.Point) float64 { return pt.Goodput }},
		{"failed", func(pt record.Point) float64 { return pt.Failed }},
		{"waiting", func(pt record.Point) float64 { return pt.Waiting }},
	}
	for k, key := range keys {
		if key.name == "offered with retries" && ep.Retry == nil {
			continue
		}
		var pts []point
		for _, pt := range ep.Timeline {
			pts = append(pts, point{X: round2(x.px(pt.T)), Y: round2(y.px(key.get(pt))), Title: fmt.Sprintf("t=%s s: %s %s", num(pt.T), key.name, num(key.get(pt)))})
		}
		pl.Series = append(pl.Series, series{Name: key.name, Color: palette[k%len(palette)], Marker: "line", Points: pts, Path: linePath(pts)})
	}
	for _, e := range ep.Events {
		ex := round2(x.px(e.T))
		mark := []point{{X: ex, Y: pl.Y1, Title: e.Name}, {X: ex, Y: pl.Y0, Title: e.Name}}
		pl.Series = append(pl.Series, series{Name: e.Name + " at " + num(e.T) + " s", Color: "#555555", Marker: "line", Points: mark, Path: linePath(mark)})
	}
	pl.Note = "p99 TTFT per window is in the JSON timeline; vertical lines mark the events."
	return pl
}

// PressureSummary is one configuration's pressure results reduced to a row of a comparison.
type PressureSummary struct {
	Trial     int    `json:"trial"`
	Engine    string `json:"engine"`
	Simulated bool   `json:"simulated"`
	// SaturationRPS is the mix's saturation rate, or the first ladder's; Class names it.
	Class         string  `json:"class,omitempty"`
	SaturationRPS float64 `json:"saturation_rps,omitempty"`
	Shape         string  `json:"shape,omitempty"`
	// BurstRecoveryS is the slowest class's time to meet its SLO after the burst (-1: not
	// within the experiment); BurstLost the requests lost to it.
	BurstRecoveryS *float64 `json:"burst_recovery_s,omitempty"`
	BurstLost      int      `json:"burst_lost,omitempty"`
	// RestartReadyS and RestartSLOS are the seconds from the kill to ready and to meeting
	// every class's SLO again; RestartLost the requests lost.
	RestartReadyS *float64 `json:"restart_ready_s,omitempty"`
	RestartSLOS   *float64 `json:"restart_slo_s,omitempty"`
	RestartLost   int      `json:"restart_lost,omitempty"`
	// ShiftFirstBroken is the class whose SLO broke first after the class shift.
	ShiftFirstBroken string `json:"shift_first_broken,omitempty"`
}

// summarizePressure reduces a study's pressure results to comparison rows.
func summarizePressure(rec *record.Study) []PressureSummary {
	var out []PressureSummary
	for i := range rec.Pressure {
		p := &rec.Pressure[i]
		s := PressureSummary{Trial: p.Trial, Engine: p.Engine, Simulated: p.Simulated}
		for _, l := range p.Ladders {
			if s.Class == "" || l.Class == record.MixClass {
				s.Class, s.SaturationRPS, s.Shape = l.Class, l.SaturationRPS, l.Shape
			}
		}
		worst := func(ep *record.Episode) (*float64, int) {
			w, lost := 0.0, 0
			for _, c := range ep.Classes {
				lost += c.Lost
				if c.RecoveredS < 0 || w < 0 {
					w = -1
				} else {
					w = math.Max(w, c.RecoveredS)
				}
			}
			return &w, lost
		}
		if ep := p.Burst; ep != nil {
			s.BurstRecoveryS, s.BurstLost = worst(ep)
		}
		if ep := p.Restart; ep != nil {
			r := ep.ReadyS
			s.RestartReadyS = &r
			s.RestartSLOS, s.RestartLost = worst(ep)
		}
		if ep := p.Shift; ep != nil {
			s.ShiftFirstBroken = ep.FirstBroken
		}
		out = append(out, s)
	}
	return out
}

// comparePressure is the comparison's section on pressure results, side by side.
func comparePressure(c *Comparison) (section, bool) {
	t := table{Header: []string{"study", "trial", "engine", "saturation (req/s)", "past saturation", "burst: met SLO again after", "burst: lost",
		"restart: ready after", "restart: met SLO after", "restart: lost", "shift: first broken"}}
	anySim := false
	for _, st := range c.Studies {
		for _, p := range st.Pressure {
			anySim = anySim || p.Simulated
			opt := func(v *float64) string {
				if v == nil {
					return "-"
				}
				return secondsCell(*v, p.Simulated)
			}
			sat := "-"
			if p.Class != "" {
				sat = withSim(num(p.SaturationRPS), p.Simulated) + " (" + p.Class + ")"
			}
			eng := p.Engine
			if p.Simulated {
				eng += " (simulated)"
			}
			t.Rows = append(t.Rows, []string{st.Study, strconv.Itoa(p.Trial), eng, sat, orDash(p.Shape), opt(p.BurstRecoveryS), strconv.Itoa(p.BurstLost),
				opt(p.RestartReadyS), opt(p.RestartSLOS), strconv.Itoa(p.RestartLost), orDash(p.ShiftFirstBroken)})
		}
	}
	if len(t.Rows) == 0 {
		return section{}, false
	}
	s := section{Title: "Behaviour under pressure side by side", ID: "pressure", Tables: []table{t},
		Lines: []string{"Each row is one configuration's pressure experiments (frontier pressure): its saturation point and what happens past it, recovery from a burst, and an engine restart under load."}}
	if anySim {
		s.Notes = append(s.Notes, simNote)
	}
	return s, true
}
