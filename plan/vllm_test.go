package plan

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"

	"github.com/frontier-llm/frontier/vllm"
)

// vllmPlan is minimal with another engine block and extra blocks.
func vllmPlan(engine, extra string) string {
	return strings.Replace(minimal, `engine "vllm" {}`, engine, 1) + extra
}

func TestVLLMFlagsAreCheckedAgainstTheVersionTable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, engine, extra string
		// wantErr is the line and the words the diagnostic must hold; "" for a plan that loads.
		wantLine   int
		wantDetail []string
	}{
		{"a removed argument on the current line", `engine "vllm" { args = ["--disable-log-requests"] }`, "", 5,
			[]string{"--disable-log-requests was removed in v0.", "did you mean --enable-log-requests"}},
		{"a removed flag as a knob", `engine "vllm" {}`, "knob \"swap_space\" {\n  values = [4, 8]\n}\n", 16,
			[]string{`The knob "swap_space" (the flag --swap-space)`, "removed in v0."}},
		{"the --no- form of a store_true switch", `engine "vllm" { args = ["--no-disable-log-stats"] }`, "", 5,
			[]string{"--disable-log-stats is a store_true switch"}},
		{"the old line still has the flag", `engine "vllm" {
  version = "0.13"
  args    = ["--disable-log-requests"]
}`, "knob \"swap_space\" {\n  values = [4, 8]\n}\n", 0, nil},
		{"a flag added after the plan's line", `engine "vllm" {
  version = "0.13.0"
  args    = ["--enable-log-requests"]
}`, "", 0, nil},
		{"KV offloading on v0.13", `engine "vllm" {
  version = "0.13"
}`, "knob \"kv_offloading_size\" {\n  values = [0, 16]\n}\nknob \"kv_offloading_backend\" {\n  values = [\"native\", \"lmcache\"]\n}\n", 0, nil},
		{"a vLLM-compatible server has its own flags", `engine "vllm" {
  command   = ["llm-d-inference-sim"]
  model_arg = "--model"
  host_flag = false
  args      = ["--disable-log-requests", "--mode", "random"]
}`, "", 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := loadString(t, vllmPlan(tc.engine, tc.extra), LoadOptions{})
			if tc.wantDetail == nil {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				return
			}
			var de *DiagnosticsError
			if !errors.As(err, &de) || len(de.Diagnostics) != 1 {
				t.Fatalf("Load error %v, want one diagnostic", err)
			}
			d := de.Diagnostics[0]
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

func TestEngineVersionAndCommandLineAttributes(t *testing.T) {
	t.Parallel()
	p := mustLoad(t, vllmPlan(`engine "vllm" {
  command   = ["llm-d-inference-sim"]
  version   = "0.13"
  model_arg = "--model"
  host_flag = false
}`, ""), LoadOptions{})
	want := Engine{Kind: "vllm", Command: []string{"llm-d-inference-sim"}, StartupTimeout: DefaultStartupTimeout("vllm"),
		Version: "0.13", ModelAsFlag: true, NoHostFlag: true}
	if diff := cmp.Diff(want, p.Engine); diff != "" {
		t.Errorf("engine (-want +got):\n%s", diff)
	}
	for _, tc := range []struct{ engine, summary string }{
		{`engine "vllm" { version = "0.x" }`, "Unknown vLLM version"},
		{`engine "vllm" { version = 0.20 }`, "Version is a number"},
		{`engine "sim" { version = "0.13" }`, "Version of a vLLM engine only"},
		{`engine "vllm" { model_arg = "model" }`, "Invalid value"},
	} {
		_, err := loadString(t, vllmPlan(tc.engine, "hardware {\n  sku = \"h100-sxm\"\n}\n"), LoadOptions{})
		if got := summaries(t, err); !strings.Contains(strings.Join(got, "|"), tc.summary) {
			t.Errorf("%s: diagnostics %q, want %q", tc.engine, got, tc.summary)
		}
	}
}

func TestVLLMWithoutGPUsIsRefused(t *testing.T) {
	t.Parallel()
	_, err := loadString(t, minimal+"hardware { gpus = 0 }\n", LoadOptions{})
	if diff := cmp.Diff([]string{"No GPU for vLLM"}, summaries(t, err)); diff != "" {
		t.Errorf("diagnostics (-want +got):\n%s", diff)
	}
	// Ollama runs on the CPU.
	p := mustLoad(t, strings.Replace(minimal, `engine "vllm" {}`, `engine "ollama" {}`, 1)+"hardware { gpus = 0 }\n", LoadOptions{})
	if diff := cmp.Diff(GPUSelection{}, p.Hardware.GPUs); diff != "" {
		t.Errorf("gpus (-want +got):\n%s", diff)
	}
}

// TestNewerVersionValidatesWithAWarning: a host newer than the newest table is planned
// against that table with a warning; a knob it has (max_num_scheduled_tokens, grpc) passes,
// one the newest line removed is refused naming the removal.
func TestNewerVersionValidatesWithAWarning(t *testing.T) {
	t.Parallel()
	body := "hardware {\n  sku = \"h100-sxm\"\n}\n" + `knob "max_num_scheduled_tokens" {
  values = [2048, 4096]
}
knob "grpc" {
  values = [false]
}
`
	p := mustLoad(t, vllmPlan(`engine "vllm" { version = "0.33" }`, body), LoadOptions{})
	if !strings.Contains(strings.Join(p.Warnings, "\n"), "0.33 is newer than frontier's newest table, v"+vllm.Current) {
		t.Errorf("warnings %q, want the newer version named", p.Warnings)
	}
	removed := "hardware {\n  sku = \"h100-sxm\"\n}\n" + `knob "max_num_partial_prefills" {
  values = [1, 2]
}
`
	_, err := loadString(t, vllmPlan(`engine "vllm" { version = "0.33" }`, removed), LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), "removed in v0.28") {
		t.Errorf("a knob removed in v0.28: %v, want it refused with the removal", err)
	}
	// An unquoted version is a number, and 0.20 would be read as 0.2.
	_, err = loadString(t, vllmPlan(`engine "vllm" { version = 0.20 }`, ""), LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), "reads as 0.2") || !strings.Contains(err.Error(), "Quote it") {
		t.Errorf("version = 0.20: %v, want the advice to quote it", err)
	}
}

// A vLLM older than the release that added a flag refuses the knob, naming the version it
// was asked for, though the oldest table stands in for it.
func TestKVOffloadingOnAnOlderVLLMIsRefused(t *testing.T) {
	t.Parallel()
	_, err := loadString(t, vllmPlan(`engine "vllm" {
  version = "0.11.0"
}`, "knob \"kv_offloading_size\" {\n  values = [0, 16]\n}\n"), LoadOptions{})
	var de *DiagnosticsError
	if !errors.As(err, &de) {
		t.Fatalf("Load error %v, want diagnostics", err)
	}
	for _, d := range de.Diagnostics {
		if d.Severity == hcl.DiagError && d.Subject != nil && d.Subject.Start.Line == 18 &&
			strings.Contains(d.Detail, "--kv-offloading-size is not in vLLM v0.11: it was added in v0.12") {
			return
		}
	}
	t.Errorf("diagnostics %v, want an error at line 18 saying --kv-offloading-size was added in v0.12", de.Diagnostics)
}
