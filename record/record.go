package record

import (
	"fmt"
	"time"

	"github.com/frontier-llm/frontier/workload"
)

// State is a trial's state, as stored and reported.
type State string

// Trial states.
const (
	StateComplete    State = "complete"    // measured, every SLO, check and gate met
	StateInfeasible  State = "infeasible"  // measured or rejected, but an SLO, check, gate or launch failed
	StatePruned      State = "pruned"      // stopped early: an SLO was already missed beyond recovery
	StateFailed      State = "failed"      // frontier itself failed to run the trial
	StateInterrupted State = "interrupted" // stopped by SIGINT/SIGTERM; the next apply runs it again
	StateRunning     State = "running"
	StateWaiting     State = "waiting" // queued (a warm start's configurations), not yet measured
)

// States lists the states in the order reports list them.
func States() []State {
	return []State{StateComplete, StateInfeasible, StatePruned, StateFailed, StateInterrupted, StateRunning, StateWaiting}
}

// FailureClass classifies why an engine did not start or died.
type FailureClass string

// Failure classes. The engines' own messages are kept beside the class.
const (
	FailWeightsOOM      FailureClass = "weights_oom"        // the weights do not fit
	FailKVCacheTooSmall FailureClass = "kv_cache_too_small" // one max_model_len request does not fit
	FailInvalidArgs     FailureClass = "invalid_args"       // an invalid combination of flags
	FailUnsupported     FailureClass = "unsupported"        // quantisation or GPU not supported
	FailCrash           FailureClass = "crash"              // exited unexpectedly
	FailStartupTimeout  FailureClass = "startup_timeout"    // not ready within startup_timeout
	FailPortTaken       FailureClass = "port_taken"         // the port was in use
	FailOOM             FailureClass = "oom"                // out of memory while serving
	FailGPUBusy         FailureClass = "gpu_busy"           // the GPUs were held by another process
	FailOther           FailureClass = "other"
	FailUnknown         FailureClass = "unknown" // the log holds no message frontier knows
)

// Capacity is what the engine reported about its KV cache at startup.
type Capacity struct {
	KVCacheTokens  int     `json:"kv_cache_tokens,omitempty"`
	MaxConcurrency float64 `json:"max_concurrency,omitempty"`
}

// Launch records exactly what was launched, with secrets redacted.
type Launch struct {
	Engine        string            `json:"engine"`
	EngineVersion string            `json:"engine_version,omitempty"`
	Command       []string          `json:"command"`
	Env           map[string]string `json:"env,omitempty"`
	GPUNames      []string          `json:"gpu_names,omitempty"`
	GPUUUIDs      []string          `json:"gpu_uuids,omitempty"`
	Driver        string            `json:"driver,omitempty"`
	Host          string            `json:"host"`
	// Role is the process's part in a prefill/decode disaggregated deployment ("prefill",
	// "decode" or "router") and Index its number within the role; empty for a single engine.
	Role  string `json:"role,omitempty"`
	Index int    `json:"index,omitempty"`
	// Capacity is what an instance of a deployment reported about itself.
	Capacity *Capacity `json:"capacity,omitempty"`
	// Instances are a disaggregated deployment's engine instances, prefill first, each with
	// its Role; the Launch that holds them is the router's.
	Instances []Launch `json:"instances,omitempty"`
}

// QualityScore is one quality gate's outcome for a trial.
type QualityScore struct {
	Score     float64   `json:"score"`
	Baseline  float64   `json:"baseline"`
	Passed    bool      `json:"passed"`
	Reason    string    `json:"reason,omitempty"`
	Items     []float64 `json:"items,omitempty"` // per-item scores
	Simulated bool      `json:"simulated,omitempty"`
	// Examples are a few of the gate's items (the lowest-scoring first), with the model's
	// output, for the report to show.
	Examples []QualityExample `json:"examples,omitempty"`
}

