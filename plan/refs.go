package plan

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/frontier-llm/frontier/workload"
)

// Roots of the names an expression evaluated per trial can use.
const (
	rootVar      = "var"
	rootKnob     = "knob"
	rootModel    = "model"
	rootHardware = "hardware"
	rootTrial    = "trial"
	rootMetric   = "metric"
	rootQuality  = "quality"
)

// modelAttributes, hardwareAttributes and trialAttributes are what model.*, hardware.* and
// trial.* hold.
func modelAttributes() []string {
	return []string{"name", "architecture", "max_model_len", "gguf", "config_json"}
}
func hardwareAttributes() []string { return []string{"sku", "price_per_gpu_hour"} }
func trialAttributes() []string    { return []string{"gpus"} }

// checkReferences checks every name used by rules, checks and objectives, and the functions
// they call. Rules run before a trial, so they cannot see its measurement or quality.
func (p *Plan) checkReferences() hcl.Diagnostics {
	var diags hcl.Diagnostics
	before := []string{rootVar, rootKnob, rootModel, rootHardware, rootTrial}
	after := append(before[:len(before):len(before)], rootMetric, rootQuality)
	for _, r := range p.Rules {
		diags = diags.Extend(p.checkExpr(r.Condition, fmt.Sprintf("rule %q", r.Name), before))
	}
	for _, c := range p.Checks {
		diags = diags.Extend(p.checkExpr(c.Condition, fmt.Sprintf("check %q", c.Name), after))
	}
	for _, o := range p.Objectives {
		diags = diags.Extend(p.checkExpr(o.Expr, fmt.Sprintf("objective %q", o.Name), after))
	}
	return diags
}

func (p *Plan) checkExpr(expr hcl.Expression, where string, roots []string) hcl.Diagnostics {
	if expr == nil {
		return nil
	}
	var diags hcl.Diagnostics
	for _, t := range expr.Variables() {
		if d := p.checkTraversal(t, where, roots); d != nil {
			diags = diags.Append(d)
		}
	}
	if se, ok := expr.(hclsyntax.Expression); ok {
		fns := mathFunctions()
		_ = hclsyntax.VisitAll(se, func(n hclsyntax.Node) hcl.Diagnostics {
			if call, ok := n.(*hclsyntax.FunctionCallExpr); ok {
				if _, known := fns[call.Name]; !known {
					diags = diags.Append(errorAt(call.NameRange, "Unknown function",
						"The %s calls %s(), which is not available there; it can use %s.", where, call.Name, quoteList(slices.Sorted(maps.Keys(fns)))))
				}
			}
			return nil
		})
	}
	return diags
}

// step returns the name a traversal step selects: an attribute or a string index.
func step(t hcl.Traversal, i int) (string, bool) {
	if i >= len(t) {
		return "", false
	}
	switch s := t[i].(type) {
	case hcl.TraverseAttr:
		return s.Name, true
	case hcl.TraverseIndex:
		if s.Key.Type() == cty.String && !s.Key.IsNull() {
			return s.Key.AsString(), true
		}
	}
	return "", false
}

