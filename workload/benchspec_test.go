package workload_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/frontier-llm/frontier/workload"
)

// spec is bench's defaults with the flags in set given.
func spec(set ...string) workload.BenchSpec {
	s := workload.BenchSpec{Requests: 100, InputTokens: 256, OutputTokens: 128, Set: map[string]bool{}}
	for _, name := range set {
		s.Set[name] = true
	}
	return s
}

func TestBenchSpecCheckNamesTheFlag(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		modify func(*workload.BenchSpec)
		want   string // "" when valid
	}{
		{"the defaults", func(*workload.BenchSpec) {}, ""},
		{"rate and concurrency", func(s *workload.BenchSpec) {
			s.Set["rate"], s.Set["concurrency"] = true, true
			s.Rate, s.Concurrency = 1, 1
		}, "--rate and --concurrency cannot be used together"},
		{"no requests", func(s *workload.BenchSpec) { s.Requests = 0 }, "--requests is 0; it must be at least 1"},
		{"no output", func(s *workload.BenchSpec) { s.OutputTokens = -1 }, "--output-tokens is -1"},
		{"negative warm-up", func(s *workload.BenchSpec) { s.Warmup = -1 }, "--warmup must not be negative"},
		{"a rate of zero given", func(s *workload.BenchSpec) { s.Set["rate"] = true }, "--rate must be a positive number"},
		{"a concurrency of zero given", func(s *workload.BenchSpec) { s.Set["concurrency"] = true }, "--concurrency must be at least 1"},
		{"a prefix as long as the prompt", func(s *workload.BenchSpec) { s.Set["prefix-tokens"] = true; s.PrefixTokens = 256 }, "--prefix-tokens must be below --input-tokens"},
		{"an unknown endpoint", func(s *workload.BenchSpec) { s.Endpoint = "embeddings" }, `--endpoint "embeddings": want completions or chat`},
		{"the chat endpoint", func(s *workload.BenchSpec) { s.Endpoint = workload.EndpointChat }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := spec()
			tt.modify(&s)
			err := s.Check()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Check: %v, want none", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Check: %v, want an error with %q", err, tt.want)
			}
		})
	}
}

func TestBenchSpecClass(t *testing.T) {
	t.Parallel()
	fixed := func(n float64) workload.Dist { return workload.Dist{Kind: workload.DistFixed, A: n} }
	tests := []struct {
		name string
		spec workload.BenchSpec
		want workload.Class
	}{
		{
			name: "fixed lengths, all at once",
			spec: spec(),
			want: workload.Class{Name: "bench", Requests: 100, InputTokens: fixed(256), OutputTokens: fixed(128),
				Arrival: workload.Arrival{Kind: workload.ArrivalImmediate}},
		},
		{
			name: "a rate makes Poisson arrivals",
			spec: func() workload.BenchSpec { s := spec("rate"); s.Rate = 3; return s }(),
			want: workload.Class{Name: "bench", Requests: 100, InputTokens: fixed(256), OutputTokens: fixed(128),
				Arrival: workload.Arrival{Kind: workload.ArrivalPoisson, Rate: 3}},
		},
		{
			name: "a dataset keeps its own output lengths",
			spec: func() workload.BenchSpec { s := spec("concurrency"); s.Dataset, s.Concurrency = "d.jsonl", 4; return s }(),
			want: workload.Class{Name: "bench", Requests: 100, InputTokens: fixed(256), Dataset: "d.jsonl",
				Arrival: workload.Arrival{Kind: workload.ArrivalConcurrency, Concurrency: 4}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, tt.spec.Class()); diff != "" {
				t.Errorf("Class (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBenchSpecOverrideChangesOnlyWhatWasSet(t *testing.T) {
	t.Parallel()
	plan := []workload.Class{
		{Name: "chat", Requests: 50, Warmup: 5, InputTokens: workload.Dist{Kind: workload.DistUniform, A: 10, B: 20},
			Arrival: workload.Arrival{Kind: workload.ArrivalGamma, Rate: 2, Burstiness: 0.5}},
		{Name: "batch", Requests: 10, Arrival: workload.Arrival{Kind: workload.ArrivalConcurrency, Concurrency: 8}},
	}
	s := spec("requests", "rate", "timeout")
	s.Requests, s.Rate, s.Timeout = 7, 9, time.Second
	s.Override(plan)
	for _, c := range plan {
		if c.Requests != 7 || c.Timeout != time.Second || c.Arrival != (workload.Arrival{Kind: workload.ArrivalPoisson, Rate: 9}) {
			t.Errorf("%s: requests %d, timeout %v, arrival %+v; want the flags' 7, 1s, poisson(9)", c.Name, c.Requests, c.Timeout, c.Arrival)
		}
	}
	if plan[0].Warmup != 5 || plan[0].InputTokens.Kind != workload.DistUniform {
		t.Errorf("chat: warm-up %d, input %+v; want the plan's, no flag set them", plan[0].Warmup, plan[0].InputTokens)
	}
}

func TestSelectClass(t *testing.T) {
	t.Parallel()
	classes := []workload.Class{{Name: "chat"}, {Name: "batch"}}
	got, err := workload.SelectClass(classes, "batch", "plan.hcl")
	if err != nil || len(got) != 1 || got[0].Name != "batch" {
		t.Fatalf("SelectClass(batch) = %+v, %v", got, err)
	}
	got, err = workload.SelectClass(classes, "", "plan.hcl")
	if err != nil || len(got) != 2 {
		t.Fatalf("SelectClass() = %+v, %v; want both", got, err)
	}
	got[0].Requests = 99
	if classes[0].Requests != 0 {
		t.Error("SelectClass returned the plan's classes, not a copy")
	}
	for name, tt := range map[string]struct {
		classes []workload.Class
		name    string
		want    string
	}{
		"an unknown class": {classes, "summary", `plan.hcl has no workload "summary"; it has chat, batch`},
		"no class":         {nil, "", "plan.hcl has no workload block"},
	} {
		if _, err := workload.SelectClass(tt.classes, tt.name, "plan.hcl"); err == nil || err.Error() != tt.want {
			t.Errorf("%s: %v, want %q", name, err, tt.want)
		}
	}
}
