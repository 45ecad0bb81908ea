package plan

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/frontier-llm/frontier/engine"
	"github.com/frontier-llm/frontier/vllm"
	"github.com/frontier-llm/frontier/workload"
)

// samplerNames lists the samplers of the study block.
func samplerNames() []string { return []string{"tpe", "cmaes", "random", "grid", "sobol"} }

// Scorers of the quality block.
func scorerNames() []string {
	return []string{"exact", "contains", "regex", "json_valid", "chrf", "rouge_l", "baseline_agreement", "judge"}
}

func engineNames() []string { return engine.Kinds() }

// Defaults of the study block.
const (
	DefaultTrials  = 20
	DefaultSampler = "tpe"
	DefaultConfirm = 1
)

// DefaultCommand returns the command an engine kind runs when the plan gives none. The sim
// engine's empty command means frontier's own `frontier sim serve`.
func DefaultCommand(kind string) []string {
	d, _ := engine.Lookup(kind)
	return d.DefaultCommand
}

// DefaultRequestTimeout bounds each request of a workload whose plan sets no timeout, so a
// stream that stops answering fails its request instead of holding a study that runs
// unattended. It is far above any latency an SLO would accept.
const DefaultRequestTimeout = 5 * time.Minute

// DefaultStartupTimeout returns how long an engine kind may take to become ready when the plan
// does not say: the engine's own default (20 minutes for vLLM: weights, compilation, CUDA
// graphs).
func DefaultStartupTimeout(kind string) time.Duration {
	d, _ := engine.Lookup(kind)
	return d.StartupTimeout
}

func rootSchema() *hcl.BodySchema {
	return &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
		{Type: "variable", LabelNames: []string{"name"}},
		{Type: "study", LabelNames: []string{"name"}},
		{Type: "model"},
		{Type: "engine", LabelNames: []string{"kind"}},
		{Type: "hardware"},
		{Type: "knob", LabelNames: []string{"name"}},
		{Type: "rule", LabelNames: []string{"name"}},
		{Type: "workload", LabelNames: []string{"name"}},
		{Type: "check", LabelNames: []string{"name"}},
		{Type: "quality", LabelNames: []string{"name"}},
		{Type: "objective", LabelNames: []string{"name"}},
		{Type: "pressure"},
	}}
}

func attrSchema(names ...string) []hcl.AttributeSchema {
	out := make([]hcl.AttributeSchema, len(names))
	for i, n := range names {
		out[i] = hcl.AttributeSchema{Name: n}
	}
	return out
}

// decoder holds what every block decoder needs: the static evaluation context (variables and
// functions) and the plan's folder.
type decoder struct {
	ctx *hcl.EvalContext
	dir string
	// notes are what the decoder chose where the plan sets nothing (Plan.Notes).
	notes []string
}

func (d *decoder) content(b *hcl.Block, schema *hcl.BodySchema) (*hcl.BodyContent, *attrs) {
	content, diags := b.Body.Content(schema)
	name := b.Type
	if len(b.Labels) > 0 {
		name = fmt.Sprintf("%s %q", b.Type, b.Labels[0])
	}
	return content, &attrs{ctx: d.ctx, dir: d.dir, block: name, def: b.DefRange, m: content.Attributes, diags: diags}
}

func (d *decoder) decodeStudyBlock(b *hcl.Block) (*Study, hcl.Diagnostics) {
	_, a := d.content(b, &hcl.BodySchema{Attributes: attrSchema(
		"description", "trials", "sampler", "seed", "parallel", "confirm", "warm_start", "workload_seed", "prior")})
	s := &Study{
		Name:        b.Labels[0],
		Description: a.str("description", ""),
		Trials:      int(a.atLeast("trials", DefaultTrials, 1)),
		Sampler:     a.oneOf("sampler", DefaultSampler, samplerNames()),
		Seed:        a.integer("seed", 0),
		Parallel:    int(a.atLeast("parallel", 0, 0)),
		Confirm:     int(a.atLeast("confirm", DefaultConfirm, 0)),
		WarmStart:   a.str("warm_start", ""),
		Prior:       a.boolean("prior", true),
	}
	if _, ok := a.m["workload_seed"]; ok {
		s.WorkloadSeed, s.HasWorkloadSeed = a.integer("workload_seed", 0), true
	}
	return s, a.diags
}

func (d *decoder) decodeModelBlock(b *hcl.Block) (*Model, hcl.Diagnostics) {
	_, a := d.content(b, &hcl.BodySchema{Attributes: attrSchema(
		"name", "architecture", "config_json", "gguf", "max_model_len")})
	a.require("name", "the model the engine serves, such as \"meta-llama/Llama-3.1-8B-Instruct\"")
	name, known := a.value("name", cty.String, "a string")
	m := &Model{
		Architecture: a.str("architecture", ""),
		ConfigJSON:   a.path("config_json"),
		GGUF:         a.path("gguf"),
		MaxModelLen:  int(a.atLeast("max_model_len", 0, 1)),
	}
	if known {
		m.Name = name.AsString()
		if m.Name == "" {
			a.errorf("name", "Empty model name", "The model's name must not be empty.")
		}
	}
	return m, a.diags
}

