package plan

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// workloadPlan is minimal with its workload's body replaced by body.
func workloadPlan(body string) string {
	const old = `  requests      = 10
  input_tokens  = fixed(100)
  output_tokens = fixed(10)
  arrival       = poisson(1)
`
	return strings.Replace(minimal, old, body, 1)
}

func TestWarmupDefaultsToTheClosedLoopsStartupWave(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		body       string
		wantWarmup int
		wantNote   string // "" means no note
	}{
		{"a closed loop warms up with its concurrency",
			"requests = 2000\ninput_tokens = fixed(100)\noutput_tokens = fixed(10)\narrival = concurrency(64)\n",
			64, `workload "chat": warm-up 64 requests: the closed loop's start-up wave (concurrency 64); set warmup to change it`},
		{"conversations in a closed loop warm up with as many conversations",
			"conversations = 40\nturns = 3\ninput_tokens = fixed(100)\noutput_tokens = fixed(10)\narrival = concurrency(8)\n",
			8, `workload "chat": warm-up 8 conversations: the closed loop's start-up wave (concurrency 8); set warmup to change it`},
		{"an explicit warmup is kept",
			"requests = 2000\nwarmup = 100\ninput_tokens = fixed(100)\noutput_tokens = fixed(10)\narrival = concurrency(64)\n",
			100, ""},
		{"an open loop has no warm-up",
			"requests = 2000\ninput_tokens = fixed(100)\noutput_tokens = fixed(10)\narrival = poisson(4)\n",
			0, ""},
		{"immediate() is one wave, measured as such",
			"requests = 2000\ninput_tokens = fixed(100)\noutput_tokens = fixed(10)\narrival = immediate()\n",
			0, `workload "chat": no warm-up: immediate() sends every request at once, so the whole run is one start-up wave, measured as such`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := mustLoad(t, workloadPlan(tt.body), LoadOptions{})
			if got := p.Workloads[0].Warmup; got != tt.wantWarmup {
				t.Errorf("warmup = %d, want %d", got, tt.wantWarmup)
			}
			var want []string
			if tt.wantNote != "" {
				want = []string{tt.wantNote}
			}
			if diff := cmp.Diff(want, p.Notes); diff != "" {
				t.Errorf("notes (-want +got):\n%s", diff)
			}
			if len(p.Warnings) > 0 {
				t.Errorf("warnings %q, want none", p.Warnings)
			}
		})
	}
}

func TestWarmupShorterThanTheStartupWaveIsWarned(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		want []string // fragments of the one warning
	}{
		{"requests", "requests = 300\nwarmup = 30\ninput_tokens = fixed(100)\noutput_tokens = fixed(10)\narrival = concurrency(64)\n",
			[]string{"plan.hcl:9,", "Warm-up shorter than the start-up wave", "keeps 64 requests in flight with warmup = 30",
				"34 of its 300 measured requests (11%)", "Set warmup = 64"}},
		{"no warm-up at all", "requests = 50\nwarmup = 0\ninput_tokens = fixed(100)\noutput_tokens = fixed(10)\narrival = concurrency(64)\n",
			[]string{"with warmup = 0, so 50 of its 50 measured requests (100%)"}},
		{"conversations", "conversations = 40\nwarmup = 2\nturns = 3\ninput_tokens = fixed(100)\noutput_tokens = fixed(10)\narrival = concurrency(8)\n",
			[]string{"keeps 8 conversations in flight with warmup = 2", "6 of its 40 measured conversations (15%)", "their first turns queue", "Set warmup = 8"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := mustLoad(t, workloadPlan(tt.body), LoadOptions{})
			if len(p.Warnings) != 1 {
				t.Fatalf("warnings %q, want one", p.Warnings)
			}
			for _, w := range tt.want {
				if !strings.Contains(p.Warnings[0], w) {
					t.Errorf("warning %q does not say %q", p.Warnings[0], w)
				}
			}
		})
	}
}

func TestTooFewRequestsForAPercentileSLOAreWarned(t *testing.T) {
	t.Parallel()
	const lengths = "input_tokens = fixed(100)\noutput_tokens = fixed(10)\narrival = poisson(4)\n"
	tests := []struct {
		name  string
		body  string
		count int      // warnings
		want  []string // fragments of the warnings
	}{
		{"p99 of 120 requests", "requests = 120\n" + lengths + "slo {\n ttft_p99 = \"1s\"\n tpot_p99 = \"50ms\"\n}\n", 1,
			[]string{`Too few requests for a p99 SLO; Workload "chat" measures 120 requests, too few to pin its SLOs ttft_p99 and tpot_p99: with 120 requests, p99 is the 2nd-largest value and its 95% interval spans from the 5th-largest to the largest`,
				"A p99 needs about 1000 requests (10 beyond it): set requests = 1000, or bound a lower percentile such as ttft_p90 (100 requests pin it)."}},
		{"p95 of 60 requests suggests the median", "requests = 60\n" + lengths + "slo {\n e2e_p95 = \"10s\"\n}\n", 1,
			[]string{"its SLO e2e_p95: with 60 requests, p95 is the 4th-largest", "set requests = 200, or bound a lower percentile such as e2e_p50"}},
		{"each percentile its own warning", "requests = 150\n" + lengths + "slo {\n ttft_p99 = \"1s\"\n e2e_p95 = \"5s\"\n}\n", 2,
			[]string{"a p95 SLO", "a p99 SLO"}},
		{"conversations count their turns", "conversations = 100\nturns = uniform(2, 4)\n" + lengths + "slo {\n ttft_p99 = \"1s\"\n}\n", 1,
			[]string{"measures 100 conversations of uniform(2, 4) turns, about 300 requests", "set conversations = 334"}},
		{"enough requests", "requests = 1000\n" + lengths + "slo {\n ttft_p99 = \"1s\"\n e2e_p95 = \"5s\"\n}\n", 0, nil},
		{"p90 of 100 is enough", "requests = 100\n" + lengths + "slo {\n ttft_p90 = \"1s\"\n}\n", 0, nil},
		{"means and pooled gaps need no tail", "requests = 10\n" + lengths + "slo {\n ttft_mean = \"1s\"\n itl_p99 = \"50ms\"\n error_rate = 0.01\n}\n", 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := mustLoad(t, workloadPlan(tt.body), LoadOptions{})
			if len(p.Warnings) != tt.count {
				t.Fatalf("warnings %q, want %d", p.Warnings, tt.count)
			}
			all := strings.Join(p.Warnings, "\n")
			for _, w := range tt.want {
				if !strings.Contains(all, w) {
					t.Errorf("warnings %q do not say %q", p.Warnings, w)
				}
			}
		})
	}
}