// QualityExample is one evaluation item of a quality gate: what was asked, what was expected
// and what the model answered under the trial's configuration and under the gate's baseline
// configuration. Texts are cut to MaxExampleChars characters.
type QualityExample struct {
	// ID is the item's id in the evaluation set.
	ID        string  `json:"id,omitempty"`
	Input     string  `json:"input"`
	Reference string  `json:"reference,omitempty"`
	Output    string  `json:"output"`
	Score     float64 `json:"score"`
	// BaselineOutput is the baseline configuration's answer to the same item, when the gate
	// has a baseline.
	BaselineOutput string `json:"baseline_output,omitempty"`
}

// MaxExamples is how many examples a quality gate's score keeps, and MaxExampleChars how
// many characters of each text.
const (
	MaxExamples     = 3
	MaxExampleChars = 400
)

// Provenance is where and how a trial was measured.
type Provenance struct {
	// FrontierVersion is the release of frontier that measured the trial (Release): the
	// version and the build's VCS revision, e.g. "0.1.0+ae3aa08e1f2b".
	FrontierVersion string `json:"frontier_version"`
	// SimModel is, for a simulated trial, the version of the performance and answer models
	// whose numbers it holds (sim.ModelVersion); empty for a trial measured on an engine.
	SimModel     string    `json:"sim_model,omitempty"`
	Launch       Launch    `json:"launch"`
	Model        string    `json:"model"`
	ModelHash    string    `json:"model_hash,omitempty"`
	PlanHash     string    `json:"plan_hash"`
	WorkloadSeed int64     `json:"workload_seed"`
	Started      time.Time `json:"started"`
	Finished     time.Time `json:"finished"`
}

