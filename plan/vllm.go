package plan

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/frontier-llm/frontier/vllm"
)

// VLLMVersion returns the model of the vLLM release line a vllm engine's plan is written
// for: engine.version, or the current line (vllm.Current) when the plan gives none.
func (p *Plan) VLLMVersion() (*vllm.Version, error) {
	if p.Engine.Version != "" {
		return vllm.Lookup(p.Engine.Version)
	}
	return vllm.Lookup(vllm.Current)
}

// checksVLLMFlags reports whether the engine's knobs and args are `vllm serve` flags to be
// checked against a version table: engine "vllm" with vLLM's own command line. A
// vLLM-compatible server with another command line (model_arg = "--model" or
// host_flag = false) has flags of its own.
func (e Engine) checksVLLMFlags() bool {
	return e.Kind == EngineVLLM && !e.ModelAsFlag && !e.NoHostFlag
}

// checkVLLMFlags refuses, at the knob's or the argument's line, a knob or an engine argument
// that the plan's vLLM line does not take: removed, renamed, added later or misspelt, with
// the version table's advice ("removed in v0.x; did you mean --y?").
func (p *Plan) checkVLLMFlags(engineBlock *hcl.Block, knobs hcl.Blocks) hcl.Diagnostics {
	if !p.Engine.checksVLLMFlags() {
		return nil
	}
	v, err := p.VLLMVersion()
	if err != nil {
		return nil // reported with the version attribute
	}
	var diags hcl.Diagnostics
	label := v.String()
	if v.Warning != "" {
		label += " (standing in for " + v.Asked + ")"
	}
	report := func(rng hcl.Range, what string, err error) {
		var fe *vllm.FlagError
		if errors.As(err, &fe) && fe.Removed == "" && fe.Added == "" && fe.Renamed == "" && fe.Note == "" {
			// Only the table's silence: the preflight on the host has the last word.
			diags = diags.Append(warningAt(rng, "Not a known flag of "+v.String(),
				"%s is not in frontier's table of %s: %s. The preflight checks it against the installed vLLM before the first trial.", what, label, err))
			return
		}
		diags = diags.Append(errorAt(rng, "Not a flag of "+v.String(),
			"%s is not taken by %s: %s. Set engine.version to the line the host runs, or change it.", what, label, err))
	}
	for _, b := range knobs {
		name := b.Labels[0]
		if isPseudoKnob(name) {
			continue // where and how to deploy, no flag (these knobs have their own checks)
		}
		if err := v.Check(name); err != nil {
			report(b.LabelRanges[0], fmt.Sprintf("The knob %q (the flag --%s)", name, strings.ReplaceAll(name, "_", "-")), err)
		}
	}
	content, _ := engineBlock.Body.Content(&hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "args"}}})
	at, ok := content.Attributes["args"]
	if !ok {
		return diags
	}
	rng := at.Expr.Range()
	for _, a := range p.Engine.Args {
		if !strings.HasPrefix(a, "--") {
			continue
		}
		flag, _, _ := strings.Cut(a, "=")
		if err := v.Check(flag); err != nil {
			report(rng, "The engine argument "+flag, err)
		}
	}
	return diags
}

// checkVLLMGPUs refuses a vllm engine without GPUs: frontier runs vLLM's CUDA build, which
// needs at least one GPU; a study on the CPU can use engine "ollama".
func checkVLLMGPUs(hardwareBlock *hcl.Block, g GPUSelection) hcl.Diagnostics {
	if g.All || len(g.Indices) > 0 || g.Count > 0 {
		return nil
	}
	content, _ := hardwareBlock.Body.Content(&hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "gpus"}}})
	rng := hardwareBlock.DefRange
	if at, ok := content.Attributes["gpus"]; ok {
		rng = at.Expr.Range()
	}
	return hcl.Diagnostics{errorAt(rng, "No GPU for vLLM",
		`Engine "vllm" runs vLLM's CUDA build, which needs at least one GPU; give gpus = "all", a count of at least 1, or a list of GPU indices. For a study on the CPU, use engine "ollama".`)}
}
