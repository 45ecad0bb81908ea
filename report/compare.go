package report

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/frontier-llm/frontier/record"

	"github.com/frontier-llm/frontier/workload"
)

// Comparison puts studies side by side: the same plan on several GPU SKUs (procurement) or
// with several models (an upgrade).
type Comparison struct {
	Studies []StudySummary `json:"studies"`
	// Knobs are the knobs of every study, in the first study's order.
	Knobs []string `json:"knobs"`
	// Changed lists the knobs whose recommended value differs between studies.
	Changed []string `json:"changed"`
}

// Best is the best value of a metric among a study's feasible trials, and the trial with it.
type Best struct {
	Value float64 `json:"value"`
	Trial int     `json:"trial"`
}

// StudySummary is one study of a comparison, reduced to the numbers procurement and an
// upgrade decision need. "At the SLO" means among the trials that met every SLO, check and
// quality gate.
type StudySummary struct {
	Source          string  `json:"source"`
	Study           string  `json:"study"`
	Model           string  `json:"model"`
	Engine          string  `json:"engine"`
	SKU             string  `json:"sku,omitempty"`
	PricePerGPUHour float64 `json:"price_per_gpu_hour,omitempty"`
	Simulated       bool    `json:"simulated"`
	Trials          int     `json:"trials"`
	Feasible        int     `json:"feasible"`
	// ThroughputPerGPU is the best output tokens per second per GPU at the SLO.
	ThroughputPerGPU *Best `json:"output_token_throughput_per_gpu,omitempty"`
	// CostPerMillion is the lowest cost per million output tokens at the SLO.
	CostPerMillion *Best `json:"cost_per_million_output_tokens,omitempty"`
	// Capacity is the highest capacity_rps at the SLO.
	Capacity    *Best           `json:"capacity_rps,omitempty"`
	Recommended *Recommendation `json:"recommended"`
	// Metrics are the recommended trial's headline numbers, by name.
	Metrics map[string]float64 `json:"metrics,omitempty"`
	// Quality is the recommended trial's score of each quality gate.
	Quality map[string]float64 `json:"quality,omitempty"`
	// Pressure are the study's pressure results, one per configuration measured.
	Pressure []PressureSummary `json:"pressure,omitempty"`
}

// headline metrics of the recommended trial, in the order they are shown.
var headline = []string{workload.OutputTokenThroughput, "output_token_throughput_per_gpu",
	"ttft_p99_ms", "tpot_p99_ms", "e2e_p99_ms", workload.CapacityRPS, workload.CostPerMillionOutput}

// costPerMillion is a trial's cost per million output tokens: as measured, or from the price
// per GPU-hour.
func costPerMillion(rec *record.Study, t *record.Trial) (float64, bool) {
	if t.Total == nil {
		return 0, false
	}
	if v, ok := t.Total.Metrics[workload.CostPerMillionOutput]; ok && v > 0 {
		return v, true
	}
	tput := t.Total.Metrics[workload.OutputTokenThroughput]
	if rec.PricePerGPUHour <= 0 || tput <= 0 {
		return 0, false
	}
	return rec.PricePerGPUHour * float64(gpus(t)) / (tput * 3600) * 1e6, true
}

