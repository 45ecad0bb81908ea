package sim

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/frontier-llm/frontier/hw"
	"github.com/frontier-llm/frontier/workload"
)

// ValidationPoint is one published measurement of a serving engine with the conditions it
// was taken under, kept apart from the calibration cases: the model is scored on these, not
// fitted to them (only the global constants are refitted, leaving one SKU out at a time).
type ValidationPoint struct {
	ID            string
	SKU           string // catalog SKU
	Arch          string // catalog architecture
	Engine        string // "vllm"
	EngineVersion string
	// Settings are engine options by vLLM's names (tensor_parallel_size, quantization,
	// kv_cache_dtype, max_model_len, ...), as the source ran them.
	Settings map[string]any
	// Dataset is "fixed" (every request InputTokens in, OutputTokens out) or "sharegpt"
	// (log-normal lengths with those means, as calibration approximates ShareGPT).
	Dataset      string
	InputTokens  int
	OutputTokens int
	Requests     int
	// Concurrency is the closed-loop number of requests in flight; 0 sends every request at
	// once (vllm bench serve with --request-rate inf, or an offline batch).
	Concurrency int
	// Offline is true for a run without the API server (LLM.generate, benchmark_latency.py,
	// benchmark_throughput.py): the CSV's settings say frontend=offline.
	Offline bool
	Metric  string // a workload metric name
	Value   float64
	Source  string // URL
	Notes   string
}

// validationColumns are the CSV header, in order.
var validationColumns = []string{"id", "sku", "arch", "engine", "engine_version", "settings", "dataset",
	"input_tokens", "output_tokens", "requests", "concurrency", "metric", "value", "source", "notes"}

// ParseValidation reads validation points from CSV with validationColumns' header. Settings
// are "name=value" pairs separated by ";" (integers, decimals, true/false or strings).
func ParseValidation(r io.Reader) ([]ValidationPoint, error) {
	cr := csv.NewReader(r)
	cr.Comment = '#'
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("validation CSV: reading header: %w", err)
	}
	if !slices.Equal(header, validationColumns) {
		return nil, fmt.Errorf("validation CSV: header is %q, want %q", strings.Join(header, ","), strings.Join(validationColumns, ","))
	}
	var pts []ValidationPoint
	seen := map[string]bool{}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("validation CSV: %w", err)
		}
		line, _ := cr.FieldPos(0)
		p, err := parseValidationRecord(rec)
		if err != nil {
			return nil, fmt.Errorf("validation CSV line %d: %w", line, err)
		}
		if seen[p.ID] {
			return nil, fmt.Errorf("validation CSV line %d: duplicate id %q", line, p.ID)
		}
		seen[p.ID] = true
		pts = append(pts, p)
	}
	return pts, nil
}

