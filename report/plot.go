package report

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/frontier-llm/frontier/record"
)

// plot is an SVG chart, laid out in pixels here and drawn by the HTML template. Every string
// in it reaches the page through html/template, which escapes it.
type plot struct {
	ID     string
	Title  string
	XLabel string
	YLabel string
	W, H   float64
	// The plotting area.
	X0, Y0, X1, Y1 float64
	XTicks, YTicks []tick
	Series         []series
	Note           string
	// Positions of the tick labels and axis titles.
	XTickY, YTickX, XTitleX, XTitleY, YTitleX, YTitleY float64
}

type tick struct {
	Pos   float64
	Label string
}

// series is one set of points or one line. Marker is "dot", "ring", "cross" or "line".
type series struct {
	Name   string
	Color  string
	Marker string
	Points []point
	Path   string
}

type point struct {
	X, Y  float64
	Title string
	// Cross is the path of a cross marker at the point.
	Cross string
	// Bars is the path of the point's 95% ranges, across and up, where it has them.
	Bars string
}

// palette holds the colours of series, distinguishable in colour and greyscale.
var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2"}

// axis maps data values to pixels, with round tick values.
type axis struct {
	lo, hi   float64 // data range, extended to round ticks (log10 of it on a log axis)
	p0, p1   float64 // pixel range
	ticks    []float64
	decimals int
	log      bool
}

// wantsLog reports whether values from lo to hi read better on a log scale: all positive and
// spanning more than a factor of 20, as latencies of failing configurations do.
func wantsLog(lo, hi float64) bool {
	return lo > 0 && hi/lo > 20 && !math.IsInf(hi, 0)
}

// newLogAxis is an axis on a log10 scale with ticks at 1, 2 and 5 times powers of ten.
func newLogAxis(lo, hi, p0, p1 float64) axis {
	a := axis{lo: math.Floor(math.Log10(lo)), hi: math.Ceil(math.Log10(hi)), p0: p0, p1: p1, log: true}
	if a.hi == a.lo {
		a.hi++
	}
	for e := a.lo; e <= a.hi; e++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, e)
			if math.Log10(v) <= a.hi+1e-9 {
				a.ticks = append(a.ticks, v)
			}
		}
	}
	if a.lo < 0 {
		a.decimals = int(-a.lo)
	}
	return a
}

func newAxis(lo, hi, p0, p1 float64) axis {
	if math.IsInf(lo, 0) || math.IsInf(hi, 0) || math.IsNaN(lo) || math.IsNaN(hi) {
		lo, hi = 0, 1
	}
	if hi-lo < 1e-12 {
		d := math.Max(math.Abs(lo)*0.1, 1)
		lo, hi = lo-d, hi+d
	}
	step := niceStep((hi - lo) / 5)
	a := axis{lo: math.Floor(lo/step) * step, hi: math.Ceil(hi/step) * step, p0: p0, p1: p1}
	for v := a.lo; v <= a.hi+step/2; v += step {
		a.ticks = append(a.ticks, v)
	}
	if step < 1 {
		a.decimals = int(math.Ceil(-math.Log10(step)))
	}
	return a
}

func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if raw <= m*mag {
			return m * mag
		}
	}
	return 10 * mag
}

func (a axis) px(v float64) float64 {
	if a.log {
		v = math.Log10(math.Max(v, 1e-300))
	}
	return a.p0 + (v-a.lo)/(a.hi-a.lo)*(a.p1-a.p0)
}

func (a axis) tickList() []tick {
	out := make([]tick, len(a.ticks))
	for i, v := range a.ticks {
		label := strconv.FormatFloat(v, 'f', a.decimals, 64)
		if a.log {
			label = strconv.FormatFloat(v, 'g', -1, 64)
		}
		out[i] = tick{Pos: round2(a.px(v)), Label: label}
	}
	return out
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }

// newPlot lays out an empty plot with linear axes for the given data ranges.
func newPlot(id, title, xl, yl string, xlo, xhi, ylo, yhi float64) (*plot, axis, axis) {
	return newPlotScaled(id, title, xl, yl, xlo, xhi, ylo, yhi, false, false)
}