func (d *decoder) decodeEngineBlock(b *hcl.Block) (*Engine, hcl.Diagnostics) {
	_, a := d.content(b, &hcl.BodySchema{Attributes: attrSchema(
		"command", "args", "env", "startup_timeout", "secret_env", "version", "model_arg", "host_flag", "router")})
	e := &Engine{Kind: b.Labels[0]}
	known := false
	for _, k := range engineNames() {
		known = known || k == e.Kind
	}
	if !known {
		a.diags = a.diags.Append(errorAt(b.LabelRanges[0], "Unknown engine",
			"%q is not an engine frontier can run; use one of %s.", e.Kind, quoteList(engineNames())))
	}
	e.Command = DefaultCommand(e.Kind)
	if a.has("command") {
		e.Command = a.strings("command")
		if len(e.Command) == 0 && e.Kind != EngineSim && !a.diags.HasErrors() {
			a.errorf("command", "Empty command", "The command of engine %q must name a program, such as %s.", e.Kind, quoteList(DefaultCommand(e.Kind)))
		}
	}
	e.Args = a.strings("args")
	e.Env = a.stringMap("env")
	e.StartupTimeout = a.duration("startup_timeout", DefaultStartupTimeout(e.Kind))
	if a.has("startup_timeout") && e.StartupTimeout == 0 && !a.diags.HasErrors() {
		a.errorf("startup_timeout", "Invalid duration", "The startup timeout must be above zero.")
	}
	e.SecretEnv = a.strings("secret_env")
	e.Router = a.strings("router")
	if a.has("router") && len(e.Router) == 0 && !a.diags.HasErrors() {
		a.errorf("router", "Empty router", "The router of engine %q must name a program, such as [\"frontier\", \"router\"]; leave router out for frontier's own.", e.Kind)
	}
	e.ModelAsFlag = a.oneOf("model_arg", ModelPositional, []string{ModelPositional, ModelFlag}) == ModelFlag
	e.NoHostFlag = !a.boolean("host_flag", true)
	if a.has("version") {
		if v, ds := a.m["version"].Expr.Value(a.ctx); !ds.HasErrors() && v.IsKnown() && !v.IsNull() && v.Type() == cty.Number {
			// HCL reads 0.20 as the number 0.2, which names another line: a version is text.
			a.errorf("version", "Version is a number",
				"The vLLM version is written as a number, which HCL reads as %s: numbers lose their trailing zeros (0.20 becomes 0.2, another release line). Quote it as written, e.g. version = \"0.20\".",
				v.AsBigFloat().Text('f', -1))
		} else {
			e.Version = a.str("version", "")
		}
		if e.Kind != EngineVLLM {
			a.errorf("version", "Version of a vLLM engine only",
				"The attribute version says which vLLM release line a vllm engine runs; engine %q does not take it.", e.Kind)
		} else if ver, err := vllm.Lookup(e.Version); err != nil && !a.diags.HasErrors() {
			a.errorf("version", "Unknown vLLM version", "%s; frontier knows the vLLM release lines %s.", err, quoteList(vllm.Versions()))
		} else if err == nil && ver.Warning != "" {
			a.diags = a.diags.Append(warningAt(a.rangeOf("version"), "vLLM version without a table of its own", "%s.", ver.Warning))
		}
	}
	if (e.ModelAsFlag || e.NoHostFlag) && e.Kind == EngineOllama {
		name := "host_flag"
		if a.has("model_arg") {
			name = "model_arg"
		}
		a.errorf(name, "Not an Ollama setting",
			"model_arg and host_flag describe the command line of a vLLM-compatible server; engine \"ollama\" does not take them.")
	}
	return e, a.diags
}

func (d *decoder) decodeHardwareBlock(b *hcl.Block) (*Hardware, hcl.Diagnostics) {
	_, a := d.content(b, &hcl.BodySchema{Attributes: attrSchema(
		"gpus", "sku", "price_per_gpu_hour", "allow_busy")})
	h := &Hardware{
		GPUs:            d.gpus(a),
		SKU:             a.str("sku", ""),
		PricePerGPUHour: a.fraction("price_per_gpu_hour", 0, 0, math.MaxFloat64),
		AllowBusy:       a.boolean("allow_busy", false),
	}
	return h, a.diags
}