func parseValidationRecord(rec []string) (ValidationPoint, error) {
	f := func(name string) string { return strings.TrimSpace(rec[slices.Index(validationColumns, name)]) }
	p := ValidationPoint{ID: f("id"), SKU: f("sku"), Arch: f("arch"), Engine: f("engine"),
		EngineVersion: f("engine_version"), Dataset: f("dataset"), Metric: f("metric"),
		Source: f("source"), Notes: f("notes"), Settings: map[string]any{}}
	if p.ID == "" {
		return p, fmt.Errorf("empty id")
	}
	if _, ok := hw.LookupSKU(p.SKU); !ok {
		return p, fmt.Errorf("%s: unknown sku %q", p.ID, p.SKU)
	}
	if _, ok := LookupArch(p.Arch); !ok {
		return p, fmt.Errorf("%s: unknown arch %q", p.ID, p.Arch)
	}
	if p.Dataset != "fixed" && p.Dataset != "sharegpt" {
		return p, fmt.Errorf("%s: dataset %q is neither fixed nor sharegpt", p.ID, p.Dataset)
	}
	if !workload.IsMetric(p.Metric) {
		return p, fmt.Errorf("%s: unknown metric %q", p.ID, p.Metric)
	}
	if !strings.HasPrefix(p.Source, "https://") {
		return p, fmt.Errorf("%s: source %q is not an https URL", p.ID, p.Source)
	}
	ints := []struct {
		name string
		dst  *int
		min  int
	}{{"input_tokens", &p.InputTokens, 1}, {"output_tokens", &p.OutputTokens, 1}, {"requests", &p.Requests, 1}, {"concurrency", &p.Concurrency, 0}}
	for _, c := range ints {
		v, err := strconv.Atoi(f(c.name))
		if err != nil || v < c.min {
			return p, fmt.Errorf("%s: %s %q is not an integer of at least %d", p.ID, c.name, f(c.name), c.min)
		}
		*c.dst = v
	}
	v, err := strconv.ParseFloat(f("value"), 64)
	if err != nil || v <= 0 || math.IsInf(v, 0) {
		return p, fmt.Errorf("%s: value %q is not a positive number", p.ID, f("value"))
	}
	p.Value = v
	if s := f("settings"); s != "" {
		for _, kv := range strings.Split(s, ";") {
			k, val, ok := strings.Cut(kv, "=")
			if !ok || strings.TrimSpace(k) == "" {
				return p, fmt.Errorf("%s: setting %q is not name=value", p.ID, kv)
			}
			p.Settings[strings.TrimSpace(k)] = settingValue(strings.TrimSpace(val))
		}
	}
	if fe, ok := p.Settings["frontend"]; ok {
		// Not an engine option: how the source drove the engine.
		delete(p.Settings, "frontend")
		switch fe {
		case "offline":
			p.Offline = true
		case "api":
		default:
			return p, fmt.Errorf("%s: frontend %v is neither api nor offline", p.ID, fe)
		}
	}
	if _, err := ConfigFromSettings(p.Settings, 0); err != nil {
		return p, fmt.Errorf("%s: %w", p.ID, err)
	}
	return p, nil
}

func settingValue(s string) any {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n
	}
	if x, err := strconv.ParseFloat(s, 64); err == nil {
		return x
	}
	if b, err := strconv.ParseBool(s); err == nil {
		return b
	}
	return s
}

// class is the workload the point's benchmark sent.
func (p ValidationPoint) class() workload.Class {
	c := workload.Class{Name: "validation", Requests: p.Requests,
		InputTokens:  workload.Dist{Kind: workload.DistFixed, A: float64(p.InputTokens)},
		OutputTokens: workload.Dist{Kind: workload.DistFixed, A: float64(p.OutputTokens)},
		Arrival:      workload.Arrival{Kind: workload.ArrivalImmediate}}
	if p.Dataset == "sharegpt" {
		c.InputTokens = workload.Dist{Kind: workload.DistLogNormal, A: float64(p.InputTokens), B: 0.8}
		c.OutputTokens = workload.Dist{Kind: workload.DistLogNormal, A: float64(p.OutputTokens), B: 0.8}
	}
	if p.Concurrency > 0 {
		c.Arrival = workload.Arrival{Kind: workload.ArrivalConcurrency, Concurrency: p.Concurrency}
	}
	return c
}

// ValidationRow is a point with the model's prediction.
type ValidationRow struct {
	ValidationPoint
	Predicted float64
	Error     float64 // (predicted - published) / published
}

// simKey identifies the simulation a point needs: points that report different metrics of
// one benchmark run share it.
func (p ValidationPoint) simKey() string {
	return fmt.Sprintf("%s|%s|%s|%s|%d|%d|%d|%d|%v", p.Arch, p.SKU, settingsString(p.Settings), p.Dataset,
		p.InputTokens, p.OutputTokens, p.Requests, p.Concurrency, p.Offline)
}

// moe reports whether the point's model is a mixture of experts, whose predictions depend on
// the expert-kernel share; a dense model's do not.
func (p ValidationPoint) moe() bool { return family(p.Arch) == FamilyMoE }

