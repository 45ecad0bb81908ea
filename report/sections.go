package report

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/frontier-llm/frontier/record"

	"github.com/frontier-llm/frontier/workload"
)

// Options choose what a human report shows.
type Options struct {
	// All lists every trial, not only the Pareto front.
	All bool
}

// simMark follows every simulated number in human reports.
const simMark = "*"

// simNote explains simMark.
const simNote = "* simulated: from frontier's performance model, not measured on an engine."

// WriteText writes the report of a study for a terminal.
func WriteText(w io.Writer, a *Analysis, o Options) error {
	return writeText(w, title(a), sections(a, o))
}

// WriteMarkdown writes the report of a study as Markdown.
func WriteMarkdown(w io.Writer, a *Analysis, o Options) error {
	return writeMarkdown(w, title(a), sections(a, o))
}

func title(a *Analysis) string {
	return "frontier report: study " + printable(a.Record.Study)
}

// sections builds the parts of a human report, in the order they are read.
func sections(a *Analysis, o Options) []section {
	secs := []section{overview(a), frontSection(a)}
	if o.All {
		secs = append(secs, allSection(a))
	}
	secs = append(secs, recommendSection(a))
	if q, ok := qualitySection(a); ok {
		secs = append(secs, q)
	}
	if ps, ok := pressureSection(a.Record); ok {
		secs = append(secs, ps)
	}
	secs = append(secs, problemSection(a), sensitivitySection(a), gpuSection(a), provenanceSection(a))
	return secs
}

func overview(a *Analysis) section {
	rec := a.Record
	s := section{ID: "overview"}
	if rec.Description != "" {
		s.Lines = append(s.Lines, rec.Description)
	}
	where := fmt.Sprintf("Engine %s, model %s", rec.Engine, rec.Model)
	if a.SKU != "" {
		where += ", GPU " + a.SKU
	}
	if rec.PricePerGPUHour > 0 {
		where += fmt.Sprintf(" at %s per GPU-hour", num(rec.PricePerGPUHour))
	}
	s.Lines = append(s.Lines, where+".")
	var counts []string
	total := 0
	for _, c := range a.Counts {
		counts = append(counts, fmt.Sprintf("%d %s", c.N, c.State))
		total += c.N
	}
	line := fmt.Sprintf("%d trials", total)
	if rec.Budget > 0 {
		line = fmt.Sprintf("%d of %d trials", total, rec.Budget)
	}
	if len(counts) > 0 {
		line += ": " + strings.Join(counts, ", ")
	}
	s.Lines = append(s.Lines, fmt.Sprintf("%s; %d on the Pareto front.", line, len(a.Front)))
	var objs []string
	for _, o := range rec.Objectives {
		objs = append(objs, objectiveLabel(o))
	}
	if len(objs) > 0 {
		s.Lines = append(s.Lines, "Objectives: "+strings.Join(objs, ", ")+".")
	}
	for _, class := range slices.Sorted(maps.Keys(rec.SLOs)) {
		var b []string
		for _, bound := range rec.SLOs[class] {
			b = append(b, boundLabel(bound))
		}
		s.Lines = append(s.Lines, fmt.Sprintf("SLO of %s: %s.", class, strings.Join(b, ", ")))
	}
	if st, ok := record.TrialStanding(rec.Trials, rec.Objectives); ok {
		s.Lines = append(s.Lines, standingLine(st))
	}
	if a.Simulated {
		s.Lines = append(s.Lines, "SIMULATED: numbers marked "+simMark+" come from frontier's performance model, not from a real engine.")
		// A SKU graded for the study's model family has a SKU-wide grade beside it only when
		// that family is unvalidated there: the SKU-wide grade is then over the other family.
		graded := map[string]bool{}
		for _, c := range rec.ModelConfidence {
			graded[c.SKU] = graded[c.SKU] || c.Family != ""
		}
		for _, c := range rec.ModelConfidence {
			s.Lines = append(s.Lines, confidenceLine(c, c.Family == "" && graded[c.SKU]))
		}
		if line := lagLine(rec); line != "" {
			s.Lines = append(s.Lines, line)
		}
		if line := modelVersionsLine(rec); line != "" {
			s.Lines = append(s.Lines, line)
		}
	}
	return s
}