// gpus reads the gpus attribute: "all", a count or a list of indices.
func (d *decoder) gpus(a *attrs) GPUSelection {
	const what = `"all", a number of GPUs, or a list of GPU indices such as [0, 1]`
	if !a.has("gpus") {
		return GPUSelection{All: true}
	}
	v, ok := a.value("gpus", cty.DynamicPseudoType, what)
	if !ok {
		return GPUSelection{All: true}
	}
	ty := v.Type()
	switch {
	case ty == cty.String:
		if v.AsString() == "all" {
			return GPUSelection{All: true}
		}
		if n, err := convert.Convert(v, cty.Number); err == nil {
			return d.gpuCount(a, n, what)
		}
	case ty == cty.Number:
		return d.gpuCount(a, v, what)
	case ty.IsTupleType() || ty.IsListType():
		seen := map[int]bool{}
		var idx []int
		for _, e := range v.AsValueSlice() {
			n, err := convert.Convert(e, cty.Number)
			if err != nil || n.IsNull() {
				a.errorf("gpus", "Invalid GPU index", "The GPU list must hold GPU indices, such as [0, 1].")
				return GPUSelection{All: true}
			}
			bf := n.AsBigFloat()
			i, _ := bf.Int64()
			if !bf.IsInt() || i < 0 || i > 1<<16 {
				a.errorf("gpus", "Invalid GPU index", "%s is not a GPU index; indices are whole numbers from 0, as nvidia-smi lists them.", bf.Text('g', -1))
				return GPUSelection{All: true}
			}
			if seen[int(i)] {
				a.errorf("gpus", "Duplicate GPU index", "GPU %d is listed twice.", i)
				return GPUSelection{All: true}
			}
			seen[int(i)] = true
			idx = append(idx, int(i))
		}
		return GPUSelection{Indices: idx}
	}
	a.errorf("gpus", "Wrong type", "The attribute gpus of hardware must be %s.", what)
	return GPUSelection{All: true}
}

func (d *decoder) gpuCount(a *attrs, v cty.Value, what string) GPUSelection {
	bf := v.AsBigFloat()
	n, _ := bf.Int64()
	if !bf.IsInt() || n < 0 || n > 1<<16 {
		a.errorf("gpus", "Invalid GPU count", "The attribute gpus of hardware must be %s; %s is not a count.", what, bf.Text('g', -1))
		return GPUSelection{All: true}
	}
	return GPUSelection{Count: int(n)}
}

// decodeKnobBlock reads one knob: either values, or min and max with step, log and type.
func (d *decoder) decodeKnobBlock(b *hcl.Block) (*Knob, hcl.Diagnostics) {
	_, a := d.content(b, &hcl.BodySchema{Attributes: attrSchema(
		"values", "min", "max", "step", "log", "type", "description")})
	k := &Knob{Name: b.Labels[0]}
	if !hclsyntax.ValidIdentifier(k.Name) || strings.Contains(k.Name, "-") {
		a.diags = a.diags.Append(errorAt(b.LabelRanges[0], "Invalid knob name",
			"A knob is named after the engine's option in snake_case (max_num_seqs for --max-num-seqs); %q is not such a name.", k.Name))
	}
	_ = a.str("description", "")
	typ := a.oneOf("type", "", []string{"int", "float"})
	if a.has("values") {
		for _, other := range []string{"min", "max", "step", "log"} {
			if a.has(other) {
				a.errorf(other, "Conflicting knob domain", "Knob %q lists values, so it cannot also have %s; use either values or min and max.", k.Name, other)
			}
		}
		d.knobValues(a, k, typ)
		return k, a.diags
	}
	if !a.has("min") || !a.has("max") {
		a.diags = a.diags.Append(errorAt(b.DefRange, "Knob without a domain",
			"Knob %q needs either values = [...] or both min and max.", k.Name))
		return k, a.diags
	}
	k.Min = a.number("min", 0)
	k.Max = a.number("max", 0)
	k.Step = a.number("step", 0)
	k.Log = a.boolean("log", false)
	if a.diags.HasErrors() {
		return k, a.diags
	}
	if a.has("step") && !(k.Step > 0) {
		a.errorf("step", "Invalid step", "The step of knob %q must be above zero, not %g.", k.Name, k.Step)
	}
	if k.Min > k.Max {
		a.errorf("min", "min must not exceed max", "Knob %q has min %g above max %g.", k.Name, k.Min, k.Max)
	}
	if k.Log && (k.Min <= 0 || k.Max <= 0) {
		a.errorf("log", "Log scale needs positive bounds", "Knob %q is on a log scale, so min and max must be above zero; min is %g and max is %g.", k.Name, k.Min, k.Max)
	}
	if k.Log && a.has("step") {
		a.errorf("step", "Log scale with a step", "Knob %q is on a log scale, which cannot be combined with a step; drop one of them.", k.Name)
	}
	integral := whole(k.Min) && whole(k.Max) && (!a.has("step") || whole(k.Step))
	switch {
	case typ == "float":
		k.Kind = KnobFloat
	case typ == "int" && !integral:
		a.errorf("type", "Integer knob with fractional bounds", "Knob %q is of type int, so min, max and step must be whole numbers.", k.Name)
	case integral:
		k.Kind = KnobInt
	default:
		k.Kind = KnobFloat
	}
	if k.Kind == KnobInt && (math.Abs(k.Min) > 1<<53 || math.Abs(k.Max) > 1<<53) {
		a.errorf("max", "Value out of range", "The bounds of integer knob %q must lie within ±2^53.", k.Name)
	}
	if a.has("step") && k.Step > 0 && !a.diags.HasErrors() {
		n := (k.Max - k.Min) / k.Step
		if math.Abs(n-math.Round(n)) > 1e-9*math.Max(1, n) {
			last := k.Min + math.Floor(n+1e-9)*k.Step
			a.diags = a.diags.Append(warningAt(a.rangeOf("max"), "max is not on the step grid",
				"Knob %q goes from %g in steps of %g, which does not reach %g; its last value is %g.", k.Name, k.Min, k.Step, k.Max, roundNear(last, k.Step)))
		}
	}
	return k, a.diags
}

