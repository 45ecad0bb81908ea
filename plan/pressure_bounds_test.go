package plan

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestPressureBoundsRefuseOverflowingValues checks that every number and duration of the
// pressure block that could overflow a rate, a request count or a timeline is refused at
// load, by a diagnostic that names the attribute and its range.
func TestPressureBoundsRefuseOverflowingValues(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ block, want string }{
		{`ladder { factor = 1e300 }`, "The attribute factor of ladder must be above 1 and at most 100, not 1e+300."},
		{`ladder { start = 1e300 }`, "The attribute start of ladder must be above 0 and at most 1000, not 1e+300."},
		{`ladder { start = 0 }`, "The attribute start of ladder must be above 0 and at most 1000, not 0."},
		{`ladder { max_steps = 1000000 }`, "The attribute max_steps of ladder must be between 1 and 100, not 1000000."},
		{`ladder { past = 1000 }`, "The attribute past of ladder must be between 0 and 100, not 1000."},
		{`ladder { refine = 1000 }`, "The attribute refine of ladder must be between 0 and 50, not 1000."},
		{`ladder { duration = "1000h" }`, "The attribute duration of ladder is 1000h0m0s; it must be at least 0s and at most 24h0m0s."},
		{`burst { factor = 1e300 }`, "The attribute factor of burst must be above 1 and at most 1000, not 1e+300."},
		{`burst { recover = "0s" }`, "The attribute recover of burst is 0s; it must be at least 1ms and at most 24h0m0s."},
		{`restart { base = 2 }`, "The attribute base of restart must be above 0 and at most 1, not 2."},
		{"shift {\n from = { chat = 1e300 }\n to = { chat = 1 }\n}", "The weight of chat in from of shift must be between 0 and 1e+06, not 1e+300."},
		{`retry { max_retries = 1000000 }`, "The attribute max_retries of retry must be between 0 and 100, not 1000000."},
		{`retry { budget = 1e300 }`, "The attribute budget of retry must be at least 0 and at most 100, not 1e+300."},
		{"ladder {}\n  max_requests = 1e12", "The attribute max_requests of pressure must be between 1 and 1000000, not 1000000000000."},
		{"ladder {}\n  budget = \"100000h\"", "The attribute budget of pressure is 100000h0m0s; it must be at least 1s and at most 24h0m0s."},
		{"ladder {}\n  window = \"1ns\"", "The attribute window of pressure is 1ns; it must be at least 12ms and at most 2m0s."},
		{"ladder {}\n  budget = \"24h\"\n  window = \"1s\"", "The attribute window of pressure is 1s; it must be at least 8.64s and at most 24h0m0s."},
	} {
		_, err := loadString(t, minimal+"pressure {\n  "+c.block+"\n}\n", LoadOptions{})
		if err == nil {
			t.Errorf("%s: accepted", c.block)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\n got %v\nwant it to say %q", c.block, err, c.want)
		}
	}
}

func TestPressureWindowDefaultsWithinItsBounds(t *testing.T) {
	t.Parallel()
	p := mustLoad(t, minimal+"pressure {\n  budget = \"24h\"\n  ladder {}\n}\n", LoadOptions{})
	if got, want := p.Pressure.Window, 8640*time.Millisecond; got != want {
		t.Errorf("window %v, want %v (a timeline over the 24 h budget within %d points)", got, want, MaxTimelinePoints)
	}
	p = mustLoad(t, minimal+"pressure {\n  ladder {}\n}\n", LoadOptions{})
	if got := p.Pressure.Window; got != DefaultPressureWindow {
		t.Errorf("window %v, want the default %v", got, DefaultPressureWindow)
	}
}

func TestPressureRetryBudgetZeroWarnsThatNoRetryIsSent(t *testing.T) {
	t.Parallel()
	p := mustLoad(t, minimal+"pressure {\n  burst {}\n  retry { budget = 0 }\n}\n", LoadOptions{})
	if p.Pressure.Retry.Budget != 0 {
		t.Fatalf("budget %g, want 0", p.Pressure.Retry.Budget)
	}
	if !slices.ContainsFunc(p.Warnings, func(w string) bool { return strings.Contains(w, "allows no retry at all") }) {
		t.Errorf("warnings %q, want one that budget = 0 allows no retry", p.Warnings)
	}
}

// closedLoop is minimal with a second workload in a closed loop and a third sent at once.
var closedLoop = strings.Replace(minimal, "objective", `workload "batch" {
  requests      = 10
  input_tokens  = fixed(100)
  output_tokens = fixed(10)
  arrival       = concurrency(4)
}
workload "flood" {
  requests      = 4
  input_tokens  = fixed(100)
  output_tokens = fixed(10)
  arrival       = immediate()
}
objective`, 1)

func TestPressureRefusesWorkloadsWithoutAnArrivalRate(t *testing.T) {
	t.Parallel()
	onlyClosed := strings.Replace(closedLoop, "arrival       = poisson(1)", "arrival       = concurrency(2)", 1)
	for _, c := range []struct{ name, src, want string }{
		{"every workload closed", onlyClosed + "pressure {\n  ladder {}\n  burst {}\n}\n",
			`No workload with an arrival rate; The pressure experiments scale each workload's arrival rate (a ladder of rates, a burst at a multiple of the saturation rate), and no workload of the plan has one: "chat" (concurrency(2)), "batch" (concurrency(4)), "flood" (immediate())`},
		{"a ladder of a closed loop", closedLoop + "pressure {\n  ladder { classes = [\"batch\"] }\n}\n",
			`Workload without an arrival rate; The ladder names workload "batch", whose arrival is concurrency(4)`},
		{"a ladder of immediate()", closedLoop + "pressure {\n  ladder { classes = [\"flood\"] }\n}\n",
			`The ladder names workload "flood", whose arrival is immediate()`},
		{"a shift to a closed loop", closedLoop + "pressure {\n  shift {\n    from = { chat = 1 }\n    to = { batch = 1 }\n  }\n}\n",
			`The attribute to of shift names workload "batch", whose arrival is concurrency(4)`},
	} {
		_, err := loadString(t, c.src, LoadOptions{})
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\n got %v\nwant it to say %q", c.name, err, c.want)
		}
	}
	// Beside a workload with a rate, the closed ones are left out, with a warning.
	p := mustLoad(t, closedLoop+"pressure {\n  ladder {}\n  burst {}\n}\n", LoadOptions{})
	want := `the workloads without one are not sent: "batch" (concurrency(4)), "flood" (immediate())`
	if !slices.ContainsFunc(p.Warnings, func(w string) bool { return strings.Contains(w, want) }) {
		t.Errorf("warnings %q, want one that says %q", p.Warnings, want)
	}
}
