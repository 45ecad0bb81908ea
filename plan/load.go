package plan

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/frontier-llm/frontier/inputfile"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
)

type evalFuncs = map[string]function.Function

// SensitiveValue stands for the value of a variable declared with sensitive = true in
// Plan.Variables.
const SensitiveValue = `"(sensitive)"`

// Load reads, decodes and checks the plan in filename. Relative paths in the plan are relative
// to the plan file's folder. When the plan is invalid the error is a *DiagnosticsError that
// holds every diagnostic; an unreadable file is an ordinary error, and so is one that is not
// a regular file (a named pipe, a device), is larger than MaxPlanBytes or is not UTF-8 text:
// those are refused before anything is parsed, so that no input keeps Load for long.
func Load(filename string, opts LoadOptions) (*Plan, error) {
	src, err := inputfile.ReadText(filename, MaxPlanBytes)
	if err != nil {
		return nil, fmt.Errorf("read plan: %w (a plan is an HCL text file of at most %s)", err, inputfile.Size(MaxPlanBytes))
	}
	return loadSource(filename, src, opts)
}

// loadSource decodes src as the plan file filename.
func loadSource(filename string, src []byte, opts LoadOptions) (*Plan, error) {
	abs, err := filepath.Abs(filename)
	if err != nil {
		return nil, fmt.Errorf("plan path: %w", err)
	}
	dir := filepath.Dir(abs)
	parser := hclparse.NewParser()
	fail := func(diags hcl.Diagnostics) (*Plan, error) {
		return nil, &DiagnosticsError{Diagnostics: sortDiagnostics(diags), Files: parser.Files()}
	}
	if diags := checkNesting(src, filename); diags.HasErrors() {
		return fail(diags)
	}
	file, diags := parser.ParseHCL(src, filename)
	if diags.HasErrors() || file == nil {
		return fail(diags)
	}
	content, ds := file.Body.Content(rootSchema())
	diags = diags.Extend(ds)

	fns := planFunctions(dir)
	var vars []*variable
	seenVar := map[string]hcl.Range{}
	for _, b := range content.Blocks.OfType("variable") {
		if prev, dup := seenVar[b.Labels[0]]; dup {
			diags = diags.Append(duplicate(b, "variable", prev))
			continue
		}
		seenVar[b.Labels[0]] = b.DefRange
		v, ds := decodeVariableBlock(b, fns)
		diags = diags.Extend(ds)
		vars = append(vars, v)
	}
	vals, ds := resolveVariables(vars, opts, parser, fns)
	diags = diags.Extend(ds)

	p := &Plan{Filename: abs, Dir: dir, src: src, vars: vals, Variables: map[string]string{}}
	resolved := map[string]string{} // every value, for the plan hash
	for name, v := range vals {
		resolved[name] = renderValue(v)
		p.Variables[name] = resolved[name]
	}
	for _, v := range vars {
		if v.sensitive {
			p.Variables[v.name] = SensitiveValue
			if val, ok := vals[v.name]; ok {
				p.sensitive = append(p.sensitive, sensitiveStrings(val)...)
			}
		}
	}
	d := &decoder{dir: dir, ctx: &hcl.EvalContext{
		Variables: map[string]cty.Value{"var": objectOf(vals)},
		Functions: fns,
	}}
	diags = diags.Extend(p.decodeBlocks(d, content.Blocks))
	diags = diags.Extend(p.checkReferences())
	diags = diags.Extend(p.checkCatalogs(content.Blocks, opts))

	if diags.HasErrors() {
		return fail(diags)
	}
	p.files = parser.Files()
	p.Notes = d.notes
	p.warnings = sortDiagnostics(diags)
	for _, w := range p.warnings {
		p.Warnings = append(p.Warnings, w.Error())
	}
	p.Hash = p.hash(resolved)
	p.SpaceHash = p.spaceHash()
	return p, nil
}

// SensitiveValues returns the values of the variables declared sensitive = true, as text
// (each string of a collection on its own), for redaction wherever the plan's engine args,
// env or other values that used them are shown or stored.
func (p *Plan) SensitiveValues() []string { return slices.Clone(p.sensitive) }

