package report

import (
	"slices"
	"strconv"
	"strings"

	"github.com/frontier-llm/frontier/engine"
	"github.com/frontier-llm/frontier/record"
	"github.com/frontier-llm/frontier/vllm"
)

// An export writes the command the trial ran: the engine part of the command line recorded
// in the trial's provenance (record.Launch.Command; one per instance of a disaggregated
// deployment), translated for its target. What the launcher added for that one launch (the
// engine program, --served-model-name, --host and --port, the simulator's own flags) is left
// out, and nothing is added: no flag the trial did not pass and no default reaches an export.
// A trial without a recorded command (one of the offline estimator, or a record from before
// commands were recorded) is exported from its knobs by the launcher's own mapping,
// vllm.KnobArgs, in the launcher's order, which gives the command the launcher runs.

// serveCommand is one engine instance's `vllm serve` command as an export writes it.
type serveCommand struct {
	model string
	// args are vLLM's arguments after the model, as the trial passed them.
	args []string
	// line is the vLLM line the arguments were built for: the installed vLLM's for a
	// measured trial, the emulated one for the simulator's, else the current line.
	line *vllm.Version
}

// argv is the command line: vllm serve MODEL ARGS.
func (c serveCommand) argv() []string {
	return append([]string{"vllm", "serve", c.model}, c.args...)
}

// trialCommand is the command of one instance of trial t: its own for a single engine
// (role ""), else the index-th instance of role's, from the recorded launch when there is
// one and from the trial's knobs when not.
func trialCommand(rec *record.Study, t *record.Trial, role string, index int) (serveCommand, error) {
	l := instanceLaunch(t, role, index)
	if c, ok := recordedCommand(rec, l); ok {
		return c, nil
	}
	if l == nil && t.Provenance != nil {
		l = &t.Provenance.Launch // a deployment's: its engine and version are the instances'
	}
	return knobCommand(rec, t, role, trialLine(rec, l, rec.EngineArgs))
}

// instanceLaunch is the recorded launch of one instance of t, or nil when there is none: the
// trial's own launch for a single engine, the index-th instance of role's for a
// disaggregated one (the first of the role when there is no index-th).
func instanceLaunch(t *record.Trial, role string, index int) *record.Launch {
	if t.Provenance == nil {
		return nil
	}
	l := &t.Provenance.Launch
	if role == "" {
		if len(l.Instances) > 0 {
			return nil // a deployment's launch is its router's
		}
		return l
	}
	var first *record.Launch
	for i := range l.Instances {
		in := &l.Instances[i]
		if in.Role != role {
			continue
		}
		if in.Index == index {
			return in
		}
		if first == nil {
			first = in
		}
	}
	return first
}

// trialLine is the vLLM line a launch's command line was built for: the simulator's
// --vllm-version, else the vLLM version the launch recorded, else the current line.
func trialLine(rec *record.Study, l *record.Launch, args []string) *vllm.Version {
	var candidates []string
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--vllm-version="); ok {
			candidates = append(candidates, v)
		} else if a == "--vllm-version" && i+1 < len(args) {
			candidates = append(candidates, args[i+1])
		}
	}
	if l != nil && rec.Engine == engine.VLLM {
		candidates = append(candidates, l.EngineVersion)
	}
	for _, v := range append(candidates, vllm.Current) {
		if ver, err := vllm.Lookup(v); err == nil {
			return ver
		}
	}
	return nil
}

// recordedCommand reads the command of a recorded launch: the arguments after the model,
// without what the launcher added for that one launch. false when the launch recorded no
// command or one that does not name the study's model.
func recordedCommand(rec *record.Study, l *record.Launch) (serveCommand, bool) {
	if l == nil || len(l.Command) == 0 {
		return serveCommand{}, false
	}
	argv := redactArgv(l.Command)
	program, rest, ok := afterModel(argv, rec.Model)
	if !ok {
		return serveCommand{}, false
	}
	line := trialLine(rec, l, rest)
	// The simulator: engine sim, or a plan's command that runs `frontier sim serve` in
	// vLLM's place.
	if rec.Engine == engine.Sim || len(program) >= 2 && slices.Equal(program[len(program)-2:], []string{"sim", "serve"}) {
		rest = withoutSimFlags(rest)
	}
	rest = withoutLaunchTail(rest, rec.Model)
	rest = append(movedAPIKey(rec, rest), rest...)
	return serveCommand{model: rec.Model, args: rest, line: line}, true
}

