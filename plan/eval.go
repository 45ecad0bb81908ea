package plan

import (
	"fmt"
	"math"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// ParallelKnobs are the engine options whose product is the GPUs one engine instance uses.
func ParallelKnobs() []string {
	return []string{"tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size"}
}

// CheckRules evaluates every rule against cfg and returns the rules it breaks, in declaration
// order. The error is for a rule that cannot be evaluated (a knob missing from cfg, a
// condition that is not a boolean).
func (p *Plan) CheckRules(cfg Config) ([]Violation, error) {
	var out []Violation
	tv := TrialValues{Config: cfg}
	for _, r := range p.Rules {
		where := fmt.Sprintf("rule %q", r.Name)
		ok, err := p.evalCondition(r.Condition, tv, where)
		if err != nil {
			return nil, err
		}
		if !ok {
			out = append(out, Violation{Rule: r.Name, Message: p.conditionMessage(r.Message, r.Condition)})
		}
	}
	return out, nil
}

// EvalChecks evaluates every check against a trial's values, in declaration order. The error is
// for a check that cannot be evaluated, such as one that reads a metric the measurement lacks.
func (p *Plan) EvalChecks(tv TrialValues) ([]CheckResult, error) {
	out := make([]CheckResult, 0, len(p.Checks))
	for _, c := range p.Checks {
		ok, err := p.evalCondition(c.Condition, tv, fmt.Sprintf("check %q", c.Name))
		if err != nil {
			return nil, err
		}
		res := CheckResult{Name: c.Name, Passed: ok}
		if !ok {
			res.Message = p.conditionMessage(c.Message, c.Condition)
		}
		out = append(out, res)
	}
	return out, nil
}

// EvalObjectives returns the value of each objective, in p.Objectives order. A metric or
// quality score that an objective reads and the trial lacks, or that is NaN or infinite, is an
// error that names it, as is an objective whose value is not a finite number.
func (p *Plan) EvalObjectives(tv TrialValues) ([]float64, error) {
	out := make([]float64, 0, len(p.Objectives))
	for _, o := range p.Objectives {
		where := fmt.Sprintf("objective %q", o.Name)
		v, err := p.evalExpr(o.Expr, tv, where)
		if err != nil {
			return nil, err
		}
		n, err := convert.Convert(v, cty.Number)
		if err != nil || n.IsNull() {
			return nil, fmt.Errorf("%s: the value is %s, not a number", where, v.Type().FriendlyName())
		}
		f, _ := n.AsBigFloat().Float64()
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, fmt.Errorf("%s: the value is %v, not a finite number", where, f)
		}
		out = append(out, f)
	}
	return out, nil
}

// conditionMessage is a rule's or check's message, or its condition when it has none.
func (p *Plan) conditionMessage(msg string, cond hcl.Expression) string {
	if msg != "" {
		return msg
	}
	return "condition " + p.ExprText(cond) + " is false"
}

func (p *Plan) evalCondition(expr hcl.Expression, tv TrialValues, where string) (bool, error) {
	v, err := p.evalExpr(expr, tv, where)
	if err != nil {
		return false, err
	}
	b, err := convert.Convert(v, cty.Bool)
	if err != nil || b.IsNull() {
		return false, fmt.Errorf("%s: the condition is %s, not true or false", where, v.Type().FriendlyName())
	}
	return b.True(), nil
}

// evalExpr evaluates an expression for a trial, after checking that everything it reads is
// there.
func (p *Plan) evalExpr(expr hcl.Expression, tv TrialValues, where string) (v cty.Value, err error) {
	if expr == nil {
		return cty.NilVal, fmt.Errorf("%s has no expression", where)
	}
	ctx, err := p.trialContext(expr, tv, where)
	if err != nil {
		return cty.NilVal, err
	}
	defer func() {
		// Arithmetic on big floats panics on NaN results (such as Inf - Inf); report it as an
		// evaluation error instead.
		if r := recover(); r != nil {
			v, err = cty.NilVal, fmt.Errorf("%s: the expression has no value (%v)", where, r)
		}
	}()
	val, diags := expr.Value(ctx)
	if diags.HasErrors() {
		return cty.NilVal, fmt.Errorf("%s: %w", where, diags)
	}
	if !val.IsWhollyKnown() || val.IsNull() {
		return cty.NilVal, fmt.Errorf("%s: the expression has no value", where)
	}
	return val, nil
}

