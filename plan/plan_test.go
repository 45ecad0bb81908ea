package plan

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/frontier-llm/frontier/workload"
)

// minimal is a plan with one knob, one workload and one objective; %s marks where a test adds
// blocks.
const minimal = `
model {
  name = "m"
}
engine "vllm" {}
knob "max_num_seqs" { values = [8, 16, 32] }
workload "chat" {
  requests      = 10
  input_tokens  = fixed(100)
  output_tokens = fixed(10)
  arrival       = poisson(1)
}
objective "throughput" {
  maximize = metric.total.output_token_throughput
}
`

// anyKnobs makes a plan's engine Ollama, whose options frontier does not check, for tests of
// the search space alone with knobs of any name.
func anyKnobs(src string) string {
	return strings.Replace(src, `engine "vllm" {}`, `engine "ollama" {}`, 1)
}

// loadString writes src to plan.hcl in a fresh folder and loads it.
func loadString(t *testing.T, src string, opts LoadOptions) (*Plan, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plan.hcl")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return Load(path, opts)
}

func mustLoad(t *testing.T, src string, opts LoadOptions) *Plan {
	t.Helper()
	p, err := loadString(t, src, opts)
	if err != nil {
		var de *DiagnosticsError
		if errors.As(err, &de) {
			var buf bytes.Buffer
			_ = de.Write(&buf)
			t.Fatalf("Load:\n%s", buf.String())
		}
		t.Fatalf("Load: %v", err)
	}
	return p
}

// summaries returns the summaries of a load error's diagnostics.
func summaries(t *testing.T, err error) []string {
	t.Helper()
	var de *DiagnosticsError
	if !errors.As(err, &de) {
		t.Fatalf("error %v is not a *DiagnosticsError", err)
	}
	var out []string
	for _, d := range de.Diagnostics {
		out = append(out, d.Summary)
	}
	return out
}