// afterModel splits argv at the model: the engine's command before it, and what follows it;
// the model is positional or --model MODEL.
func afterModel(argv []string, model string) (program, rest []string, ok bool) {
	for i, a := range argv {
		switch {
		case a == model && (i == 0 || argv[i-1] != "--served-model-name"):
			return argv[:i], slices.Clone(argv[i+1:]), true
		case a == "--model" && i+1 < len(argv) && argv[i+1] == model:
			return argv[:i], slices.Clone(argv[i+2:]), true
		case a == "--model="+model:
			return argv[:i], slices.Clone(argv[i+1:]), true
		}
	}
	return nil, nil, false
}

// withoutSimFlags is args without `frontier sim serve`'s own flags and their values.
func withoutSimFlags(args []string) []string {
	own := engine.SimFlags()
	var out []string
	for i := 0; i < len(args); i++ {
		name, _, hasValue := strings.Cut(args[i], "=")
		takes, isOwn := own[strings.ReplaceAll(name, "_", "-")]
		if !isOwn || !strings.HasPrefix(name, "--") {
			out = append(out, args[i])
			continue
		}
		if takes && !hasValue {
			i++ // the value
		}
	}
	return out
}

// withoutLaunchTail is args without what the launcher appends to every launch, in its
// order: --served-model-name MODEL (vLLM's default is the model itself), --host 127.0.0.1
// and --port, which say where that one launch listened.
func withoutLaunchTail(args []string, model string) []string {
	cut := func(flag string, value func(string) bool) {
		if n := len(args); n >= 2 && args[n-2] == flag && value(args[n-1]) {
			args = args[:n-2]
		}
	}
	cut("--port", func(v string) bool { _, err := strconv.Atoi(v); return err == nil })
	cut("--host", func(v string) bool { return v == "127.0.0.1" })
	cut("--served-model-name", func(v string) bool { return v == model })
	return args
}

// movedAPIKey is the plan's --api-key (its value redacted) when the launcher moved it out of
// the command line into VLLM_API_KEY, where the process table does not show it: the trial
// was served with the key, so the export asks for it as the plan did. Nothing when the
// recorded arguments still hold it.
func movedAPIKey(rec *record.Study, args []string) []string {
	has := func(argv []string) []string {
		for i, a := range argv {
			if strings.HasPrefix(a, "--api-key=") {
				return argv[i : i+1]
			}
			if a == "--api-key" && i+1 < len(argv) {
				return argv[i : i+2]
			}
		}
		return nil
	}
	if has(args) != nil {
		return nil
	}
	return slices.Clone(has(redactArgv(rec.EngineArgs)))
}

// knobCommand is the command the launcher builds for trial t (the instance of role, when the
// trial is disaggregated) from the study's record alone: the plan's engine arguments (less
// the simulator's own flags), the
// NixlConnector of the role, the knobs by vllm.KnobArgs (frontier's own knobs are no flags;
// a role's tensor_parallel_size replaces the trial's), and the model's max_model_len unless a
// knob sets it.
func knobCommand(rec *record.Study, t *record.Trial, role string, line *vllm.Version) (serveCommand, error) {
	var settings []vllm.Setting
	for _, k := range knobNames(rec) {
		if v, ok := t.Config[k]; ok && v != nil && !record.IsFrontierKnob(k) {
			settings = append(settings, vllm.Setting{Name: k, Value: v})
		}
	}
	args := redactArgv(rec.EngineArgs)
	if rec.Engine == engine.Sim {
		args = withoutSimFlags(args) // the simulator takes them out before vLLM's argparse
	}
	if role != "" {
		prefill := role == record.RolePrefill
		settings = withSetting(settings, "tensor_parallel_size", int64(record.RoleTP(t.Config, prefill)))
		args = append(args, "--kv-transfer-config", line.KVTransferConfig(prefill))
	}
	flags, err := vllm.KnobArgs(line, settings)
	if err != nil {
		return serveCommand{}, err
	}
	args = append(args, flags...)
	if _, isKnob := t.Config["max_model_len"]; rec.MaxModelLen > 0 && !isKnob {
		args = append(args, "--max-model-len", strconv.Itoa(rec.MaxModelLen))
	}
	return serveCommand{model: rec.Model, args: args, line: line}, nil
}

// withSetting is settings with name set to v: in its place when there, else last, as the
// launch of a disaggregated trial sets each role's tensor_parallel_size.
func withSetting(settings []vllm.Setting, name string, v any) []vllm.Setting {
	out := slices.Clone(settings)
	for i := range out {
		if out[i].Name == name {
			out[i].Value = v
			return out
		}
	}
	return append(out, vllm.Setting{Name: name, Value: v})
}
