package record

import (
	"fmt"
	"regexp"
	"strconv"
)

// The knobs of prefill/decode disaggregation: where and how many instances a trial runs, not
// options of one engine. They live here, in the record every other package reads, so that
// the plan, the launcher, the search and the report read a trial's deployment alike.
const (
	// DisaggregationKnob is "none" (one engine instance) or "XpYd": X prefill and Y decode
	// instances behind a router that speaks vLLM's disaggregation protocol.
	DisaggregationKnob = "disaggregation"
	// PrefillTPKnob and DecodeTPKnob are each role's tensor_parallel_size, where the plan
	// searches them apart from the trial's tensor_parallel_size.
	PrefillTPKnob = "prefill_tensor_parallel_size"
	DecodeTPKnob  = "decode_tensor_parallel_size"
)

// Roles of a disaggregated deployment's processes, as provenance records them.
const (
	RolePrefill = "prefill"
	RoleDecode  = "decode"
	RoleRouter  = "router"
)

// SKUKnob is the knob that makes the GPU SKU part of the search: where to deploy, no engine
// option.
const SKUKnob = "sku"

// IsFrontierKnob reports whether the knob called name is frontier's own rather than an
// engine option, so that no vLLM flag or config key is ever made of it: the GPU SKU and the
// knobs of prefill/decode disaggregation. It is the one list: the plan's checks (which
// refuse any other name that is not a flag of the plan's vLLM line) and the exports read it.
func IsFrontierKnob(name string) bool {
	switch name {
	case SKUKnob, DisaggregationKnob, PrefillTPKnob, DecodeTPKnob:
		return true
	}
	return false
}

// MaxDisaggInstances bounds X and Y of "XpYd": more instances of one role than a host of
// GPUs holds is a typo, not a plan.
const MaxDisaggInstances = 64

// Disaggregation is a value of the disaggregation knob: Prefill and Decode instances, both
// zero for "none".
type Disaggregation struct {
	Prefill, Decode int
}

// Enabled reports whether the trial runs separate prefill and decode instances.
func (d Disaggregation) Enabled() bool { return d.Prefill > 0 }

// String is the knob's value: "none" or "XpYd".
func (d Disaggregation) String() string {
	if !d.Enabled() {
		return "none"
	}
	return fmt.Sprintf("%dp%dd", d.Prefill, d.Decode)
}

var disaggRE = regexp.MustCompile(`^([0-9]+)p([0-9]+)d$`)

// ErrDisaggregationCount is wrapped by ParseDisaggregation's error for a value of the form
// "XpYd" whose X or Y is outside 1 to MaxDisaggInstances.
var ErrDisaggregationCount = fmt.Errorf("a count of instances outside 1 to %d", MaxDisaggInstances)

// ParseDisaggregation reads a value of the disaggregation knob: "none", or "XpYd" with X
// and Y from 1 to MaxDisaggInstances ("1p1d", "2p1d").
func ParseDisaggregation(s string) (Disaggregation, error) {
	if s == "none" {
		return Disaggregation{}, nil
	}
	m := disaggRE.FindStringSubmatch(s)
	if m == nil {
		return Disaggregation{}, fmt.Errorf("%q is not \"none\" or \"XpYd\" (X prefill and Y decode instances, such as \"1p1d\" or \"2p1d\")", s)
	}
	x, errX := strconv.Atoi(m[1])
	y, errY := strconv.Atoi(m[2])
	if errX != nil || errY != nil || x < 1 || y < 1 || x > MaxDisaggInstances || y > MaxDisaggInstances {
		return Disaggregation{}, fmt.Errorf("%q: the numbers of prefill and decode instances must each be from 1 to %d: %w", s, MaxDisaggInstances, ErrDisaggregationCount)
	}
	return Disaggregation{Prefill: x, Decode: y}, nil
}

// DisaggregationOf is a configuration's disaggregation: none when the knob is absent or its
// value does not parse (the plan's validation refuses such values).
func DisaggregationOf(cfg map[string]any) Disaggregation {
	s, _ := cfg[DisaggregationKnob].(string)
	d, _ := ParseDisaggregation(s)
	return d
}

// RoleTP is the tensor_parallel_size of one role's instances (prefill true: the prefill
// instances): the role's own knob when the configuration has it, else tensor_parallel_size,
// else 1.
func RoleTP(cfg map[string]any, prefill bool) int {
	name := DecodeTPKnob
	if prefill {
		name = PrefillTPKnob
	}
	for _, k := range []string{name, "tensor_parallel_size"} {
		if f, ok := Number(cfg[k]); ok && f >= 1 {
			return int(f)
		}
	}
	return 1
}

// InstanceGPUs is how many GPUs one instance of a role uses: its tensor_parallel_size x
// pipeline_parallel_size x data_parallel_size.
func InstanceGPUs(cfg map[string]any, prefill bool) int {
	n := RoleTP(cfg, prefill)
	for _, name := range []string{"pipeline_parallel_size", "data_parallel_size"} {
		if f, ok := Number(cfg[name]); ok && f >= 1 {
			n *= int(f)
		}
	}
	return n
}

// Number is a knob value as a float64, when it is a number (int64, int, int32, float64 or
// float32, as plans and records give them).
func Number(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case int:
		return float64(x), true
	case int32:
		return float64(x), true
	case float64:
		return x, true
	case float32:
		return float64(x), true
	}
	return 0, false
}
