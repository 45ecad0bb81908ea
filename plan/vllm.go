package plan

import (
	"cmp"
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/frontier-llm/frontier/engine"
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

// flagLine returns the vLLM release line whose `vllm serve` flags the plan's knobs and
// engine arguments are, and nil for an engine with flags of its own: for engine "vllm" with
// vLLM's own command line, engine.version's line (vllm.Current when it gives none); for
// engine "sim", the line `frontier sim serve` emulates: the one engine.args name with
// --vllm-version, else vllm.Current (the launcher gives no --vllm-version, and the simulated
// vLLM takes no engine.version). A vLLM-compatible server with another command line
// (model_arg = "--model" or host_flag = false) and engine "ollama" are not checked.
func (p *Plan) flagLine() *vllm.Version {
	e := p.Engine
	if e.ModelAsFlag || e.NoHostFlag {
		return nil
	}
	var v *vllm.Version
	var err error
	switch e.Kind {
	case EngineVLLM:
		v, err = p.VLLMVersion()
	case EngineSim:
		v, err = vllm.Lookup(cmp.Or(e.simVersion(), vllm.Current))
	default:
		return nil
	}
	if err != nil {
		return nil // reported with the version attribute
	}
	return v
}

// simVersion is the vLLM line a sim engine's args name with --vllm-version, or "".
func (e Engine) simVersion() string {
	for i, a := range e.Args {
		name, val, has := strings.Cut(a, "=")
		switch {
		case strings.ReplaceAll(name, "_", "-") != "--vllm-version":
		case has:
			return val
		case i+1 < len(e.Args):
			return e.Args[i+1]
		}
	}
	return ""
}

// ownFlag reports whether name (a knob's name) is a flag of the engine's own command besides
// vLLM's (engine.Description.OwnFlags): `frontier sim serve`'s --sku, --vllm-version and
// --fault-* flags for engine "sim".
func (e Engine) ownFlag(name string) bool {
	d, ok := engine.Lookup(e.Kind)
	_, own := d.OwnFlags["--"+strings.ReplaceAll(strings.TrimLeft(name, "-"), "_", "-")]
	return ok && own
}

// lineLabel names the line in diagnostics: "vLLM v0.28", "vLLM v0.28 (standing in for
// 0.33)", or "vLLM v0.28 (as engine "sim" emulates it)".
func (p *Plan) lineLabel(v *vllm.Version) string {
	switch {
	case v.Warning != "":
		return v.String() + " (standing in for " + v.Asked + ")"
	case p.Engine.Kind == EngineSim:
		return v.String() + ` (as engine "sim" emulates it)`
	}
	return v.String()
}

// checkVLLMFlags checks the knobs and the engine arguments against the plan's vLLM line
// (flagLine): a knob or an argument the line does not take (removed, renamed, added later or
// misspelt) is an error at the knob's label or the argument, with the version table's advice
// ("removed in v0.x") or the line's flags nearest in spelling; a knob value the line refuses
// (not one of the flag's choices, not true or false for a switch, not a number for a numeric
// flag) is an error at the value. Where the table stands in for a version it is not (an
// engine.version newer or older than every table), the installed vLLM's help decides at the
// preflight, so what the table alone does not know is only a warning.
func (p *Plan) checkVLLMFlags(engineBlock *hcl.Block, knobs hcl.Blocks) hcl.Diagnostics {
	v := p.flagLine()
	if v == nil {
		return nil
	}
	c := flagChecker{p: p, v: v, label: p.lineLabel(v), hostDecides: v.Warning != ""}
	for _, b := range knobs {
		name := b.Labels[0]
		if isPseudoKnob(name) || p.Engine.ownFlag(name) || !hclsyntax.ValidIdentifier(name) || strings.Contains(name, "-") {
			continue // frontier's own knobs have their own checks; a bad name has its error
		}
		if err := v.Check(name); err != nil {
			c.unknownKnob(b, name, err)
			continue
		}
		if k := p.Knob(name); k != nil {
			c.knobValues(b, k)
		}
	}
	content, _ := engineBlock.Body.Content(&hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "args"}}})
	if at, ok := content.Attributes["args"]; ok {
		c.args(p.Engine, at.Expr.Range())
	}
	return c.diags
}

