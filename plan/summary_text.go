package plan

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter"

	"github.com/frontier-llm/frontier/workload"
)

// WriteText renders the summary for a person: the blocks in order, knobs, rules, workloads,
// checks, quality gates and objectives as tables.
func (s Summary) WriteText(w io.Writer) error {
	ew := &errWriter{w: w}
	st := s.Study
	ew.printf("Study %s", st.Name)
	if st.Description != "" {
		ew.printf(": %s", st.Description)
	}
	ew.printf("\n  %d trials, sampler %s, seed %d, parallel %s, confirm %d\n", st.Trials, st.Sampler, st.Seed, parallelText(st.Parallel), st.Confirm)
	if st.WarmStart != "" {
		ew.printf("  warm start from %s\n", st.WarmStart)
	}
	m := s.Model
	ew.printf("Model %s", m.Name)
	var details []string
	if m.Architecture != "" {
		details = append(details, "architecture "+m.Architecture)
	}
	if m.ConfigJSON != "" {
		details = append(details, "config "+m.ConfigJSON)
	}
	if m.GGUF != "" {
		details = append(details, "gguf "+m.GGUF)
	}
	if m.MaxModelLen > 0 {
		details = append(details, fmt.Sprintf("max_model_len %d", m.MaxModelLen))
	}
	if len(details) > 0 {
		ew.printf(" (%s)", strings.Join(details, ", "))
	}
	e := s.Engine
	cmd := strings.Join(append(append([]string{}, e.Command...), e.Args...), " ")
	if len(e.Command) == 0 {
		cmd = strings.TrimSpace("frontier sim serve " + strings.Join(e.Args, " "))
	}
	ew.printf("\nEngine %s: %s (startup timeout %s)\n", e.Kind, cmd, e.StartupTimeout)
	for _, k := range slices.Sorted(maps.Keys(e.Env)) {
		ew.printf("  env %s=%s\n", k, e.Env[k])
	}
	h := s.Hardware
	if n, ok := h.GPUs.(int); ok && n == 0 {
		ew.printf("Hardware: CPU only")
	} else {
		ew.printf("Hardware: GPUs %v", h.GPUs)
	}
	if h.SKU != "" {
		ew.printf(", SKU %s", h.SKU)
	}
	if h.PricePerGPUHour > 0 {
		ew.printf(", %s per GPU hour", strconv.FormatFloat(h.PricePerGPUHour, 'f', -1, 64))
	}
	if h.AllowBusy {
		ew.printf(", busy GPUs allowed")
	}
	ew.printf("\n")
	if len(s.Variables) > 0 {
		ew.printf("Variables:\n")
		for _, k := range slices.Sorted(maps.Keys(s.Variables)) {
			b, _ := json.Marshal(s.Variables[k])
			ew.printf("  %s = %s\n", k, b)
		}
	}

	ew.printf("\nKnobs\n")
	var rows [][]string
	for _, k := range s.Knobs {
		rows = append(rows, []string{k.Name, string(k.Kind), k.Domain, sizeText(k.Size)})
	}
	ew.table([]string{"knob", "kind", "domain", "size"}, rows)
	if s.GridSize != nil {
		ew.printf("Grid: %d configurations before rules\n", *s.GridSize)
	} else {
		ew.printf("Grid: none, a knob is continuous\n")
	}
	if ps := s.PreScreen; ps != nil {
		ew.printf("Pre-screen: %s", ps.text())
	}
	if len(s.Rules) > 0 {
		ew.printf("\nRules\n")
		ew.table([]string{"rule", "condition", "message"}, conditionRows(s.Rules))
	}

	ew.printf("\nWorkloads\n")
	rows = nil
	for _, c := range s.Workloads {
		size := fmt.Sprintf("%d (+%d warm-up)", c.Requests, c.Warmup)
		if c.Conversations > 0 {
			size = fmt.Sprintf("%d conversations (+%d warm-up) of %s turns", c.Conversations, c.Warmup, turnsText(c.Turns))
		}
		rows = append(rows, []string{c.Name, size,
			arrivalText(c.Arrival), lengthsText(c), sloText(c.SLO)})
	}
	ew.table([]string{"workload", "requests", "arrival", "requests look like", "slo"}, rows)
	for _, n := range s.Notes {
		ew.printf("Note: %s.\n", n)
	}
	if len(s.Checks) > 0 {
		ew.printf("\nChecks\n")
		ew.table([]string{"check", "condition", "message"}, conditionRows(s.Checks))
	}
	if len(s.Quality) > 0 {
		ew.printf("\nQuality gates\n")
		rows = nil
		for _, q := range s.Quality {
			rows = append(rows, []string{q.Name, q.Scorer, q.Dataset, q.gateText()})
		}
		ew.table([]string{"gate", "scorer", "dataset", "gate"}, rows)
	}
	ew.printf("\nObjectives\n")
	rows = nil
	for _, o := range s.Objectives {
		rows = append(rows, []string{o.Name, o.Direction, o.Expression})
	}
	ew.table([]string{"objective", "direction", "expression"}, rows)
	return ew.err
}

// errWriter keeps the first write error, so rendering reads as a list of prints.
type errWriter struct {
	w   io.Writer
	err error
}

