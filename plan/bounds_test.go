package plan

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/frontier-llm/frontier/inputfile"
)

// within fails the test when f takes longer than limit: every input must be refused or
// loaded in bounded time.
func within(t *testing.T, limit time.Duration, f func()) {
	t.Helper()
	start := time.Now()
	f()
	if took := time.Since(start); took > limit*slowdown {
		t.Errorf("took %v, want under %v", took, limit*slowdown)
	}
}

func TestLoadRefusesAPlanThatIsNotARegularFile(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "plan.hcl")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for _, path := range []string{fifo, "/dev/zero"} {
		within(t, time.Second, func() {
			_, err := Load(path, LoadOptions{})
			if !errors.Is(err, inputfile.ErrNotRegular) {
				t.Errorf("Load(%s) = %v, want it refused as not a regular file", path, err)
			}
		})
	}
}

func TestLoadRefusesBinaryAndOversizedPlans(t *testing.T) {
	dir := t.TempDir()
	sqlite := filepath.Join(dir, "study.db")
	if err := os.WriteFile(sqlite, append([]byte("SQLite format 3\x00"), make([]byte, 4096)...), 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.hcl")
	if err := os.WriteFile(big, bytes.Repeat([]byte("# comment\n"), MaxPlanBytes/10+1), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		want error
		says string
	}{
		{sqlite, inputfile.ErrNotText, "byte 15 is NUL"},
		{big, inputfile.ErrTooLarge, "over the limit of 1 MiB"},
	} {
		within(t, time.Second, func() {
			_, err := Load(tc.path, LoadOptions{})
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("Load(%s) = %v, want %v saying %q", filepath.Base(tc.path), err, tc.want, tc.says)
			}
		})
	}
}

func TestLoadRefusesDeepNesting(t *testing.T) {
	for name, expr := range map[string]string{
		"parentheses":     strings.Repeat("(", 100000) + "1" + strings.Repeat(")", 100000),
		"lists":           strings.Repeat("[", 100000) + strings.Repeat("]", 100000),
		"unary operators": strings.Repeat("!", 100000) + "true",
		"interpolations":  strings.Repeat(`"${`, 5000) + "1" + strings.Repeat(`}"`, 5000),
	} {
		t.Run(name, func(t *testing.T) {
			within(t, 2*time.Second, func() {
				_, err := loadString(t, minimal+"variable \"deep\" { default = "+expr+" }\n", LoadOptions{})
				if got := summaries(t, err); len(got) != 1 || got[0] != "Nested too deeply" {
					t.Errorf("diagnostics %q, want one Nested too deeply", got)
				}
			})
		})
	}
	// The limit leaves room for what plans hold.
	mustLoad(t, minimal+"variable \"ok\" { default = "+strings.Repeat("[", 30)+strings.Repeat("]", 30)+" }\n", LoadOptions{})
}

func TestDiagnosticsArePrintedUpToALimit(t *testing.T) {
	// A line of 100,000 characters HCL does not accept, and 500 bad lines.
	src := minimal + strings.Repeat("@", 100000) + "\n" + strings.Repeat("knob \"x\" { values = [$] }\n", 500)
	_, err := loadString(t, src, LoadOptions{})
	var de *DiagnosticsError
	if !errors.As(err, &de) {
		t.Fatalf("Load = %v, want diagnostics", err)
	}
	if len(de.Diagnostics) <= MaxDiagnostics {
		t.Fatalf("%d diagnostics; the test needs more than %d", len(de.Diagnostics), MaxDiagnostics)
	}
	var out bytes.Buffer
	within(t, time.Second, func() {
		if err := de.Write(&out); err != nil {
			t.Fatal(err)
		}
	})
	if n := strings.Count(out.String(), "Error: "); n != MaxDiagnostics {
		t.Errorf("%d diagnostics printed, want %d", n, MaxDiagnostics)
	}
	if want := fmt.Sprintf("... and %d more diagnostics", len(de.Diagnostics)-MaxDiagnostics); !strings.Contains(out.String(), want) {
		t.Errorf("output does not say %q", want)
	}
	if out.Len() > 20000 {
		t.Errorf("printed %d bytes: the long line is quoted", out.Len())
	}
	if !strings.Contains(out.String(), "plan.hcl:16,1: Invalid character") {
		t.Errorf("the diagnostic on the long line does not give its position:\n%.2000s", out.String())
	}
}

func TestManyWarningsPrintInBoundedTime(t *testing.T) {
	var b strings.Builder
	// On a vLLM newer than the tables, a knob the newest table does not know is a warning: the
	// installed vLLM's help decides at the preflight.
	src := strings.Replace(minimal, `knob "max_num_seqs" { values = [8, 16, 32] }`, "", 1)
	b.WriteString(strings.Replace(src, `engine "vllm" {}`, `engine "vllm" { version = "0.33" }`, 1))
	for i := range 2000 {
		fmt.Fprintf(&b, "knob \"k%d\" { values = [1, 2] }\n", i)
	}
	p := mustLoad(t, b.String(), LoadOptions{})
	var out bytes.Buffer
	within(t, 3*time.Second, func() { // generous: a busy CI machine runs other packages alongside
		if err := p.WriteWarnings(&out); err != nil {
			t.Fatal(err)
		}
	})
	if !strings.Contains(out.String(), "... and 1981 more diagnostics (0 errors, 1981 warnings)") {
		t.Errorf("the warnings are not capped:\n%.1000s", out.String())
	}
}

