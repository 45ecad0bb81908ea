package plan

import (
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/frontier-llm/frontier/engine"
	"github.com/frontier-llm/frontier/workload"
)

// Engine kinds (package engine describes what each can do).
const (
	EngineVLLM   = engine.VLLM
	EngineSim    = engine.Sim
	EngineOllama = engine.Ollama
)

// Plan is a decoded, statically checked plan. Expressions that depend on a trial (rules,
// checks, objectives) are kept and evaluated per trial through the methods of Plan.
type Plan struct {
	// Filename is the absolute path of the plan file; Dir is its folder.
	Filename string
	Dir      string
	// Hash identifies the plan's source and resolved variables (hex sha256).
	Hash string
	// SpaceHash identifies what makes trials comparable: knobs, rules, workloads, quality
	// gates, model and engine. A study refuses to continue under a different SpaceHash.
	SpaceHash string

	Study      Study
	Model      Model
	Engine     Engine
	Hardware   Hardware
	Knobs      []Knob // in declaration order
	Rules      []Rule
	Workloads  []workload.Class // in declaration order
	Checks     []Check
	Quality    []QualityGate
	Objectives []Objective
	// Pressure is the plan's pressure block, or nil.
	Pressure *Pressure

	// Variables holds the resolved value of every variable as JSON (strings quoted), by name;
	// a variable declared sensitive shows SensitiveValue instead.
	Variables map[string]string
	// Warnings are problems that do not stop the plan from loading, each a full sentence
	// beginning with the file, line and column it concerns.
	Warnings []string
	// Notes say what frontier chose where the plan sets nothing and the choice changes what
	// is measured (a closed loop's warm-up), each a sentence naming the block it concerns.
	Notes []string

	files    map[string]*hcl.File // the parsed sources, for printing diagnostics
	warnings hcl.Diagnostics
	src      []byte               // the plan file's bytes
	vars     map[string]cty.Value // resolved variables, for expressions evaluated per trial
	// sensitive holds the values of variables declared sensitive (SensitiveValues).
	sensitive []string
}

// Study holds the settings of the study block.
type Study struct {
	Name        string
	Description string
	Trials      int
	Sampler     string // tpe | cmaes | random | grid | sobol
	Seed        int64
	Parallel    int // 0: as many as free GPU slots allow
	Confirm     int // extra measurements of each front configuration; default 1
	WarmStart   string
	// WorkloadSeed seeds the synthetic requests, apart from the sampler's Seed, so that
	// studies with different sampler seeds measure the same requests. When the plan sets
	// none it is derived from the workloads (see Plan.WorkloadSeed).
	WorkloadSeed    int64
	HasWorkloadSeed bool
	// Prior ranks configurations by the offline performance model before any is measured,
	// where the model covers them; default true.
	Prior bool
}

// Model is what the engine serves.
type Model struct {
	Name         string
	Architecture string // catalog entry
	ConfigJSON   string // absolute path of a Hugging Face config.json, or ""
	GGUF         string // absolute path of a GGUF file (Ollama), or ""
	MaxModelLen  int
}

// Engine is the engine block.
type Engine struct {
	Kind           string // vllm | sim | ollama
	Command        []string
	Args           []string
	Env            map[string]string
	StartupTimeout time.Duration
	// SecretEnv names the variables of Env (or of frontier's own environment) whose values
	// are secrets: they are passed to the engine but redacted wherever they are recorded.
	SecretEnv []string
	// Version is the vLLM release line the plan is written for (engine "vllm" only), such
	// as "0.13" or "0.22.1"; empty means the current line (vllm.Current). Knobs and args
	// are checked against that line's flags.
	Version string
	// ModelAsFlag is set for a server that takes the model as `--model MODEL` (model_arg =
	// "--model", as llm-d-inference-sim does) instead of positionally (`vllm serve MODEL`).
	ModelAsFlag bool
	// NoHostFlag is set for a server that takes no --host flag (host_flag = false); it is
	// then expected to listen on loopback by itself.
	NoHostFlag bool
	// Router is the command of the router in front of a disaggregated deployment's
	// instances (knob disaggregation "XpYd"); empty means frontier's own (`frontier router`).
	Router []string
}

// The values of engine.model_arg: how an engine's command line takes the model.
const (
	ModelPositional = "positional"
	ModelFlag       = "--model"
)

// Hardware is the hardware block.
type Hardware struct {
	GPUs            GPUSelection
	SKU             string
	PricePerGPUHour float64
	// AllowBusy lets trials use GPUs that other processes are already using.
	AllowBusy bool
}

// GPUSelection says which GPUs a study may use: all of them, a count, or explicit indices.
type GPUSelection struct {
	All     bool
	Count   int
	Indices []int
}

// KnobKind is the type of a knob's domain.
type KnobKind string

// Knob kinds.
const (
	KnobInt         KnobKind = "int"
	KnobFloat       KnobKind = "float"
	KnobCategorical KnobKind = "categorical"
)

// Value is one knob value: int64, float64, string or bool.
type Value = any

// Config is one trial's configuration: knob name to value.
type Config map[string]Value

// Knob is one searched engine option. A knob either lists Values (a choice among them, of
// any kind: int64 for an integer knob, float64, string or bool for a categorical knob) or,
// when Values is empty, is a numeric range from Min to Max, with an optional Step (both ends
// included when Max-Min is a multiple of Step) and Log scale. An integer range without a step
// has a step of 1; a float range without a step is continuous.
type Knob struct {
	Name   string
	Kind   KnobKind
	Values []Value
	Min    float64
	Max    float64
	Step   float64
	Log    bool
}

// Rule is a condition every configuration must satisfy before any GPU time is spent.
type Rule struct {
	Name      string
	Message   string
	Condition hcl.Expression
}

// Check is a condition on a trial's measurement; a trial that fails it is infeasible.
type Check struct {
	Name      string
	Message   string
	Condition hcl.Expression
}

// QualityGate is a quality block: an evaluation set, a scorer and the gate.
type QualityGate struct {
	Name     string
	Dataset  string // absolute path
	Scorer   string
	Baseline Config
	// MaxDrop is the largest allowed relative drop against the baseline; nil when unset.
	MaxDrop *float64
	// Min is the lowest allowed absolute score; nil when unset.
	Min *float64
	// JudgeModel and JudgeRubric configure the "judge" scorer; JudgeURL is the Ollama server.
	JudgeModel  string
	JudgeRubric string
	JudgeURL    string
	// Samples limits how many items are evaluated; 0 means all.
	Samples int
}

// Objective is one objective of the study.
type Objective struct {
	Name     string
	Maximize bool
	Expr     hcl.Expression
}

// TrialValues is what a trial's expressions can see: its configuration, its GPU count, its
// measurement and its quality scores.
type TrialValues struct {
	Config Config
	// GPUs is how many GPUs the trial took; 0 means the product of the configuration's
	// tensor, pipeline and data parallel sizes (Plan.GPUsFor).
	GPUs int
	// PricePerGPUHour is the trial's price per GPU hour (hardware.price_per_gpu_hour); 0 means
	// the plan's, which is useful when a knob "sku" makes the price change from trial to trial.
	PricePerGPUHour float64
	Measurement     *workload.Measurement
	Quality         map[string]float64
}