func TestSLOKeysBecomeBounds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		slo  string
		want []workload.Bound
	}{
		{"latency with a duration", `ttft_p99 = "600ms"`, []workload.Bound{{Metric: "ttft_p99_ms", Value: 600}}},
		{"seconds become milliseconds", `e2e_p95 = "1.5s"`, []workload.Bound{{Metric: "e2e_p95_ms", Value: 1500}}},
		{"inter-token latency", `itl_p50 = "20ms"`, []workload.Bound{{Metric: "itl_p50_ms", Value: 20}}},
		{"metric name with a number", `error_rate = 0.01`, []workload.Bound{{Metric: "error_rate", Value: 0.01}}},
		{"metric name in ms with a number", `tpot_p99_ms = 40`, []workload.Bound{{Metric: "tpot_p99_ms", Value: 40}}},
		{"lower bound", `min_output_token_throughput = 1000`, []workload.Bound{{Metric: "output_token_throughput", Value: 1000, AtLeast: true}}},
		{"in source order", "tpot_p99 = \"40ms\"\n ttft_p99 = \"1s\"", []workload.Bound{{Metric: "tpot_p99_ms", Value: 40}, {Metric: "ttft_p99_ms", Value: 1000}}},
		{"number from a string variable", `min_goodput = "2.5"`, []workload.Bound{{Metric: "goodput", Value: 2.5, AtLeast: true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := strings.Replace(minimal, "arrival       = poisson(1)", "arrival = poisson(1)\n slo {\n"+tt.slo+"\n}", 1)
			p := mustLoad(t, src, LoadOptions{})
			if diff := cmp.Diff(tt.want, p.Workloads[0].SLO); diff != "" {
				t.Errorf("SLO (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSLOKeysThatAreNotMetricsAreRefused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, slo, want string
	}{
		{"unknown key", `p99 = "1s"`, "Unknown SLO"},
		{"lower bound of an unknown metric", `min_speed = 3`, "Unknown SLO"},
		{"latency without a unit", `ttft_p99 = "600"`, "Invalid duration"},
		{"negative latency", `ttft_p99 = "-1s"`, "Invalid duration"},
		{"number for a latency key", `ttft_p99 = 600`, "Invalid duration"},
		{"string for a metric", `error_rate = "low"`, "Wrong type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := strings.Replace(minimal, "arrival       = poisson(1)", "arrival = poisson(1)\n slo {\n"+tt.slo+"\n}", 1)
			_, err := loadString(t, src, LoadOptions{})
			if diff := cmp.Diff([]string{tt.want}, summaries(t, err)); diff != "" {
				t.Errorf("diagnostics (-want +got):\n%s", diff)
			}
		})
	}
}

func TestKnobDomains(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		knob     string // a flag that takes the domain's values; "" is max_num_seqs
		body     string
		kind     KnobKind
		points   []Value // nil: continuous
		contains []Value
		excludes []Value
	}{
		{
			name: "integer range", body: "min = 1\nmax = 4",
			kind: KnobInt, points: []Value{int64(1), int64(2), int64(3), int64(4)},
			contains: []Value{int64(2), 3, 4.0}, excludes: []Value{int64(0), 2.5, int64(5), "2"},
		},
		{
			name: "integer log range", body: "min = 16\nmax = 20\nlog = true",
			kind: KnobInt, points: []Value{int64(16), int64(17), int64(18), int64(19), int64(20)},
			contains: []Value{int64(16)}, excludes: []Value{int64(15)},
		},
		{
			name: "integer step includes both ends", body: "min = 16\nmax = 64\nstep = 16",
			kind: KnobInt, points: []Value{int64(16), int64(32), int64(48), int64(64)},
			contains: []Value{int64(48)}, excludes: []Value{int64(40)},
		},
		{
			name: "float step", knob: "gpu_memory_utilization", body: "min = 0.8\nmax = 0.95\nstep = 0.05",
			kind: KnobFloat, points: []Value{0.8, 0.85, 0.9, 0.95},
			contains: []Value{0.85, 0.9}, excludes: []Value{0.87, 1.0},
		},
		{
			name: "float type with whole bounds", knob: "cpu_offload_gb", body: "type = \"float\"\nmin = 1\nmax = 2\nstep = 0.5",
			kind: KnobFloat, points: []Value{1.0, 1.5, 2.0},
		},
		{
			name: "continuous float", knob: "gpu_memory_utilization", body: "min = 0.5\nmax = 0.9",
			kind: KnobFloat, contains: []Value{0.7}, excludes: []Value{0.95},
		},
		{
			name: "integer values", body: "values = [2048, 4096]",
			kind: KnobInt, points: []Value{int64(2048), int64(4096)},
			contains: []Value{int64(4096), 2048.0}, excludes: []Value{int64(1024), "2048"},
		},
		{
			name: "float values", knob: "gpu_memory_utilization", body: "values = [0.9, 1]",
			kind: KnobFloat, points: []Value{0.9, 1.0}, contains: []Value{int64(1)},
		},
		{
			name: "strings", knob: "kv_cache_dtype", body: `values = ["auto", "fp8"]`,
			kind: KnobCategorical, points: []Value{"auto", "fp8"},
			contains: []Value{"fp8"}, excludes: []Value{"fp16", true},
		},
		{
			name: "booleans", knob: "enable_prefix_caching", body: "values = [true, false]",
			kind: KnobCategorical, points: []Value{true, false},
			contains: []Value{false}, excludes: []Value{"false"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			knob := tt.knob
			if knob == "" {
				knob = "max_num_seqs"
			}
			src := strings.Replace(minimal, `knob "max_num_seqs" { values = [8, 16, 32] }`, "knob \""+knob+"\" {\n"+tt.body+"\n}", 1)
			k := mustLoad(t, src, LoadOptions{}).Knobs[0]
			if k.Kind != tt.kind {
				t.Errorf("kind %q, want %q", k.Kind, tt.kind)
			}
			pts, finite := k.Points()
			if diff := cmp.Diff(tt.points, pts); diff != "" || finite != (tt.points != nil) {
				t.Errorf("points (-want +got):\n%s (finite %v)", diff, finite)
			}
			if n, ok := k.Size(); ok != finite || (ok && n != len(pts)) {
				t.Errorf("Size() = %d, %v; Points has %d, %v", n, ok, len(pts), finite)
			}
			for _, v := range append(pts, tt.contains...) {
				if !k.Contains(v) {
					t.Errorf("Contains(%#v) = false", v)
				}
			}
			for _, v := range tt.excludes {
				if k.Contains(v) {
					t.Errorf("Contains(%#v) = true", v)
				}
			}
		})
	}
}

func TestGridOrderFirstKnobSlowest(t *testing.T) {
	t.Parallel()
	src := strings.Replace(minimal, `knob "max_num_seqs" { values = [8, 16, 32] }`,
		`knob "a" { values = [1, 2] }
		 knob "b" { values = ["x", "y", "z"] }
		 knob "c" { values = [true] }`, 1)
	p := mustLoad(t, anyKnobs(src), LoadOptions{})
	n, ok := p.GridSize()
	if n != 6 || !ok {
		t.Fatalf("GridSize() = %d, %v; want 6, true", n, ok)
	}
	grid, err := p.Grid()
	if err != nil {
		t.Fatal(err)
	}
	want := []Config{
		{"a": int64(1), "b": "x", "c": true}, {"a": int64(1), "b": "y", "c": true}, {"a": int64(1), "b": "z", "c": true},
		{"a": int64(2), "b": "x", "c": true}, {"a": int64(2), "b": "y", "c": true}, {"a": int64(2), "b": "z", "c": true},
	}
	if diff := cmp.Diff(want, grid); diff != "" {
		t.Errorf("grid (-want +got):\n%s", diff)
	}
}

func TestGridAtMatchesGrid(t *testing.T) {
	t.Parallel()
	src := strings.Replace(minimal, `knob "max_num_seqs" { values = [8, 16, 32] }`,
		"knob \"a\" { values = [1, 2, 3] }\nknob \"b\" {\n min = 0.5\n max = 1\n step = 0.25\n}\nknob \"c\" { values = [true, false] }", 1)
	p := mustLoad(t, anyKnobs(src), LoadOptions{})
	grid, err := p.Grid()
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range grid {
		got, err := p.GridAt(i)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("GridAt(%d) (-want +got):\n%s", i, diff)
		}
	}
	if _, err := p.GridAt(len(grid)); err == nil {
		t.Errorf("GridAt past the end succeeded")
	}
}

func TestGridRefusesContinuousAndHugeSpaces(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		knobs     string
		wantSize  int
		wantFinit bool
	}{
		{"continuous", `knob "g" {
		  min = 0.5
		  max = 0.9
		}`, 0, false},
		{"too large", `knob "a" {
		  min = 1
		  max = 100000
		}
		knob "b" {
		  min = 1
		  max = 100000
		}`, 100000 * 100000, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := strings.Replace(minimal, `knob "max_num_seqs" { values = [8, 16, 32] }`, tt.knobs, 1)
			p := mustLoad(t, anyKnobs(src), LoadOptions{})
			n, ok := p.GridSize()
			if n != tt.wantSize || ok != tt.wantFinit {
				t.Errorf("GridSize() = %d, %v; want %d, %v", n, ok, tt.wantSize, tt.wantFinit)
			}
			if _, err := p.Grid(); err == nil && (!ok || n > GridLimit) {
				t.Errorf("Grid() succeeded on a space it cannot list")
			}
		})
	}
}

