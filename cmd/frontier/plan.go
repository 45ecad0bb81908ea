package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter"

	"github.com/frontier-llm/frontier/hw/nvml"
	"github.com/frontier-llm/frontier/plan"
	"github.com/frontier-llm/frontier/record"
	"github.com/frontier-llm/frontier/redact"
	"github.com/frontier-llm/frontier/search"
	"github.com/frontier-llm/frontier/workload"
)

func cmdPlan(ctx context.Context, c *cli, args []string) int {
	fs := flag.NewFlagSet("frontier plan", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	var pf planFlags
	pf.register(fs)
	asJSON := fs.Bool("json", false, "print the plan as JSON")
	fs.Usage = func() {
		fmt.Fprintln(c.stderr, "usage: frontier plan PLAN [--json] [-var NAME=VALUE]... [-var-file FILE]...")
		fmt.Fprintln(c.stderr, "\nShows what a study of the plan searches: knobs, grid size, rules, workloads, gates, objectives.")
		fs.PrintDefaults()
	}
	arg, code, ok := parseOneArg(fs, args)
	if !ok {
		return code
	}
	var err error
	p, code := pf.load(c, arg)
	if p == nil {
		return code
	}
	view := newPlanView(p)
	if view.PreScreen, err = prescreen(ctx, p); err != nil {
		fmt.Fprintf(c.stderr, "frontier plan: pre-screen: %v\n", err)
		return exitInvalid
	}
	hwWarnings := hardwareWarnings(p, nvml.Detect())
	view.Warnings = append(view.Warnings, hwWarnings...)
	if *asJSON {
		enc := json.NewEncoder(c.stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		err = enc.Encode(view)
	} else {
		if err = p.WriteWarnings(c.stderr); err == nil {
			for _, w := range hwWarnings {
				fmt.Fprintf(c.stderr, "Warning: %s\n\n", w)
			}
			err = view.writeText(c.stdout)
		}
	}
	if err != nil {
		fmt.Fprintf(c.stderr, "frontier plan: %v\n", err)
		return exitRuntime
	}
	return exitOK
}

// planView is what `frontier plan` shows, in JSON and as text.
type planView struct {
	Study      planStudy        `json:"study"`
	Model      planModel        `json:"model"`
	Engine     planEngine       `json:"engine"`
	Hardware   planHardware     `json:"hardware"`
	Variables  map[string]any   `json:"variables"`
	Knobs      []planKnob       `json:"knobs"`
	GridSize   *int             `json:"grid_size"`  // null when a knob is continuous
	PreScreen  *planPrescreen   `json:"pre_screen"` // null when a knob is continuous
	Rules      []planCondition  `json:"rules"`
	Workloads  []workload.Class `json:"workloads"`
	Checks     []planCondition  `json:"checks"`
	Quality    []planQuality    `json:"quality"`
	Objectives []planObjective  `json:"objectives"`
	Warnings   []string         `json:"warnings"`
	Hash       string           `json:"plan_hash"`
	SpaceHash  string           `json:"space_hash"`
}

type planStudy struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Trials      int    `json:"trials"`
	Sampler     string `json:"sampler"`
	Seed        int64  `json:"seed"`
	Parallel    int    `json:"parallel"`
	Confirm     int    `json:"confirm"`
	WarmStart   string `json:"warm_start,omitempty"`
}

type planModel struct {
	Name         string `json:"name"`
	Architecture string `json:"architecture,omitempty"`
	ConfigJSON   string `json:"config_json,omitempty"`
	GGUF         string `json:"gguf,omitempty"`
	MaxModelLen  int    `json:"max_model_len,omitempty"`
}

type planEngine struct {
	Kind           string            `json:"kind"`
	Command        []string          `json:"command"`
	Args           []string          `json:"args"`
	Env            map[string]string `json:"env,omitempty"`
	SecretEnv      []string          `json:"secret_env,omitempty"`
	StartupTimeout string            `json:"startup_timeout"`
}

type planHardware struct {
	GPUs            any     `json:"gpus"` // "all", a count or a list of indices
	SKU             string  `json:"sku,omitempty"`
	PricePerGPUHour float64 `json:"price_per_gpu_hour,omitempty"`
	AllowBusy       bool    `json:"allow_busy,omitempty"`
}

type planKnob struct {
	Name   string        `json:"name"`
	Kind   plan.KnobKind `json:"kind"`
	Domain string        `json:"domain"`
	Values []any         `json:"values,omitempty"`
	Min    *float64      `json:"min,omitempty"`
	Max    *float64      `json:"max,omitempty"`
	Step   float64       `json:"step,omitempty"`
	Log    bool          `json:"log,omitempty"`
	Size   *int          `json:"size"` // null when continuous
}

type planCondition struct {
	Name      string `json:"name"`
	Condition string `json:"condition"`
	Message   string `json:"message,omitempty"`
}

type planQuality struct {
	Name        string         `json:"name"`
	Dataset     string         `json:"dataset"`
	Scorer      string         `json:"scorer"`
	Baseline    map[string]any `json:"baseline,omitempty"`
	Min         *float64       `json:"min,omitempty"`
	MaxDrop     *float64       `json:"max_drop,omitempty"`
	JudgeModel  string         `json:"judge_model,omitempty"`
	JudgeRubric string         `json:"judge_rubric,omitempty"`
	JudgeURL    string         `json:"judge_url,omitempty"`
	Samples     int            `json:"samples,omitempty"`
}

type planObjective struct {
	Name       string `json:"name"`
	Direction  string `json:"direction"` // maximize | minimize
	Expression string `json:"expression"`
}

func newPlanView(p *plan.Plan) planView {
	v := planView{
		Study: planStudy{
			Name: p.Study.Name, Description: p.Study.Description, Trials: p.Study.Trials,
			Sampler: p.Study.Sampler, Seed: p.Study.Seed, Parallel: p.Study.Parallel,
			Confirm: p.Study.Confirm, WarmStart: p.Study.WarmStart,
		},
		Model: planModel{
			Name: p.Model.Name, Architecture: p.Model.Architecture, ConfigJSON: p.Model.ConfigJSON,
			GGUF: p.Model.GGUF, MaxModelLen: p.Model.MaxModelLen,
		},
		Engine: planEngine{
			Kind: p.Engine.Kind, Command: nonNil(p.Engine.Command), Args: nonNil(p.Engine.Args),
			SecretEnv: p.Engine.SecretEnv, StartupTimeout: p.Engine.StartupTimeout.String(),
		},
		Hardware: planHardware{
			SKU: p.Hardware.SKU, PricePerGPUHour: p.Hardware.PricePerGPUHour, AllowBusy: p.Hardware.AllowBusy,
		},
		Variables:  map[string]any{},
		Knobs:      []planKnob{},
		Rules:      []planCondition{},
		Workloads:  nonNil(p.Workloads),
		Checks:     []planCondition{},
		Quality:    []planQuality{},
		Objectives: []planObjective{},
		Warnings:   nonNil(p.Warnings),
		Hash:       p.Hash,
		SpaceHash:  p.SpaceHash,
	}
	// Secrets never reach the printout: secret environment names by meaning or secret_env,
	// known secret flags, and the values of sensitive variables wherever they were used.
	v.Engine.Env = redact.Env(p.Engine.Env, p.Engine.SecretEnv)
	secrets := redact.Values(nil, p.Engine.Env, nil, p.Engine.SecretEnv, p.SensitiveValues())
	v.Engine.Args = nonNil(redact.Argv(p.Engine.Args, secrets))
	v.Engine.Command = nonNil(redact.Argv(p.Engine.Command, secrets))
	v.Model.Name = redact.Text(v.Model.Name, p.SensitiveValues())
	switch g := p.Hardware.GPUs; {
	case g.All:
		v.Hardware.GPUs = "all"
	case g.Indices != nil:
		v.Hardware.GPUs = g.Indices
	default:
		v.Hardware.GPUs = g.Count
	}
	for name, raw := range p.Variables {
		var val any
		if err := json.Unmarshal([]byte(raw), &val); err != nil {
			val = raw
		}
		v.Variables[name] = val
	}
	for _, k := range p.Knobs {
		pk := planKnob{Name: k.Name, Kind: k.Kind, Domain: k.DomainString(), Values: k.Values}
		if len(k.Values) == 0 {
			lo, hi := k.Min, k.Max
			pk.Min, pk.Max, pk.Step, pk.Log = &lo, &hi, k.Step, k.Log
		}
		if n, ok := k.Size(); ok {
			pk.Size = &n
		}
		v.Knobs = append(v.Knobs, pk)
	}
	if n, ok := p.GridSize(); ok {
		v.GridSize = &n
	}
	for _, r := range p.Rules {
		v.Rules = append(v.Rules, planCondition{Name: r.Name, Condition: p.ExprText(r.Condition), Message: r.Message})
	}
	for _, c := range p.Checks {
		v.Checks = append(v.Checks, planCondition{Name: c.Name, Condition: p.ExprText(c.Condition), Message: c.Message})
	}
	for _, q := range p.Quality {
		pq := planQuality{
			Name: q.Name, Dataset: q.Dataset, Scorer: q.Scorer, Min: q.Min, MaxDrop: q.MaxDrop,
			JudgeModel: q.JudgeModel, JudgeRubric: q.JudgeRubric, JudgeURL: q.JudgeURL, Samples: q.Samples,
		}
		if len(q.Baseline) > 0 {
			pq.Baseline = map[string]any(q.Baseline)
		}
		v.Quality = append(v.Quality, pq)
	}
	for _, o := range p.Objectives {
		dir := "minimize"
		if o.Maximize {
			dir = "maximize"
		}
		v.Objectives = append(v.Objectives, planObjective{Name: o.Name, Direction: dir, Expression: p.ExprText(o.Expr)})
	}
	return v
}

func nonNil[T any](xs []T) []T {
	if xs == nil {
		return []T{}
	}
	return xs
}

// writeText renders the plan for a person.
func (v planView) writeText(w io.Writer) error {
	ew := &errWriter{w: w}
	s := v.Study
	ew.printf("Study %s", s.Name)
	if s.Description != "" {
		ew.printf(": %s", s.Description)
	}
	ew.printf("\n  %d trials, sampler %s, seed %d, parallel %s, confirm %d\n", s.Trials, s.Sampler, s.Seed, parallelText(s.Parallel), s.Confirm)
	if s.WarmStart != "" {
		ew.printf("  warm start from %s\n", s.WarmStart)
	}
	m := v.Model
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
	e := v.Engine
	cmd := strings.Join(append(append([]string{}, e.Command...), e.Args...), " ")
	if len(e.Command) == 0 {
		cmd = strings.TrimSpace("frontier sim serve " + strings.Join(e.Args, " "))
	}
	ew.printf("\nEngine %s: %s (startup timeout %s)\n", e.Kind, cmd, e.StartupTimeout)
	for _, k := range keysInOrder(e.Env) {
		ew.printf("  env %s=%s\n", k, e.Env[k])
	}
	h := v.Hardware
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
	if len(v.Variables) > 0 {
		ew.printf("Variables:\n")
		for _, k := range keysInOrder(v.Variables) {
			b, _ := json.Marshal(v.Variables[k])
			ew.printf("  %s = %s\n", k, b)
		}
	}

	ew.printf("\nKnobs\n")
	var rows [][]string
	for _, k := range v.Knobs {
		rows = append(rows, []string{k.Name, string(k.Kind), k.Domain, sizeText(k.Size)})
	}
	ew.table([]string{"knob", "kind", "domain", "size"}, rows)
	if v.GridSize != nil {
		ew.printf("Grid: %d configurations before rules\n", *v.GridSize)
	} else {
		ew.printf("Grid: none, a knob is continuous\n")
	}
	if ps := v.PreScreen; ps != nil {
		ew.printf("Pre-screen: %s", prescreenText(ps))
	}
	if len(v.Rules) > 0 {
		ew.printf("\nRules\n")
		ew.table([]string{"rule", "condition", "message"}, conditionRows(v.Rules))
	}

	ew.printf("\nWorkloads\n")
	rows = nil
	for _, c := range v.Workloads {
		rows = append(rows, []string{c.Name, fmt.Sprintf("%d (+%d warm-up)", c.Requests, c.Warmup),
			arrivalText(c.Arrival), lengthsText(c), sloText(c.SLO)})
	}
	ew.table([]string{"workload", "requests", "arrival", "requests look like", "slo"}, rows)
	if len(v.Checks) > 0 {
		ew.printf("\nChecks\n")
		ew.table([]string{"check", "condition", "message"}, conditionRows(v.Checks))
	}
	if len(v.Quality) > 0 {
		ew.printf("\nQuality gates\n")
		rows = nil
		for _, q := range v.Quality {
			rows = append(rows, []string{q.Name, q.Scorer, q.Dataset, gateText(q)})
		}
		ew.table([]string{"gate", "scorer", "dataset", "gate"}, rows)
	}
	ew.printf("\nObjectives\n")
	rows = nil
	for _, o := range v.Objectives {
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

func prescreenText(ps *planPrescreen) string {
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
	for _, k := range keysInOrder(ps.Rejected) {
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

func conditionRows(cs []planCondition) [][]string {
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

func gateText(q planQuality) string {
	var parts []string
	if q.Min != nil {
		parts = append(parts, fmt.Sprintf("score >= %g", *q.Min))
	}
	if q.MaxDrop != nil {
		parts = append(parts, fmt.Sprintf("drop <= %g vs baseline", *q.MaxDrop))
	}
	if len(q.Baseline) > 0 {
		var kv []string
		for _, k := range keysInOrder(q.Baseline) {
			b, _ := json.Marshal(q.Baseline[k])
			kv = append(kv, fmt.Sprintf("%s=%s", k, b))
		}
		parts = append(parts, "baseline "+strings.Join(kv, " "))
	}
	return strings.Join(parts, "; ")
}

func keysInOrder[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// prescreenSample is how many configurations the pre-screen examines at most; larger grids
// are sampled at random, with a fixed seed.
const prescreenSample = 20000

// planPrescreen is what the rules and the memory model say about the grid before any GPU time
// is spent.
type planPrescreen struct {
	// Examined configurations: the whole grid, or a random sample of it when Sampled.
	Examined  int  `json:"examined"`
	Sampled   bool `json:"sampled"`
	PassRules int  `json:"pass_rules"`
	// PassMemory counts configurations that pass the rules and that the memory model says
	// start; null when it cannot tell (engine ollama, an architecture or SKU it does not know).
	PassMemory *int `json:"pass_memory"`
	// Rejected counts configurations by the first rule they break or the startup failure class.
	Rejected map[string]int `json:"rejected,omitempty"`
	Note     string         `json:"note,omitempty"`
}

// prescreen runs the rules and, for vLLM and the simulator, the memory model over the grid (or
// an even sample of it).
func prescreen(ctx context.Context, p *plan.Plan) (*planPrescreen, error) {
	n, ok := p.GridSize()
	if !ok {
		return nil, nil
	}
	ps := &planPrescreen{Rejected: map[string]int{}}
	examine := n
	var rng *rand.Rand
	if n > prescreenSample {
		// Strides over a mixed-radix grid alias with the knobs' sizes; random indices do not.
		examine, ps.Sampled = prescreenSample, true
		rng = rand.New(rand.NewPCG(uint64(p.Study.Seed), 0x9e3779b97f4a7c15))
	}
	as, err := search.NewAssessor(p)
	if err != nil {
		ps.Note = fmt.Sprintf("no memory pre-screen: %v", err)
		as = nil
	}
	memory := as != nil && as.NoModel() == ""
	if as != nil && !memory && p.Engine.Kind != plan.EngineOllama {
		ps.Note = "no memory pre-screen: " + as.NoModel()
	}
	passMemory := 0
	for i := range examine {
		if rng != nil {
			i = rng.IntN(n)
		}
		cfg, err := p.GridAt(i)
		if err != nil {
			return nil, err
		}
		ps.Examined++
		var a *search.Assessment
		if as != nil {
			if a, err = as.Assess(ctx, cfg, search.ThroughMemory); err != nil {
				return nil, err
			}
		} else if violations, err := p.CheckRules(cfg); err != nil {
			return nil, err
		} else if len(violations) > 0 {
			ps.Rejected["rule "+violations[0].Rule]++
			continue
		}
		switch {
		case a == nil:
			ps.PassRules++
		case a.Rejected() && a.Trial.Violations[0].Kind == record.ViolationRule:
			ps.Rejected["rule "+a.Trial.Violations[0].Metric]++
		case !memory:
			ps.PassRules++
		case !a.Covered:
			ps.PassRules++
			memory, ps.Note = false, "no memory pre-screen: "+a.Note
		case a.Trial.FailureClass != "":
			ps.PassRules++
			ps.Rejected[string(a.Trial.FailureClass)]++
		default:
			ps.PassRules++
			passMemory++
		}
	}
	if memory {
		ps.PassMemory = &passMemory
	}
	return ps, nil
}
