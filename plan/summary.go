package plan

import (
	"encoding/json"

	"github.com/frontier-llm/frontier/redact"
	"github.com/frontier-llm/frontier/workload"
)

// Summary is what a study of a plan will search, as `frontier plan` shows it: in JSON with
// these keys (scripts rely on them) and as text with WriteText. Describe builds it; the
// pre-screen is filled in by whoever runs it (package search), since it needs the memory
// model.
type Summary struct {
	Study      StudySummary     `json:"study"`
	Model      ModelSummary     `json:"model"`
	Engine     EngineSummary    `json:"engine"`
	Hardware   HardwareSummary  `json:"hardware"`
	Variables  map[string]any   `json:"variables"`
	Knobs      []KnobSummary    `json:"knobs"`
	GridSize   *int             `json:"grid_size"`  // null when a knob is continuous
	PreScreen  *PreScreen       `json:"pre_screen"` // null when a knob is continuous
	Rules      []Condition      `json:"rules"`
	Workloads  []workload.Class `json:"workloads"`
	Checks     []Condition      `json:"checks"`
	Quality    []QualitySummary `json:"quality"`
	Objectives []ObjectiveText  `json:"objectives"`
	Warnings   []string         `json:"warnings"`
	// Notes are the plan's Notes: what frontier chose where the plan sets nothing.
	Notes     []string `json:"notes"`
	Hash      string   `json:"plan_hash"`
	SpaceHash string   `json:"space_hash"`
}

// StudySummary is the study block in a Summary.
type StudySummary struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Trials      int    `json:"trials"`
	Sampler     string `json:"sampler"`
	Seed        int64  `json:"seed"`
	Parallel    int    `json:"parallel"`
	Confirm     int    `json:"confirm"`
	WarmStart   string `json:"warm_start,omitempty"`
}

// ModelSummary is the model block in a Summary.
type ModelSummary struct {
	Name         string `json:"name"`
	Architecture string `json:"architecture,omitempty"`
	ConfigJSON   string `json:"config_json,omitempty"`
	GGUF         string `json:"gguf,omitempty"`
	MaxModelLen  int    `json:"max_model_len,omitempty"`
}

// EngineSummary is the engine block in a Summary, with secrets redacted (package redact).
type EngineSummary struct {
	Kind           string            `json:"kind"`
	Command        []string          `json:"command"`
	Args           []string          `json:"args"`
	Env            map[string]string `json:"env,omitempty"`
	SecretEnv      []string          `json:"secret_env,omitempty"`
	StartupTimeout string            `json:"startup_timeout"`
}

// HardwareSummary is the hardware block in a Summary.
type HardwareSummary struct {
	GPUs            any     `json:"gpus"` // "all", a count or a list of indices
	SKU             string  `json:"sku,omitempty"`
	PricePerGPUHour float64 `json:"price_per_gpu_hour,omitempty"`
	AllowBusy       bool    `json:"allow_busy,omitempty"`
}

// KnobSummary is one knob in a Summary: its domain as text and as data, and its size.
type KnobSummary struct {
	Name   string   `json:"name"`
	Kind   KnobKind `json:"kind"`
	Domain string   `json:"domain"`
	Values []any    `json:"values,omitempty"`
	Min    *float64 `json:"min,omitempty"`
	Max    *float64 `json:"max,omitempty"`
	Step   float64  `json:"step,omitempty"`
	Log    bool     `json:"log,omitempty"`
	Size   *int     `json:"size"` // null when continuous
}

// Condition is a rule or a check in a Summary, its condition written as in the plan.
type Condition struct {
	Name      string `json:"name"`
	Condition string `json:"condition"`
	Message   string `json:"message,omitempty"`
}