func TestPointsOfAHugeRangeAreNotListed(t *testing.T) {
	t.Parallel()
	k := Knob{Name: "k", Kind: KnobInt, Min: 1, Max: 1e12}
	if pts, ok := k.Points(); ok || pts != nil {
		t.Errorf("Points() listed %d values of a range of 10^12", len(pts))
	}
	if n, ok := k.Size(); n != 1e12 || !ok {
		t.Errorf("Size() = %d, %v; want 10^12, true", n, ok)
	}
}

func TestGridSizeSaturatesInsteadOfOverflowing(t *testing.T) {
	t.Parallel()
	var knobs []string
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		knobs = append(knobs, `knob "`+name+`" {
		  min = 1
		  max = 1000000000
		}`)
	}
	src := strings.Replace(minimal, `knob "max_num_seqs" { values = [8, 16, 32] }`, strings.Join(knobs, "\n"), 1)
	n, ok := mustLoad(t, anyKnobs(src), LoadOptions{}).GridSize()
	if n != math.MaxInt || !ok {
		t.Errorf("GridSize() = %d, %v; want MaxInt, true", n, ok)
	}
}

func TestVariablesFollowTerraformPrecedence(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file1 := filepath.Join(dir, "one.hcl")
	file2 := filepath.Join(dir, "two.hcl")
	if err := os.WriteFile(file1, []byte(`name = "file1"`+"\n"+`requests = 7`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file2, []byte(`name = "file2"`), 0o644); err != nil {
		t.Fatal(err)
	}
	src := `
variable "name" { default = "default" }
variable "requests" {
  type    = number
  default = 10
}
variable "rate" { default = "2" }
` + strings.Replace(strings.Replace(minimal, `name = "m"`, `name = var.name`, 1),
		"requests      = 10\n", "requests = var.requests\n", 1)
	src = strings.Replace(src, "poisson(1)", "poisson(var.rate)", 1)
	tests := []struct {
		name     string
		opts     LoadOptions
		model    string
		requests int
		rate     float64
	}{
		{"defaults", LoadOptions{}, "default", 10, 2},
		{"environment over defaults", LoadOptions{Environ: []string{"FRONTIER_VAR_name=env", "FRONTIER_VAR_rate=3.5", "OTHER=x"}}, "env", 10, 3.5},
		{"var files over environment, in order", LoadOptions{Environ: []string{"FRONTIER_VAR_name=env"}, VarFiles: []string{file2, file1}}, "file1", 7, 2},
		{"-var over var files, last wins", LoadOptions{VarFiles: []string{file1}, Vars: []string{"name=flag1", "name=flag2"}}, "flag2", 7, 2},
		{"typed variable parsed from text", LoadOptions{Vars: []string{"requests=25"}}, "default", 25, 2},
		{"untyped number-looking string works as a number", LoadOptions{Vars: []string{"rate=12"}}, "default", 10, 12},
		{"value with an equals sign", LoadOptions{Vars: []string{"name=a=b"}}, "a=b", 10, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := mustLoad(t, src, tt.opts)
			got := []any{p.Model.Name, p.Workloads[0].Requests, p.Workloads[0].Arrival.Rate}
			if diff := cmp.Diff([]any{tt.model, tt.requests, tt.rate}, got); diff != "" {
				t.Errorf("model, requests, rate (-want +got):\n%s", diff)
			}
		})
	}
}