// modelVersionsLine says, for a study whose simulated trials hold the numbers of more than one
// version of the performance model (a study resumed by another release), which trials each
// version measured: their numbers do not compare like with like. Empty for one version.
func modelVersionsLine(rec *record.Study) string {
	by := map[string][]int{}
	for _, t := range rec.Trials {
		if !t.Simulated || t.Provenance == nil {
			continue
		}
		v := t.Provenance.SimModel
		if v == "" {
			v = "unrecorded"
		}
		by[v] = append(by[v], t.Number)
	}
	if len(by) < 2 {
		return ""
	}
	var parts []string
	for _, v := range slices.Sorted(maps.Keys(by)) {
		parts = append(parts, fmt.Sprintf("%s (trials %s)", v, trialList(by[v])))
	}
	return fmt.Sprintf("MIXED MODEL VERSIONS: the trials hold the numbers of %d versions of the performance model, %s; numbers of different versions do not compare like with like, so the front and the recommendation mix them. Measure the study again with one release, into a new study.",
		len(by), strings.Join(parts, ", "))
}

// trialList writes trial numbers as runs: "0-11, 14, 16-19".
func trialList(ns []int) string {
	ns = slices.Clone(ns)
	slices.Sort(ns)
	var parts []string
	for i := 0; i < len(ns); {
		j := i
		for j+1 < len(ns) && ns[j+1] == ns[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", ns[i], ns[j]))
		} else {
			parts = append(parts, strconv.Itoa(ns[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

// lagLine names the trials whose simulated engine fell behind real time (workload.SimLagged:
// its host too busy to run its steps when due): their latencies are slower than the model's.
func lagLine(rec *record.Study) string {
	var slow []string
	worst := 0.0
	for i := range rec.Trials {
		t := &rec.Trials[i]
		if lag, ok := workload.SimLagged(t.Total); ok {
			slow = append(slow, strconv.Itoa(t.Number))
			worst = math.Max(worst, lag/t.Total.Metrics[workload.DurationS])
		}
	}
	if len(slow) == 0 {
		return ""
	}
	return fmt.Sprintf("The simulated engine fell behind real time in trial(s) %s (up to %.0f%% of the measured window): the host was too busy to run its steps when due, so their latencies are slower than the model's. Measure them again on a quieter host.",
		strings.Join(slow, ", "), 100*worst)
}

// standingLine says how the sampler's prior, the performance model, matched the measured
// trials, and the weight the sampler gave it at the end (docs/search.md).
func standingLine(st record.Standing) string {
	line := "The sampler's prior (the performance model), " + st.String() + "."
	switch {
	case st.Weight == 0:
		line += " The measurements contradict the model: the sampler proposed by its own density, as with prior = false."
	case st.Weight < 1:
		line += " The measurements disagree with the model in part: the sampler followed it for that share of its proposals."
	}
	return line + " See docs/search.md."
}

// confidenceLine says how far the performance model's figures for one SKU can be trusted;
// other is true for the SKU's grade over the other model family's measurements.
func confidenceLine(c record.ModelConfidence, other bool) string {
	subject := c.Subject()
	if other {
		subject += " over its other published measurements"
	}
	if c.Points == 0 {
		return fmt.Sprintf("Model confidence on %s: %s; docs/sim.md.", subject, c.Summary())
	}
	return fmt.Sprintf("Model confidence on %s: %s, each SKU scored with the model's constants fitted on the others; docs/sim.md.",
		subject, c.Summary())
}

func objectiveLabel(o record.Objective) string {
	if o.Maximize {
		return o.Name + " (max)"
	}
	return o.Name + " (min)"
}

func boundLabel(b workload.Bound) string {
	op := "<="
	if b.AtLeast {
		op = ">="
	}
	return b.Metric + " " + op + " " + strconv.FormatFloat(b.Value, 'g', -1, 64)
}

// marked formats a number, followed by the simulated mark when it was simulated.
func marked(v float64, sim bool) string {
	if sim {
		return num(v) + simMark
	}
	return num(v)
}

// shownKnobs are the knobs whose value differs from vLLM's default in at least one of the
// trials.
func shownKnobs(a *Analysis, trials []*record.Trial) []string {
	var out []string
	for _, k := range knobNames(a.Record) {
		for _, t := range trials {
			if v, ok := t.Config[k]; ok && !isDefault(k, v, a.SKU) {
				out = append(out, k)
				break
			}
		}
	}
	return out
}

// trialTable is the table of trials: knobs that differ from the defaults, objectives, SLO
// margins, quality against the baseline and capacity.
func trialTable(a *Analysis, trials []*record.Trial, withState bool) table {
	rec := a.Record
	knobs := shownKnobs(a, trials)
	header := []string{"trial"}
	if withState {
		header = append(header, "state")
	}
	header = append(header, knobs...)
	for _, o := range rec.Objectives {
		header = append(header, objectiveLabel(o))
	}
	type sloCol struct {
		class string
		b     workload.Bound
	}
	var slos []sloCol
	for _, class := range slices.Sorted(maps.Keys(rec.SLOs)) {
		for _, b := range rec.SLOs[class] {
			slos = append(slos, sloCol{class, b})
			header = append(header, class+" "+boundLabel(b))
		}
	}
	gates := qualityNames(rec)
	for _, g := range gates {
		header = append(header, "quality "+g)
	}
	header = append(header, "capacity req/s", "runs")
	if !withState {
		header = append(header, "tie group")
	}
	rows := make([][]string, 0, len(trials))
	for _, t := range trials {
		row := []string{trialLabel(a, t)}
		if withState {
			row = append(row, string(t.State))
		}
		for _, k := range knobs {
			v, ok := t.Config[k]
			switch {
			case !ok:
				row = append(row, "")
			case isDefault(k, v, a.SKU):
				row = append(row, "-")
			default:
				row = append(row, knobCell(v))
			}
		}
		for _, o := range rec.Objectives {
			row = append(row, objectiveCell(t, o.Name))
		}
		for _, c := range slos {
			row = append(row, sloCell(t, c.class, c.b))
		}
		for _, g := range gates {
			row = append(row, qualityCell(t, g))
		}
		if c, ok := capacity(t); ok {
			row = append(row, marked(c, t.Simulated))
		} else if t.Capacity.MaxConcurrency > 0 {
			row = append(row, fmt.Sprintf("%s concurrent", marked(t.Capacity.MaxConcurrency, t.Simulated)))
		} else {
			row = append(row, "-")
		}
		row = append(row, runsCell(a, t))
		if !withState {
			row = append(row, tieGroupCell(a, t))
		}
		rows = append(rows, row)
	}
	return table{Header: header, Rows: rows}
}

// trialLabel is a trial's number, marked when it is the recommendation or the knee.
func trialLabel(a *Analysis, t *record.Trial) string {
	label := strconv.Itoa(t.Number)
	r := a.Recommended
	switch {
	case r == nil:
	case t.Number == r.Trial && r.Trial == r.Knee:
		label += " (knee)"
	case t.Number == r.Trial:
		label += " (recommended)"
	case t.Number == r.Knee:
		label += " (knee)"
	}
	return label
}

// objectiveCell is a trial's objective: the mean of its runs and its 95% range where the
// range has a width.
func objectiveCell(t *record.Trial, name string) string {
	v, ok := objectiveOf(t)[name]
	if !ok {
		return ""
	}
	c := marked(v, t.Simulated)
	if e, ok := t.Uncertainty[name]; ok && e.HalfWidth() > 0 {
		c += fmt.Sprintf(" [%s–%s]", num(e.Lo), num(e.Hi))
	}
	return c
}

// sloCell is a trial's value of an SLO's metric in its first run, with the value's 95%
// interval over the run's requests where it has one, and the headroom to the bound.
func sloCell(t *record.Trial, class string, b workload.Bound) string {
	v, ok := sloValue(t, class, b.Metric)
	if !ok {
		return ""
	}
	c := marked(v, t.Simulated)
	if ci, ok := sloCI(t, class, b.Metric); ok && ci[0] != ci[1] {
		c += fmt.Sprintf(" [%s–%s]", num(ci[0]), num(ci[1]))
	}
	m := margin(b, v)
	if m < 0 {
		return fmt.Sprintf("%s (%s missed)", c, pct(m))
	}
	return fmt.Sprintf("%s (%s)", c, pct(m))
}

// runsCell is how many runs a trial's numbers rest on, marked when a complete trial was not
// measured again as the study asks.
func runsCell(a *Analysis, t *record.Trial) string {
	n := strconv.Itoa(t.Runs())
	if t.State == record.StateComplete && !a.Record.IsConfirmed(t) {
		n += " unconfirmed"
	}
	return n
}

// tieGroupCell names the tie group of a front member ("A" for the group of the
// configuration closest to the utopia point, then "B", ...); "-" for a member that ties with
// no other.
func tieGroupCell(a *Analysis, t *record.Trial) string {
	for i, g := range a.TieGroups {
		if slices.Contains(g, t.Number) {
			if len(g) == 1 {
				return "-"
			}
			return groupName(i)
		}
	}
	return ""
}

// groupName is the letter of the i-th tie group.
func groupName(i int) string {
	if i < 26 {
		return string(rune('A' + i))
	}
	return "G" + strconv.Itoa(i+1)
}

func qualityNames(rec *record.Study) []string {
	seen := map[string]bool{}
	for _, t := range rec.Trials {
		for g := range t.Quality {
			seen[g] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

func qualityCell(t *record.Trial, gate string) string {
	q, ok := t.Quality[gate]
	if !ok {
		return ""
	}
	s := marked(q.Score, q.Simulated)
	if q.Baseline != 0 {
		s += fmt.Sprintf(" (%s vs %s)", pct((q.Score-q.Baseline)/q.Baseline), num(q.Baseline))
	}
	if !q.Passed {
		s += " failed"
	}
	return s
}

func frontSection(a *Analysis) section {
	s := section{Title: "Pareto front", ID: "front"}
	if len(a.Front) == 0 && finishedTrials(a.Record) == 0 {
		s.Lines = append(s.Lines, "No trial has finished yet: there is nothing to compare. frontier apply measures the study.")
		return s
	}
	if len(a.Front) == 0 {
		s.Lines = append(s.Lines, "No configuration met every SLO, check and quality gate; see below for why.")
		return s
	}
	s.Lines = append(s.Lines, "Configurations no other configuration beats on every objective, among those that met every SLO, check and quality gate.")
	s.Tables = append(s.Tables, trialTable(a, a.Front, false))
	s.Notes = append(s.Notes, frontNotes(a)...)
	return s
}

func frontNotes(a *Analysis) []string {
	notes := []string{"Knob columns show values that differ from vLLM's defaults; - is the default. Objectives are the mean of a configuration's runs (runs: the first and its confirmations) and [the 95% range] another run may read: the run-to-run scatter and, for percentiles and means, the interval over the run's own requests, whichever is wider. SLO cells show the first run's value, its 95% interval over the run's requests [low–high] and its headroom to the bound. One configuration beats another only beyond noise: compared on the same draws of requests (the draws' common effect taken out), its range is wholly better on some objective and wholly worse on none; configurations of one tie group are within each other's noise on every objective. \"unconfirmed\": measured once, not again as the study asks."}
	if a.Simulated {
		notes = append(notes, simNote)
	}
	return notes
}

func allSection(a *Analysis) section {
	s := section{Title: "All trials", ID: "all"}
	trials := make([]*record.Trial, len(a.Record.Trials))
	for i := range a.Record.Trials {
		trials[i] = &a.Record.Trials[i]
	}
	slices.SortStableFunc(trials, func(x, y *record.Trial) int { return x.Number - y.Number })
	t := trialTable(a, trials, true)
	t.Header = append(t.Header, "reason")
	for i, tr := range trials {
		t.Rows[i] = append(t.Rows[i], shorten(scrub(tr.Reason), 70))
	}
	s.Tables = append(s.Tables, t)
	s.Notes = frontNotes(a)
	return s
}

func shorten(s string, n int) string {
	r := []rune(strings.Join(strings.Fields(s), " "))
	if len(r) <= n {
		return string(r)
	}
	return string(r[:n-1]) + "…"
}

func recommendSection(a *Analysis) section {
	s := section{Title: "Recommended configuration", ID: "recommended"}
	r := a.Recommended
	if r == nil {
		s.Lines = append(s.Lines, "None: no configuration met every SLO, check and quality gate.")
		return s
	}
	t := a.Record.Trial(r.Trial)
	s.Lines = append(s.Lines,
		fmt.Sprintf("Trial %d, chosen as the %s.", r.Trial, r.Method),
		"Why: "+r.Why+".")
	s.Lines = append(s.Lines, evidenceLine(a, r))
	var objs []string
	for _, o := range a.Record.Objectives {
		c := fmt.Sprintf("%s %s", o.Name, marked(r.Objectives[o.Name], r.Simulated))
		if e, ok := r.Uncertainty[o.Name]; ok && e.HalfWidth() > 0 {
			c += fmt.Sprintf(" (95%% range %s to %s)", num(e.Lo), num(e.Hi))
		}
		objs = append(objs, c)
	}
	if len(objs) > 0 {
		s.Lines = append(s.Lines, "Objectives: "+strings.Join(objs, ", ")+".")
	}
	if ht, ok := headroomTable(r); ok {
		ht.Caption = "Headroom to each SLO (the first run's value; the interval is its 95% interval over the run's requests):"
		s.Tables = append(s.Tables, ht)
	}
	tb := table{Header: []string{"knob", "value", "vLLM default"}}
	for _, k := range knobNames(a.Record) {
		v, ok := t.Config[k]
		if !ok {
			continue
		}
		def := "depends on the model"
		switch k {
		case record.DisaggregationKnob:
			def = "none (one instance; frontier's knob)"
		case record.PrefillTPKnob, record.DecodeTPKnob:
			def = "tensor_parallel_size (frontier's knob)"
		}
		if d, ok := VLLMDefault(k, a.SKU); ok {
			def = knobString(d)
			if sameValue(d, v) {
				def += " (same)"
			}
		}
		tb.Rows = append(tb.Rows, []string{k, knobString(v), def})
	}
	s.Tables = append(s.Tables, tb)
	if tt, ok := turnTable(t.Workloads, nil, r.Simulated); ok {
		s.Lines = append(s.Lines, "Time to first token by turn: each turn's prompt holds its conversation's history so far.")
		s.Tables = append(s.Tables, tt)
	}
	if w := t.StartupWave; w != nil && w.Requests > 0 {
		s.Lines = append(s.Lines, startupWaveLine(w, r.Simulated))
	}
	lines, tb, pd := deploymentLines(t, r.Simulated)
	if pd {
		s.Lines = append(s.Lines, lines...)
		if len(tb.Rows) > 0 {
			s.Tables = append(s.Tables, tb)
		}
	}
	if line, err := ServeLine(a.Record, t); err == nil && !pd {
		s.Code = line
		s.Lines = append(s.Lines, "Run it (frontier export --pick knee --format vllm-yaml, docker or k8s writes it for deployment):")
	}
	if r.Simulated {
		s.Notes = append(s.Notes, simNote)
	}
	return s
}

// evidenceLine says what a recommendation rests on: how many runs, and whether it was
// confirmed.
func evidenceLine(a *Analysis, r *Recommendation) string {
	if r.Confirmed {
		return fmt.Sprintf("Evidence: %d runs of this configuration (confirmed: measured again as the study asks); the objectives are their mean.", r.Runs)
	}
	if a.Record.Confirm <= 0 {
		return fmt.Sprintf("Evidence: UNCONFIRMED: %s of this configuration, never measured again (the plan's confirm = 0 turns confirmation off); set confirm = 1 or more and run frontier apply on the plan again before acting on it.",
			count(r.Runs, "run"))
	}
	return fmt.Sprintf("Evidence: UNCONFIRMED: %s of this configuration; the study asks for %d more (confirm = %d). Run frontier apply on the plan again to confirm it before acting on it.",
		count(r.Runs, "run"), a.Record.Confirm-(r.Runs-1), a.Record.Confirm)
}

// headroomTable is the recommendation's margin to each SLO bound, flagged where the value's
// interval reaches the bound.
func headroomTable(r *Recommendation) (table, bool) {
	tb := table{Header: []string{"class", "SLO", "value", "95% interval", "headroom", "note"}}
	for _, h := range r.Headroom {
		iv := "-"
		if h.Lo != 0 || h.Hi != 0 {
			iv = fmt.Sprintf("%s–%s", marked(h.Lo, r.Simulated), marked(h.Hi, r.Simulated))
		}
		note := ""
		switch {
		case h.Margin < 0:
			note = "missed"
		case h.InsideNoise:
			note = "inside the noise: the interval reaches the bound"
		}
		tb.Rows = append(tb.Rows, []string{h.Class, fmt.Sprintf("%s %s", h.Metric, boundText(h)), marked(h.Value, r.Simulated), iv, pct(h.Margin), note})
	}
	return tb, len(tb.Rows) > 0
}

// boundText is a headroom's bound: "≤ 1000" or "≥ 10".
func boundText(h Headroom) string {
	if h.AtLeast {
		return "≥ " + num(h.Bound)
	}
	return "≤ " + num(h.Bound)
}

// count writes n with a noun, plural when n is not 1.
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// startupWaveLine says how much of the recommended trial's time to first token came from the
// requests every client sent at the start: real benchmarks start that way too, but a
// service whose clients arrive spread out does not see that queue.
func startupWaveLine(w *workload.StartupWave, sim bool) string {
	return fmt.Sprintf("Start-up wave: the %d requests sent at once at the start had a mean time to first token of %s ms, the rest %s ms; they are %s%% of all time to first token, which a service whose clients arrive spread out would not see.",
		w.Requests, marked(w.TTFTMeanMs, sim), marked(w.RestTTFTMeanMs, sim), marked(100*w.Share, sim))
}

func problemSection(a *Analysis) section {
	s := section{Title: "Infeasible, pruned and failed trials", ID: "problems"}
	if len(a.Problems) == 0 && finishedTrials(a.Record) == 0 {
		s.Lines = append(s.Lines, "None: no trial has finished yet.")
		return s
	}
	if len(a.Problems) == 0 {
		s.Lines = append(s.Lines, "None: every trial met every SLO, check and quality gate.")
		return s
	}
	tb := table{Header: []string{"state", "why", "trials", "example"}}
	for _, p := range a.Problems {
		nums := make([]string, len(p.Trials))
		for i, n := range p.Trials {
			nums[i] = strconv.Itoa(n)
		}
		tb.Rows = append(tb.Rows, []string{string(p.State), p.Class, strings.Join(nums, " "), shorten(p.Reason, 70)})
	}
	s.Tables = append(s.Tables, tb)
	for _, p := range a.Problems {
		for _, m := range p.Messages {
			s.Notes = append(s.Notes, fmt.Sprintf("Engine message (%s): %s", p.Class, m))
		}
	}
	return s
}

func sensitivitySection(a *Analysis) section {
	s := section{Title: "Sensitivity around the recommended configuration", ID: "sensitivity"}
	if a.Recommended == nil {
		s.Lines = append(s.Lines, "No recommended configuration to start from.")
		return s
	}
	s.Lines = append(s.Lines, fmt.Sprintf("Recorded trials that change one knob of trial %d and keep the others (numbers within 5%% count as kept; ~ marks such a near match); where none does, the trials that also change the fewest other knobs, or the performance model's estimate when the plan is given. Changes of recorded trials are relative to trial %d as measured; changes of estimates are relative to the model's estimate of trial %d's configuration, so that the model's own offset never shows as a knob's effect. (noise): the two configurations' 95%% ranges overlap on that objective.", a.Recommended.Trial, a.Recommended.Trial, a.Recommended.Trial))
	header := []string{"knob", "from", "to", "also changed", "trial", "state"}
	for _, o := range a.Record.Objectives {
		header = append(header, objectiveLabel(o))
	}
	tb := table{Header: header}
	var missing []string
	for _, e := range a.Sensitivity {
		if len(e.Neighbors) == 0 {
			missing = append(missing, e.Knob)
			continue
		}
		for _, n := range e.Neighbors {
			to := knobCell(n.Value)
			if !n.Exact && len(n.Also) == 0 {
				to += " (~)"
			}
			also := "-"
			if len(n.Also) > 0 {
				var parts []string
				for _, o := range n.Also {
					parts = append(parts, o+"="+knobCell(n.Trial.Config[o]))
				}
				also = strings.Join(parts, " ")
			}
			trial := strconv.Itoa(n.Trial.Number)
			if n.Estimated {
				trial = "estimate" + simMark
			}
			row := []string{e.Knob, knobCell(e.Base), to, also, trial, stateWhy(n.Trial)}
			for _, o := range a.Record.Objectives {
				d, ok := n.Delta[o.Name]
				if !ok {
					row = append(row, "")
					continue
				}
				c := pct(d)
				if n.Trial.Simulated {
					c += simMark
				}
				if n.WithinNoise[o.Name] {
					c += " (noise)"
				}
				row = append(row, c)
			}
			tb.Rows = append(tb.Rows, row)
		}
	}
	if len(tb.Rows) > 0 {
		s.Tables = append(s.Tables, tb)
	}
	if len(missing) > 0 {
		s.Notes = append(s.Notes, fmt.Sprintf("No recorded trial changes %s while keeping all but two other knobs; `frontier estimate PLAN --knob NAME=VALUE` simulates one.", strings.Join(missing, ", ")))
	}
	if a.Simulated && len(tb.Rows) > 0 {
		s.Notes = append(s.Notes, simNote)
	}
	return s
}

// stateWhy is a trial's state with its failure class when it has one.
func stateWhy(t *record.Trial) string {
	switch {
	case t.FailureClass != "":
		return string(t.State) + ": " + string(t.FailureClass)
	case t.State != record.StateComplete && t.Reason != "":
		return string(t.State) + ": " + shorten(scrub(strings.TrimPrefix(t.Reason, string(t.State)+": ")), 40)
	}
	return string(t.State)
}

func gpuSection(a *Analysis) section {
	g := a.GPUTime
	s := section{Title: "GPU time", ID: "gpu"}
	mark := ""
	if g.Simulated {
		mark = simMark
	}
	what := "GPU time"
	if g.CPUOnly {
		// No GPU ran: the seconds are the engine's time on the CPU.
		s.Title, what = "Engine time", "engine time"
	}
	s.Lines = append(s.Lines, fmt.Sprintf("Spent: %s%s of %s, %s%s of it in trials that completed their measurement.",
		duration(g.Spent), mark, what, duration(g.Measured), mark))
	switch {
	case g.CPUOnly:
		s.Lines = append(s.Lines, "Every engine ran on the CPU, with no GPU: these are seconds of engine time, not GPU-seconds.")
	case g.CPU > 0:
		s.Lines = append(s.Lines, fmt.Sprintf("%s of it is engine time on the CPU only, not GPU time.", duration(g.CPU)))
	}
	var parts []string
	for _, st := range stateOrder {
		if v, ok := g.ByState[st]; ok {
			parts = append(parts, fmt.Sprintf("%s %s%s", st, duration(v), mark))
		}
	}
	if len(parts) > 0 {
		s.Lines = append(s.Lines, "By state: "+strings.Join(parts, ", ")+".")
	}
	if g.Confirm > 0 {
		s.Lines = append(s.Lines, fmt.Sprintf("Confirmation runs of the front: %s%s of it.", duration(g.Confirm), mark))
	}
	s.Lines = append(s.Lines, fmt.Sprintf("Saved: %s%s by early stopping, the memory pre-screen and fast launch failures.", duration(g.Saved), mark))
	if g.PreScreened > 0 {
		s.Lines = append(s.Lines, fmt.Sprintf("The memory pre-screen rejected %d configurations before any GPU time was spent on them.", g.PreScreened))
	}
	if g.Simulated {
		s.Notes = append(s.Notes, "* simulated trials spent no GPU time: these are the times the performance model predicts a real study would take.")
	}
	return s
}

func provenanceSection(a *Analysis) section {
	p := a.Provenance
	s := section{Title: "Provenance", ID: "provenance"}
	tb := table{Header: []string{"what", "value"}}
	add := func(k string, v []string) {
		if len(v) > 0 {
			tb.Rows = append(tb.Rows, []string{k, strings.Join(v, ", ")})
		}
	}
	add("frontier", p.FrontierVersions)
	add("engine", p.Engines)
	add("model", p.Models)
	add("GPUs", p.GPUs)
	add("driver", p.Drivers)
	add("hosts", p.Hosts)
	add("plan hash", p.PlanHashes)
	if p.Search != "" {
		add("search", []string{p.Search})
	}
	if a.Record.SpaceHash != "" {
		add("space hash", []string{a.Record.SpaceHash})
	}
	var seeds []string
	for _, sd := range p.WorkloadSeeds {
		seeds = append(seeds, strconv.FormatInt(sd, 10))
	}
	add("workload seed", seeds)
	if !p.First.IsZero() {
		add("dates", []string{p.First.UTC().Format("2006-01-02 15:04 MST") + " to " + p.Last.UTC().Format("2006-01-02 15:04 MST")})
	}
	if len(p.Command) > 0 {
		add("command of the recommended trial", []string{shellLine(p.Command)})
	}
	if len(tb.Rows) == 0 {
		s.Lines = append(s.Lines, "No provenance recorded.")
		return s
	}
	s.Tables = append(s.Tables, tb)
	return s
}

// qualitySection shows the recommended trial's quality gates against their baselines, with
// a few of the model's answers, the lowest-scoring first.
func qualitySection(a *Analysis) (section, bool) {
	if a.Recommended == nil {
		return section{}, false
	}
	t := a.Record.Trial(a.Recommended.Trial)
	if t == nil || len(t.Quality) == 0 {
		return section{}, false
	}
	s := section{Title: fmt.Sprintf("Quality of trial %d", t.Number), ID: "quality"}
	gates := table{Header: []string{"gate", "score", "baseline", "change", "passed"}}
	examples := table{Header: []string{"gate", "input", "reference", "output", "score"}}
	withBaseline := false
	for _, q := range t.Quality {
		for _, e := range q.Examples {
			withBaseline = withBaseline || e.BaselineOutput != ""
		}
	}
	if withBaseline {
		examples.Header = []string{"gate", "input", "reference", "output", "baseline's output", "score"}
	}
	sim := false
	for _, g := range slices.Sorted(maps.Keys(t.Quality)) {
		q := t.Quality[g]
		sim = sim || q.Simulated
		change := "-"
		if q.Baseline != 0 {
			change = pct((q.Score - q.Baseline) / q.Baseline)
		}
		passed := "yes"
		if !q.Passed {
			passed = "no"
			if q.Reason != "" {
				passed += ": " + scrub(q.Reason)
			}
		}
		gates.Rows = append(gates.Rows, []string{g, marked(q.Score, q.Simulated), num(q.Baseline), change, passed})
		for i, e := range q.Examples {
			if i == 3 {
				break
			}
			row := []string{g, shorten(scrub(e.Input), 80), shorten(scrub(e.Reference), 80), shorten(scrub(e.Output), 80)}
			if withBaseline {
				row = append(row, shorten(scrub(e.BaselineOutput), 80))
			}
			examples.Rows = append(examples.Rows, append(row, marked(e.Score, q.Simulated)))
		}
	}
	s.Tables = append(s.Tables, gates)
	if len(examples.Rows) > 0 {
		examples.Caption = "Some of the model's answers under this configuration, the lowest-scoring first:"
		s.Tables = append(s.Tables, examples)
	}
	if sim {
		s.Notes = append(s.Notes, "* simulated: scores from frontier's answer model, not from the real model.")
	}
	return s, true
}

// finishedTrials counts the trials of a study that ran to an outcome: neither waiting,
// running nor interrupted.
func finishedTrials(rec *record.Study) int {
	n := 0
	for _, t := range rec.Trials {
		switch t.State {
		case record.StateWaiting, record.StateRunning, record.StateInterrupted:
		default:
			n++
		}
	}
	return n
}
