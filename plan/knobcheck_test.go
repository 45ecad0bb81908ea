package plan

import (
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

// simPlan is a plan for the simulated vLLM with extra blocks appended (from line 20).
const simPlan = `
model {
  name         = "meta-llama/Llama-3.1-8B-Instruct"
  architecture = "llama-3.1-8b"
}
engine "sim" {}
hardware {
  gpus = 1
  sku  = "h100-sxm"
}
workload "chat" {
  requests      = 10
  input_tokens  = fixed(100)
  output_tokens = fixed(10)
  arrival       = poisson(1)
}
objective "throughput" {
  maximize = metric.total.output_token_throughput
}
`

// TestKnobsAreCheckedAgainstTheLine: a knob that names no flag of the plan's vLLM line, or a
// value the line's flag refuses, is an error at its place with the line's nearest flags or
// valid values; where the table stands in for a newer vLLM, only a warning.
func TestKnobsAreCheckedAgainstTheLine(t *testing.T) {
	t.Parallel()
	newer := `engine "vllm" { version = "0.33" }`
	for _, tc := range []struct {
		name string
		src  string
		// severity is the one diagnostic's (besides the version warning of a newer line), or
		// -1 for a plan that loads without any.
		severity   hcl.DiagnosticSeverity
		wantLine   int
		wantDetail []string
	}{
		{"a misspelt knob", vllmPlan(`engine "vllm" {}`, "knob \"max_num_seq\" { values = [64, 128] }\n"),
			hcl.DiagError, 16, []string{`The knob "max_num_seq" is not an option of vLLM v0.28: it has no flag --max-num-seq.`,
				"Did you mean max_num_seqs (--max-num-seqs)?"}},
		{"a misspelt knob for the simulated vLLM", simPlan + "knob \"max_num_seq\" { values = [64, 128] }\n",
			hcl.DiagError, 20, []string{`vLLM v0.28 (as engine "sim" emulates it)`, "Did you mean max_num_seqs (--max-num-seqs)?"}},
		{"a knob no flag is near", simPlan + "knob \"frobnicate\" { values = [1] }\n",
			hcl.DiagError, 20, []string{"has no flag --frobnicate", "named after a `vllm serve` flag in snake_case"}},
		{"a misspelt knob on a vLLM newer than the tables", vllmPlan(newer, "knob \"max_num_seq\" { values = [64, 128] }\n"),
			hcl.DiagWarning, 16, []string{"not in frontier's table of vLLM v0.28 (standing in for 0.33)", "The preflight checks it"}},
		{"a misspelt engine argument", vllmPlan(`engine "vllm" { args = ["--max-num-seq=8"] }`, ""),
			hcl.DiagError, 5, []string{"vLLM v0.28 has no flag --max-num-seq; did you mean --max-num-seqs?"}},
		{"a misspelt engine argument for the simulated vLLM", strings.Replace(simPlan, `engine "sim" {}`, `engine "sim" { args = ["--enforce-eagre"] }`, 1),
			hcl.DiagError, 6, []string{"has no flag --enforce-eagre; did you mean --enforce-eager?"}},
		{"an engine argument without its value", vllmPlan(`engine "vllm" { args = ["--max-num-seqs", "--enforce-eager"] }`, ""),
			hcl.DiagError, 5, []string{"vLLM v0.28 refuses the engine arguments: vllm serve: error: argument --max-num-seqs: expected one argument"}},
		{"an engine argument's value that is no choice", strings.Replace(simPlan, `engine "sim" {}`, `engine "sim" { args = ["--fault-hang-startup", "--kv-cache-dtype=fp-8"] }`, 1),
			hcl.DiagError, 6, []string{"invalid choice: 'fp-8'"}},
		{"a switch given a value in args", vllmPlan(`engine "vllm" { args = ["--enforce-eager", "true"] }`, ""),
			hcl.DiagError, 5, []string{"unrecognized arguments: true"}},
		{"engine arguments the line takes", vllmPlan(`engine "vllm" { args = ["-tp", "2", "-O3", "--max-model-len", "8k", "--no-enable-prefix-caching", "--api-key", "k"] }`, ""),
			-1, 0, nil},
		{"an empty KV offloading backend", vllmPlan(`engine "vllm" {}`, "knob \"kv_offloading_backend\" {\n  values = [\"native\", \"\"]\n}\n"),
			hcl.DiagError, 17, []string{`The knob "kv_offloading_backend" lists "", which vLLM v0.28 does not take`,
				"invalid choice: '' (choose from 'native', 'lmcache')"}},
		{"a KV cache dtype that is no choice", simPlan + "knob \"kv_cache_dtype\" { values = [\"auto\", \"fp-8\"] }\n",
			hcl.DiagError, 20, []string{"invalid choice: 'fp-8'", `Did you mean "fp8"?`}},
		{"a quantization method vLLM does not know", vllmPlan(`engine "vllm" {}`, "knob \"quantization\" { values = [\"none\", \"FP8\"] }\n"),
			hcl.DiagError, 16, []string{"'FP8' is not a value of --quantization", `Did you mean "fp8"?`, `"awq_marlin"`, `or "none" for the checkpoint's own`}},
		{"a quantization method of an older line only", vllmPlan(`engine "vllm" {}`, "knob \"quantization\" { values = [\"hqq\"] }\n"),
			hcl.DiagError, 16, []string{"'hqq' is not a value of --quantization"}},
		{"the same method on the line that has it", vllmPlan(`engine "vllm" { version = "0.13" }`, "knob \"quantization\" { values = [\"hqq\", \"none\"] }\n"),
			-1, 0, nil},
		{"a switch given words", vllmPlan(`engine "vllm" {}`, "knob \"enforce_eager\" { values = [\"yes\"] }\n"),
			hcl.DiagError, 16, []string{"--enforce-eager is a switch (BooleanOptionalAction): its values are true and false, not \"yes\""}},
		{"a value flag given a boolean", vllmPlan(`engine "vllm" {}`, "knob \"kv_cache_dtype\" { values = [true] }\n"),
			hcl.DiagError, 16, []string{"--kv-cache-dtype takes a value (str), not true or false"}},
		{"an integer flag given fractions", vllmPlan(`engine "vllm" {}`, "knob \"max_num_batched_tokens\" {\n  min = 1024.5\n  max = 4096\n}\n"),
			hcl.DiagError, 17, []string{"range of fractions", "--max-num-batched-tokens of vLLM v0.28 takes whole numbers"}},
		{"a range that leaves the choices", vllmPlan(`engine "vllm" { version = "0.13" }`, "knob \"block_size\" {\n  min  = 8\n  max  = 32\n  step = 8\n}\n"),
			hcl.DiagError, 17, []string{"ranges from 8 to 32 and so takes 24", "invalid choice: 24"}},
		{"a bad choice on a vLLM newer than the tables", vllmPlan(newer, "knob \"kv_cache_dtype\" { values = [\"fp9\"] }\n"),
			hcl.DiagWarning, 16, []string{"invalid choice: 'fp9'", "The preflight checks it"}},
		{"frontier's own knobs and good values", simPlan + "knob \"sku\" { values = [\"h100-sxm\"] }\n" +
			"knob \"enable_prefix_caching\" { values = [true, false] }\nknob \"gpu_memory_utilization\" {\n  min = 0.8\n  max = 0.95\n}\n" +
			"knob \"max_model_len\" { values = [\"auto\", \"8k\"] }\nknob \"kv_offloading_size\" { values = [0, 8.5] }\n", -1, 0, nil},
		{"the simulator's own flags", strings.Replace(simPlan, `engine "sim" {}`, `engine "sim" { args = ["--fault-crash-after", "4", "--load-time=auto"] }`, 1) +
			"knob \"max_num_seqs\" { values = [8] }\n", -1, 0, nil},
		{"the line the simulator is told to emulate", strings.Replace(simPlan, `engine "sim" {}`, `engine "sim" { args = ["--vllm-version", "0.13"] }`, 1) +
			"knob \"kv_cache_dtype\" { values = [\"nvfp4\"] }\n", hcl.DiagError, 20, []string{`which vLLM v0.13 (as engine "sim" emulates it) does not take`, "invalid choice: 'nvfp4'"}},
		{"Ollama has options of its own", strings.Replace(minimal, `engine "vllm" {}`, `engine "ollama" {}`, 1) + "knob \"num_ctx\" { values = [2048] }\n",
			-1, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, err := loadString(t, tc.src, LoadOptions{})
			var diags hcl.Diagnostics
			var de *DiagnosticsError
			switch {
			case errors.As(err, &de):
				diags = de.Diagnostics
			case err != nil:
				t.Fatalf("Load: %v", err)
			default:
				diags = p.warnings
			}
			var got hcl.Diagnostics
			for _, d := range diags {
				if d.Summary != "vLLM version without a table of its own" {
					got = append(got, d)
				}
			}
			if tc.severity == -1 {
				if len(got) > 0 {
					t.Fatalf("diagnostics %v, want none", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("diagnostics %v, want one", got)
			}
			d := got[0]
			if d.Severity != tc.severity || (tc.severity == hcl.DiagError) != (err != nil) {
				t.Errorf("severity %v (load error %v), want %v", d.Severity, err, tc.severity)
			}
			if d.Subject == nil || d.Subject.Start.Line != tc.wantLine {
				t.Errorf("diagnostic at %v, want line %d", d.Subject, tc.wantLine)
			}
			for _, w := range tc.wantDetail {
				if !strings.Contains(d.Detail, w) {
					t.Errorf("detail %q lacks %q", d.Detail, w)
				}
			}
		})
	}
}

// TestKnobReferenceSuggestsFlagsNotTypos: a rule that names a knob the plan does not declare
// says whether the name is a flag of the line, and never offers a misspelt knob block as the
// fix for a correct reference.
func TestKnobReferenceSuggestsFlagsNotTypos(t *testing.T) {
	t.Parallel()
	rule := func(ref string) string { return "rule \"r\" {\n  condition = knob." + ref + " <= 256\n}\n" }
	for _, tc := range []struct {
		name, knobs, ref string
		want, wantNot    []string
	}{
		{"a correct reference to a misspelt knob", "knob \"max_num_seq\" { values = [8] }\n", "max_num_seqs",
			[]string{`max_num_seqs is a flag of vLLM v0.28 (--max-num-seqs), and the knob "max_num_seq", which is not, is probably it misspelt: rename that knob "max_num_seqs".`},
			[]string{`Did you mean "max_num_seq"?`}},
		{"a misspelt reference to a declared knob", "knob \"max_num_seqs\" { values = [8] }\n", "max_num_seq",
			[]string{`Did you mean "max_num_seqs"?`, "Nor is max_num_seq a flag of vLLM v0.28 (it has no --max-num-seq); did you mean max_num_seqs (--max-num-seqs)?"}, nil},
		{"a reference to a flag the plan does not search", "knob \"max_num_seqs\" { values = [8] }\n", "block_size",
			[]string{`block_size is a flag of vLLM v0.28 (--block-size): declare a knob "block_size" to search it.`}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src := strings.Replace(minimal, `knob "max_num_seqs" { values = [8, 16, 32] }`, tc.knobs+rule(tc.ref), 1)
			_, err := loadString(t, src, LoadOptions{})
			var de *DiagnosticsError
			if !errors.As(err, &de) {
				t.Fatalf("Load error %v, want diagnostics", err)
			}
			var detail string
			for _, d := range de.Diagnostics {
				if d.Summary == "Unknown knob" {
					detail = d.Detail
				}
			}
			for _, w := range tc.want {
				if !strings.Contains(detail, w) {
					t.Errorf("Unknown knob detail %q lacks %q", detail, w)
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(detail, w) {
					t.Errorf("Unknown knob detail %q has %q", detail, w)
				}
			}
		})
	}
}

// TestKnobOverridesAreCheckedAgainstTheLine: `frontier estimate --knob NAME=VALUE` refuses a
// name that is no flag of the line and a value its flag refuses, as the knob blocks do.
func TestKnobOverridesAreCheckedAgainstTheLine(t *testing.T) {
	t.Parallel()
	p := mustLoad(t, simPlan+"knob \"max_num_seqs\" { values = [8, 16] }\n", LoadOptions{})
	for _, tc := range []struct {
		setting, want string
	}{
		{"max_num_seqs=16", ""},
		{"quantization=none", ""},
		{"enforce_eager=true", ""},
		{"max_num_seq=8", `--knob max_num_seq: vLLM v0.28 (as engine "sim" emulates it) has no flag --max-num-seq; did you mean max_num_seqs (--max-num-seqs)?`},
		{"kv_offloading_backend=", "invalid choice: '' (choose from 'native', 'lmcache')"},
		{"enforce_eager=yes", "--enforce-eager is a switch"},
	} {
		_, err := p.ParseKnobOverrides([]string{tc.setting})
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.setting, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q", tc.setting, err, tc.want)
		}
	}
}