// Trial is everything recorded about one trial; the JSON of `frontier report --format json`
// lists these.
type Trial struct {
	Number    int                         `json:"number"`
	State     State                       `json:"state"`
	Config    map[string]any              `json:"config"`
	Workloads map[string]*workload.Result `json:"workloads,omitempty"`
	Total     *workload.Result            `json:"total,omitempty"`
	Series    []workload.Sample           `json:"series,omitempty"`
	// StartupWave is the part of the time to first token that came from the requests sent
	// at the start of a closed-loop or all-at-once class; absent when none starts that way.
	StartupWave *workload.StartupWave   `json:"startup_wave,omitempty"`
	Quality     map[string]QualityScore `json:"quality,omitempty"`
	Objectives  map[string]float64      `json:"objectives,omitempty"`
	Pareto      bool                    `json:"pareto"`
	// Reason says in words why the trial is not complete; Violations say it as data.
	Reason     string      `json:"reason,omitempty"`
	Violations []Violation `json:"violations,omitempty"`
	// FailureClass is the launcher's class when the engine failed to start or crashed.
	FailureClass FailureClass `json:"failure_class,omitempty"`
	// EngineMessage is the engine's own message for a failure.
	EngineMessage string               `json:"engine_message,omitempty"`
	Capacity      Capacity             `json:"capacity,omitempty"`
	Simulated     bool                 `json:"simulated"`
	Confirmations []map[string]float64 `json:"confirmations,omitempty"` // objectives of repeat runs
	// GPUSeconds is the trial's time from launch to stop times its GPUs; for a trial whose
	// engine ran with no GPU (CPUOnly), the engine's time from launch to stop.
	GPUSeconds float64 `json:"gpu_seconds"`
	// CPUOnly is true when the engine ran on the CPU, with no GPU (Ollama with gpus = 0):
	// GPUSeconds, ConfirmGPUSeconds and SavedGPUSeconds are then seconds of engine time.
	CPUOnly bool `json:"cpu_only,omitempty"`
	// SavedGPUSeconds estimates the GPU time early stopping or the pre-screen saved.
	SavedGPUSeconds float64     `json:"saved_gpu_seconds,omitempty"`
	Provenance      *Provenance `json:"provenance,omitempty"`
	// GPUs is how many GPUs the trial used (tensor x pipeline parallel); 0 when unknown.
	GPUs int `json:"gpus,omitempty"`
	// Violation measures how far an infeasible trial missed (0 to 1, 1 when it did not run);
	// the search uses it to rank infeasible trials among themselves.
	Violation float64 `json:"violation,omitempty"`
	// PreScreened is true when the simulator's memory model rejected the configuration before
	// any GPU time was spent.
	PreScreened bool `json:"prescreened,omitempty"`
	// OutsideBudget is true for a configuration rejected before it was claimed: it cost no
	// GPU time and does not count against the study's budget.
	OutsideBudget bool `json:"outside_budget,omitempty"`
	// WarmStart names the storage of the earlier study this configuration came from.
	WarmStart string `json:"warm_start,omitempty"`
	// ConfirmGPUSeconds is the GPU time spent on confirmation runs of this configuration.
	ConfirmGPUSeconds float64 `json:"confirm_gpu_seconds,omitempty"`
	// ConfirmFailed is true when a confirmation run missed an SLO, check or gate: the trial
	// is then infeasible and Reason names the run and the bound.
	ConfirmFailed bool `json:"confirm_failed,omitempty"`
	// Spread is, per objective, the relative spread (max-min over mean) of the first run and
	// its confirmations; set on front trials that were confirmed.
	Spread map[string]float64 `json:"spread,omitempty"`
	// ObjectiveCI is, per objective, the sampling interval [low, high] of the first run's
	// value: the objective evaluated with each percentile and mean it reads at the ends of
	// that statistic's 95% interval over the run's requests (workload.Result.CI); absent for
	// objectives that read no such statistic. ConfirmationCI is the same for each
	// confirmation run, in the order of Confirmations.
	ObjectiveCI    map[string][2]float64   `json:"objective_ci,omitempty"`
	ConfirmationCI []map[string][2]float64 `json:"confirmation_ci,omitempty"`
	// Uncertainty is, per objective, the mean over the trial's runs and its 95% range
	// (Study.Estimates); set on complete trials when the study is loaded.
	Uncertainty map[string]Estimate `json:"uncertainty,omitempty"`
	// Confirmed is true when the configuration was measured again as often as the study
	// asks (Study.IsConfirmed); set on complete trials when the study is loaded.
	Confirmed bool `json:"confirmed,omitempty"`
	// Predicted is the performance model's prediction of the trial, made when the sampler's
	// prior covered its configuration; absent otherwise (prior = false, a model that does not
	// cover the plan).
	Predicted *Prediction `json:"predicted,omitempty"`
}

// Objective describes one objective of a study.
type Objective struct {
	Name     string `json:"name"`
	Maximize bool   `json:"maximize"`
}

