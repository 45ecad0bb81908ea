package report

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"github.com/frontier-llm/frontier/k8sjob/kubelettest"
	"github.com/frontier-llm/frontier/record"
)

// hostileStudy is a study record whose every string a user or a shared database can set
// tries to leave its place in an export: newlines that end a comment, shell syntax, YAML
// keys, Kubernetes $(VAR) references, terminal escapes and a bidirectional override.
func hostileStudy() (*record.Study, *record.Trial) {
	rec := &record.Study{
		Study:       "chat\ntouch pwned-study\nenforce-eager: true\n#",
		Engine:      "vllm",
		Model:       "org/m\u2028odel\x1b[2J",
		MaxModelLen: 4096,
		Knobs:       []string{"max_num_seqs", "kv_cache_dtype", "served_model_name"},
		EngineArgs:  []string{"--chat-template", "a\nenforce-eager: true\n'; touch pwned-arg; '"},
		EngineEnv:   map[string]string{"VLLM_LOGGING_PREFIX": "$(HF_TOKEN) $$ `touch pwned-env` $HOME\r\n\u202egnp.exe"},
		SecretEnv:   []string{"MY_TOKEN\nenforce-eager: true"},
	}
	tr := &record.Trial{Number: 3, State: record.StateComplete, Config: map[string]any{
		"max_num_seqs":      64.0,
		"kv_cache_dtype":    "fp8$(HF_TOKEN)",
		"served_model_name": "x\n$(touch pwned-knob)'\"\\$$y",
	}}
	return rec, tr
}

// controlFree returns the lines of out that hold a character that is not printable.
func controlFree(out string) []string {
	var bad []string
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		for _, r := range line {
			if !strconv.IsPrint(r) {
				bad = append(bad, strconv.Quote(line))
				break
			}
		}
	}
	return bad
}

func exportString(t *testing.T, rec *record.Study, tr *record.Trial, format string) string {
	t.Helper()
	var buf bytes.Buffer
	if err := Export(&buf, rec, tr, format); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestExportsShowNoControlCharacter(t *testing.T) {
	t.Parallel()
	rec, tr := hostileStudy()
	for _, f := range ExportFormats() {
		out := exportString(t, rec, tr, f)
		if bad := controlFree(out); len(bad) > 0 {
			t.Errorf("%s: lines with a control character:\n%s", f, strings.Join(bad, "\n"))
		}
		if f != FormatVLLMArgs && !strings.Contains(out, `study "chat\ntouch pwned-study\nenforce-eager: true\n#"`) {
			t.Errorf("%s: the study's name is not shown escaped:\n%s", f, out)
		}
	}
}

// stubs writes stand-ins for docker and vllm (neither runs here) that record the argv they
// were given, NUL-separated, in dir/argv.
func stubs(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"docker", "vllm"} {
		script := "#!/bin/sh\nprintf '%s\\0' \"$@\" > \"$STUB_ARGV\"\n"
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// runShell runs script with bash in dir, the stand-ins first in PATH, and returns the argv
// the stand-in got.
func runShell(t *testing.T, dir, script string) []string {
	t.Helper()
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + filepath.Join(dir, "bin") + ":/usr/bin:/bin", "HOME=" + dir, "STUB_ARGV=" + filepath.Join(dir, "argv"), "HF_TOKEN=leaked"}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("bash: %v\n%s\nscript:\n%s", err, out, script)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "argv"))
	if err != nil {
		t.Fatalf("the stand-in did not run: %v\nscript:\n%s", err, script)
	}
	return strings.Split(strings.TrimSuffix(string(raw), "\x00"), "\x00")
}

// pwned lists the files the hostile strings' injected commands would have made.
func pwned(t *testing.T, dir string) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, "pwned*"))
	return m
}