// knobValues reads a knob's values list.
func (d *decoder) knobValues(a *attrs, k *Knob, typ string) {
	v, ok := a.value("values", cty.DynamicPseudoType, "a list of values")
	if !ok {
		return
	}
	ty := v.Type()
	if !ty.IsTupleType() && !ty.IsListType() && !ty.IsSetType() {
		a.errorf("values", "Wrong type", "The values of knob %q must be a list, such as [1, 2, 4].", k.Name)
		return
	}
	elems := v.AsValueSlice()
	if len(elems) == 0 {
		a.errorf("values", "Empty knob", "Knob %q lists no values; give at least one.", k.Name)
		return
	}
	first := elems[0].Type()
	for _, e := range elems {
		if e.IsNull() || !e.Type().Equals(first) || !(first == cty.Number || first == cty.String || first == cty.Bool) {
			a.errorf("values", "Mixed knob values", "The values of knob %q must all be numbers, all strings or all booleans.", k.Name)
			return
		}
	}
	switch first {
	case cty.String:
		k.Kind = KnobCategorical
		for _, e := range elems {
			k.Values = append(k.Values, e.AsString())
		}
	case cty.Bool:
		k.Kind = KnobCategorical
		for _, e := range elems {
			k.Values = append(k.Values, e.True())
		}
	case cty.Number:
		integral := typ != "float"
		for i, e := range elems {
			f, _ := e.AsBigFloat().Float64()
			if math.IsInf(f, 0) || math.IsNaN(f) {
				a.errorf("values", "Knob value out of range", "Value %d of knob %q, %s, is beyond the range of a 64-bit float (about ±1.8e308); knob values must be finite numbers.", i+1, k.Name, e.AsBigFloat().Text('g', 6))
				return
			}
			if !whole(f) || math.Abs(f) > 1<<53 {
				integral = false
			}
		}
		if typ == "int" && !integral {
			a.errorf("type", "Integer knob with fractional values", "Knob %q is of type int, so its values must be whole numbers.", k.Name)
		}
		k.Kind = KnobFloat
		if integral {
			k.Kind = KnobInt
		}
		for _, e := range elems {
			f, _ := e.AsBigFloat().Float64()
			if integral {
				k.Values = append(k.Values, int64(f))
			} else {
				k.Values = append(k.Values, f)
			}
		}
	}
	if typ != "" && k.Kind == KnobCategorical {
		a.errorf("type", "Type of a non-numeric knob", "Only numeric knobs take a type; knob %q lists strings or booleans.", k.Name)
	}
	seen := map[string]bool{}
	for _, v := range k.Values {
		key := fmt.Sprintf("%T:%v", v, v)
		if seen[key] {
			a.errorf("values", "Duplicate knob value", "Knob %q lists %v more than once.", k.Name, v)
			return
		}
		seen[key] = true
	}
}

// decodeConditionBlock reads a rule or a check: a condition kept for later, and a message.
func (d *decoder) decodeConditionBlock(b *hcl.Block) (name, message string, cond hcl.Expression, diags hcl.Diagnostics) {
	_, a := d.content(b, &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
		{Name: "condition", Required: true}, {Name: "message"},
	}})
	message = a.str("message", "")
	if at, ok := a.m["condition"]; ok {
		cond = at.Expr
	}
	return b.Labels[0], message, cond, a.diags
}

func (d *decoder) decodeObjectiveBlock(b *hcl.Block) (*Objective, hcl.Diagnostics) {
	_, a := d.content(b, &hcl.BodySchema{Attributes: attrSchema("maximize", "minimize", "description")})
	o := &Objective{Name: b.Labels[0]}
	_ = a.str("description", "")
	switch {
	case a.has("maximize") && a.has("minimize"):
		a.errorf("minimize", "Objective with two directions", "Objective %q must either maximize or minimize, not both.", o.Name)
	case a.has("maximize"):
		o.Maximize, o.Expr = true, a.m["maximize"].Expr
	case a.has("minimize"):
		o.Expr = a.m["minimize"].Expr
	default:
		a.diags = a.diags.Append(errorAt(b.DefRange, "Objective without a direction",
			"Objective %q needs maximize = EXPRESSION or minimize = EXPRESSION.", o.Name))
	}
	return o, a.diags
}