// Study is a whole study as stored: what `frontier report` reads.
type Study struct {
	Study           string      `json:"study"`
	Description     string      `json:"description,omitempty"`
	Engine          string      `json:"engine"`
	Model           string      `json:"model"`
	SKU             string      `json:"sku,omitempty"`
	PricePerGPUHour float64     `json:"price_per_gpu_hour,omitempty"`
	PlanHash        string      `json:"plan_hash"`
	SpaceHash       string      `json:"space_hash"`
	Objectives      []Objective `json:"objectives"`
	// Knobs lists the knob names in declaration order.
	Knobs []string `json:"knobs"`
	// SLOs lists each workload class's SLO bounds.
	SLOs   map[string][]workload.Bound `json:"slos,omitempty"`
	Trials []Trial                     `json:"trials"`
	Front  []int                       `json:"front"` // trial numbers on the Pareto front
	Budget int                         `json:"budget"`
	// MaxModelLen is the plan's model.max_model_len; 0 when unset.
	MaxModelLen int `json:"max_model_len,omitempty"`
	// EngineArgs are the plan's extra engine arguments (engine.args), which every trial got.
	EngineArgs []string `json:"engine_args,omitempty"`
	// EngineEnv is the plan's engine environment (engine.env), with the values of
	// secret-looking names redacted.
	EngineEnv map[string]string `json:"engine_env,omitempty"`
	// SecretEnv names the environment variables the engine reads from frontier's own
	// environment (engine.secret_env); their values are never stored.
	SecretEnv []string `json:"secret_env,omitempty"`
	// Sampler and Seed are the study's search settings.
	Sampler string `json:"sampler,omitempty"`
	Seed    int64  `json:"seed,omitempty"`
	// Confirm is how many confirmation runs each front configuration gets.
	Confirm int `json:"confirm,omitempty"`
	// Simulated is true when the study ran on the offline estimator (apply --estimate).
	Simulated bool `json:"simulated,omitempty"`
	// Release is the release of frontier that last ran the study (Release), and SimModel,
	// for a simulated study, the version of the performance model its trials were measured
	// with (sim.ModelVersion): a study is not resumed with another model's numbers.
	Release  string `json:"release,omitempty"`
	SimModel string `json:"sim_model,omitempty"`
	// ModelConfidence is, for a simulated study, how sure the performance model is about
	// each GPU SKU the study ran on (the plan's and the sku knob's).
	ModelConfidence []ModelConfidence `json:"model_confidence,omitempty"`
	// Pressure holds the pressure experiments run on the study's configurations.
	Pressure []Pressure `json:"pressure,omitempty"`
}

// ModelConfidence is how sure frontier's performance model is about one GPU SKU: its error
// on published vLLM measurements, scored leaving the SKU out of the refit of the model's
// global constants (docs/sim.md, "Validation").
type ModelConfidence struct {
	SKU string `json:"sku"`
	// Family is "dense" or "MoE" when the score is over that model family's measurements
	// on the SKU (the family of the study's model); empty when over every measurement.
	Family      string  `json:"family,omitempty"`
	Points      int     `json:"points"`
	MedianError float64 `json:"median_error"`
	WorstError  float64 `json:"worst_error"`
	// Level is "good" (median error at most 15%), "fair" (at most 30%), "poor", or
	// "unvalidated" when no published measurement of the SKU (of the family, when Family is
	// set) was scored.
	Level string `json:"level"`
}

// Subject names what the score is over: "<sku>", or "<sku> for dense models" or "<sku> for
// mixtures of experts" when it is over one family.
func (c ModelConfidence) Subject() string {
	switch c.Family {
	case "dense":
		return c.SKU + " for dense models"
	case "MoE":
		return c.SKU + " for mixtures of experts"
	}
	return c.SKU
}

// Summary is the grade with the numbers it rests on, e.g. "poor (median error 32.9%,
// worst 207%, on 69 published vLLM measurements)".
func (c ModelConfidence) Summary() string {
	if c.Level == "unvalidated" || c.Points == 0 {
		if c.Family != "" {
			return "unvalidated (no published measurement of a model of this family on this GPU was scored)"
		}
		return "unvalidated (no published measurement of this GPU was scored)"
	}
	return fmt.Sprintf("%s (median error %.1f%%, worst %.0f%%, on %d published vLLM measurements)",
		c.Level, 100*c.MedianError, 100*c.WorstError, c.Points)
}

// Trial returns the trial numbered n, or nil.
func (s *Study) Trial(n int) *Trial {
	for i := range s.Trials {
		if s.Trials[i].Number == n {
			return &s.Trials[i]
		}
	}
	return nil
}

// Maximize says, per objective, whether it is maximised.
func (s *Study) Maximize() []bool {
	out := make([]bool, len(s.Objectives))
	for i, o := range s.Objectives {
		out[i] = o.Maximize
	}
	return out
}

// Truncate cuts s to n characters, marking the cut with an ellipsis: how texts kept in a
// record (reasons, examples) are bounded.
func Truncate(s string, n int) string {
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}
