package plan

import (
	"errors"
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/frontier-llm/frontier/vllm"
)

// QuantizationNone is the value of a quantization knob that passes no --quantization flag:
// the checkpoint's own weights (a bf16 checkpoint stays bf16).
const QuantizationNone = "none"

// knobValues checks a knob's values against its flag on the line: a switch takes true and
// false, any other flag a value its type reads and, where it has them, one of its choices
// (vllm.Version.CheckValue). A listed value is reported at its place in the list; a range
// whose type or points the flag refuses, at the range.
func (c *flagChecker) knobValues(b *hcl.Block, k *Knob) {
	f, ok := c.v.Flag(k.Name)
	if !ok {
		return
	}
	if len(k.Values) == 0 {
		c.knobRange(b, k, f)
		return
	}
	rngs := valueRanges(b, len(k.Values))
	for i, val := range k.Values {
		if k.Name == "quantization" && val == QuantizationNone {
			continue // no flag at all
		}
		if err := c.v.CheckValue(k.Name, val); err != nil {
			c.badValue(rngs[i], k, fmt.Sprintf("lists %s", formatValue(val)), err)
		}
	}
}

// knobRange checks a min/max knob: a switch cannot take a range, an integer flag no fractional
// range, and a flag with choices only ranges whose every point is one of them.
func (c *flagChecker) knobRange(b *hcl.Block, k *Knob, f vllm.Flag) {
	rng := attrRange(b, "min")
	switch {
	case f.Kind != vllm.Store:
		c.report(errorAt(rng, "Range for a switch",
			"The knob %q is %s, a switch of %s: it takes values = [true, false], not a range.", k.Name, f.Name, c.label))
		return
	case k.Kind == KnobFloat && (f.Type == vllm.Int || f.Type == vllm.HumanInt || f.Type == vllm.HumanIntOrAuto):
		c.report(errorAt(rng, "Fractional range for an integer flag",
			"The knob %q is a range of fractions (from %g to %g), and %s of %s takes whole numbers (%s): give whole-number min, max and step, without type = \"float\".", k.Name, k.Min, k.Max, f.Name, c.label, f.Type))
		return
	}
	pts, finite := k.Points()
	if !finite {
		pts = []Value{k.Min, k.Max}
	}
	for _, val := range pts {
		if err := c.v.CheckValue(k.Name, val); err != nil {
			c.badValue(rng, k, fmt.Sprintf("ranges from %g to %g and so takes %s", k.Min, k.Max, formatValue(val)), err)
			return // one point says it
		}
	}
}

// badValue reports a knob value the line refuses, naming the valid values when the flag
// lists them.
func (c *flagChecker) badValue(rng hcl.Range, k *Knob, what string, err error) {
	detail := fmt.Sprintf("The knob %q %s, which %s does not take: %s.", k.Name, what, c.label, err)
	var ve *vllm.ValueError
	if errors.As(err, &ve) {
		if ve.Suggest != "" {
			detail += fmt.Sprintf(" Did you mean %q?", ve.Suggest)
		}
		if len(ve.Choices) > 0 && ve.Err == nil { // argparse's message lists its choices
			detail += " Its values are " + quoteList(ve.Choices)
			if k.Name == "quantization" {
				detail += fmt.Sprintf(", or %q for the checkpoint's own (no flag)", QuantizationNone)
			}
			detail += "."
		}
	}
	if c.hostDecides {
		c.report(warningAt(rng, "Not a known value of "+c.v.String(),
			"%s The preflight checks it against the installed vLLM before the first trial.", detail))
		return
	}
	c.report(errorAt(rng, "Invalid value for "+c.v.String(), "%s", detail))
}

func (c *flagChecker) report(d *hcl.Diagnostic) { c.diags = c.diags.Append(d) }

// valueRanges returns the range of each of a knob's n listed values: each element of a
// literal list, else (a list from a variable) the whole expression's range n times.
func valueRanges(b *hcl.Block, n int) []hcl.Range {
	out := make([]hcl.Range, n)
	content, _, _ := b.Body.PartialContent(&hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "values"}}})
	at, ok := content.Attributes["values"]
	if !ok {
		for i := range out {
			out[i] = b.DefRange
		}
		return out
	}
	tuple, isTuple := at.Expr.(*hclsyntax.TupleConsExpr)
	for i := range out {
		if isTuple && len(tuple.Exprs) == n {
			out[i] = tuple.Exprs[i].Range()
		} else {
			out[i] = at.Expr.Range()
		}
	}
	return out
}

// attrRange is the range of a block's attribute's expression, or of the block's label when it
// has none.
func attrRange(b *hcl.Block, name string) hcl.Range {
	content, _, _ := b.Body.PartialContent(&hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: name}}})
	if at, ok := content.Attributes[name]; ok {
		return at.Expr.Range()
	}
	if len(b.LabelRanges) > 0 {
		return b.LabelRanges[0]
	}
	return b.DefRange
}