// Summarize reduces one study to the numbers of a comparison; source is where it was read.
func Summarize(source string, rec *record.Study) StudySummary {
	a := Analyze(rec)
	s := StudySummary{Source: source, Study: rec.Study, Model: rec.Model, Engine: rec.Engine, SKU: a.SKU,
		PricePerGPUHour: rec.PricePerGPUHour, Simulated: a.Simulated, Trials: len(rec.Trials),
		Recommended: a.Recommended, Pressure: summarizePressure(rec)}
	better := func(b **Best, v float64, trial int, max bool) {
		if *b == nil || (max && v > (*b).Value) || (!max && v < (*b).Value) {
			*b = &Best{Value: v, Trial: trial}
		}
	}
	for i := range rec.Trials {
		t := &rec.Trials[i]
		if t.State != record.StateComplete || t.Total == nil {
			continue
		}
		s.Feasible++
		if v, ok := t.Total.Metrics[workload.OutputTokenThroughput]; ok {
			better(&s.ThroughputPerGPU, v/float64(gpus(t)), t.Number, true)
		}
		if v, ok := costPerMillion(rec, t); ok {
			better(&s.CostPerMillion, v, t.Number, false)
		}
		if v, ok := capacity(t); ok {
			better(&s.Capacity, v, t.Number, true)
		}
	}
	if a.Recommended != nil {
		t := rec.Trial(a.Recommended.Trial)
		s.Metrics = map[string]float64{}
		if t.Total != nil {
			for _, m := range headline {
				if v, ok := t.Total.Metrics[m]; ok {
					s.Metrics[m] = v
				}
			}
			if v, ok := t.Total.Metrics[workload.OutputTokenThroughput]; ok {
				s.Metrics["output_token_throughput_per_gpu"] = v / float64(gpus(t))
			}
		}
		if v, ok := capacity(t); ok {
			s.Metrics[workload.CapacityRPS] = v
		}
		if v, ok := costPerMillion(rec, t); ok {
			s.Metrics[workload.CostPerMillionOutput] = v
		}
		for g, q := range t.Quality {
			if s.Quality == nil {
				s.Quality = map[string]float64{}
			}
			s.Quality[g] = q.Score
		}
	}
	return s
}

// Compare puts studies side by side; sources name where each was read from.
func Compare(sources []string, recs []*record.Study) *Comparison {
	c := &Comparison{Knobs: []string{}, Changed: []string{}}
	seen := map[string]bool{}
	for i, rec := range recs {
		c.Studies = append(c.Studies, Summarize(sources[i], rec))
		for _, k := range knobNames(rec) {
			if !seen[k] {
				seen[k] = true
				c.Knobs = append(c.Knobs, k)
			}
		}
	}
	for _, k := range c.Knobs {
		var first any
		have := false
		for _, s := range c.Studies {
			var v any
			if s.Recommended != nil {
				v = s.Recommended.Config[k]
			}
			if !have {
				first, have = v, true
				continue
			}
			if (v == nil) != (first == nil) || (v != nil && !sameValue(v, first)) {
				c.Changed = append(c.Changed, k)
				break
			}
		}
	}
	return c
}

// WriteCompareJSON writes a comparison as JSON.
func WriteCompareJSON(w io.Writer, c *Comparison) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(c); err != nil {
		return fmt.Errorf("write JSON comparison: %w", err)
	}
	return nil
}

// WriteCompareText writes a comparison for a terminal.
func WriteCompareText(w io.Writer, c *Comparison) error {
	return writeText(w, compareTitle(c), compareSections(c))
}

// WriteCompareMarkdown writes a comparison as Markdown.
func WriteCompareMarkdown(w io.Writer, c *Comparison) error {
	return writeMarkdown(w, compareTitle(c), compareSections(c))
}

func compareTitle(c *Comparison) string {
	return fmt.Sprintf("frontier compare: %d studies", len(c.Studies))
}

func bestCell(b *Best, sim bool) string {
	if b == nil {
		return "-"
	}
	return fmt.Sprintf("%s (trial %d)", marked(b.Value, sim), b.Trial)
}

