package search

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/frontier-llm/frontier/hw"
	"github.com/frontier-llm/frontier/plan"
	"github.com/frontier-llm/frontier/record"
)

// PreScreenSample is how many configurations `frontier plan` pre-screens at most.
const PreScreenSample = 20000

// preScreenKnobValues bounds the work of a sampled pre-screen: every configuration costs in
// proportion to its knobs, so a plan with thousands of knobs draws fewer configurations (at
// least minPreScreenSample, which still estimates a share to within a few percent).
const (
	preScreenKnobValues = 2_000_000
	minPreScreenSample  = 1000
)

// HostMemoryRejection is the pre-screen's count of configurations whose pinned host memory
// (kv_offloading_size times the data-parallel engines, each of which pins its own) is more
// than the RAM of the SKU's host (hw.Host).
const HostMemoryRejection = "host_memory"

// PreScreen runs the plan's rules and, where the offline model covers the plan (vLLM and the
// simulator with a known architecture), the memory model over the grid: every configuration,
// or, when the grid has more than sample, sample configurations drawn at random with the
// plan's seed (fewer with thousands of knobs: preScreenKnobValues). It returns nil when a
// knob is continuous (there is no grid).
func PreScreen(ctx context.Context, p *plan.Plan, sample int) (*plan.PreScreen, error) {
	n, ok := p.GridSize()
	if !ok {
		return nil, nil
	}
	if sample < 1 {
		return nil, fmt.Errorf("pre-screen sample is %d; want at least 1", sample)
	}
	ps := &plan.PreScreen{Rejected: map[string]int{}}
	examine := n
	var rng *rand.Rand
	if k := len(p.Knobs); k > 0 && sample*k > preScreenKnobValues {
		sample = max(min(sample, minPreScreenSample), preScreenKnobValues/k)
	}
	if n > sample {
		// Strides over a mixed-radix grid alias with the knobs' sizes; random indices do not.
		examine, ps.Sampled = sample, true
		rng = rand.New(rand.NewPCG(uint64(p.Study.Seed), 0x9e3779b97f4a7c15))
	}
	as, err := NewAssessor(p)
	if err != nil {
		ps.Note = fmt.Sprintf("no memory pre-screen: %v", err)
		as = nil
	}
	memory := as != nil && as.NoModel() == ""
	if as != nil && !memory && p.Engine.Kind != plan.EngineOllama {
		ps.Note = "no memory pre-screen: " + as.NoModel()
	}
	passMemory := 0
	for i := range examine {
		if rng != nil {
			i = rng.IntN(n)
		}
		cfg, err := p.GridAt(i)
		if err != nil {
			return nil, err
		}
		ps.Examined++
		var a *Assessment
		if as != nil {
			if a, err = as.Assess(ctx, cfg, ThroughMemory); err != nil {
				return nil, err
			}
		} else if violations, err := p.CheckRules(cfg); err != nil {
			return nil, err
		} else if len(violations) > 0 {
			ps.Rejected["rule "+violations[0].Rule]++
			continue
		}
		switch {
		case a == nil:
			ps.PassRules++
		case a.Rejected() && a.Trial.Violations[0].Kind == record.ViolationRule:
			ps.Rejected["rule "+a.Trial.Violations[0].Metric]++
		case !memory:
			ps.PassRules++
		case !a.Covered:
			ps.PassRules++
			memory, ps.Note = false, "no memory pre-screen: "+a.Note
		case a.HostMemory:
			// The pinned KV offloading buffer does not fit in the host's RAM: the trial's
			// reason gives both sizes.
			ps.PassRules++
			ps.Rejected[HostMemoryRejection]++
		case a.Trial.FailureClass != "":
			ps.PassRules++
			ps.Rejected[string(a.Trial.FailureClass)]++
		default:
			ps.PassRules++
			passMemory++
		}
	}
	if memory {
		ps.PassMemory = &passMemory
	}
	return ps, nil
}

// HardwareWarnings says where the plan asks for GPUs the inventory does not have, or GPUs of
// another SKU than hardware.sku. `frontier validate` and `frontier plan` only warn; a study
// refuses to start.
func HardwareWarnings(p *plan.Plan, inv hw.Inventory) []string {
	sel := hw.Selection(p.Hardware.GPUs)
	if !sel.All && sel.Count == 0 && len(sel.Indices) == 0 {
		return nil // CPU only
	}
	real := p.Engine.Kind != plan.EngineSim
	if !real && !inv.Available {
		return nil // the simulator's GPUs are virtual
	}
	gpus, notes, err := hw.Resolve(sel, inv, real)
	warnings := append([]string(nil), notes...)
	if err != nil {
		warnings = append(warnings, err.Error())
	}
	if real && inv.HostMemoryBytes > 0 {
		// KV offloading pins its buffer in this host's RAM, every data-parallel engine its own.
		size, dp := knobMax(p, "kv_offloading_size", 0), knobMax(p, "data_parallel_size", 1)
		host := float64(inv.HostMemoryBytes) / (1 << 30)
		if pinned := size * dp; pinned > host {
			warnings = append(warnings, fmt.Sprintf("kv_offloading_size up to %g GiB on up to %g data-parallel engines pins up to %.0f GiB of host memory, and this host has %.0f GiB: those trials will not start", size, dp, pinned, host))
		}
	}
	if real && p.Hardware.SKU != "" {
		for _, g := range gpus {
			if g.Name == "" {
				continue
			}
			if sku, ok := hw.MatchSKU(g.Name); !ok || sku.Name != p.Hardware.SKU {
				warnings = append(warnings, fmt.Sprintf("hardware.sku is %q, but GPU %d is a %s", p.Hardware.SKU, g.Index, g.Name))
			}
		}
	}
	return warnings
}

// knobMax is the largest value the plan's knob can take, or def when the plan has no such
// numeric knob.
func knobMax(p *plan.Plan, name string, def float64) float64 {
	for _, k := range p.Knobs {
		if k.Name != name {
			continue
		}
		if len(k.Values) == 0 {
			return k.Max
		}
		best, ok := def, false
		for _, v := range k.Values {
			var f float64
			switch x := v.(type) {
			case int64:
				f = float64(x)
			case float64:
				f = x
			default:
				continue
			}
			if !ok || f > best {
				best, ok = f, true
			}
		}
		return best
	}
	return def
}
