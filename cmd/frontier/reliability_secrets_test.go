package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// secretsLeaveNoTrace, a case of TestReliability, runs a study with HF_TOKEN, OPENAI_API_KEY and a
// variable the plan names in secret_env set in frontier's environment, with the key also
// passed to the engine as --api-key and the secret_env variable in the engine block's env,
// then writes every report and export: none of the values may be found in any file of the
// study's folder, nor in anything frontier printed.
func secretsLeaveNoTrace(t *testing.T) {
	dir := t.TempDir()
	mk := marker(t.Name())
	secrets := map[string]string{
		"HF_TOKEN":       "hf_" + mk + "Qx7",
		"OPENAI_API_KEY": "sk-" + mk + "Zr4",
		"SERVICE_AUTH":   "auth-" + mk + "Lp2",
	}
	p := relPlan{Model: mk, Trials: 2, Requests: 6, Args: []string{"--api-key", "API_KEY_VAR"}, SecretEnv: []string{"SERVICE_AUTH"}}
	text := strings.Replace(p.hcl(), `"API_KEY_VAR"`, "var.api_key", 1)
	text = strings.Replace(text, "  secret_env", "  env             = { SERVICE_AUTH = var.auth }\n  secret_env", 1)
	text += "variable \"api_key\" {}\nvariable \"auth\" {}\n"
	if err := os.WriteFile(filepath.Join(dir, "plan.hcl"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"FRONTIER_VAR_api_key=" + secrets["OPENAI_API_KEY"], "FRONTIER_VAR_auth=" + secrets["SERVICE_AUTH"]}
	for k, v := range secrets {
		env = append(env, k+"="+v)
	}
	var printed strings.Builder
	step := func(args ...string) {
		t.Helper()
		r := frontier(t, dir, env, args...)
		if r.code != 0 {
			t.Fatalf("frontier %s exited %d:\n%s", strings.Join(args, " "), r.code, r.stderr)
		}
		printed.WriteString(r.stdout + r.stderr)
	}
	step("apply", "plan.hcl", "--storage", "study.db")
	for _, f := range []string{"table", "json", "markdown", "html"} {
		step("report", "--storage", "study.db", "--all", "--format", f, "-o", "report."+f)
	}
	step("report", "--storage", "study.db", "--all")
	for _, f := range []string{"vllm-args", "vllm-yaml", "docker", "k8s"} {
		step("export", "--storage", "study.db", "--trial", "0", "--format", f, "-o", "export."+f)
	}
	step("export", "--storage", "study.db", "--trial", "0")
	if l := left(mk); l != "none" {
		t.Errorf("processes left running: %s", l)
	}

	// The control: the secrets did reach the places they would leak from.
	log, err := os.ReadFile(filepath.Join(dir, "study.db.logs", "reliability", "trial-0.log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# env: VLLM_API_KEY=REDACTED", "SERVICE_AUTH=REDACTED"} {
		if !strings.Contains(string(log), want) {
			t.Errorf("trial-0.log does not show %q: the test no longer checks what it means to", want)
		}
	}

	var files []string
	found := map[string][]string{}
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		files = append(files, rel)
		for name, v := range secrets {
			if strings.Contains(string(raw), v) {
				found[name] = append(found[name], rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range secrets {
		if strings.Contains(printed.String(), v) {
			found[name] = append(found[name], "(printed)")
		}
	}
	for _, want := range []string{"study.db", "study.db.logs/reliability/trial-0.log", "study.db.logs/reliability/trial-1.log", "report.html", "report.json", "report.markdown", "export.k8s"} {
		if !contains(files, want) {
			t.Errorf("%s was not written: the walk missed an output (files: %v)", want, files)
		}
	}
	if diff := cmp.Diff(map[string][]string{}, found); diff != "" {
		t.Errorf("secret values found on disk (-want +got):\n%s", diff)
	}
	if t.Failed() {
		return
	}
	var b strings.Builder
	b.WriteString("| secret | how it was given | found in |\n|---|---|---|\n")
	for _, row := range [][2]string{
		{"HF_TOKEN", "frontier's environment, inherited by the engine"},
		{"OPENAI_API_KEY", "frontier's environment, and the engine's `--api-key` through a plan variable (passed as `VLLM_API_KEY`, sent on every request)"},
		{"SERVICE_AUTH", "frontier's environment, named in `secret_env`, and the engine block's `env`"},
	} {
		fmt.Fprintf(&b, "| `%s` | %s | nowhere |\n", row[0], row[1])
	}
	b.WriteString("\nLooked in: the study database (with its `-wal` and `-shm` files), every trial log, " +
		"`frontier report` as table, JSON, Markdown and HTML, `frontier export` as vllm-args, vllm-yaml, docker " +
		"and k8s, and everything the commands printed.\n")
	checkReliabilityDoc(t, "secrets", b.String())
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