func (ew *errWriter) printf(format string, args ...any) {
	if ew.err == nil {
		_, ew.err = fmt.Fprintf(ew.w, format, args...)
	}
}

func (ew *errWriter) table(header []string, rows [][]string) {
	if ew.err != nil {
		return
	}
	t := tablewriter.NewWriter(ew.w)
	t.Header(header)
	if err := t.Bulk(rows); err != nil {
		ew.err = err
		return
	}
	ew.err = t.Render()
}

// text is the pre-screen's line and its rejections, one a line.
func (ps *PreScreen) text() string {
	var b strings.Builder
	of := fmt.Sprintf("of %d configurations", ps.Examined)
	if ps.Sampled {
		of = fmt.Sprintf("of %d configurations sampled from the grid", ps.Examined)
	}
	fmt.Fprintf(&b, "%d %s pass the rules", ps.PassRules, of)
	if ps.PassMemory != nil {
		fmt.Fprintf(&b, ", %d of them start within GPU memory (simulated)", *ps.PassMemory)
	}
	b.WriteString("\n")
	for _, k := range slices.Sorted(maps.Keys(ps.Rejected)) {
		fmt.Fprintf(&b, "  rejected by %s: %d\n", k, ps.Rejected[k])
	}
	if ps.Note != "" {
		fmt.Fprintf(&b, "  %s\n", ps.Note)
	}
	return b.String()
}

func parallelText(n int) string {
	if n == 0 {
		return "as many as free GPU slots allow"
	}
	return strconv.Itoa(n)
}

func sizeText(n *int) string {
	if n == nil {
		return "continuous"
	}
	return strconv.Itoa(*n)
}

func conditionRows(cs []Condition) [][]string {
	rows := make([][]string, 0, len(cs))
	for _, c := range cs {
		rows = append(rows, []string{c.Name, c.Condition, c.Message})
	}
	return rows
}

func arrivalText(a workload.Arrival) string {
	switch a.Kind {
	case workload.ArrivalPoisson, workload.ArrivalConstant:
		return fmt.Sprintf("%s(%g)", a.Kind, a.Rate)
	case workload.ArrivalGamma:
		return fmt.Sprintf("gamma(%g, %g)", a.Rate, a.Burstiness)
	case workload.ArrivalConcurrency:
		return fmt.Sprintf("concurrency(%d)", a.Concurrency)
	case workload.ArrivalTrace:
		return fmt.Sprintf("trace(%q)", a.TraceFile)
	default:
		return string(a.Kind) + "()"
	}
}

func distText(d workload.Dist) string {
	switch d.Kind {
	case "":
		return ""
	case workload.DistFixed:
		return fmt.Sprintf("fixed(%g)", d.A)
	default:
		return fmt.Sprintf("%s(%g, %g)", d.Kind, d.A, d.B)
	}
}

func lengthsText(c workload.Class) string {
	var parts []string
	if c.Dataset != "" {
		parts = append(parts, "dataset "+c.Dataset)
	}
	if c.InputTokens.IsSet() {
		parts = append(parts, "in "+distText(c.InputTokens))
	}
	if c.OutputTokens.IsSet() {
		parts = append(parts, "out "+distText(c.OutputTokens))
	}
	if c.PrefixTokens > 0 {
		parts = append(parts, fmt.Sprintf("shared prefix %d", c.PrefixTokens))
	}
	if c.PrefixGroups > 1 {
		parts = append(parts, fmt.Sprintf("over %d prefix groups", c.PrefixGroups))
	}
	if c.ThinkTime > 0 {
		parts = append(parts, fmt.Sprintf("think time %v", c.ThinkTime))
	}
	if c.Endpoint != "" && c.Endpoint != workload.EndpointCompletions {
		parts = append(parts, c.Endpoint+" endpoint")
	}
	return strings.Join(parts, ", ")
}

func sloText(bounds []workload.Bound) string {
	parts := make([]string, 0, len(bounds))
	for _, b := range bounds {
		op := "<="
		if b.AtLeast {
			op = ">="
		}
		val := strconv.FormatFloat(b.Value, 'f', -1, 64)
		if name, ok := strings.CutSuffix(b.Metric, "_ms"); ok {
			parts = append(parts, fmt.Sprintf("%s %s %s", name, op, time.Duration(b.Value*float64(time.Millisecond))))
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %s %s", b.Metric, op, val))
	}
	return strings.Join(parts, ", ")
}

func (q QualitySummary) gateText() string {
	var parts []string
	if q.Min != nil {
		parts = append(parts, fmt.Sprintf("score >= %g", *q.Min))
	}
	if q.MaxDrop != nil {
		parts = append(parts, fmt.Sprintf("drop <= %g vs baseline", *q.MaxDrop))
	}
	if len(q.Baseline) > 0 {
		var kv []string
		for _, k := range slices.Sorted(maps.Keys(q.Baseline)) {
			b, _ := json.Marshal(q.Baseline[k])
			kv = append(kv, fmt.Sprintf("%s=%s", k, b))
		}
		parts = append(parts, "baseline "+strings.Join(kv, " "))
	}
	return strings.Join(parts, "; ")
}

// turnsText writes a conversation's turns: "3", or the distribution they are drawn from.
func turnsText(d workload.Dist) string {
	if !d.IsSet() {
		return "1"
	}
	return distText(d)
}