func (d *decoder) decodeWorkloadBlock(b *hcl.Block) (*workload.Class, hcl.Diagnostics) {
	content, a := d.content(b, &hcl.BodySchema{
		Attributes: attrSchema("requests", "warmup", "input_tokens", "output_tokens", "prefix_tokens",
			"arrival", "dataset", "endpoint", "cancel_fraction", "timeout", "attainment", "seed", "description",
			"conversations", "turns", "think_time", "prefix_groups"),
		Blocks: []hcl.BlockHeaderSchema{{Type: "slo"}},
	})
	c := &workload.Class{Name: b.Labels[0]}
	if !hclsyntax.ValidIdentifier(c.Name) || c.Name == "total" {
		a.diags = a.diags.Append(errorAt(b.LabelRanges[0], "Invalid workload name",
			"A workload is referred to as metric.<name>, so its name must be an identifier other than \"total\"; %q is not.", c.Name))
	}
	_ = a.str("description", "")
	switch {
	case a.has("conversations") && a.has("requests"):
		a.errorf("conversations", "Conflicting class sizes",
			"Workload %q sets both requests (at %s) and conversations; a class of conversations counts conversations in place of requests, so give one of them.", c.Name, a.rangeOf("requests"))
	case a.has("conversations"):
		c.Conversations = int(a.atLeast("conversations", 0, 1))
	default:
		a.require("requests", "how many requests are measured (or conversations = N for a class of multi-turn conversations)")
		c.Requests = int(a.atLeast("requests", 0, 1))
	}
	c.PrefixTokens = int(a.atLeast("prefix_tokens", 0, 0))
	d.conversation(a, c)
	c.Dataset = a.path("dataset")
	c.Endpoint = a.oneOf("endpoint", workload.EndpointCompletions, []string{workload.EndpointCompletions, workload.EndpointChat})
	c.CancelFraction = a.fraction("cancel_fraction", 0, 0, 1)
	c.Timeout = a.duration("timeout", DefaultRequestTimeout)
	c.Attainment = a.fraction("attainment", 0, 0, 1)
	if a.has("attainment") && c.Attainment == 0 && !a.diags.HasErrors() {
		a.errorf("attainment", "Value out of range", "The attainment of workload %q must be above 0.", c.Name)
	}
	c.Seed = a.integer("seed", 0)
	c.InputTokens = d.dist(a, "input_tokens")
	c.OutputTokens = d.dist(a, "output_tokens")
	if a.require("arrival", "when requests are sent, such as poisson(8) or concurrency(4)") {
		c.Arrival = d.arrival(a)
	}
	d.warmup(a, c)
	checkClassSize(a, c)
	trace := c.Arrival.Kind == workload.ArrivalTrace
	switch {
	case a.has("dataset") && a.has("input_tokens"):
		a.errorf("input_tokens", "Conflicting prompt sources", "Workload %q reads its prompts from a dataset, so it cannot also set input_tokens.", c.Name)
	case !a.has("dataset") && !trace && !a.has("conversations") && (!a.has("input_tokens") || !a.has("output_tokens")):
		a.diags = a.diags.Append(errorAt(b.DefRange, "Workload without lengths or dataset",
			"Workload %q needs either input_tokens and output_tokens (such as lognormal(800, 0.6) and uniform(50, 300)) or a dataset file of prompts.", c.Name))
	}
	if a.has("conversations") && a.has("dataset") {
		a.errorf("dataset", "Conflicting prompt sources",
			"Workload %q is a class of conversations, whose turns are drawn from input_tokens and output_tokens; it cannot read its prompts from a dataset.", c.Name)
	}
	if a.has("conversations") && !a.has("dataset") && (!a.has("input_tokens") || !a.has("output_tokens")) {
		a.diags = a.diags.Append(errorAt(b.DefRange, "Conversations without lengths",
			"Workload %q is a class of conversations: it needs input_tokens (the new tokens of each turn, such as lognormal(200, 0.5)) and output_tokens (each reply, such as uniform(50, 300)).", c.Name))
	}
	if c.InputTokens.IsSet() && c.PrefixTokens > 0 && c.Conversations == 0 && float64(c.PrefixTokens) >= c.InputTokens.Mean() {
		a.diags = a.diags.Append(warningAt(a.rangeOf("prefix_tokens"), "Prefix as long as the prompt",
			"Workload %q shares %d prefix tokens, which is at least its mean input length of %g tokens; most requests will be the prefix and one token.", c.Name, c.PrefixTokens, c.InputTokens.Mean()))
	}
	var seenSLO *hcl.Block
	for _, sb := range content.Blocks {
		if seenSLO != nil {
			a.diags = a.diags.Append(errorAt(sb.DefRange, "Duplicate slo block",
				"Workload %q already has an slo block at %s; put every bound in one block.", c.Name, seenSLO.DefRange))
			continue
		}
		seenSLO = sb
		slo, at, ds := d.decodeSLOBlock(sb)
		a.diags = a.diags.Extend(ds)
		c.SLO = slo
		if !a.diags.HasErrors() {
			a.diags = a.diags.Extend(sampleWarnings(c, at))
		}
	}
	return c, a.diags
}

