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
		{"requests and conversations", func(s *workload.BenchSpec) {
			s.Set["requests"], s.Set["conversations"] = true, true
			s.Conversations = 4
		}, "--requests and --conversations cannot be used together"},
		{"no conversations", func(s *workload.BenchSpec) { s.Set["conversations"] = true }, "--conversations is 0; it must be at least 1"},
		{"conversations from a dataset", func(s *workload.BenchSpec) {
			s.Set["conversations"], s.Set["dataset"] = true, true
			s.Conversations, s.Dataset = 4, "d.jsonl"
		}, "--conversations cannot be used with --dataset"},
		{"no turns", func(s *workload.BenchSpec) { s.Set["turns"] = true }, "--turns is 0; a conversation has 1 to 10000 turns"},
		{"a negative think time", func(s *workload.BenchSpec) { s.ThinkTime = -time.Second }, "--think-time must not be negative"},
		{"no prefix groups", func(s *workload.BenchSpec) { s.Set["prefix-groups"] = true }, "--prefix-groups is 0; it must be at least 1"},
		{"a conversation's prefix longer than a turn's new tokens", func(s *workload.BenchSpec) {
			s.Set["prefix-tokens"], s.Set["conversations"] = true, true
			s.PrefixTokens, s.Conversations = 2000, 4
		}, ""},
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
		{
			name: "conversations in place of requests",
			spec: func() workload.BenchSpec {
				s := spec("conversations", "turns", "think-time", "prefix-tokens", "prefix-groups", "concurrency")
				s.Conversations, s.Turns, s.ThinkTime, s.PrefixTokens, s.PrefixGroups, s.Concurrency = 12, 3, 2*time.Second, 64, 4, 6
				return s
			}(),
			want: workload.Class{Name: "bench", Conversations: 12, Turns: fixed(3), ThinkTime: 2 * time.Second,
				PrefixTokens: 64, PrefixGroups: 4, InputTokens: fixed(256), OutputTokens: fixed(128),
				Arrival: workload.Arrival{Kind: workload.ArrivalConcurrency, Concurrency: 6}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := tt.spec.Class()
			if err != nil {
				t.Fatalf("Class: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
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
	if err := s.Override(plan); err != nil {
		t.Fatalf("Override: %v", err)
	}
	for _, c := range plan {
		if c.Requests != 7 || c.Timeout != time.Second || c.Arrival != (workload.Arrival{Kind: workload.ArrivalPoisson, Rate: 9}) {
			t.Errorf("%s: requests %d, timeout %v, arrival %+v; want the flags' 7, 1s, poisson(9)", c.Name, c.Requests, c.Timeout, c.Arrival)
		}
	}
	if plan[0].Warmup != 5 || plan[0].InputTokens.Kind != workload.DistUniform {
		t.Errorf("chat: warm-up %d, input %+v; want the plan's, no flag set them", plan[0].Warmup, plan[0].InputTokens)
	}
}

func TestBenchSpecConversationFlagsNeedTheirClass(t *testing.T) {
	t.Parallel()
	fixed := func(n float64) workload.Dist { return workload.Dist{Kind: workload.DistFixed, A: n} }
	tests := []struct {
		name string
		set  []string
		want string
	}{
		{"turns without conversations", []string{"turns"}, `--turns applies to a class of conversations, and "bench" is not one`},
		{"think time without conversations", []string{"think-time"}, `--think-time applies to a class of conversations`},
		{"prefix groups without a prefix", []string{"prefix-groups"}, `--prefix-groups spreads a shared prefix over that many distinct prefixes, and "bench" has none`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := spec(tt.set...)
			s.Turns, s.ThinkTime, s.PrefixGroups = 3, time.Second, 2
			if err := s.Check(); err != nil {
				t.Fatalf("Check: %v", err)
			}
			if _, err := s.Class(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Class: %v, want an error with %q", err, tt.want)
			}
		})
	}
	// A plan's class of conversations takes --turns and --think-time; a class of requests
	// that --conversations turns into one, too.
	plan := []workload.Class{
		{Name: "chat", Conversations: 10, Turns: fixed(2), InputTokens: fixed(100), OutputTokens: fixed(50)},
		{Name: "batch", Requests: 40, InputTokens: fixed(100), OutputTokens: fixed(50)},
	}
	s := spec("turns", "think-time")
	s.Turns, s.ThinkTime = 5, 3*time.Second
	if err := s.Override(plan[:1]); err != nil || plan[0].Turns != fixed(5) || plan[0].ThinkTime != 3*time.Second {
		t.Errorf("Override of a class of conversations: %v, turns %+v, think time %v; want 5 and 3s", err, plan[0].Turns, plan[0].ThinkTime)
	}
	if err := s.Override(plan[1:]); err == nil || !strings.Contains(err.Error(), `"batch" is not one`) {
		t.Errorf("Override of a class of requests: %v, want the class named", err)
	}
	s = spec("conversations", "turns")
	s.Conversations, s.Turns = 6, 4
	if err := s.Override(plan[1:]); err != nil || plan[1].Conversations != 6 || plan[1].Requests != 0 || plan[1].Turns != fixed(4) {
		t.Errorf("Override with --conversations: %v, %+v; want 6 conversations of 4 turns, no requests", err, plan[1])
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