func TestShellExportsRunTheMeasuredCommandAndNothingElse(t *testing.T) {
	t.Parallel()
	rec, tr := hostileStudy()
	tr.Config["served_model_name"] = "x\n$(touch pwned-knob)'\"\\`touch pwned-tick`$$y"
	want, err := ServeArgs(rec, tr)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("vllm-args", func(t *testing.T) {
		t.Parallel()
		dir := stubs(t)
		got := runShell(t, dir, exportString(t, rec, tr, FormatVLLMArgs))
		if diff := cmp.Diff(want[1:], got); diff != "" {
			t.Errorf("vllm got (-want +got):\n%s", diff)
		}
		if p := pwned(t, dir); len(p) > 0 {
			t.Errorf("injected commands ran: %v", p)
		}
	})
	t.Run("docker", func(t *testing.T) {
		t.Parallel()
		dir := stubs(t)
		got := runShell(t, dir, exportString(t, rec, tr, FormatDocker))
		i := slicesIndex(got, "--entrypoint")
		if i < 0 || i+2 > len(got) {
			t.Fatalf("docker got %q", got)
		}
		if diff := cmp.Diff(want[1:], got[i+3:]); diff != "" {
			t.Errorf("the container's vllm gets (-want +got):\n%s", diff)
		}
		if e := "VLLM_LOGGING_PREFIX=" + rec.EngineEnv["VLLM_LOGGING_PREFIX"]; slicesIndex(got, e) < 0 {
			t.Errorf("docker got %q, want -e %q", got, e)
		}
		if p := pwned(t, dir); len(p) > 0 {
			t.Errorf("injected commands ran: %v", p)
		}
	})
	t.Run("vllm-yaml", func(t *testing.T) {
		t.Parallel()
		dir := stubs(t)
		// A dotted key of a JSON flag is no key of the file: it stays on the command line.
		rec := *rec
		rec.EngineArgs = append(slices.Clone(rec.EngineArgs), "--compilation-config.mode=\n'; touch pwned-dotted; '")
		out := exportString(t, &rec, tr, FormatVLLMYAML)
		var cfg map[string]any
		if err := yaml.Unmarshal([]byte(out), &cfg); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		wantCfg := map[string]any{"model": rec.Model, "max-model-len": 4096.0, "max-num-seqs": 64.0, "chat-template": rec.EngineArgs[1],
			"kv-cache-dtype": "fp8$(HF_TOKEN)", "served-model-name": tr.Config["served_model_name"]}
		if diff := cmp.Diff(wantCfg, cfg); diff != "" {
			t.Errorf("the config file vLLM reads (-want +got):\n%s", diff)
		}
		// The comment's command line, run as it is written, passes the engine arguments.
		var line string
		for _, l := range strings.Split(out, "\n") {
			if s, ok := strings.CutPrefix(l, "#   "); ok {
				line = s
			}
		}
		got := runShell(t, dir, line)
		if diff := cmp.Diff([]string{"serve", "--config", "FILE", rec.EngineArgs[2]}, got); diff != "" {
			t.Errorf("the comment's command (-want +got):\n%s", diff)
		}
		if p := pwned(t, dir); len(p) > 0 {
			t.Errorf("injected commands ran: %v", p)
		}
	})
}

func TestK8sExportPassesDollarsAndNewlinesAsMeasured(t *testing.T) {
	t.Parallel()
	rec, tr := hostileStudy()
	tr.Config["served_model_name"] = "a$$b$(HF_TOKEN)$"
	want, err := ServeArgs(rec, tr)
	if err != nil {
		t.Fatal(err)
	}
	out := exportString(t, rec, tr, FormatK8s)
	docs := strings.Split(out, "\n---\n")
	var d appsv1.Deployment
	if err := yaml.UnmarshalStrict([]byte(docs[0]), &d); err != nil {
		t.Fatalf("%v\n%s", err, docs[0])
	}
	if got := d.Annotations["frontier.study"]; got != rec.Study {
		t.Errorf("annotation %q, want the study's name %q", got, rec.Study)
	}
	c := d.Spec.Template.Spec.Containers[0]
	env := map[string]string{"HF_TOKEN": "leaked", "HOME": "/root"}
	var args []string
	for _, a := range c.Args {
		args = append(args, kubelettest.Expand(a, env))
	}
	if diff := cmp.Diff(want[2:], args); diff != "" {
		t.Errorf("vLLM's arguments after Kubernetes expands them (-want +got):\n%s", diff)
	}
	for _, e := range c.Env {
		if w, ok := rec.EngineEnv[e.Name]; ok {
			if got := kubelettest.Expand(e.Value, env); got != w {
				t.Errorf("env %s after expansion %q, want %q", e.Name, got, w)
			}
		}
	}
}

