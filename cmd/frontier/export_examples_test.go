package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"github.com/frontier-llm/frontier/launcher"
	"github.com/frontier-llm/frontier/plan"
	"github.com/frontier-llm/frontier/record"
	"github.com/frontier-llm/frontier/redact"
	"github.com/frontier-llm/frontier/report"
	"github.com/frontier-llm/frontier/search"
	"github.com/frontier-llm/frontier/vllm"
)

// exampleStudy is a study record of an example plan as apply stores it (the study's model,
// engine, arguments, environment and knobs), with a trial for each of up to 48
// configurations spread evenly over the plan's grid: every value of each knob of the
// examples appears. No trial is measured (the offline model takes up to a minute a trial
// for some examples, and an export reads none of the measurements).
func exampleStudy(t *testing.T, name string) (*plan.Plan, *record.Study) {
	t.Helper()
	p, err := plan.Load(filepath.Join(examplesDir(t), name), plan.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rec := &record.Study{Study: p.Study.Name, Engine: p.Engine.Kind, Model: p.Model.Name, MaxModelLen: p.Model.MaxModelLen,
		EngineEnv: redact.Env(p.Engine.Env, p.Engine.SecretEnv), SecretEnv: p.Engine.SecretEnv,
		EngineArgs: redact.Argv(p.Engine.Args, redact.Values(nil, p.Engine.Env, nil, p.Engine.SecretEnv, p.SensitiveValues()))}
	for _, k := range p.Knobs {
		rec.Knobs = append(rec.Knobs, k.Name)
	}
	n, ok := p.GridSize()
	if !ok {
		t.Fatalf("%s has a continuous knob", name)
	}
	const most = 48
	step := max(1, n/most)
	for i := 0; i < n && len(rec.Trials) < most; i += step {
		cfg, err := p.GridAt(i)
		if err != nil {
			t.Fatal(err)
		}
		rec.Trials = append(rec.Trials, record.Trial{Number: len(rec.Trials), State: record.StateComplete, Config: cfg, Simulated: true})
	}
	return p, rec
}

// TestExportsOfEveryExampleAreTheLaunchersCommandInVLLMsFlags exports trials of every
// example plan of a vLLM engine in every format: every
// command line parses with the argparse of the trial's vLLM line (its flags, their values,
// the choices of those that have them), every key of the --config file is a flag of the line
// with a value it takes, no knob of frontier's own (sku, disaggregation, ...) becomes a flag
// or a key, and the command is the one the launcher would run for the trial, less the port,
// host and served name of that one launch: nothing the trial would not have passed.
func TestExportsOfEveryExampleAreTheLaunchersCommandInVLLMsFlags(t *testing.T) {
	t.Parallel()
	plans, err := filepath.Glob(filepath.Join(examplesDir(t), "*.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	line, err := vllm.Lookup(vllm.Current) // no example names engine.version
	if err != nil {
		t.Fatal(err)
	}
	studied := 0
	for _, path := range plans {
		name := filepath.Base(path)
		if name == "ollama-cpu.hcl" {
			continue // Ollama is no vLLM: its exports are refused (TestExportRefusesOllama)
		}
		studied++
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p, rec := exampleStudy(t, name)
			for i := range rec.Trials {
				tr := &rec.Trials[i]
				for _, format := range report.ExportFormats() {
					var buf bytes.Buffer
					err := report.Export(&buf, rec, tr, format)
					if _, pd := disaggregated(tr); pd && (format == report.FormatVLLMYAML || format == report.FormatDocker) {
						if err == nil {
							t.Errorf("trial %d (%s): export --format %s of a disaggregated trial succeeded", tr.Number, tr.Config[record.DisaggregationKnob], format)
						}
						continue
					}
					if err != nil {
						t.Fatalf("trial %d: export --format %s: %v", tr.Number, format, err)
					}
					for _, problem := range checkExport(line, format, buf.String()) {
						t.Errorf("trial %d %v: %s: %s\n%s", tr.Number, tr.Config, format, problem, buf.String())
					}
				}
				checkLaunchersCommand(t, p, rec, tr)
			}
		})
	}
	if studied < 6 {
		t.Errorf("studied %d example plans, want every one of a vLLM engine", studied)
	}
}

// disaggregated is the trial's disaggregation, when it has one.
func disaggregated(tr *record.Trial) (record.Disaggregation, bool) {
	d := record.DisaggregationOf(tr.Config)
	return d, d.Enabled()
}

// checkExport says what in an export the line's argparse refuses, or what of frontier's own
// knobs it passes to vLLM.
func checkExport(line *vllm.Version, format, out string) []string {
	var problems []string
	parse := func(where string, argv []string) {
		if _, err := line.ParseArgs(argv); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %q: %v", where, argv, err))
		}
		for _, a := range argv {
			name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
			if strings.HasPrefix(a, "--") && record.IsFrontierKnob(strings.ReplaceAll(name, "-", "_")) {
				problems = append(problems, fmt.Sprintf("%s: frontier's knob %s passed to vLLM", where, a))
			}
		}
	}
	switch format {
	case report.FormatVLLMArgs, report.FormatDocker:
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			words, err := shellWords(l)
			if err != nil || strings.HasPrefix(l, "#") || strings.HasPrefix(l, "frontier router ") {
				continue
			}
			i := slices.Index(words, "serve")
			if i < 0 {
				problems = append(problems, "a line without serve: "+l)
				continue
			}
			parse("command line", words[i+1:])
		}
	case report.FormatVLLMYAML:
		var cfg map[string]any
		if err := yaml.Unmarshal([]byte(out), &cfg); err != nil {
			return append(problems, err.Error())
		}
		for key, v := range cfg {
			argv := []string{"--" + key}
			switch x := v.(type) {
			case bool:
				if !x {
					problems = append(problems, "a false boolean, which vLLM drops: "+key)
				}
			case []any:
				for _, e := range x {
					argv = append(argv, fmt.Sprint(e))
				}
			default:
				argv = append(argv, fmt.Sprint(v))
			}
			if _, ok := line.Flag(key); !ok {
				problems = append(problems, "a key that is no flag of the line: "+key)
			}
			parse("key "+key, argv)
		}
		for _, l := range strings.Split(out, "\n") {
			if cmd, ok := strings.CutPrefix(l, "#   vllm serve --config FILE "); ok {
				words, _ := shellWords(cmd)
				parse("the comment's command line", words)
			}
		}
	case report.FormatK8s:
		for _, doc := range strings.Split(out, "\n---\n") {
			var d appsv1.Deployment
			if err := yaml.Unmarshal([]byte(doc), &d); err != nil || d.Kind != "Deployment" {
				continue
			}
			c := d.Spec.Template.Spec.Containers[0]
			if slices.Equal(c.Command, []string{"vllm", "serve"}) {
				parse("Deployment "+d.Name, c.Args)
			}
		}
	}
	return problems
}