// conversation reads the attributes of a class of conversations (turns, think_time) and
// prefix_groups, and refuses them where they mean nothing.
func (d *decoder) conversation(a *attrs, c *workload.Class) {
	for _, name := range []string{"turns", "think_time"} {
		if a.has(name) && !a.has("conversations") {
			a.errorf(name, "Attribute of conversations", "The attribute %s of %s applies to a class of conversations; set conversations = N in place of requests, or remove %s.", name, a.block, name)
		}
	}
	if a.has("turns") {
		c.Turns = d.turns(a)
	}
	c.ThinkTime = a.durationIn("think_time", 0, 0, MaxThinkTime)
	if a.has("prefix_groups") {
		c.PrefixGroups = int(a.atLeast("prefix_groups", 0, 1))
		if !a.has("prefix_tokens") || c.PrefixTokens == 0 {
			a.errorf("prefix_groups", "Prefix groups without a prefix", "The attribute prefix_groups of %s spreads prefix_tokens over that many shared prefixes, but %s has no prefix_tokens; set prefix_tokens = N too, or remove prefix_groups.", a.block, a.block)
		}
	}
}

// MaxClassRequests bounds the requests one workload class sends in a trial, its warm-up and
// every turn of every conversation included: each request's prompt (and each conversation's
// history) is built before the first is sent, so a class much larger than a study measures
// would exhaust the host's memory instead of running.
const MaxClassRequests = 200_000

// MaxPrefixTokens bounds the distinct shared-prefix tokens of a class (prefix_groups ×
// prefix_tokens): every group's prefix is built before the first request.
const MaxPrefixTokens = 20_000_000

// checkClassSize refuses a class that would send more than MaxClassRequests requests (on
// average, for conversations of a drawn length), and prefix_groups beyond the class's sessions:
// a group no request uses is a prefix built for nothing.
func checkClassSize(a *attrs, c *workload.Class) {
	if a.diags.HasErrors() {
		return
	}
	sessions := c.Requests + c.Warmup
	what := "requests"
	if c.Conversations > 0 {
		sessions, what = c.Conversations+c.Warmup, "conversations"
	}
	if n := float64(sessions) * c.RequestsPerSession(); n > MaxClassRequests {
		at := what
		if c.Conversations > 0 && c.Turns.IsSet() {
			at = "turns"
		}
		a.errorf(at, "Workload too large", "Workload %q would send about %.0f requests in each trial (%d %s with warm-up, %.4g requests each); a class may send at most %d, since every prompt is built before the first is sent. Measure fewer %s.",
			c.Name, n, sessions, what, c.RequestsPerSession(), MaxClassRequests, what)
	}
	if n := max(1, c.PrefixGroups) * c.PrefixTokens; n > MaxPrefixTokens {
		a.errorf("prefix_groups", "Shared prefixes too large", "Workload %q shares %d groups of %d prefix tokens, %d tokens in all; a class may share at most %d, since every group's prefix is built before the first request. Use fewer groups or shorter prefixes.",
			c.Name, max(1, c.PrefixGroups), c.PrefixTokens, n, MaxPrefixTokens)
	}
	if c.PrefixGroups > sessions && sessions > 0 {
		a.errorf("prefix_groups", "More prefix groups than "+what, "Workload %q spreads its prefix over %d groups but sends %d %s with warm-up: at most %d groups can be used. Set prefix_groups to %d or fewer.",
			c.Name, c.PrefixGroups, sessions, what, sessions, sessions)
	}
}

// historyWarning warns when a class's conversations outgrow max_model_len on average: each
// turn's prompt is the history so far, so the turn whose prompt and reply pass the context
// fails with vLLM's HTTP 400, and the turns after it are never sent (counted as failed).
func historyWarning(b *hcl.Block, c *workload.Class, maxModelLen int) hcl.Diagnostics {
	if c.Conversations == 0 || maxModelLen <= 0 || !c.InputTokens.IsSet() || !c.OutputTokens.IsSet() {
		return nil
	}
	per := c.InputTokens.Mean() + c.OutputTokens.Mean()
	turns := c.RequestsPerSession()
	if per <= 0 || float64(c.PrefixTokens)+turns*per <= float64(maxModelLen) {
		return nil
	}
	first := int(math.Ceil((float64(maxModelLen) - float64(c.PrefixTokens)) / per))
	return hcl.Diagnostics{warningAt(b.DefRange, "Conversations outgrow max_model_len",
		"Workload %q: each turn's prompt is the history so far, about %g new tokens a turn with the reply; with %d prefix tokens a conversation passes max_model_len = %d at about turn %d of its %.4g on average. Those turns fail (HTTP 400, as vLLM refuses them) and the rest of their conversations are never sent, counted as failed in error_rate. Lower turns, input_tokens or output_tokens, or raise max_model_len.",
		c.Name, math.Round(per), c.PrefixTokens, maxModelLen, max(1, first), turns)}
}