func TestExportRefusesANulByte(t *testing.T) {
	t.Parallel()
	rec, tr := hostileStudy()
	tr.Config["served_model_name"] = "a\x00b"
	for _, f := range ExportFormats() {
		err := Export(&bytes.Buffer{}, rec, tr, f)
		if !errors.Is(err, ErrUnexportable) || !strings.Contains(err.Error(), `the value of knob served_model_name "a\x00b" holds a NUL byte`) {
			t.Errorf("%s: %v, want the knob named", f, err)
		}
	}
}

func slicesIndex(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// FuzzExportEscapes puts arbitrary strings in every field of a study that reaches an export:
// each export either refuses the study (a NUL byte, bytes that are not UTF-8) or prints only
// printable lines, and the YAML exports read back to exactly the values the trial ran with,
// after Kubernetes' expansion for the manifest.
func FuzzExportEscapes(f *testing.F) {
	f.Add("chat\ntouch x\n#", "org/model", "a\nenforce-eager: true", "$(HF_TOKEN)$$", "v\r\n\x1b[2J")
	f.Add("s", "m\u2028", "'\"\\", "\u202egnp", "$")
	f.Add("", "", "", "", "\x00")
	f.Fuzz(func(t *testing.T, study, model, arg, knob, env string) {
		rec := &record.Study{Study: study, Engine: "vllm", Model: model, Knobs: []string{"served_model_name"},
			EngineArgs: []string{"--chat-template", arg}, EngineEnv: map[string]string{"VLLM_X": env}}
		tr := &record.Trial{Number: 1, State: record.StateComplete, Config: map[string]any{"served_model_name": knob}}
		want, err := ServeArgs(rec, tr)
		if err != nil {
			t.Fatal(err)
		}
		for _, format := range ExportFormats() {
			var buf bytes.Buffer
			err := Export(&buf, rec, tr, format)
			if err != nil {
				if !errors.Is(err, ErrUnexportable) {
					t.Fatalf("%s: %v", format, err)
				}
				continue
			}
			out := buf.String()
			if bad := controlFree(out); len(bad) > 0 {
				t.Fatalf("%s: lines with a control character: %q", format, bad)
			}
			switch format {
			case FormatVLLMYAML:
				var cfg map[string]any
				if err := yaml.Unmarshal([]byte(out), &cfg); err != nil {
					t.Fatalf("vllm-yaml does not parse: %v\n%s", err, out)
				}
				if strings.HasPrefix(arg, "-") || strings.HasPrefix(knob, "-") {
					break // a value argparse would take for a flag
				}
				if cfg["model"] != model || cfg["served-model-name"] != knob || cfg["chat-template"] != arg || len(cfg) != 3 {
					t.Fatalf("vllm-yaml reads back %q, want model %q, chat-template %q and served-model-name %q", cfg, model, arg, knob)
				}
			case FormatK8s:
				var d appsv1.Deployment
				if err := yaml.UnmarshalStrict([]byte(strings.Split(out, "\n---\n")[0]), &d); err != nil {
					t.Fatalf("k8s does not decode: %v\n%s", err, out)
				}
				c := d.Spec.Template.Spec.Containers[0]
				var args []string
				for _, a := range c.Args {
					args = append(args, kubelettest.Expand(a, map[string]string{"HF_TOKEN": "leaked"}))
				}
				if !cmp.Equal(want[2:], args) {
					t.Fatalf("k8s args after expansion %q, want %q", args, want[2:])
				}
				if d.Annotations["frontier.study"] != study && utf8.ValidString(study) {
					t.Fatalf("annotation %q, want %q", d.Annotations["frontier.study"], study)
				}
			}
		}
	})
}