// newPlotScaled lays out an empty plot, with log10 axes where asked.
func newPlotScaled(id, title, xl, yl string, xlo, xhi, ylo, yhi float64, xlog, ylog bool) (*plot, axis, axis) {
	p := &plot{ID: id, Title: title, XLabel: xl, YLabel: yl, W: 560, H: 360, X0: 64, Y0: 16, X1: 544, Y1: 304}
	x, y := newAxis(xlo, xhi, p.X0, p.X1), newAxis(ylo, yhi, p.Y1, p.Y0)
	if xlog {
		x = newLogAxis(xlo, xhi, p.X0, p.X1)
		p.XLabel += " (log scale)"
	}
	if ylog {
		y = newLogAxis(ylo, yhi, p.Y1, p.Y0)
		p.YLabel += " (log scale)"
	}
	p.XTicks, p.YTicks = x.tickList(), y.tickList()
	p.XTickY, p.YTickX = p.Y1+16, p.X0-6
	p.XTitleX, p.XTitleY = (p.X0+p.X1)/2, p.H-12
	p.YTitleX, p.YTitleY = 14, (p.Y0+p.Y1)/2
	return p, x, y
}

func linePath(pts []point) string {
	var b strings.Builder
	for i, p := range pts {
		if i == 0 {
			b.WriteString("M")
		} else {
			b.WriteString(" L")
		}
		fmt.Fprintf(&b, "%g %g", p.X, p.Y)
	}
	return b.String()
}

func simSuffix(sim bool) string {
	if sim {
		return " (simulated)"
	}
	return ""
}

// frontPlots draws the front against every pair of objectives, with the other feasible
// trials, the infeasible and pruned ones apart, and the knee. With one objective it draws the
// objective against the trial number.
func frontPlots(a *Analysis) []*plot {
	objs := a.Record.Objectives
	var out []*plot
	if len(objs) == 1 {
		return []*plot{pairPlot(a, "", objs[0], 0)}
	}
	n := 0
	for i := 0; i < len(objs); i++ {
		for j := i + 1; j < len(objs); j++ {
			out = append(out, pairPlot(a, objs[i].Name, objs[j], n))
			n++
		}
	}
	return out
}