// checkLaunchersCommand compares the trial's exported command (each role's, disaggregated)
// with the one the launcher builds for its configuration: the same, less the launcher's
// --served-model-name, --host and --port for that one launch.
func checkLaunchersCommand(t *testing.T, p *plan.Plan, rec *record.Study, tr *record.Trial) {
	t.Helper()
	eng, err := launcher.New(launcher.KindVLLM, launcher.Options{})
	if err != nil {
		t.Fatal(err)
	}
	argvOf := eng.(interface {
		Argv(launcher.Spec, int) ([]string, error)
	}).Argv
	spec := search.LaunchSpec(p, plan.Config(tr.Config), nil, "", "")
	specs := map[string]launcher.Spec{"": spec}
	if _, pd := disaggregated(tr); pd {
		specs = map[string]launcher.Spec{}
		for _, role := range []string{launcher.RolePrefill, launcher.RoleDecode} {
			s := spec
			s.Settings = slices.Clone(spec.Settings)
			tp := int64(record.RoleTP(tr.Config, role == launcher.RolePrefill))
			if i := slices.IndexFunc(s.Settings, func(x launcher.Setting) bool { return x.Name == "tensor_parallel_size" }); i >= 0 {
				s.Settings[i].Value = tp
			} else {
				s.Settings = append(s.Settings, launcher.Setting{Name: "tensor_parallel_size", Value: tp})
			}
			specs[role] = launcher.WithKVTransfer(s, role, 5600)
		}
	}
	var buf bytes.Buffer
	format := report.FormatVLLMArgs
	if err := report.Export(&buf, rec, tr, format); err != nil {
		t.Fatal(err)
	}
	for role, s := range specs {
		want, err := argvOf(s, 41000)
		if err != nil {
			t.Fatal(err)
		}
		want = want[:len(want)-6] // --served-model-name M --host 127.0.0.1 --port 41000
		var got []string
		section := ""
		for _, l := range strings.Split(buf.String(), "\n") {
			if c, ok := strings.CutPrefix(l, "# "); ok {
				if r, _, ok := strings.Cut(c, ":"); ok && (r == launcher.RolePrefill || r == launcher.RoleDecode) {
					section = r
				}
				continue
			}
			words, err := shellWords(l)
			i := slices.Index(words, "vllm")
			if err != nil || i < 0 || section != role {
				continue
			}
			got = words[i:]
			if role != "" {
				got = got[:len(got)-2] // the export's --port of the instance
			}
			break
		}
		if !slices.Equal(want, got) {
			t.Errorf("trial %d %v, %s: the export runs\n  %q\nthe launcher runs\n  %q", tr.Number, tr.Config, roleName(role), got, want)
		}
	}
}

func roleName(role string) string {
	if role == "" {
		return "the engine"
	}
	return "the " + role + " instance"
}

// shellWords splits a line the way a POSIX shell splits the words export writes: blanks
// between words, single quotes, and a backslash before a character outside them.
func shellWords(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord, quoted := false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quoted && c == '\'':
			quoted = false
		case quoted:
			cur.WriteByte(c)
		case c == '\'':
			quoted, inWord = true, true
		case c == '\\' && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
			inWord = true
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if quoted {
		return nil, fmt.Errorf("an unclosed quote in %q", line)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}
