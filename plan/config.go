package plan

import (
	"fmt"
	"sort"
	"strings"
)

// SKUKnob is the pseudo-knob that makes the GPU itself part of the search: its values are
// catalog SKU names, and it is no engine option.
const SKUKnob = "sku"

// GPUs is how many GPUs the configuration uses: tensor x pipeline x data parallel size, each
// 1 when unset; a disaggregated one (knob disaggregation "XpYd") uses X prefill and Y decode
// instances of their role's InstanceGPUs each.
func (c Config) GPUs() int {
	if d := c.Disaggregation(); d.Enabled() {
		return d.Prefill*c.InstanceGPUs(true) + d.Decode*c.InstanceGPUs(false)
	}
	n := 1
	for _, name := range ParallelKnobs() {
		if f, ok := toFloat(c[name]); ok && f >= 1 {
			n *= int(f)
		}
	}
	return n
}

// SKU is the configuration's GPU SKU: the "sku" knob's value, else def (the plan's).
func (c Config) SKU(def string) string {
	if s, ok := c[SKUKnob].(string); ok && s != "" {
		return s
	}
	return def
}

// EngineSettings are the configuration's engine options: every knob but the pseudo-knobs
// (sku and those of disaggregation, IsPseudoKnob), by name.
func (c Config) EngineSettings() map[string]any {
	out := make(map[string]any, len(c))
	for k, v := range c {
		if !isPseudoKnob(k) {
			out[k] = v
		}
	}
	return out
}

// String writes the configuration as NAME=VALUE pairs in name order.
func (c Config) String() string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%v", k, c[k])
	}
	return strings.Join(parts, " ")
}