// args checks engine.args, the engine's own flags (and their values) left out: each --flag is
// one of the line's, and then the whole command line is one the line's argparse takes (a
// value for each flag that takes one, of its type and among its choices).
func (c *flagChecker) args(e Engine, rng hcl.Range) {
	own := map[string]bool{}
	if d, ok := engine.Lookup(e.Kind); ok {
		own = d.OwnFlags
	}
	argv := []string{"MODEL"} // vLLM's command line starts with the model
	named := true
	for i := 0; i < len(e.Args); i++ {
		a := e.Args[i]
		flag, _, hasVal := strings.Cut(a, "=")
		if takes, ok := own[strings.ReplaceAll(flag, "_", "-")]; ok && strings.HasPrefix(a, "--") {
			if takes && !hasVal {
				i++ // its value
			}
			continue
		}
		argv = append(argv, a)
		if !strings.HasPrefix(a, "--") {
			continue
		}
		if err := c.v.Check(flag); err != nil {
			c.flagError(rng, "The engine argument "+flag, err)
			named = false
		}
	}
	if !named {
		return // said above, with the table's advice
	}
	if _, err := c.v.ParseArgs(argv); err != nil {
		if c.hostDecides {
			c.report(warningAt(rng, "Engine arguments not known to "+c.v.String(),
				"%s would refuse the engine arguments: %s. The preflight checks them against the installed vLLM before the first trial.", c.label, err))
			return
		}
		c.report(errorAt(rng, "Engine arguments refused by "+c.v.String(), "%s refuses the engine arguments: %s.", c.label, err))
	}
}

// flagChecker gathers the diagnostics of checkVLLMFlags.
type flagChecker struct {
	p           *Plan
	v           *vllm.Version
	label       string
	hostDecides bool // the table stands in for another version: the preflight decides
	diags       hcl.Diagnostics
}

// unknownFlag reports whether err says only that the table does not know the flag: not
// removed, renamed, added later or refused for a reason.
func unknownFlag(err error) bool {
	var fe *vllm.FlagError
	return errors.As(err, &fe) && fe.Removed == "" && fe.Added == "" && fe.Renamed == "" && fe.Note == ""
}

// flagError reports a flag the line does not take: an error, or a warning for a flag only
// unknown to a table that stands in for another version.
func (c *flagChecker) flagError(rng hcl.Range, what string, err error) {
	if unknownFlag(err) && c.hostDecides {
		c.diags = c.diags.Append(warningAt(rng, "Not a known flag of "+c.v.String(),
			"%s is not in frontier's table of %s: %s. The preflight checks it against the installed vLLM before the first trial.", what, c.label, err))
		return
	}
	advice := "Set engine.version to the line the host runs, or change it."
	if unknownFlag(err) {
		advice = "Check the spelling against `vllm serve --help=all`."
	}
	c.diags = c.diags.Append(errorAt(rng, "Not a flag of "+c.v.String(),
		"%s is not taken by %s: %s. %s", what, c.label, err, advice))
}

// unknownKnob reports a knob that names no flag of the line, with the line's flags nearest
// in spelling as knob names.
func (c *flagChecker) unknownKnob(b *hcl.Block, name string, err error) {
	flag := "--" + strings.ReplaceAll(name, "_", "-")
	if !unknownFlag(err) || c.hostDecides {
		c.flagError(b.LabelRanges[0], fmt.Sprintf("The knob %q (the flag %s)", name, flag), err)
		return
	}
	detail := fmt.Sprintf("The knob %q is not an option of %s: it has no flag %s.", name, c.label, flag)
	if near := c.v.Nearest(name, 3); len(near) > 0 {
		detail += " Did you mean " + knobList(near) + "?"
	} else {
		detail += " A knob is named after a `vllm serve` flag in snake_case (max_num_seqs for --max-num-seqs); see `vllm serve --help=all` for the line's flags."
	}
	c.diags = c.diags.Append(errorAt(b.LabelRanges[0], "Not a flag of "+c.v.String(), "%s", detail))
}

// knobList writes flags as knob names with their flags: "max_num_seqs (--max-num-seqs)",
// joined with "or".
func knobList(flags []vllm.Flag) string {
	parts := make([]string, len(flags))
	for i, f := range flags {
		parts[i] = fmt.Sprintf("%s (%s)", f.Knob, f.Name)
	}
	return strings.Join(parts, " or ")
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