// sensitiveStrings lists the text forms of a sensitive value: a string as it is, a number or
// bool as HCL prints it, and the elements of a collection one by one.
func sensitiveStrings(v cty.Value) []string {
	if v.IsNull() || !v.IsKnown() {
		return nil
	}
	ty := v.Type()
	switch {
	case ty == cty.String:
		return []string{v.AsString()}
	case ty.IsPrimitiveType():
		return []string{strings.Trim(renderValue(v), `"`)}
	case ty.IsListType() || ty.IsTupleType() || ty.IsSetType() || ty.IsMapType() || ty.IsObjectType():
		var out []string
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			out = append(out, sensitiveStrings(e)...)
		}
		return out
	}
	return nil
}

func duplicate(b *hcl.Block, kind string, prev hcl.Range) *hcl.Diagnostic {
	rng := b.DefRange
	if len(b.LabelRanges) > 0 {
		rng = b.LabelRanges[0]
	}
	name := kind
	if len(b.Labels) > 0 {
		name = fmt.Sprintf("%s %q", kind, b.Labels[0])
	}
	return errorAt(rng, "Duplicate "+kind, "The plan already has a %s block at %s; names must be unique.", name, prev)
}

// decodeBlocks decodes every block but the variables, in declaration order within each type,
// and checks what depends on several blocks.
func (p *Plan) decodeBlocks(d *decoder, blocks hcl.Blocks) hcl.Diagnostics {
	var diags hcl.Diagnostics
	single := func(kind string) *hcl.Block {
		bs := blocks.OfType(kind)
		for _, b := range bs[min(1, len(bs)):] {
			diags = diags.Append(duplicate(b, kind, bs[0].DefRange))
		}
		if len(bs) == 0 {
			return nil
		}
		return bs[0]
	}
	if b := single("study"); b != nil {
		s, ds := d.decodeStudyBlock(b)
		diags = diags.Extend(ds)
		p.Study = *s
	} else {
		base := filepath.Base(p.Filename)
		p.Study = Study{Name: strings.TrimSuffix(base, filepath.Ext(base)), Trials: DefaultTrials, Sampler: DefaultSampler, Confirm: DefaultConfirm}
	}
	if b := single("model"); b != nil {
		m, ds := d.decodeModelBlock(b)
		diags = diags.Extend(ds)
		p.Model = *m
	} else {
		diags = diags.Append(missingBlock("model", `model { name = "meta-llama/Llama-3.1-8B-Instruct" }`))
	}
	engineBlock := single("engine")
	engineOK := false
	if engineBlock != nil {
		e, ds := d.decodeEngineBlock(engineBlock)
		diags = diags.Extend(ds)
		p.Engine = *e
		engineOK = !ds.HasErrors()
	} else {
		diags = diags.Append(missingBlock("engine", `engine "vllm" {}`))
	}
	hardwareBlock := single("hardware")
	p.Hardware = Hardware{GPUs: GPUSelection{All: true}}
	if hardwareBlock != nil {
		h, ds := d.decodeHardwareBlock(hardwareBlock)
		diags = diags.Extend(ds)
		p.Hardware = *h
	}

	if hardwareBlock != nil && p.Engine.Kind == EngineVLLM {
		diags = diags.Extend(checkVLLMGPUs(hardwareBlock, p.Hardware.GPUs))
	}

	knobRanges := map[string]hcl.Range{}
	var decoded hcl.Blocks // the knobs whose blocks decoded without errors
	for _, b := range blocks.OfType("knob") {
		if prev, dup := knobRanges[b.Labels[0]]; dup {
			diags = diags.Append(duplicate(b, "knob", prev))
			continue
		}
		knobRanges[b.Labels[0]] = b.DefRange
		k, ds := d.decodeKnobBlock(b)
		diags = diags.Extend(ds)
		p.Knobs = append(p.Knobs, *k)
		if !ds.HasErrors() {
			decoded = append(decoded, b)
		}
		if k.Name == "sku" && !ds.HasErrors() {
			diags = diags.Extend(p.checkSKUKnob(b, k))
		}
	}
	diags = diags.Extend(p.checkDisaggKnobs(blocks.OfType("knob")))
	if engineOK {
		// Whatever else is wrong with the plan: a misspelt knob is often why a rule fails.
		diags = diags.Extend(p.checkVLLMFlags(engineBlock, decoded))
	}
	seen := map[string]hcl.Range{}
	unique := func(b *hcl.Block, kind string) bool {
		key := kind + "\x00" + b.Labels[0]
		if prev, dup := seen[key]; dup {
			diags = diags.Append(duplicate(b, kind, prev))
			return false
		}
		seen[key] = b.DefRange
		return true
	}
	for _, b := range blocks.OfType("rule") {
		if unique(b, "rule") {
			name, msg, cond, ds := d.decodeConditionBlock(b)
			diags = diags.Extend(ds)
			p.Rules = append(p.Rules, Rule{Name: name, Message: msg, Condition: cond})
		}
	}
	for _, b := range blocks.OfType("workload") {
		if unique(b, "workload") {
			c, ds := d.decodeWorkloadBlock(b)
			diags = diags.Extend(ds)
			if !ds.HasErrors() {
				diags = diags.Extend(historyWarning(b, c, p.Model.MaxModelLen))
			}
			p.Workloads = append(p.Workloads, *c)
		}
	}
	for _, b := range blocks.OfType("check") {
		if unique(b, "check") {
			name, msg, cond, ds := d.decodeConditionBlock(b)
			diags = diags.Extend(ds)
			p.Checks = append(p.Checks, Check{Name: name, Message: msg, Condition: cond})
		}
	}
	for _, b := range blocks.OfType("quality") {
		if unique(b, "quality") {
			q, items, ds := d.decodeQualityBlock(b)
			diags = diags.Extend(ds)
			diags = diags.Extend(p.decodeBaseline(d, q, items))
			p.Quality = append(p.Quality, *q)
		}
	}
	for _, b := range blocks.OfType("objective") {
		if unique(b, "objective") {
			o, ds := d.decodeObjectiveBlock(b)
			diags = diags.Extend(ds)
			p.Objectives = append(p.Objectives, *o)
		}
	}

	if b := single("pressure"); b != nil {
		ps, ds := d.decodePressureBlock(b, p.Workloads)
		diags = diags.Extend(ds)
		p.Pressure = ps
	}

	if len(p.Workloads) == 0 {
		diags = diags.Append(missingBlock("workload", `workload "chat" { ... }`))
	}
	if len(p.Objectives) == 0 {
		diags = diags.Append(missingBlock("objective", `objective "throughput" { maximize = metric.total.output_token_throughput }`))
	}
	if p.Engine.Kind == EngineSim && p.Hardware.SKU == "" && p.Knob("sku") == nil && engineBlock != nil {
		rng := engineBlock.DefRange
		if hardwareBlock != nil {
			rng = hardwareBlock.DefRange
		}
		diags = diags.Append(errorAt(rng, "Simulated engine without a GPU SKU",
			"The sim engine simulates a GPU model, so the plan needs hardware { sku = \"h100-sxm\" } (or a knob \"sku\" to compare several)."))
	}
	if p.Engine.Kind == EngineSim && p.Model.Architecture == "" && p.Model.ConfigJSON == "" && engineBlock != nil {
		diags = diags.Append(errorAt(engineBlock.DefRange, "Simulated engine without an architecture",
			"The sim engine needs the model's architecture: set model.architecture to a catalog entry (such as \"llama-3.1-8b\") or model.config_json to a Hugging Face config.json."))
	}
	return diags
}