// turns reads a conversation's number of turns: a whole number, or a distribution whose
// draws are whole turns, at least one and at most MaxTurns.
func (d *decoder) turns(a *attrs) workload.Dist {
	const what = "a whole number of turns, or fixed(n), uniform(min, max), normal(mean, sd) or lognormal(mean, sigma)"
	v, ok := a.value("turns", cty.DynamicPseudoType, what)
	if !ok {
		return workload.Dist{}
	}
	var dist workload.Dist
	if v.Type() == cty.Number {
		dist = workload.Dist{Kind: workload.DistFixed, A: float(v)}
	} else if s, ok := asShape(v); ok && s.family == familyDist {
		dist = workload.Dist{Kind: workload.DistKind(s.kind), A: s.a, B: s.b}
	} else {
		a.errorf("turns", "Not a number of turns", "The attribute turns of %s must be %s.", a.block, what)
		return workload.Dist{}
	}
	if dist.Kind == workload.DistFixed {
		dist.B = 0
		if dist.A < 1 || !whole(dist.A) {
			a.errorf("turns", "Invalid number of turns", "The attribute turns of %s is %g; a conversation has a whole number of turns, at least 1.", a.block, dist.A)
			return workload.Dist{}
		}
	}
	if top := max(dist.A, dist.B*float64(btoi(dist.Kind == workload.DistUniform))); top > workload.MaxTurns {
		a.errorf("turns", "Too many turns", "The attribute turns of %s reaches %g turns; a conversation may have at most %d.", a.block, top, workload.MaxTurns)
		return workload.Dist{}
	}
	return dist
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// dist reads a length distribution: a constructor call, or a plain number for fixed(n).
func (d *decoder) dist(a *attrs, name string) workload.Dist {
	const what = "fixed(n), uniform(min, max), normal(mean, sd) or lognormal(mean, sigma)"
	v, ok := a.value(name, cty.DynamicPseudoType, what)
	if !ok {
		return workload.Dist{}
	}
	if v.Type() == cty.Number {
		f := float(v)
		if f < 1 || !whole(f) || f > workload.MaxTokens {
			a.errorf(name, "Invalid length", "A fixed %s must be a whole number of tokens, at least 1 and at most %d.", name, workload.MaxTokens)
			return workload.Dist{}
		}
		return workload.Dist{Kind: workload.DistFixed, A: f}
	}
	s, ok := asShape(v)
	if !ok || s.family != familyDist {
		a.errorf(name, "Not a length distribution", "The attribute %s of %s must be %s.", name, a.block, what)
		return workload.Dist{}
	}
	dist := workload.Dist{Kind: workload.DistKind(s.kind), A: s.a, B: s.b}
	if dist.Kind == workload.DistFixed {
		dist.B = 0
	}
	if top := dist.A; top > workload.MaxTokens || (dist.Kind == workload.DistUniform && dist.B > workload.MaxTokens) {
		a.errorf(name, "Length too large", "The %s of %s reaches beyond %d tokens, the longest request frontier sends (workload.MaxTokens).", name, a.block, workload.MaxTokens)
		return workload.Dist{}
	}
	return dist
}

func (d *decoder) arrival(a *attrs) workload.Arrival {
	const what = "poisson(rate), constant(rate), gamma(rate, burstiness), concurrency(n), immediate() or trace(\"file.jsonl\")"
	v, ok := a.value("arrival", cty.DynamicPseudoType, what)
	if !ok {
		return workload.Arrival{}
	}
	s, ok := asShape(v)
	if !ok || s.family != familyArrival {
		a.errorf("arrival", "Not an arrival process", "The attribute arrival of %s must be %s.", a.block, what)
		return workload.Arrival{}
	}
	ar := workload.Arrival{Kind: workload.ArrivalKind(s.kind)}
	switch ar.Kind {
	case workload.ArrivalPoisson, workload.ArrivalConstant:
		ar.Rate = s.a
	case workload.ArrivalGamma:
		ar.Rate, ar.Burstiness = s.a, s.b
	case workload.ArrivalConcurrency:
		ar.Concurrency = int(s.a)
	case workload.ArrivalTrace:
		ar.TraceFile = s.path
		for _, w := range workload.TraceWarnings(s.path) {
			a.diags = a.diags.Append(warningAt(a.rangeOf("arrival"), "Long wait in the trace", "In %s: %s.", a.block, w))
		}
	}
	return ar
}

// decodeSLOBlock reads an slo block. A key K whose K_ms is a metric takes a duration; a key
// that is a metric takes a number and is an upper bound; min_<metric> is a lower bound. It
// returns the bounds and, for each, the range of the attribute that sets it.
func (d *decoder) decodeSLOBlock(b *hcl.Block) ([]workload.Bound, []hcl.Range, hcl.Diagnostics) {
	attrMap, diags := b.Body.JustAttributes()
	var bounds []workload.Bound
	var ranges []hcl.Range
	for _, at := range sortedAttributes(attrMap) {
		a := &attrs{ctx: d.ctx, dir: d.dir, block: "slo", m: attrMap}
		key := at.Name
		switch {
		case workload.IsMetric(key + "_ms"):
			s := a.str(key, "")
			if !a.diags.HasErrors() {
				dur, err := parseDuration(s)
				if err != nil {
					a.errorf(key, "Invalid duration", "The SLO %s is %q, which is not a duration: %s.", key, s, err)
				} else {
					bounds = append(bounds, workload.Bound{Metric: key + "_ms", Value: float64(dur) / float64(time.Millisecond)})
				}
			}
		case workload.IsMetric(key):
			f := a.number(key, 0)
			if !a.diags.HasErrors() {
				bounds = append(bounds, workload.Bound{Metric: key, Value: f})
			}
		case strings.HasPrefix(key, "min_") && workload.IsMetric(strings.TrimPrefix(key, "min_")):
			f := a.number(key, 0)
			if !a.diags.HasErrors() {
				bounds = append(bounds, workload.Bound{Metric: strings.TrimPrefix(key, "min_"), Value: f, AtLeast: true})
			}
		default:
			var keys []string
			for _, m := range workload.MetricNames() {
				keys = append(keys, m, "min_"+m)
			}
			a.diags = a.diags.Append(errorAt(at.NameRange, "Unknown SLO",
				"%q is not a metric an SLO can bound.%s Use a latency such as ttft_p99 = \"600ms\" (any of %s), a metric name with a number for an upper bound (such as error_rate = 0.01), or min_<metric> for a lower bound (such as min_output_token_throughput = 1000).",
				key, didYouMean(key, append(latencyKeys(), keys...)), strings.Join(latencyKeys(), ", ")))
		}
		diags = diags.Extend(a.diags)
		for len(ranges) < len(bounds) {
			ranges = append(ranges, at.Range)
		}
	}
	return bounds, ranges, diags
}

// latencyKeys lists the SLO keys that take a duration.
func latencyKeys() []string {
	var keys []string
	for _, m := range workload.MetricNames() {
		if k, ok := strings.CutSuffix(m, "_ms"); ok {
			keys = append(keys, k)
		}
	}
	return keys
}

func (d *decoder) decodeQualityBlock(b *hcl.Block) (*QualityGate, map[string]hcl.Expression, hcl.Diagnostics) {
	_, a := d.content(b, &hcl.BodySchema{Attributes: attrSchema(
		"dataset", "scorer", "baseline", "min", "max_drop", "judge_model", "judge_rubric", "judge_url", "samples", "description")})
	q := &QualityGate{Name: b.Labels[0]}
	if !hclsyntax.ValidIdentifier(q.Name) {
		a.diags = a.diags.Append(errorAt(b.LabelRanges[0], "Invalid quality gate name",
			"A quality gate is referred to as quality.<name>.score, so its name must be an identifier; %q is not.", q.Name))
	}
	_ = a.str("description", "")
	a.require("dataset", "the evaluation set, a JSONL file")
	a.require("scorer", "how outputs are scored: one of "+quoteList(scorerNames()))
	q.Dataset = a.path("dataset")
	q.Scorer = a.oneOf("scorer", "", scorerNames())
	if a.has("min") {
		f := a.number("min", 0)
		q.Min = &f
	}
	if a.has("max_drop") {
		f := a.fraction("max_drop", 0, 0, 1)
		q.MaxDrop = &f
	}
	q.JudgeModel = a.str("judge_model", "")
	q.JudgeRubric = a.str("judge_rubric", "")
	q.JudgeURL = a.str("judge_url", "")
	q.Samples = int(a.atLeast("samples", 0, 0))
	if q.Scorer == "judge" && q.JudgeModel == "" && !a.diags.HasErrors() {
		a.errorf("scorer", "Judge without a model", "Quality gate %q scores with a judge, so it needs judge_model, the Ollama model that judges.", q.Name)
	}
	if q.Min == nil && q.MaxDrop == nil && !a.diags.HasErrors() {
		a.diags = a.diags.Append(warningAt(b.DefRange, "Quality gate without a bound",
			"Quality gate %q sets neither min nor max_drop, so it is measured but never rejects a configuration.", q.Name))
	}
	var items map[string]hcl.Expression
	if at, ok := a.m["baseline"]; ok {
		items = map[string]hcl.Expression{}
		pairs, ds := hcl.ExprMap(at.Expr)
		if ds.HasErrors() {
			a.errorf("baseline", "Wrong type", "The baseline of quality gate %q must be an object of knob values, such as { quantization = \"none\" }.", q.Name)
		} else {
			for _, p := range pairs {
				key := hcl.ExprAsKeyword(p.Key)
				if key == "" {
					kv, ds := p.Key.Value(d.ctx)
					a.diags = a.diags.Extend(ds)
					if ds.HasErrors() || kv.Type() != cty.String || kv.IsNull() {
						continue
					}
					key = kv.AsString()
				}
				items[key] = p.Value
			}
		}
		if (q.MaxDrop != nil || q.Scorer == "baseline_agreement") && len(items) == 0 && !a.diags.HasErrors() {
			a.errorf("baseline", "Empty baseline", "Quality gate %q compares against a baseline, so the baseline must set at least one knob.", q.Name)
		}
	} else if q.MaxDrop != nil || q.Scorer == "baseline_agreement" {
		a.diags = a.diags.Append(errorAt(b.DefRange, "Missing baseline",
			"Quality gate %q compares against a baseline (max_drop or the baseline_agreement scorer), so it needs baseline = { knob = value, ... }.", q.Name))
	}
	return q, items, a.diags
}