// QualitySummary is one quality block in a Summary.
type QualitySummary struct {
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

// ObjectiveText is one objective in a Summary, its expression written as in the plan.
type ObjectiveText struct {
	Name       string `json:"name"`
	Direction  string `json:"direction"` // maximize | minimize
	Expression string `json:"expression"`
}

// PreScreen is what the rules and the memory model say about the grid before any GPU time
// is spent.
type PreScreen struct {
	// Examined configurations: the whole grid, or a random sample of it when Sampled.
	Examined  int  `json:"examined"`
	Sampled   bool `json:"sampled"`
	PassRules int  `json:"pass_rules"`
	// PassMemory counts configurations that pass the rules and that the memory model says
	// start; null when it cannot tell (engine ollama, an architecture or SKU it does not know).
	PassMemory *int `json:"pass_memory"`
	// Rejected counts configurations by the first rule they break ("rule NAME") or by the
	// startup failure class.
	Rejected map[string]int `json:"rejected,omitempty"`
	// Note says why there is no memory pre-screen, when there is none.
	Note string `json:"note,omitempty"`
}

// Describe summarizes the plan for people and scripts: every block as data, expressions as
// written, secrets redacted (package redact), and empty lists as [] rather than null. Its PreScreen is nil.
func (p *Plan) Describe() Summary {
	s := Summary{
		Study: StudySummary{
			Name: p.Study.Name, Description: p.Study.Description, Trials: p.Study.Trials,
			Sampler: p.Study.Sampler, Seed: p.Study.Seed, Parallel: p.Study.Parallel,
			Confirm: p.Study.Confirm, WarmStart: p.Study.WarmStart,
		},
		Model: ModelSummary{
			Name: p.Model.Name, Architecture: p.Model.Architecture, ConfigJSON: p.Model.ConfigJSON,
			GGUF: p.Model.GGUF, MaxModelLen: p.Model.MaxModelLen,
		},
		Engine: EngineSummary{
			Kind: p.Engine.Kind, Command: nonNil(p.Engine.Command), Args: nonNil(p.Engine.Args),
			SecretEnv: p.Engine.SecretEnv, StartupTimeout: p.Engine.StartupTimeout.String(),
		},
		Hardware: HardwareSummary{
			SKU: p.Hardware.SKU, PricePerGPUHour: p.Hardware.PricePerGPUHour, AllowBusy: p.Hardware.AllowBusy,
		},
		Variables:  map[string]any{},
		Knobs:      []KnobSummary{},
		Rules:      []Condition{},
		Workloads:  nonNil(p.Workloads),
		Checks:     []Condition{},
		Quality:    []QualitySummary{},
		Objectives: []ObjectiveText{},
		Warnings:   nonNil(p.Warnings),
		Notes:      nonNil(p.Notes),
		Hash:       p.Hash,
		SpaceHash:  p.SpaceHash,
	}
	// Secrets never reach the summary: secret environment names by meaning or secret_env,
	// known secret flags, and the values of sensitive variables wherever they were used.
	s.Engine.Env = redact.Env(p.Engine.Env, p.Engine.SecretEnv)
	secrets := redact.Values(nil, p.Engine.Env, nil, p.Engine.SecretEnv, p.SensitiveValues())
	s.Engine.Args = nonNil(redact.Argv(p.Engine.Args, secrets))
	s.Engine.Command = nonNil(redact.Argv(p.Engine.Command, secrets))
	s.Model.Name = redact.Text(s.Model.Name, p.SensitiveValues())
	switch g := p.Hardware.GPUs; {
	case g.All:
		s.Hardware.GPUs = "all"
	case g.Indices != nil:
		s.Hardware.GPUs = g.Indices
	default:
		s.Hardware.GPUs = g.Count
	}
	for name, raw := range p.Variables {
		var val any
		if err := json.Unmarshal([]byte(raw), &val); err != nil {
			val = raw
		}
		s.Variables[name] = val
	}
	for _, k := range p.Knobs {
		ks := KnobSummary{Name: k.Name, Kind: k.Kind, Domain: k.DomainString(), Values: k.Values}
		if len(k.Values) == 0 {
			lo, hi := k.Min, k.Max
			ks.Min, ks.Max, ks.Step, ks.Log = &lo, &hi, k.Step, k.Log
		}
		if n, ok := k.Size(); ok {
			ks.Size = &n
		}
		s.Knobs = append(s.Knobs, ks)
	}
	if n, ok := p.GridSize(); ok {
		s.GridSize = &n
	}
	for _, r := range p.Rules {
		s.Rules = append(s.Rules, Condition{Name: r.Name, Condition: p.ExprText(r.Condition), Message: r.Message})
	}
	for _, c := range p.Checks {
		s.Checks = append(s.Checks, Condition{Name: c.Name, Condition: p.ExprText(c.Condition), Message: c.Message})
	}
	for _, q := range p.Quality {
		qs := QualitySummary{
			Name: q.Name, Dataset: q.Dataset, Scorer: q.Scorer, Min: q.Min, MaxDrop: q.MaxDrop,
			JudgeModel: q.JudgeModel, JudgeRubric: q.JudgeRubric, JudgeURL: q.JudgeURL, Samples: q.Samples,
		}
		if len(q.Baseline) > 0 {
			qs.Baseline = map[string]any(q.Baseline)
		}
		s.Quality = append(s.Quality, qs)
	}
	for _, o := range p.Objectives {
		dir := "minimize"
		if o.Maximize {
			dir = "maximize"
		}
		s.Objectives = append(s.Objectives, ObjectiveText{Name: o.Name, Direction: dir, Expression: p.ExprText(o.Expr)})
	}
	return s
}

func nonNil[T any](xs []T) []T {
	if xs == nil {
		return []T{}
	}
	return xs
}