func article(word string) string {
	if strings.ContainsRune("aeiou", rune(word[0])) {
		return "an"
	}
	return "a"
}

func missingBlock(kind, example string) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Missing " + kind + " block",
		Detail:   fmt.Sprintf("A plan needs %s %s block, such as %s.", article(kind), kind, example),
	}
}

// checkSKUKnob checks a knob named sku: its values are GPU SKU names, searched with the sim
// engine only.
func (p *Plan) checkSKUKnob(b *hcl.Block, k *Knob) hcl.Diagnostics {
	var diags hcl.Diagnostics
	if p.Engine.Kind != "" && p.Engine.Kind != EngineSim {
		diags = diags.Append(errorAt(b.LabelRanges[0], "The hardware can only be searched when simulated",
			"A knob \"sku\" searches over GPU models, which only the sim engine can do; engine %q runs on the GPUs of this host.", p.Engine.Kind))
	}
	if len(k.Values) > 0 && k.Kind != KnobCategorical {
		diags = diags.Append(errorAt(b.DefRange, "Invalid sku knob", "The values of knob \"sku\" must be GPU SKU names, such as [\"h100-sxm\", \"h200\"]."))
	}
	if len(k.Values) > 0 {
		if _, ok := k.Values[0].(string); !ok {
			diags = diags.Append(errorAt(b.DefRange, "Invalid sku knob", "The values of knob \"sku\" must be GPU SKU names, such as [\"h100-sxm\", \"h200\"]."))
		}
	}
	if len(k.Values) == 0 && len(diags) == 0 {
		diags = diags.Append(errorAt(b.DefRange, "Invalid sku knob", "The knob \"sku\" must list GPU SKU names with values = [...]."))
	}
	return diags
}