func TestVariableErrors(t *testing.T) {
	t.Parallel()
	src := `
variable "requests" { type = number }
` + strings.Replace(minimal, "requests      = 10\n", "requests = var.requests\n", 1)
	tests := []struct {
		name string
		opts LoadOptions
		want []string
	}{
		{"required variable without a value", LoadOptions{}, []string{"No value for required variable"}},
		{"value not of the type", LoadOptions{Vars: []string{"requests=many"}}, []string{"Variables not allowed"}},
		{"undeclared -var", LoadOptions{Vars: []string{"requests=1", "other=2"}}, []string{"Value for undeclared variable"}},
		{"-var without a value", LoadOptions{Vars: []string{"requests"}}, []string{"No value for required variable", "Invalid -var option"}},
		{"missing var file", LoadOptions{Vars: []string{"requests=1"}, VarFiles: []string{"nowhere.hcl"}}, []string{"Failed to read file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := loadString(t, src, tt.opts)
			if diff := cmp.Diff(tt.want, summaries(t, err)); diff != "" {
				t.Errorf("diagnostics (-want +got):\n%s", diff)
			}
		})
	}
}

// trialPlan has a rule, checks and objectives over every kind of reference.
const trialPlan = `
variable "budget" { default = 2 }
model {
  name          = "m"
  max_model_len = 4096
}
engine "vllm" {}
hardware {
  sku                = "h100-sxm"
  price_per_gpu_hour = 2
}
knob "max_num_seqs" { values = [8, 16, 32] }
knob "max_num_batched_tokens" { values = [8, 16, 32] }
knob "tensor_parallel_size" { values = [1, 2] }
rule "budget" {
  condition = knob.max_num_batched_tokens >= knob.max_num_seqs
  message   = "budget below seqs"
}
rule "context" {
  condition = knob.max_num_batched_tokens * var.budget < model.max_model_len && trial.gpus <= 2
}
workload "chat" {
  requests      = 10
  input_tokens  = fixed(100)
  output_tokens = fixed(10)
  arrival       = poisson(1)
}
quality "q" {
  dataset = "evals.jsonl"
  scorer  = "exact"
  min     = 0.5
}
check "fast" {
  condition = metric.chat.ttft_p99_ms < 500
  message   = "too slow"
}
check "quality" {
  condition = quality.q.score >= 0.5
}
objective "per-gpu" {
  maximize = metric.total.output_token_throughput / trial.gpus
}
objective "cost" {
  minimize = hardware.price_per_gpu_hour * trial.gpus / max(metric.total.output_token_throughput, 1)
}
`