// pairPlot draws objective yo against objective xName ("" for the trial number).
func pairPlot(a *Analysis, xName string, yo record.Objective, n int) *plot {
	xOf := func(t *record.Trial) float64 {
		if xName == "" {
			return float64(t.Number)
		}
		return objectiveOf(t)[xName]
	}
	xLabel := "trial"
	if xName != "" {
		for _, o := range a.Record.Objectives {
			if o.Name == xName {
				xLabel = objectiveLabel(o)
			}
		}
	}
	xlo, xhi, ylo, yhi := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	var measured []*record.Trial
	unmeasured := 0
	sim := false
	for i := range a.Record.Trials {
		t := &a.Record.Trials[i]
		if !hasObjectives(t, a.Record.Objectives) {
			unmeasured++
			continue
		}
		measured = append(measured, t)
		sim = sim || t.Simulated
		xlo, xhi = math.Min(xlo, xOf(t)), math.Max(xhi, xOf(t))
		ylo, yhi = math.Min(ylo, objectiveOf(t)[yo.Name]), math.Max(yhi, objectiveOf(t)[yo.Name])
		if t.Pareto {
			if e, ok := t.Uncertainty[yo.Name]; ok {
				lo, hi := compareSpan(e)
				ylo, yhi = math.Min(ylo, lo), math.Max(yhi, hi)
			}
			if e, ok := t.Uncertainty[xName]; ok && xName != "" {
				lo, hi := compareSpan(e)
				xlo, xhi = math.Min(xlo, lo), math.Max(xhi, hi)
			}
		}
	}
	title := objectiveLabel(yo) + " against " + xLabel + simSuffix(sim)
	p, x, y := newPlotScaled(fmt.Sprintf("front-%d", n), title, xLabel, objectiveLabel(yo), xlo, xhi, ylo, yhi,
		xName != "" && wantsLog(xlo, xhi), wantsLog(ylo, yhi))
	onFront := map[int]bool{}
	for _, t := range a.Front {
		onFront[t.Number] = true
	}
	pt := func(t *record.Trial, what string) point {
		px, py := round2(x.px(xOf(t))), round2(y.px(objectiveOf(t)[yo.Name]))
		return point{X: px, Y: py,
			Title: fmt.Sprintf("trial %d (%s): %s = %s, %s = %s; %s", t.Number, what, xLabel, num(xOf(t)),
				yo.Name, num(objectiveOf(t)[yo.Name]), configSummary(a, t)),
			Cross: fmt.Sprintf("M%g %g L%g %g M%g %g L%g %g", px-4, py-4, px+4, py+4, px-4, py+4, px+4, py-4)}
	}
	feasible := series{Name: "other feasible trials", Color: "#7f9fbf", Marker: "ring"}
	bad := series{Name: "infeasible or pruned trials", Color: "#d62728", Marker: "cross"}
	front := series{Name: "Pareto front (bars: 95% noise for comparison)", Color: "#1f77b4", Marker: "dot"}
	knee := series{Name: "recommended (knee)", Color: "#ff7f0e", Marker: "ring"}
	// bars draws a front member's 95% comparison ranges (the noise within which it ties with
	// the others, record.Estimate) as error bars about its mean.
	bars := func(t *record.Trial, p point) point {
		ey, ok := t.Uncertainty[yo.Name]
		if !ok {
			return p
		}
		lo, hi := compareSpan(ey)
		p.Bars = fmt.Sprintf("M%g %g L%g %g", p.X, round2(y.px(lo)), p.X, round2(y.px(hi)))
		if ex, ok := t.Uncertainty[xName]; ok && xName != "" {
			lo, hi := compareSpan(ex)
			p.Bars += fmt.Sprintf(" M%g %g L%g %g", round2(x.px(lo)), p.Y, round2(x.px(hi)), p.Y)
		}
		p.Title += fmt.Sprintf(" (%s; another run may read %s %s to %s)", count(t.Runs(), "run"), yo.Name, num(ey.Lo), num(ey.Hi))
		return p
	}
	for _, t := range measured {
		switch {
		case onFront[t.Number]:
			front.Points = append(front.Points, bars(t, pt(t, "front")))
			if a.Recommended != nil && a.Recommended.Trial == t.Number {
				knee.Points = append(knee.Points, pt(t, "recommended"))
			}
		case t.State == record.StateComplete:
			feasible.Points = append(feasible.Points, pt(t, string(t.State)))
		default:
			bad.Points = append(bad.Points, pt(t, stateWhy(t)))
		}
	}
	line := slices.Clone(front.Points)
	slices.SortFunc(line, func(p, q point) int {
		if p.X != q.X {
			return int(math.Copysign(1, p.X-q.X))
		}
		return int(math.Copysign(1, q.Y-p.Y))
	})
	if len(line) > 1 {
		front.Path = linePath(line)
	}
	for _, s := range []series{feasible, bad, front, knee} {
		if len(s.Points) > 0 {
			p.Series = append(p.Series, s)
		}
	}
	if unmeasured > 0 {
		p.Note = fmt.Sprintf("%d trials have no objective values (launch failures, failed runs) and are not drawn.", unmeasured)
	}
	return p
}

// configSummary is a trial's knobs that differ from vLLM's defaults, for tooltips.
func configSummary(a *Analysis, t *record.Trial) string {
	var parts []string
	for _, k := range knobNames(a.Record) {
		if v, ok := t.Config[k]; ok && !isDefault(k, v, a.SKU) {
			parts = append(parts, k+"="+knobString(v))
		}
	}
	if len(parts) == 0 {
		return "vLLM defaults"
	}
	return strings.Join(parts, " ")
}

// latencyFamilies are the quantile series of workload.Result, in the order they are drawn.
var latencyFamilies = []string{"ttft_ms", "tpot_ms", "itl_ms", "e2e_ms"}