func compareSections(c *Comparison) []section {
	anySim := false
	proc := table{Header: []string{"study", "source", "GPU", "model", "price/GPU-h", "feasible",
		"best output tok/s per GPU at SLO", "cost per 1M output tokens at SLO", "capacity req/s at SLO", "quality (recommended)"}}
	for _, s := range c.Studies {
		anySim = anySim || s.Simulated
		price := "-"
		if s.PricePerGPUHour > 0 {
			price = num(s.PricePerGPUHour)
		}
		var q []string
		for _, g := range slices.Sorted(maps.Keys(s.Quality)) {
			q = append(q, g+" "+marked(s.Quality[g], s.Simulated))
		}
		proc.Rows = append(proc.Rows, []string{s.Study, s.Source, orDash(s.SKU), s.Model, price,
			fmt.Sprintf("%d of %d", s.Feasible, s.Trials),
			bestCell(s.ThroughputPerGPU, s.Simulated), bestCell(s.CostPerMillion, s.Simulated),
			bestCell(s.Capacity, s.Simulated), orDash(strings.Join(q, ", "))})
	}
	secs := []section{{Title: "Hardware and cost at the SLO", ID: "procurement",
		Lines:  []string{"Each study's best feasible trial for each number: trials that met every SLO, check and quality gate."},
		Tables: []table{proc}}}

	header := []string{"knob"}
	for i, s := range c.Studies {
		header = append(header, fmt.Sprintf("%d: %s", i+1, studyLabel(s)))
	}
	header = append(header, "changed")
	cfg := table{Header: header}
	for _, k := range c.Knobs {
		row := []string{k}
		for _, s := range c.Studies {
			v := "-"
			if s.Recommended != nil {
				if x, ok := s.Recommended.Config[k]; ok {
					v = knobCell(x)
				}
			}
			row = append(row, v)
		}
		mark := ""
		for _, ch := range c.Changed {
			if ch == k {
				mark = "yes"
			}
		}
		cfg.Rows = append(cfg.Rows, append(row, mark))
	}
	trialRow := []string{"recommended trial"}
	for _, s := range c.Studies {
		if r := s.Recommended; r != nil {
			cell := fmt.Sprintf("%d (%s)", r.Trial, count(r.Runs, "run"))
			if !r.Confirmed {
				cell = fmt.Sprintf("%d (unconfirmed: %s)", r.Trial, count(r.Runs, "run"))
			}
			trialRow = append(trialRow, cell)
		} else {
			trialRow = append(trialRow, "none feasible")
		}
	}
	cfg.Rows = append([][]string{append(trialRow, "")}, cfg.Rows...)

	nums := table{Header: append([]string{"number"}, header[1:len(header)-1]...)}
	metricNames := append([]string{}, headline...)
	gates := map[string]bool{}
	for _, s := range c.Studies {
		for g := range s.Quality {
			gates[g] = true
		}
	}
	for _, m := range metricNames {
		row := []string{m}
		found := false
		for i, s := range c.Studies {
			v, ok := s.Metrics[m]
			if !ok {
				row = append(row, "-")
				continue
			}
			found = true
			row = append(row, withDelta(v, c.Studies[0].Metrics, m, i, s.Simulated))
		}
		if found {
			nums.Rows = append(nums.Rows, row)
		}
	}
	for _, g := range slices.Sorted(maps.Keys(gates)) {
		row := []string{"quality " + g}
		for i, s := range c.Studies {
			v, ok := s.Quality[g]
			if !ok {
				row = append(row, "-")
				continue
			}
			row = append(row, withDelta(v, c.Studies[0].Quality, g, i, s.Simulated))
		}
		nums.Rows = append(nums.Rows, row)
	}
	up := section{Title: "Recommended configurations side by side", ID: "upgrade",
		Lines:  []string{"The recommended configuration of each study's front (its knee, or the least costly of those that tie with it within noise), with the runs it rests on; numbers in later columns show their change against study 1."},
		Tables: []table{cfg, nums}}
	if len(c.Changed) > 0 {
		up.Notes = append(up.Notes, "Changed from study 1: "+strings.Join(c.Changed, ", ")+".")
	} else if len(c.Studies) > 1 {
		up.Notes = append(up.Notes, "The recommended configuration is the same in every study.")
	}
	if anySim {
		up.Notes = append(up.Notes, simNote)
	}
	secs = append(secs, up)
	if ps, ok := comparePressure(c); ok {
		secs = append(secs, ps)
	}
	return secs
}

func withDelta(v float64, first map[string]float64, key string, i int, sim bool) string {
	s := marked(v, sim)
	if i == 0 {
		return s
	}
	if b, ok := first[key]; ok && b != 0 && !math.IsNaN(b) {
		s += " (" + pct((v-b)/math.Abs(b)) + ")"
	}
	return s
}

func studyLabel(s StudySummary) string {
	parts := []string{s.Study}
	if s.SKU != "" {
		parts = append(parts, s.SKU)
	}
	if short := s.Model[strings.LastIndex(s.Model, "/")+1:]; short != "" {
		parts = append(parts, short)
	}
	return strings.Join(parts, " ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