func TestInfiniteKnobValuesAreRefused(t *testing.T) {
	_, err := loadString(t, strings.Replace(minimal, "[8, 16, 32]", "[1e400, 8]", 1), LoadOptions{})
	var de *DiagnosticsError
	if !errors.As(err, &de) || len(de.Diagnostics) != 1 || de.Diagnostics[0].Summary != "Knob value out of range" {
		t.Fatalf("Load = %v, want Knob value out of range", err)
	}
	if !strings.Contains(de.Diagnostics[0].Detail, "Value 1 of knob \"max_num_seqs\", 1e+400") {
		t.Errorf("detail %q does not name the value", de.Diagnostics[0].Detail)
	}
}

func TestALongVarFileListLoadsInLinearTime(t *testing.T) {
	dir := t.TempDir()
	vals := make([]string, 40000)
	for i := range vals {
		vals[i] = fmt.Sprint(i + 1)
	}
	vf := filepath.Join(dir, "seqs.tfvars")
	if err := os.WriteFile(vf, []byte("seqs = ["+strings.Join(vals, ", ")+"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	src := "variable \"seqs\" { type = list(number) }\n" + strings.Replace(minimal, "[8, 16, 32]", "var.seqs", 1)
	within(t, 6*time.Second, func() { // generous; the quadratic conversion took 33 s
		p := mustLoad(t, src, LoadOptions{VarFiles: []string{vf}})
		if n := len(p.Knob("max_num_seqs").Values); n != 40000 {
			t.Errorf("%d values, want 40000", n)
		}
	})
	// Each element is still checked against the type.
	if err := os.WriteFile(vf, []byte(`seqs = [1, "two", 3]`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := loadString(t, src, LoadOptions{VarFiles: []string{vf}})
	if got := summaries(t, err); len(got) == 0 || got[0] != "Invalid value for variable" {
		t.Errorf("diagnostics %q, want Invalid value for variable", got)
	}
}

func TestVarFilesAreBounded(t *testing.T) {
	_, err := loadString(t, "variable \"x\" { default = 1 }\n"+minimal, LoadOptions{VarFiles: []string{"/dev/zero"}})
	if got := summaries(t, err); len(got) != 1 || got[0] != "The variable file is not a regular file" {
		t.Errorf("diagnostics %q, want the variable file refused", got)
	}
}

// simPlanHead is a small simulated plan without workloads or objectives, for the tests of a
// workload class's bounds.
const simPlanHead = `engine "sim" {}
model {
  name          = "m"
  architecture  = "llama-3.1-8b"
  max_model_len = 8192
}
hardware {
  gpus = 1
  sku  = "h100-sxm"
}
knob "max_num_seqs" { values = [8, 16] }
`

func TestWorkloadSizeIsBoundedAtLoad(t *testing.T) {
	t.Parallel()
	base := simPlanHead + `objective "t" {
  maximize = metric.total.output_token_throughput
}
`
	for _, tt := range []struct {
		name, class, want string
	}{
		{"prefix groups beyond the requests", `workload "chat" {
  requests      = 4
  input_tokens  = fixed(100)
  output_tokens = fixed(10)
  prefix_tokens = 50
  prefix_groups = 10
  arrival       = poisson(3)
}`, "at most 4 groups can be used"},
		{"shared prefixes too large", `workload "chat" {
  requests      = 100000
  input_tokens  = fixed(100)
  output_tokens = fixed(10)
  prefix_tokens = 2000
  prefix_groups = 20000
  arrival       = poisson(3)
}`, "a class may share at most 20000000"},
		{"conversations times turns", `workload "conv" {
  conversations = 100000
  turns         = 10000
  input_tokens  = fixed(10)
  output_tokens = fixed(10)
  arrival       = poisson(3)
}`, "a class may send at most 200000"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "plan.hcl")
			if err := os.WriteFile(path, []byte(base+tt.class), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(path, LoadOptions{SKUs: []string{"h100-sxm"}, Architectures: []string{"llama-3.1-8b"}})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Load: %v; want an error that says %q", err, tt.want)
			}
		})
	}
}

func TestConversationsThatOutgrowTheContextAreWarnedAbout(t *testing.T) {
	t.Parallel()
	plan := func(turns int) string {
		return simPlanHead + fmt.Sprintf(`workload "chat" {
  conversations = 8
  turns         = %d
  input_tokens  = fixed(200)
  output_tokens = fixed(100)
  arrival       = poisson(3)
}
objective "t" {
  maximize = metric.total.output_token_throughput
}
`, turns)
	}
	for _, tt := range []struct {
		turns int
		warn  bool
	}{{50, true}, {20, false}} {
		path := filepath.Join(t.TempDir(), "plan.hcl")
		if err := os.WriteFile(path, []byte(plan(tt.turns)), 0o644); err != nil {
			t.Fatal(err)
		}
		p, err := Load(path, LoadOptions{SKUs: []string{"h100-sxm"}, Architectures: []string{"llama-3.1-8b"}})
		if err != nil {
			t.Fatal(err)
		}
		got := false
		for _, w := range p.Warnings {
			if strings.Contains(w, "passes max_model_len = 8192 at about turn 28") {
				got = true
			}
		}
		if got != tt.warn {
			t.Errorf("%d turns of 300 tokens: warned %v (%q), want %v", tt.turns, got, p.Warnings, tt.warn)
		}
	}
}