// latencyPlots draws, for each latency with recorded quantiles, the distribution (as a
// cumulative curve) of every trial on the front.
func latencyPlots(a *Analysis) []*plot {
	var out []*plot
	for _, fam := range latencyFamilies {
		var trials []*record.Trial
		lo, hi := math.Inf(1), math.Inf(-1)
		sim := false
		for _, t := range a.Front {
			if t.Total == nil || len(t.Total.Quantiles[fam]) < 2 {
				continue
			}
			q := t.Total.Quantiles[fam]
			trials = append(trials, t)
			lo, hi = math.Min(lo, slices.Min(q)), math.Max(hi, slices.Max(q))
			sim = sim || t.Simulated
		}
		if len(trials) == 0 {
			continue
		}
		name := strings.TrimSuffix(fam, "_ms")
		p, x, y := newPlot("latency-"+name, "Distribution of "+name+" on the front"+simSuffix(sim),
			name+" (ms)", "share of requests (%)", math.Max(0, lo), hi, 0, 100)
		for i, t := range trials {
			q := t.Total.Quantiles[fam]
			s := series{Name: fmt.Sprintf("trial %d", t.Number), Color: palette[i%len(palette)], Marker: "line"}
			for j, v := range q {
				pc := 100 * float64(j) / float64(len(q)-1)
				s.Points = append(s.Points, point{X: round2(x.px(v)), Y: round2(y.px(pc)),
					Title: fmt.Sprintf("trial %d: p%.0f %s = %s ms", t.Number, pc, name, num(v))})
			}
			s.Path = linePath(s.Points)
			p.Series = append(p.Series, s)
		}
		out = append(out, p)
	}
	return out
}

// seriesTrial is the trial whose engine state over time is drawn: the recommended one, or
// the first trial of the front, or any measured trial, that recorded a time series.
func seriesTrial(a *Analysis) *record.Trial {
	if a.Recommended != nil {
		if t := a.Record.Trial(a.Recommended.Trial); t != nil && len(t.Series) > 1 {
			return t
		}
	}
	for _, t := range a.Front {
		if len(t.Series) > 1 {
			return t
		}
	}
	for i := range a.Record.Trials {
		if len(a.Record.Trials[i].Series) > 1 {
			return &a.Record.Trials[i]
		}
	}
	return nil
}

// timePlots draws KV-cache usage and the queue (waiting and running requests) over the
// measured window of one trial.
func timePlots(a *Analysis) []*plot {
	t := seriesTrial(a)
	if t == nil {
		return nil
	}
	s := t.Series
	tlo, thi := s[0].T, s[len(s)-1].T
	kv, x, y := newPlot("kv-cache", fmt.Sprintf("KV-cache usage during trial %d%s", t.Number, simSuffix(t.Simulated)),
		"time (s)", "KV-cache usage (%)", tlo, thi, 0, 100)
	line := series{Name: "KV-cache usage", Color: palette[0], Marker: "line"}
	for _, smp := range s {
		line.Points = append(line.Points, point{X: round2(x.px(smp.T)), Y: round2(y.px(100 * smp.KVCacheUsage)),
			Title: fmt.Sprintf("t=%ss: %.1f%%", num(smp.T), 100*smp.KVCacheUsage)})
	}
	line.Path = linePath(line.Points)
	kv.Series = append(kv.Series, line)

	hi := 1.0
	for _, smp := range s {
		hi = math.Max(hi, math.Max(smp.Waiting, smp.Running))
	}
	q, x, y := newPlot("queue", fmt.Sprintf("Requests waiting and running during trial %d%s", t.Number, simSuffix(t.Simulated)),
		"time (s)", "requests", tlo, thi, 0, hi)
	waiting := series{Name: "waiting (queue)", Color: palette[1], Marker: "line"}
	running := series{Name: "running", Color: palette[2], Marker: "line"}
	for _, smp := range s {
		waiting.Points = append(waiting.Points, point{X: round2(x.px(smp.T)), Y: round2(y.px(smp.Waiting)),
			Title: fmt.Sprintf("t=%ss: %s waiting", num(smp.T), num(smp.Waiting))})
		running.Points = append(running.Points, point{X: round2(x.px(smp.T)), Y: round2(y.px(smp.Running)),
			Title: fmt.Sprintf("t=%ss: %s running", num(smp.T), num(smp.Running))})
	}
	waiting.Path, running.Path = linePath(waiting.Points), linePath(running.Points)
	q.Series = append(q.Series, waiting, running)
	return []*plot{kv, q}
}

// compareSpan is an estimate's comparison range moved from its level to its mean: the
// noise within which the configuration ties with the study's others, drawn about the point.
func compareSpan(e record.Estimate) (lo, hi float64) {
	return e.Mean - (e.Level - e.CompareLo), e.Mean + (e.CompareHi - e.Level)
}