// simulate runs the benchmark a point was measured with under the given physics.
func (p ValidationPoint) simulate(ctx context.Context, ph physics) (*workload.Measurement, error) {
	arch, _ := LookupArch(p.Arch)
	sku, _ := hw.LookupSKU(p.SKU)
	cfg, err := ConfigFromSettings(p.Settings, 0)
	if err != nil {
		return nil, err
	}
	if p.Offline {
		ph.apiIn, ph.apiOut = 0, 0
	}
	e, err := newEngineWith(arch, sku, cfg, ph)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.ID, err)
	}
	cls := []workload.Class{p.class()}
	m, err := e.simulate(ctx, cls, [][]workload.Request{mustLoad(cls[0])})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.ID, err)
	}
	return m, nil
}

// row reads the point's metric from its simulation.
func (p ValidationPoint) row(m *workload.Measurement) (ValidationRow, error) {
	v, ok := m.Total.Metrics[p.Metric]
	if !ok || v <= 0 {
		return ValidationRow{}, fmt.Errorf("%s: the simulation gave no %s", p.ID, p.Metric)
	}
	return ValidationRow{ValidationPoint: p, Predicted: v, Error: (v - p.Value) / p.Value}, nil
}

func mustLoad(c workload.Class) []workload.Request {
	r, err := loadRequests(c, 1)
	if err != nil {
		panic(err) // a validation class is built from checked numbers
	}
	return r
}

// simJob is one simulation: a point standing for every point with its simKey, under physics.
type simJob struct {
	p  ValidationPoint
	ph physics
}