// decodeBaseline evaluates a quality gate's baseline and checks each value against its knob.
func (p *Plan) decodeBaseline(d *decoder, q *QualityGate, items map[string]hcl.Expression) hcl.Diagnostics {
	var diags hcl.Diagnostics
	if items == nil {
		return nil
	}
	q.Baseline = Config{}
	for _, name := range slices.Sorted(maps.Keys(items)) {
		expr := items[name]
		k := p.Knob(name)
		if k == nil {
			diags = diags.Append(errorAt(expr.Range(), "Unknown knob in baseline",
				"The baseline of quality gate %q sets %q, which is not a knob of this plan; the knobs are %s.%s", q.Name, name, quoteList(p.knobNames()), didYouMean(name, p.knobNames())))
			continue
		}
		v, ds := expr.Value(d.ctx)
		diags = diags.Extend(ds)
		if ds.HasErrors() {
			continue
		}
		val, err := k.fromCty(v)
		if err == nil && !k.Contains(val) {
			err = fmt.Errorf("%s is outside the knob's domain %s", renderValue(v), k.DomainString())
		}
		if err != nil {
			diags = diags.Append(errorAt(expr.Range(), "Baseline outside the knob's domain",
				"The baseline of quality gate %q sets knob %q to a value it cannot take: %s.", q.Name, name, err))
			continue
		}
		q.Baseline[name] = val
	}
	return diags
}

// Knob returns the knob called name, or nil.
func (p *Plan) Knob(name string) *Knob {
	for i := range p.Knobs {
		if p.Knobs[i].Name == name {
			return &p.Knobs[i]
		}
	}
	return nil
}

func (p *Plan) knobNames() []string {
	names := make([]string, len(p.Knobs))
	for i, k := range p.Knobs {
		names[i] = k.Name
	}
	return names
}

// objectOf builds an object value from a map, which may be empty.
func objectOf(m map[string]cty.Value) cty.Value {
	if len(m) == 0 {
		return cty.EmptyObjectVal
	}
	return cty.ObjectVal(m)
}

// checkCatalogs checks the SKU and architecture names against the catalogs in opts.
func (p *Plan) checkCatalogs(blocks hcl.Blocks, opts LoadOptions) hcl.Diagnostics {
	var diags hcl.Diagnostics
	severity := hcl.DiagWarning
	consequence := "frontier has no specs or price for it, so the memory pre-screen and the cost metric are unavailable"
	if p.Engine.Kind == EngineSim {
		severity = hcl.DiagError
		consequence = "the simulator cannot simulate it"
	}
	check := func(name string, known []string, what, catalogCmd string, rng hcl.Range) {
		if known == nil || name == "" || contains(known, normalizeName(name)) {
			return
		}
		diags = diags.Append(&hcl.Diagnostic{
			Severity: severity,
			Summary:  "Unknown " + what,
			Detail: fmt.Sprintf("%q is not in frontier's catalog of %ss (%s lists them), so %s. Known: %s.",
				name, what, catalogCmd, consequence, strings.Join(known, ", ")),
			Subject: rng.Ptr(),
		})
	}
	attrRange := func(kind, attr string) hcl.Range {
		for _, b := range blocks.OfType(kind) {
			attrs, _ := b.Body.JustAttributes()
			if a, ok := attrs[attr]; ok {
				return a.Expr.Range()
			}
			return b.DefRange
		}
		return hcl.Range{}
	}
	check(p.Hardware.SKU, opts.SKUs, "GPU SKU", "frontier hw --json", attrRange("hardware", "sku"))
	if k := p.Knob("sku"); k != nil {
		for _, b := range blocks.OfType("knob") {
			if b.Labels[0] != "sku" {
				continue
			}
			for _, v := range k.Values {
				if s, ok := v.(string); ok {
					check(s, opts.SKUs, "GPU SKU", "frontier hw --json", b.DefRange)
				}
			}
		}
	}
	if p.Model.ConfigJSON == "" {
		check(p.Model.Architecture, opts.Architectures, "model architecture", "the simulator's catalog", attrRange("model", "architecture"))
	}
	return diags
}

// normalizeName folds a catalog name as the catalogs do: lower case, "_" as "-".
func normalizeName(s string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s)), "_", "-")
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
