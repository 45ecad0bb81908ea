package plan

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/frontier-llm/frontier/record"
)

// The pseudo-knobs of prefill/decode disaggregation: where and how many instances a trial
// runs, not options of one engine (record holds them, for every package that reads a
// trial's deployment).
const (
	// DisaggregationKnob is "none" (one engine instance) or "XpYd": X prefill and Y decode
	// instances behind a router that speaks vLLM's disaggregation protocol.
	DisaggregationKnob = record.DisaggregationKnob
	// PrefillTPKnob and DecodeTPKnob are each role's tensor_parallel_size, where the plan
	// searches them apart from the trial's tensor_parallel_size.
	PrefillTPKnob = record.PrefillTPKnob
	DecodeTPKnob  = record.DecodeTPKnob
)

// MaxDisaggInstances bounds X and Y of "XpYd".
const MaxDisaggInstances = record.MaxDisaggInstances

// Disaggregation is a value of the disaggregation knob: Prefill and Decode instances, both
// zero for "none".
type Disaggregation = record.Disaggregation

// ParseDisaggregation reads a value of the disaggregation knob: "none", or "XpYd" with X
// and Y from 1 to MaxDisaggInstances ("1p1d", "2p1d").
func ParseDisaggregation(s string) (Disaggregation, error) { return record.ParseDisaggregation(s) }

// Disaggregation is the configuration's disaggregation: none when the knob is absent or its
// value does not parse (the plan's validation refuses such values).
func (c Config) Disaggregation() Disaggregation { return record.DisaggregationOf(c) }

// RoleTP is the tensor_parallel_size of one role's instances (prefill true: the prefill
// instances): the role's own knob when the plan has it, else tensor_parallel_size, else 1.
func (c Config) RoleTP(prefill bool) int { return record.RoleTP(c, prefill) }

// InstanceGPUs is how many GPUs one instance of a role uses: its tensor_parallel_size x
// pipeline_parallel_size x data_parallel_size.
func (c Config) InstanceGPUs(prefill bool) int { return record.InstanceGPUs(c, prefill) }

// isPseudoKnob reports whether a knob is frontier's own, no option of one engine instance.
func isPseudoKnob(name string) bool { return record.IsFrontierKnob(name) }

// IsPseudoKnob reports whether the knob called name is frontier's own (sku, disaggregation,
// prefill_tensor_parallel_size, decode_tensor_parallel_size) rather than an engine option:
// it is not passed to the engine as a flag.
func IsPseudoKnob(name string) bool { return isPseudoKnob(name) }

// checkDisaggKnobs checks the knobs of disaggregation: every value of disaggregation is
// "none" or "XpYd"; the engine is a vLLM (or the simulated vLLM), which has the NixlConnector;
// the role's tensor-parallel knobs are positive integers and come with a disaggregation knob.
func (p *Plan) checkDisaggKnobs(knobs hcl.Blocks) hcl.Diagnostics {
	var diags hcl.Diagnostics
	byName := map[string]*hcl.Block{}
	for _, b := range knobs {
		byName[b.Labels[0]] = b
	}
	db := byName[DisaggregationKnob]
	if db != nil {
		k := p.Knob(DisaggregationKnob)
		switch {
		case k == nil || k.Kind == "":
			// Its block did not decode: that error says why.
		case len(k.Values) == 0 || k.Kind != KnobCategorical:
			diags = diags.Append(errorAt(db.DefRange, "Invalid disaggregation knob",
				"The knob \"disaggregation\" lists its values, each \"none\" or \"XpYd\" (X prefill and Y decode instances): values = [\"none\", \"1p1d\"]."))
		default:
			var bad []string
			for _, v := range k.Values {
				s, ok := v.(string)
				if !ok {
					bad = append(bad, fmt.Sprintf("%v is a %T, not a string", v, v))
					continue
				}
				if _, err := ParseDisaggregation(s); err != nil {
					if errors.Is(err, record.ErrDisaggregationCount) {
						bad = append(bad, fmt.Sprintf("%q has a count outside 1 to %d", s, MaxDisaggInstances))
					} else {
						bad = append(bad, fmt.Sprintf("%q is neither", s))
					}
				}
			}
			if len(bad) > 0 {
				diags = diags.Append(errorAt(db.DefRange, "Invalid disaggregation value",
					"The knob \"disaggregation\" takes \"none\" or \"XpYd\", X prefill and Y decode instances from 1 to %d each (such as \"1p1d\" or \"2p1d\"): %s.", MaxDisaggInstances, strings.Join(bad, "; ")))
			}
		}
		if p.Engine.Kind == EngineOllama {
			diags = diags.Append(errorAt(db.LabelRanges[0], "Disaggregation needs vLLM",
				"Prefill/decode disaggregation runs vLLM instances with the NixlConnector (--kv-transfer-config); engine %q has no such connector. Use engine \"vllm\" or \"sim\".", p.Engine.Kind))
		}
	}
	for _, name := range []string{PrefillTPKnob, DecodeTPKnob} {
		b := byName[name]
		if b == nil {
			continue
		}
		if db == nil {
			diags = diags.Append(errorAt(b.LabelRanges[0], "Role parallelism without disaggregation",
				"The knob %q sets the tensor_parallel_size of one role of a disaggregated deployment; the plan needs a knob \"disaggregation\" too, such as values = [\"none\", \"1p1d\"].", name))
			continue
		}
		k := p.Knob(name)
		if k == nil {
			continue
		}
		pts, ok := k.Points()
		bad := !ok || len(pts) == 0
		for _, v := range pts {
			if f, isNum := toFloat(v); !isNum || f < 1 || f != float64(int(f)) {
				bad = true
			}
		}
		if bad {
			diags = diags.Append(errorAt(b.DefRange, "Invalid "+name,
				"The knob %q is a number of GPUs per instance: whole numbers of at least 1, such as values = [1, 2, 4].", name))
		}
	}
	return diags
}