func (p *Plan) checkTraversal(t hcl.Traversal, where string, roots []string) *hcl.Diagnostic {
	root := t.RootName()
	rng := t.SourceRange()
	allowed := false
	for _, r := range roots {
		allowed = allowed || r == root
	}
	if !allowed {
		known := false
		for _, r := range []string{rootVar, rootKnob, rootModel, rootHardware, rootTrial, rootMetric, rootQuality} {
			known = known || r == root
		}
		if known {
			return errorAt(rng, "Reference not available before the trial",
				"The %s is checked before a trial runs, so it cannot use %s.*; use a check block for conditions on measurements.", where, root)
		}
		return errorAt(rng, "Unknown reference",
			"The %s uses %q, which is not a name a plan knows; expressions can use %s.", where, root, quoteList(prefixAll(roots, ".*")))
	}
	name, ok := step(t, 1)
	switch root {
	case rootVar:
		if !ok {
			return errorAt(rng, "Incomplete reference", "Write var.<name> to use a variable.")
		}
		if _, declared := p.vars[name]; !declared {
			return errorAt(rng, "Unknown variable", "The %s uses var.%s, but the plan declares no variable %q.%s", where, name, name, didYouMean(name, slices.Sorted(maps.Keys(p.vars))))
		}
	case rootKnob:
		if !ok {
			return errorAt(rng, "Incomplete reference", "Write knob.<name> to use a knob's value.")
		}
		if p.Knob(name) == nil {
			return p.unknownKnobRef(rng, where, name)
		}
	case rootModel:
		return memberOf(rng, where, root, name, ok, modelAttributes())
	case rootHardware:
		return memberOf(rng, where, root, name, ok, hardwareAttributes())
	case rootTrial:
		return memberOf(rng, where, root, name, ok, trialAttributes())
	case rootMetric:
		metric, ok2 := step(t, 2)
		if !ok || !ok2 {
			return errorAt(rng, "Incomplete reference", "Write metric.<workload>.<metric> or metric.total.<metric>, such as metric.total.output_token_throughput.")
		}
		if name != "total" && !p.hasWorkload(name) {
			return errorAt(rng, "Unknown workload", "The %s uses metric.%s, but the plan has no workload %q; use one of %s or total.%s", where, name, name, quoteList(p.workloadNames()), didYouMean(name, append(p.workloadNames(), "total")))
		}
		if !workload.IsMetric(metric) {
			return errorAt(rng, "Unknown metric", "%q is not a metric.%s The metrics are %s.", metric, didYouMean(metric, workload.MetricNames()), strings.Join(workload.MetricNames(), ", "))
		}
	case rootQuality:
		attr, ok2 := step(t, 2)
		if !ok || !ok2 {
			return errorAt(rng, "Incomplete reference", "Write quality.<gate>.score to use a quality gate's score.")
		}
		if !p.hasQuality(name) {
			return errorAt(rng, "Unknown quality gate", "The %s uses quality.%s, but the plan has no quality block %q.", where, name, name)
		}
		if attr != "score" {
			return errorAt(rng, "Unknown quality attribute", "A quality gate has only a score: write quality.%s.score.", name)
		}
	}
	return nil
}

// unknownKnobRef reports a reference to a knob the plan does not declare. It suggests a
// declared knob only if that one is a flag of the plan's vLLM line (or frontier's own), so
// that a misspelt knob block is not offered as the fix for a correct reference, and says
// whether the name itself is a flag of the line, with the line's flags nearest to it if not.
func (p *Plan) unknownKnobRef(rng hcl.Range, where, name string) *hcl.Diagnostic {
	detail := fmt.Sprintf("The %s uses knob.%s, but the plan has no knob %q; the knobs are %s.", where, name, name, quoteList(p.knobNames()))
	v := p.flagLine()
	var flags, others []string // the declared knobs that are flags of the line, and those that are not
	for _, k := range p.knobNames() {
		if v == nil || isPseudoKnob(k) || v.Check(k) == nil {
			flags = append(flags, k)
		} else {
			others = append(others, k)
		}
	}
	detail += didYouMean(name, flags)
	if v == nil || isPseudoKnob(name) {
		return errorAt(rng, "Unknown knob", "%s", detail)
	}
	label, flag := p.lineLabel(v), "--"+strings.ReplaceAll(name, "_", "-")
	switch misspelt := nearestName(name, others); {
	case v.Check(name) == nil && misspelt != "":
		detail += fmt.Sprintf(" %s is a flag of %s (%s), and the knob %q, which is not, is probably it misspelt: rename that knob %q.", name, label, flag, misspelt, name)
	case v.Check(name) == nil:
		detail += fmt.Sprintf(" %s is a flag of %s (%s): declare a knob %q to search it.", name, label, flag, name)
	default:
		detail += fmt.Sprintf(" Nor is %s a flag of %s (it has no %s)", name, label, flag)
		if near := v.Nearest(name, 3); len(near) > 0 {
			detail += "; did you mean " + knobList(near) + "?"
		} else {
			detail += "."
		}
	}
	return errorAt(rng, "Unknown knob", "%s", detail)
}

func memberOf(rng hcl.Range, where, root, name string, ok bool, members []string) *hcl.Diagnostic {
	for _, m := range members {
		if ok && m == name {
			return nil
		}
	}
	return errorAt(rng, "Unknown reference", "The %s uses %s.%s, which does not exist; %s has %s.%s", where, root, name, root, quoteList(members), didYouMean(name, members))
}

func prefixAll(xs []string, suffix string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = x + suffix
	}
	return out
}

func (p *Plan) hasWorkload(name string) bool {
	for _, c := range p.Workloads {
		if c.Name == name {
			return true
		}
	}
	return false
}

func (p *Plan) workloadNames() []string {
	names := make([]string, len(p.Workloads))
	for i, c := range p.Workloads {
		names[i] = c.Name
	}
	return names
}

func (p *Plan) hasQuality(name string) bool {
	for _, q := range p.Quality {
		if q.Name == name {
			return true
		}
	}
	return false
}