// trialContext builds the evaluation context of one trial. It checks first that every knob,
// metric and quality score expr reads is present and finite, to name what is missing.
func (p *Plan) trialContext(expr hcl.Expression, tv TrialValues, where string) (*hcl.EvalContext, error) {
	for _, t := range expr.Variables() {
		if err := tv.lookup(t, where); err != nil {
			return nil, err
		}
	}
	knobs := map[string]cty.Value{}
	for name, v := range tv.Config {
		cv, err := ctyValue(v)
		if err != nil {
			return nil, fmt.Errorf("%s: knob %q: %w", where, name, err)
		}
		knobs[name] = cv
	}
	sku := p.Hardware.SKU
	if s, ok := tv.Config["sku"].(string); ok {
		sku = s
	}
	price := p.Hardware.PricePerGPUHour
	if tv.PricePerGPUHour > 0 {
		price = tv.PricePerGPUHour
	}
	gpus := tv.GPUs
	if gpus <= 0 {
		gpus = tv.Config.GPUs()
	}
	metrics := map[string]cty.Value{}
	if m := tv.Measurement; m != nil {
		for name, r := range m.Workloads {
			if r != nil {
				metrics[name] = finiteMetrics(r.Metrics)
			}
		}
		if m.Total != nil {
			metrics["total"] = finiteMetrics(m.Total.Metrics)
		}
	}
	quality := map[string]cty.Value{}
	for name, s := range tv.Quality {
		if !math.IsNaN(s) && !math.IsInf(s, 0) {
			quality[name] = cty.ObjectVal(map[string]cty.Value{"score": cty.NumberFloatVal(s)})
		}
	}
	return &hcl.EvalContext{
		Variables: map[string]cty.Value{
			rootVar:  objectOf(p.vars),
			rootKnob: objectOf(knobs),
			rootModel: cty.ObjectVal(map[string]cty.Value{
				"name":          cty.StringVal(p.Model.Name),
				"architecture":  cty.StringVal(p.Model.Architecture),
				"max_model_len": cty.NumberIntVal(int64(p.Model.MaxModelLen)),
				"gguf":          cty.StringVal(p.Model.GGUF),
				"config_json":   cty.StringVal(p.Model.ConfigJSON),
			}),
			rootHardware: cty.ObjectVal(map[string]cty.Value{
				"sku":                cty.StringVal(sku),
				"price_per_gpu_hour": cty.NumberFloatVal(price),
			}),
			rootTrial:   cty.ObjectVal(map[string]cty.Value{"gpus": cty.NumberIntVal(int64(gpus))}),
			rootMetric:  objectOf(metrics),
			rootQuality: objectOf(quality),
		},
		Functions: mathFunctions(),
	}, nil
}

// lookup checks that a trial has what a traversal reads.
func (tv TrialValues) lookup(t hcl.Traversal, where string) error {
	name, _ := step(t, 1)
	switch t.RootName() {
	case rootKnob:
		if _, ok := tv.Config[name]; !ok {
			return fmt.Errorf("%s: the configuration has no value for knob %q", where, name)
		}
	case rootMetric:
		metric, _ := step(t, 2)
		ref := fmt.Sprintf("metric.%s.%s", name, metric)
		if tv.Measurement == nil {
			return fmt.Errorf("%s: %s: the trial has no measurement", where, ref)
		}
		r := tv.Measurement.Total
		if name != "total" {
			r = tv.Measurement.Workloads[name]
		}
		if r == nil {
			return fmt.Errorf("%s: %s: the measurement has no results for %q", where, ref, name)
		}
		v, ok := r.Metrics[metric]
		if !ok {
			return fmt.Errorf("%s: %s is not in the measurement", where, ref)
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%s: %s is %v", where, ref, v)
		}
	case rootQuality:
		s, ok := tv.Quality[name]
		if !ok {
			return fmt.Errorf("%s: quality.%s.score: the trial has no score for quality gate %q", where, name, name)
		}
		if math.IsNaN(s) || math.IsInf(s, 0) {
			return fmt.Errorf("%s: quality.%s.score is %v", where, name, s)
		}
	}
	return nil
}

func finiteMetrics(m map[string]float64) cty.Value {
	vals := map[string]cty.Value{}
	for k, v := range m {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			vals[k] = cty.NumberFloatVal(v)
		}
	}
	return objectOf(vals)
}

// ctyValue converts a knob value to a plan value.
func ctyValue(v Value) (cty.Value, error) {
	switch x := v.(type) {
	case int64:
		return cty.NumberIntVal(x), nil
	case int:
		return cty.NumberIntVal(int64(x)), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return cty.NilVal, fmt.Errorf("%v is not a finite number", x)
		}
		return cty.NumberFloatVal(x), nil
	case string:
		return cty.StringVal(x), nil
	case bool:
		return cty.BoolVal(x), nil
	}
	return cty.NilVal, fmt.Errorf("%v (%T) is not an int64, float64, string or bool", v, v)
}