func loadTrialPlan(t *testing.T) *Plan {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "evals.jsonl"), []byte(`{"prompt":"x"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "plan.hcl")
	if err := os.WriteFile(path, []byte(trialPlan), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := Load(path, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCheckRules(t *testing.T) {
	t.Parallel()
	p := loadTrialPlan(t)
	tests := []struct {
		name string
		cfg  Config
		want []Violation
	}{
		{"passes", Config{"max_num_seqs": int64(8), "max_num_batched_tokens": int64(16), "tensor_parallel_size": int64(2)}, nil},
		{"budget below seqs", Config{"max_num_seqs": int64(32), "max_num_batched_tokens": int64(16), "tensor_parallel_size": int64(1)},
			[]Violation{{Rule: "budget", Message: "budget below seqs"}}},
		{"message from the condition", Config{"max_num_seqs": int64(8), "max_num_batched_tokens": int64(8), "tensor_parallel_size": int64(4)},
			[]Violation{{Rule: "context", Message: "condition knob.max_num_batched_tokens * var.budget < model.max_model_len && trial.gpus <= 2 is false"}}},
		{"plain ints and floats work too", Config{"max_num_seqs": 8, "max_num_batched_tokens": 16.0, "tensor_parallel_size": 1}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := p.CheckRules(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := p.CheckRules(Config{"max_num_seqs": int64(8)}); err == nil || !strings.Contains(err.Error(), `no value for knob "max_num_batched_tokens"`) {
		t.Errorf("CheckRules with a missing knob: error %v, want one naming the knob", err)
	}
}

func measurement(chat, total map[string]float64) *workload.Measurement {
	return &workload.Measurement{
		Workloads: map[string]*workload.Result{"chat": {Metrics: chat}},
		Total:     &workload.Result{Metrics: total},
	}
}

func TestEvalObjectivesAndChecks(t *testing.T) {
	t.Parallel()
	p := loadTrialPlan(t)
	tv := TrialValues{
		Config:      Config{"max_num_seqs": int64(8), "max_num_batched_tokens": int64(16), "tensor_parallel_size": int64(2)},
		Measurement: measurement(map[string]float64{"ttft_p99_ms": 600}, map[string]float64{"output_token_throughput": 1000}),
		Quality:     map[string]float64{"q": 0.75},
	}
	objs, err := p.EvalObjectives(tv)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]float64{500, 0.004}, objs); diff != "" {
		t.Errorf("objectives (-want +got):\n%s", diff)
	}
	checks, err := p.EvalChecks(tv)
	if err != nil {
		t.Fatal(err)
	}
	want := []CheckResult{{Name: "fast", Passed: false, Message: "too slow"}, {Name: "quality", Passed: true}}
	if diff := cmp.Diff(want, checks); diff != "" {
		t.Errorf("checks (-want +got):\n%s", diff)
	}
	tv.GPUs = 4 // the GPUs a trial really took win over the knobs
	objs, err = p.EvalObjectives(tv)
	if err != nil {
		t.Fatal(err)
	}
	if objs[0] != 250 {
		t.Errorf("throughput per GPU with 4 GPUs = %g, want 250", objs[0])
	}
}

func TestEvalObjectivesNameWhatIsMissing(t *testing.T) {
	t.Parallel()
	p := loadTrialPlan(t)
	cfg := Config{"max_num_seqs": int64(8), "max_num_batched_tokens": int64(16), "tensor_parallel_size": int64(1)}
	tests := []struct {
		name string
		tv   TrialValues
		want string
	}{
		{"no measurement", TrialValues{Config: cfg}, "metric.total.output_token_throughput: the trial has no measurement"},
		{"missing metric", TrialValues{Config: cfg, Measurement: measurement(nil, map[string]float64{"goodput": 1})},
			"metric.total.output_token_throughput is not in the measurement"},
		{"NaN metric", TrialValues{Config: cfg, Measurement: measurement(nil, map[string]float64{"output_token_throughput": math.NaN()})},
			"metric.total.output_token_throughput is NaN"},
		{"infinite result", TrialValues{Config: cfg, GPUs: -1, Measurement: measurement(nil, map[string]float64{"output_token_throughput": 1e308})},
			""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := p.EvalObjectives(tt.tv)
			if tt.want == "" {
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
			if err != nil && !strings.Contains(err.Error(), `objective "per-gpu"`) {
				t.Errorf("error %v does not name the objective", err)
			}
		})
	}
	_, err := p.EvalChecks(TrialValues{Config: cfg, Measurement: measurement(map[string]float64{"ttft_p99_ms": 1}, nil)})
	if err == nil || !strings.Contains(err.Error(), `check "quality": quality.q.score`) {
		t.Errorf("EvalChecks without a quality score: error %v, want one naming quality.q.score", err)
	}
}

func TestSpaceHashIgnoresLayoutButNotTheSpace(t *testing.T) {
	t.Parallel()
	base := mustLoad(t, minimal, LoadOptions{})
	relaid := mustLoad(t, "# a comment\n"+strings.ReplaceAll(minimal, "\n", "\n\n")+"\n# the end\n", LoadOptions{})
	if base.SpaceHash != relaid.SpaceHash {
		t.Errorf("comments and blank lines changed the space hash")
	}
	if base.Hash == relaid.Hash {
		t.Errorf("a different source kept the plan hash")
	}
	changed := mustLoad(t, strings.Replace(minimal, "[8, 16, 32]", "[8, 16, 64]", 1), LoadOptions{})
	if base.SpaceHash == changed.SpaceHash {
		t.Errorf("a different knob domain kept the space hash")
	}
	rule := "\nrule \"r\" {\n  condition = knob.max_num_seqs >= 8\n}\n"
	ruleSpaced := "\nrule \"r\" {\n  condition = knob.max_num_seqs   >=   8 # same rule\n}\n"
	if a, b := mustLoad(t, minimal+rule, LoadOptions{}), mustLoad(t, minimal+ruleSpaced, LoadOptions{}); a.SpaceHash != b.SpaceHash {
		t.Errorf("spacing inside a rule changed the space hash")
	}
	if a, b := mustLoad(t, minimal+rule, LoadOptions{}), mustLoad(t, minimal, LoadOptions{}); a.SpaceHash == b.SpaceHash {
		t.Errorf("a new rule kept the space hash")
	}
	objective := strings.Replace(minimal, "output_token_throughput", "request_throughput", 1)
	if mustLoad(t, objective, LoadOptions{}).SpaceHash != base.SpaceHash {
		t.Errorf("a different objective changed the space hash; objectives are recomputed from stored metrics")
	}
}

func TestPlanHashCoversVariables(t *testing.T) {
	t.Parallel()
	src := "variable \"n\" { default = \"m\" }\n" + strings.Replace(minimal, `name = "m"`, `name = var.n`, 1)
	a := mustLoad(t, src, LoadOptions{})
	b := mustLoad(t, src, LoadOptions{Vars: []string{"n=other"}})
	if a.Hash == b.Hash || a.SpaceHash == b.SpaceHash {
		t.Errorf("a different model from a variable kept a hash: plan %v, space %v", a.Hash == b.Hash, a.SpaceHash == b.SpaceHash)
	}
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		engine string
		want   Engine
	}{
		{"vllm", `engine "vllm" {}`, Engine{Kind: "vllm", Command: []string{"vllm", "serve"}, StartupTimeout: 20 * 60e9}},
		{"ollama", `engine "ollama" {}`, Engine{Kind: "ollama", Command: []string{"ollama"}, StartupTimeout: 5 * 60e9}},
		{"sim", "engine \"sim\" {}\nhardware { sku = \"h100-sxm\" }", Engine{Kind: "sim", StartupTimeout: 2 * 60e9}},
		{"given", `engine "vllm" {
		  command         = ["/opt/vllm/bin/vllm", "serve"]
		  env             = { HF_TOKEN = "x" }
		  secret_env      = ["HF_TOKEN"]
		  startup_timeout = "90s"
		}`, Engine{Kind: "vllm", Command: []string{"/opt/vllm/bin/vllm", "serve"}, Env: map[string]string{"HF_TOKEN": "x"}, SecretEnv: []string{"HF_TOKEN"}, StartupTimeout: 90e9}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := strings.Replace(minimal, `engine "vllm" {}`, tt.engine, 1)
			src = strings.Replace(src, `name = "m"`, "name = \"m\"\n architecture = \"llama-3.1-8b\"", 1)
			p := mustLoad(t, src, LoadOptions{})
			if diff := cmp.Diff(tt.want, p.Engine); diff != "" {
				t.Errorf("engine (-want +got):\n%s", diff)
			}
			wantStudy := Study{Name: "plan", Trials: 20, Sampler: "tpe", Confirm: 1}
			if diff := cmp.Diff(wantStudy, p.Study); diff != "" {
				t.Errorf("study (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(GPUSelection{All: true}, p.Hardware.GPUs); diff != "" {
				t.Errorf("gpus (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHardwareGPUs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		gpus string
		want GPUSelection
	}{
		{`"all"`, GPUSelection{All: true}},
		{`2`, GPUSelection{Count: 2}},

		{`"4"`, GPUSelection{Count: 4}},
		{`[0, 3]`, GPUSelection{Indices: []int{0, 3}}},
	}
	for _, tt := range tests {
		t.Run(tt.gpus, func(t *testing.T) {
			t.Parallel()
			src := minimal + "hardware { gpus = " + tt.gpus + " }\n"
			if diff := cmp.Diff(tt.want, mustLoad(t, src, LoadOptions{}).Hardware.GPUs); diff != "" {
				t.Errorf("gpus (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSKUKnobOnlyWithTheSimulator(t *testing.T) {
	t.Parallel()
	knob := `knob "sku" { values = ["h100-sxm", "l40s"] }` + "\n"
	sim := strings.Replace(minimal, `engine "vllm" {}`, `engine "sim" {}`, 1)
	sim = strings.Replace(sim, `name = "m"`, "name = \"m\"\n architecture = \"llama-3.1-8b\"", 1)
	p := mustLoad(t, sim+knob, LoadOptions{})
	if got := p.Knob("sku").Values; len(got) != 2 {
		t.Errorf("sku values %v", got)
	}
	_, err := loadString(t, minimal+knob, LoadOptions{})
	if diff := cmp.Diff([]string{"The hardware can only be searched when simulated"}, summaries(t, err)); diff != "" {
		t.Errorf("diagnostics (-want +got):\n%s", diff)
	}
}

func TestDiagnosticsErrorWritesFileLineAndSource(t *testing.T) {
	t.Parallel()
	src := strings.Replace(minimal, "poisson(1)", "poisson(1)\n  timeout = \"later\"", 1)
	_, err := loadString(t, src, LoadOptions{})
	var de *DiagnosticsError
	if !errors.As(err, &de) {
		t.Fatalf("error %v is not a *DiagnosticsError", err)
	}
	var buf bytes.Buffer
	if err := de.Write(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Error: Invalid duration", "plan.hcl line 12", `timeout = "later"`, "not a duration"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, buf.String())
		}
	}
	if !strings.Contains(de.Error(), "plan.hcl:12,") {
		t.Errorf("Error() = %q, want the file and line", de.Error())
	}
}

func TestQualityBaselineDecodes(t *testing.T) {
	t.Parallel()
	p := loadTrialPlan(t)
	if p.Quality[0].Dataset == "" || !filepath.IsAbs(p.Quality[0].Dataset) {
		t.Errorf("dataset %q is not an absolute path", p.Quality[0].Dataset)
	}
	src := minimal + `
knob "quantization" { values = ["none", "fp8"] }
quality "q" {
  dataset  = "plan.hcl"
  scorer   = "chrf"
  baseline = { quantization = "none", max_num_seqs = 16 }
  max_drop = 0.02
}
`
	q := mustLoad(t, src, LoadOptions{}).Quality[0]
	if diff := cmp.Diff(Config{"quantization": "none", "max_num_seqs": int64(16)}, q.Baseline); diff != "" {
		t.Errorf("baseline (-want +got):\n%s", diff)
	}
	if q.MaxDrop == nil || *q.MaxDrop != 0.02 {
		t.Errorf("max_drop %v, want 0.02", q.MaxDrop)
	}
}

func TestCatalogNames(t *testing.T) {
	t.Parallel()
	opts := LoadOptions{SKUs: []string{"h100-sxm", "l40s"}, Architectures: []string{"llama-3.1-8b"}}
	sim := strings.Replace(minimal, `engine "vllm" {}`, "engine \"sim\" {}\nhardware { sku = \"SKU\" }", 1)
	sim = strings.Replace(sim, `name = "m"`, "name = \"m\"\n architecture = \"ARCH\"", 1)
	tests := []struct {
		name, src, sku, arch string
		errors, warnings     []string
	}{
		{name: "known names", src: sim, sku: "h100-sxm", arch: "llama-3.1-8b"},
		{name: "names fold case and underscores", src: sim, sku: "H100_SXM", arch: "Llama-3.1-8B"},
		{name: "unknown SKU for the simulator", src: sim, sku: "tpu-v5", arch: "llama-3.1-8b", errors: []string{"Unknown GPU SKU"}},
		{name: "unknown architecture for the simulator", src: sim, sku: "l40s", arch: "gpt-5", errors: []string{"Unknown model architecture"}},
		{name: "unknown names for vLLM are warnings", src: strings.Replace(sim, `engine "sim"`, `engine "vllm"`, 1), sku: "tpu-v5", arch: "gpt-5",
			warnings: []string{"Unknown model architecture", "Unknown GPU SKU"}}, // in file order
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := strings.Replace(strings.Replace(tt.src, "SKU", tt.sku, 1), "ARCH", tt.arch, 1)
			p, err := loadString(t, src, opts)
			if tt.errors != nil {
				if diff := cmp.Diff(tt.errors, summaries(t, err)); diff != "" {
					t.Errorf("errors (-want +got):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, w := range p.warnings {
				got = append(got, w.Summary)
			}
			if diff := cmp.Diff(tt.warnings, got); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDiagnosticsSuggestNearNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, edit, want string
	}{
		{"metric", "metric.total.output_token_throughput\n", `Did you mean "output_token_throughput"?`},
		{"knob", "knob.max_num_seq\n", `Did you mean "max_num_seqs"?`},
		{"workload", "metric.chta.ttft_p99_ms\n", `Did you mean "chat"?`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := strings.Replace(minimal, "metric.total.output_token_throughput\n", tt.edit, 1)
			if tt.name == "metric" {
				src = strings.Replace(minimal, "output_token_throughput", "output_tokens_throughput", 1)
			}
			_, err := loadString(t, src, LoadOptions{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
	if got := didYouMean("zzzzzzzz", []string{"max_num_seqs"}); got != "" {
		t.Errorf("didYouMean suggested %q for an unrelated name", got)
	}
}

func TestSensitiveVariablesAreNotShown(t *testing.T) {
	t.Parallel()
	src := "variable \"token\" {\n sensitive = true\n default = \"a\"\n}\n" +
		strings.Replace(minimal, `engine "vllm" {}`, "engine \"vllm\" {\n env = { HF_TOKEN = var.token }\n}", 1)
	a := mustLoad(t, src, LoadOptions{})
	b := mustLoad(t, src, LoadOptions{Vars: []string{"token=b"}})
	if diff := cmp.Diff(map[string]string{"token": SensitiveValue}, a.Variables); diff != "" {
		t.Errorf("variables (-want +got):\n%s", diff)
	}
	if a.Engine.Env["HF_TOKEN"] != "a" {
		t.Errorf("the engine did not get the sensitive value: %q", a.Engine.Env["HF_TOKEN"])
	}
	if a.Hash == b.Hash {
		t.Errorf("a different sensitive value kept the plan hash")
	}
}