// runSims runs the simulations in parallel, one per core, longest-looking first.
func runSims(ctx context.Context, jobs []simJob) ([]*workload.Measurement, error) {
	out := make([]*workload.Measurement, len(jobs))
	errs := make([]error, len(jobs))
	order := make([]int, len(jobs))
	for i := range order {
		order[i] = i
	}
	// Big batches first, so that no long simulation starts last and runs alone.
	sort.SliceStable(order, func(a, b int) bool { return jobs[order[a]].p.Requests > jobs[order[b]].p.Requests })
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for _, i := range order {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			out[i], errs[i] = jobs[i].p.simulate(ctx, jobs[i].ph)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// uniqueSims returns, for each point, the index of its simulation among the distinct ones,
// and one point per distinct simulation.
func uniqueSims(pts []ValidationPoint) ([]int, []ValidationPoint) {
	idx := make([]int, len(pts))
	seen := map[string]int{}
	var uniq []ValidationPoint
	for i, p := range pts {
		k := p.simKey()
		j, ok := seen[k]
		if !ok {
			j = len(uniq)
			seen[k] = j
			uniq = append(uniq, p)
		}
		idx[i] = j
	}
	return idx, uniq
}

// rowsFrom reads every point's metric from the simulations.
func rowsFrom(pts []ValidationPoint, idx []int, sims []*workload.Measurement) ([]ValidationRow, error) {
	rows := make([]ValidationRow, len(pts))
	for i, p := range pts {
		r, err := p.row(sims[idx[i]])
		if err != nil {
			return nil, err
		}
		rows[i] = r
	}
	return rows, nil
}

// validateWith predicts every point under ph, simulating each distinct benchmark run once.
func validateWith(ctx context.Context, pts []ValidationPoint, ph physics) ([]ValidationRow, error) {
	idx, uniq := uniqueSims(pts)
	jobs := make([]simJob, len(uniq))
	for i, p := range uniq {
		jobs[i] = simJob{p, ph}
	}
	sims, err := runSims(ctx, jobs)
	if err != nil {
		return nil, err
	}
	return rowsFrom(pts, idx, sims)
}

// Validate predicts every point with the model as it ships.
func Validate(ctx context.Context, pts []ValidationPoint) ([]ValidationRow, error) {
	return validateWith(ctx, pts, defaultPhysics)
}

// SKUScore is how well the model predicts one SKU's points.
type SKUScore struct {
	SKU string
	// Family is FamilyDense or FamilyMoE for a score over one family's points; empty over all.
	Family      string
	Points      int
	MedianError float64 // median of |error|
	WorstError  float64 // largest |error|
	// HostOverheadMs, ShapeShare and ExpertShare (the expert GEMM share) are the global
	// constants refitted without this SKU's points (leave-one-SKU-out); zero in an in-sample
	// score.
	HostOverheadMs float64
	ShapeShare     float64
	ExpertShare    float64
}

// Grids the leave-one-SKU-out refit searches.
var (
	looHostS  = []float64{1e-3, 1.5e-3, 2e-3, 2.5e-3}
	looShape  = []float64{0.45, 0.525, 0.6, 0.675, 0.75}
	looExpert = []float64{0.25, 0.3, 0.35, 0.42, 0.5, 0.6, 0.7, 0.84, 1.0}
)

// LeaveOneSKUOut scores each SKU with the global constants (host overhead, serving-shape
// share, expert GEMM share) refitted on the other SKUs' points: the combination with the
// smallest mean over those SKUs' model families (each SKU's dense and MoE points apart) of
// their median |error|. The per-SKU numbers (hw.Achieved) are never fitted.
//
// It also returns every point as predicted with its own SKU's refitted constants.
func LeaveOneSKUOut(ctx context.Context, pts []ValidationPoint) ([]SKUScore, []ValidationRow, error) {
	g, err := refitGrid(ctx, pts)
	if err != nil {
		return nil, nil, err
	}
	loo, rows := leaveOut(pts, g, func(p ValidationPoint) string { return p.SKU })
	return loo, rows, nil
}

// LeaveOut is LeaveOneSKUOut and the same refit leaving one source out at a time, from one
// run of the grid: the SKU scores, every point predicted without its SKU, and every point
// predicted with the constants refitted without its source (the points of one URL).
func LeaveOut(ctx context.Context, pts []ValidationPoint) ([]SKUScore, []ValidationRow, []ValidationRow, error) {
	g, err := refitGrid(ctx, pts)
	if err != nil {
		return nil, nil, nil, err
	}
	loo, skuRows := leaveOut(pts, g, func(p ValidationPoint) string { return p.SKU })
	_, srcRows := leaveOut(pts, g, func(p ValidationPoint) string { return p.Source })
	return loo, skuRows, srcRows, nil
}

// gridPoint is one combination of the refitted constants with every point's prediction.
type gridPoint struct {
	ph   physics
	rows []ValidationRow
}

// refitGrid predicts every point at every combination of the refitted constants, all
// simulations in one parallel run. A dense model's prediction does not depend on the expert
// GEMM share, so its simulation is shared by the grid points that differ only in that share.
func refitGrid(ctx context.Context, pts []ValidationPoint) ([]gridPoint, error) {
	idx, uniq := uniqueSims(pts)
	var g []gridPoint
	var jobs []simJob
	jobOf := map[[2]int]int{}  // (grid point, distinct simulation) → job
	shared := map[[3]int]int{} // (host, shape, distinct dense simulation) → job
	for hi, h := range looHostS {
		for si, s := range looShape {
			for _, x := range looExpert {
				ph := defaultPhysics
				ph.hostS, ph.shape, ph.expert = h, s, x
				for u, p := range uniq {
					key := [3]int{hi, si, u}
					if j, ok := shared[key]; ok && !p.moe() {
						jobOf[[2]int{len(g), u}] = j
						continue
					}
					shared[key] = len(jobs)
					jobOf[[2]int{len(g), u}] = len(jobs)
					jobs = append(jobs, simJob{p, ph})
				}
				g = append(g, gridPoint{ph: ph})
			}
		}
	}
	sims, err := runSims(ctx, jobs)
	if err != nil {
		return nil, err
	}
	for gi := range g {
		mine := make([]*workload.Measurement, len(uniq))
		for u := range uniq {
			mine[u] = sims[jobOf[[2]int{gi, u}]]
		}
		if g[gi].rows, err = rowsFrom(pts, idx, mine); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// leaveOut refits the constants without each group of points (by SKU, by source) and predicts
// the group with them: the grid point with the smallest mean over SKUs and model families of
// the median |error| of their points outside the group, every SKU's dense points and its MoE
// points weighing the same. It returns each SKU's score
// over its points predicted so, and every point's prediction.
func leaveOut(pts []ValidationPoint, g []gridPoint, group func(ValidationPoint) string) ([]SKUScore, []ValidationRow) {
	var groups []string
	for _, p := range pts {
		if k := group(p); !slices.Contains(groups, k) {
			groups = append(groups, k)
		}
	}
	sort.Strings(groups)
	skus := validationSKUs(pts)
	// The objective's cells: each SKU's points of one model family. The refitted constants are
	// shared by both families, so a SKU with many more MoE points than dense ones would
	// otherwise let its MoE points alone choose the constants its dense points are
	// predicted with.
	type cell struct{ sku, fam string }
	cellOf := make([]cell, len(pts))
	var cells []cell
	for j, p := range pts {
		cellOf[j] = cell{p.SKU, family(p.Arch)}
		if !slices.Contains(cells, cellOf[j]) {
			cells = append(cells, cellOf[j])
		}
	}
	out := make([]ValidationRow, len(pts))
	fitted := map[string]physics{} // SKU → the constants its points were predicted with (by SKU)
	errs := make([]float64, 0, len(pts))
	for _, k := range groups {
		best, bestObj := -1, math.Inf(1)
		for i, gr := range g {
			obj, n := 0.0, 0
			for _, c := range cells {
				errs = errs[:0]
				for j, r := range gr.rows {
					if cellOf[j] == c && group(pts[j]) != k {
						errs = append(errs, math.Abs(r.Error))
					}
				}
				if len(errs) > 0 {
					obj += median(errs)
					n++
				}
			}
			if obj /= float64(max(n, 1)); obj < bestObj {
				best, bestObj = i, obj
			}
		}
		for j, r := range g[best].rows {
			if group(pts[j]) == k {
				out[j] = r
				fitted[pts[j].SKU] = g[best].ph
			}
		}
	}
	var scores []SKUScore
	for _, sku := range skus {
		sc := score(sku, out)
		ph := fitted[sku]
		sc.HostOverheadMs, sc.ShapeShare, sc.ExpertShare = ph.hostS*1e3, ph.shape, ph.expert
		scores = append(scores, sc)
	}
	return scores, out
}

// family is the catalog architecture's Family (dense when the catalog lacks it).
func family(arch string) string {
	a, _ := LookupArch(arch)
	return a.Family()
}

// FamilyScores splits each SKU's leave-one-SKU-out score by model family: the rows of that
// family on that SKU, with the constants refitted without the SKU. A family with no point
// on a SKU has no score.
func FamilyScores(loo []SKUScore, looRows []ValidationRow) []SKUScore {
	var out []SKUScore
	for _, s := range loo {
		for _, fam := range []string{FamilyDense, FamilyMoE} {
			var sub []ValidationRow
			for _, r := range looRows {
				if r.SKU == s.SKU && family(r.Arch) == fam {
					sub = append(sub, r)
				}
			}
			if len(sub) == 0 {
				continue
			}
			sc := score(s.SKU, sub)
			sc.Family = fam
			sc.HostOverheadMs, sc.ShapeShare, sc.ExpertShare = s.HostOverheadMs, s.ShapeShare, s.ExpertShare
			out = append(out, sc)
		}
	}
	return out
}

// InSample scores each SKU with the model as it ships.
func InSample(rows []ValidationRow) []SKUScore {
	var out []SKUScore
	pts := make([]ValidationPoint, len(rows))
	for i, r := range rows {
		pts[i] = r.ValidationPoint
	}
	for _, sku := range validationSKUs(pts) {
		out = append(out, score(sku, rows))
	}
	return out
}

func score(sku string, rows []ValidationRow) SKUScore {
	var errs []float64
	for _, r := range rows {
		if r.SKU == sku {
			errs = append(errs, math.Abs(r.Error))
		}
	}
	sc := SKUScore{SKU: sku, Points: len(errs), MedianError: median(errs)}
	for _, e := range errs {
		sc.WorstError = math.Max(sc.WorstError, e)
	}
	return sc
}

func validationSKUs(pts []ValidationPoint) []string {
	var s []string
	for _, p := range pts {
		if !slices.Contains(s, p.SKU) {
			s = append(s, p.SKU)
		}
	}
	sort.Strings(s)
	return s
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// ValidationMarkdown renders the leave-one-SKU-out scores, their split by model family, the
// leave-one-source-out scores by SKU and family, and every point with its prediction as
// shipped, without its SKU and without its source.
func ValidationMarkdown(loo []SKUScore, looRows, srcRows, rows []ValidationRow) string {
	var b strings.Builder
	b.WriteString("| SKU | points | median error | worst error | confidence | refitted `o` | refitted `σ` | refitted `γ_e` |\n")
	b.WriteString("|---|---:|---:|---:|---|---:|---:|---:|\n")
	for _, s := range loo {
		fmt.Fprintf(&b, "| %s | %d | %.1f%% | %.1f%% | %s | %.2f ms | %.3f | %.3f |\n", s.SKU, s.Points,
			100*s.MedianError, 100*s.WorstError, confidenceLevel(s), s.HostOverheadMs, s.ShapeShare, s.ExpertShare)
	}
	b.WriteString("\nBy model family (leave-one-SKU-out; `frontier estimate` and the report grade a model by its family's row):\n\n| SKU | family | points | median error | worst error | confidence |\n|---|---|---:|---:|---:|---|\n")
	for _, sc := range FamilyScores(loo, looRows) {
		fmt.Fprintf(&b, "| %s | %s | %d | %.1f%% | %.1f%% | %s |\n", sc.SKU, sc.Family, sc.Points, 100*sc.MedianError, 100*sc.WorstError, confidenceLevel(sc))
	}
	b.WriteString("\nLeave-one-source-out (each source's points predicted with the constants refitted without that source), by SKU and family:\n\n| SKU | family | points | median error | worst error |\n|---|---|---:|---:|---:|\n")
	for _, sc := range FamilyScores(loo, srcRows) {
		fmt.Fprintf(&b, "| %s | %s | %d | %.1f%% | %.1f%% |\n", sc.SKU, sc.Family, sc.Points, 100*sc.MedianError, 100*sc.WorstError)
	}
	b.WriteString("\n| point | SKU | model | engine | settings | workload | metric | published | predicted | error | SKU left out | source left out |\n")
	b.WriteString("|---|---|---|---|---|---|---|---:|---:|---:|---:|---:|\n")
	for i, r := range rows {
		load := fmt.Sprintf("%d × %s %d/%d", r.Requests, r.Dataset, r.InputTokens, r.OutputTokens)
		if r.Concurrency > 0 {
			load += fmt.Sprintf(", concurrency %d", r.Concurrency)
		} else {
			load += ", all at once"
		}
		if r.Offline {
			load += ", offline"
		}
		fmt.Fprintf(&b, "| [%s](%s) | %s | %s | %s %s | %s | %s | %s | %s | %s | %+.1f%% | %+.1f%% | %+.1f%% |\n", r.ID, r.Source, r.SKU, r.Arch,
			r.Engine, r.EngineVersion, settingsString(r.Settings), load, r.Metric, num(r.Value), num(r.Predicted), 100*r.Error, 100*looRows[i].Error, 100*srcRows[i].Error)
	}
	return b.String()
}

func settingsString(s map[string]any) string {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%v", k, s[k])
	}
	return strings.Join(parts, " ")
}
