package workload

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
)

// BenchSpec is the workload of a benchmark as `frontier bench` flags describe it: one
// synthetic class (or prompts from a dataset), or overrides of a plan's classes. Set names
// the settings given explicitly, by flag name ("requests", "rate", ...): an override applies
// only what was set.
type BenchSpec struct {
	Requests, Warmup          int
	InputTokens, OutputTokens int
	PrefixTokens              int
	Rate                      float64 // Poisson arrivals, requests a second
	Concurrency               int     // closed loop
	Endpoint                  string
	Dataset                   string
	Timeout                   time.Duration
	// Conversations, when set, makes the class that many multi-turn conversations of Turns
	// turns (ThinkTime apart on average) in place of Requests requests; PrefixGroups spreads
	// the prefix over that many distinct shared prefixes (Class has each one's meaning).
	Conversations, Turns int
	ThinkTime            time.Duration
	PrefixGroups         int
	Set                  map[string]bool
}

// Check reports the first setting that is out of range or contradicts another, naming the
// flag.
func (s BenchSpec) Check() error {
	if s.Set["rate"] && s.Set["concurrency"] {
		return fmt.Errorf("--rate and --concurrency cannot be used together")
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"requests", s.Requests}, {"input-tokens", s.InputTokens}, {"output-tokens", s.OutputTokens}} {
		if f.v < 1 {
			return fmt.Errorf("--%s is %d; it must be at least 1", f.name, f.v)
		}
	}
	switch {
	case s.Warmup < 0:
		return fmt.Errorf("--warmup must not be negative")
	case s.Rate < 0 || math.IsNaN(s.Rate) || math.IsInf(s.Rate, 0) || s.Set["rate"] && s.Rate == 0:
		return fmt.Errorf("--rate must be a positive number of requests a second")
	case s.Concurrency < 0 || s.Set["concurrency"] && s.Concurrency == 0:
		return fmt.Errorf("--concurrency must be at least 1")
	case s.PrefixTokens < 0:
		return fmt.Errorf("--prefix-tokens must not be negative")
	case s.PrefixTokens >= s.InputTokens && s.Set["prefix-tokens"] && !s.Set["conversations"]:
		// A conversation's turn adds its new tokens to the prefix and the history.
		return fmt.Errorf("--prefix-tokens must be below --input-tokens")
	case s.Endpoint != "" && s.Endpoint != EndpointCompletions && s.Endpoint != EndpointChat:
		return fmt.Errorf("--endpoint %q: want completions or chat", s.Endpoint)
	}
	return s.checkConversations()
}

// checkConversations checks the flags of a class of conversations.
func (s BenchSpec) checkConversations() error {
	switch {
	case s.Set["conversations"] && s.Set["requests"]:
		return fmt.Errorf("--requests and --conversations cannot be used together: a class of conversations counts conversations in place of requests")
	case s.Set["conversations"] && s.Conversations < 1:
		return fmt.Errorf("--conversations is %d; it must be at least 1", s.Conversations)
	case s.Set["conversations"] && s.Set["dataset"]:
		return fmt.Errorf("--conversations cannot be used with --dataset: a conversation's turns are drawn from --input-tokens and --output-tokens")
	case s.Set["turns"] && (s.Turns < 1 || s.Turns > MaxTurns):
		return fmt.Errorf("--turns is %d; a conversation has 1 to %d turns", s.Turns, MaxTurns)
	case s.ThinkTime < 0:
		return fmt.Errorf("--think-time must not be negative")
	case s.Set["prefix-groups"] && s.PrefixGroups < 1:
		return fmt.Errorf("--prefix-groups is %d; it must be at least 1", s.PrefixGroups)
	}
	return nil
}

// conversationsOf applies the conversation flags that were set to c, and says which of them
// cannot apply: --turns and --think-time to a class that is not one of conversations,
// --prefix-groups to one without a shared prefix.
func (s BenchSpec) conversationsOf(c *Class) error {
	if s.Set["conversations"] {
		c.Conversations, c.Requests = s.Conversations, 0
	}
	if s.Set["turns"] {
		c.Turns = Dist{Kind: DistFixed, A: float64(s.Turns)}
	}
	if s.Set["think-time"] {
		c.ThinkTime = s.ThinkTime
	}
	if s.Set["prefix-groups"] {
		c.PrefixGroups = s.PrefixGroups
	}
	for _, name := range []string{"turns", "think-time"} {
		if s.Set[name] && c.Conversations == 0 {
			return fmt.Errorf("--%s applies to a class of conversations, and %q is not one: give --conversations N too", name, c.Name)
		}
	}
	if s.Set["prefix-groups"] && c.PrefixTokens == 0 {
		return fmt.Errorf("--prefix-groups spreads a shared prefix over that many distinct prefixes, and %q has none: give --prefix-tokens N too", c.Name)
	}
	return nil
}

// Class is the spec's own class, "bench": fixed lengths (or a dataset's prompts, whose
// output lengths stand unless output-tokens is set), all at once unless a rate or a
// concurrency is set; conversations in place of requests when --conversations is set. The
// error names a conversation flag that cannot apply.
func (s BenchSpec) Class() (Class, error) {
	c := Class{
		Name: "bench", Requests: s.Requests, Warmup: s.Warmup,
		InputTokens:  Dist{Kind: DistFixed, A: float64(s.InputTokens)},
		OutputTokens: Dist{Kind: DistFixed, A: float64(s.OutputTokens)},
		PrefixTokens: s.PrefixTokens, Endpoint: s.Endpoint, Timeout: s.Timeout,
		Arrival: Arrival{Kind: ArrivalImmediate},
	}
	if s.Dataset != "" {
		c.Dataset = s.Dataset
		if !s.Set["output-tokens"] {
			c.OutputTokens = Dist{}
		}
	}
	s.applyArrival(&c)
	return c, s.conversationsOf(&c)
}

// Override applies the settings that were set to each class, in place. The error names a
// conversation flag that cannot apply to a class.
func (s BenchSpec) Override(classes []Class) error {
	for i := range classes {
		c := &classes[i]
		if s.Set["requests"] {
			c.Requests = s.Requests
		}
		if s.Set["warmup"] {
			c.Warmup = s.Warmup
		}
		if s.Set["input-tokens"] {
			c.InputTokens = Dist{Kind: DistFixed, A: float64(s.InputTokens)}
		}
		if s.Set["output-tokens"] {
			c.OutputTokens = Dist{Kind: DistFixed, A: float64(s.OutputTokens)}
		}
		if s.Set["endpoint"] {
			c.Endpoint = s.Endpoint
		}
		if s.Set["timeout"] {
			c.Timeout = s.Timeout
		}
		if s.Set["dataset"] {
			c.Dataset = s.Dataset
		}
		s.applyArrival(c)
		if err := s.conversationsOf(c); err != nil {
			return err
		}
	}
	return nil
}

func (s BenchSpec) applyArrival(c *Class) {
	switch {
	case s.Set["rate"]:
		c.Arrival = Arrival{Kind: ArrivalPoisson, Rate: s.Rate}
	case s.Set["concurrency"]:
		c.Arrival = Arrival{Kind: ArrivalConcurrency, Concurrency: s.Concurrency}
	}
}

// SelectClass returns a copy of the classes, or of the one named name when name is not
// empty; from names where the classes come from, for the error.
func SelectClass(classes []Class, name, from string) ([]Class, error) {
	if name == "" {
		if len(classes) == 0 {
			return nil, fmt.Errorf("%s has no workload block", from)
		}
		return slices.Clone(classes), nil
	}
	i := slices.IndexFunc(classes, func(c Class) bool { return c.Name == name })
	if i < 0 {
		names := make([]string, len(classes))
		for j, c := range classes {
			names[j] = c.Name
		}
		return nil, fmt.Errorf("%s has no workload %q; it has %s", from, name, strings.Join(names, ", "))
	}
	return []Class{classes[i]}, nil
}

// MeasureCapacity finds each class's capacity (FindCapacity), starting from the class's
// Poisson rate, else from a rate that sends its requests in about 10 s. Per class it returns
// the result at the highest rate that met the SLO (or the last one tried) with capacity_rps
// added; with one class that result is also the total. Each rate is held for at least hold
// (see CapacityOptions.Hold). Each step is reported on progress as it ends.
func MeasureCapacity(ctx context.Context, t Target, classes []Class, seed uint64, hold time.Duration, progress io.Writer) (*Measurement, error) {
	out := &Measurement{Workloads: map[string]*Result{}, Total: &Result{Metrics: map[string]float64{}}}
	for _, c := range classes {
		var best *Result
		bestRate := -1.0
		start := c.Arrival.Rate
		if start <= 0 || c.Arrival.Kind == ArrivalConcurrency {
			start = math.Max(1, float64(c.Requests)/10)
		}
		observe := func(rate float64, m *Measurement, ok bool) {
			r := m.Workloads[c.Name]
			if r == nil {
				return
			}
			verdict := "missed the SLO"
			if ok {
				verdict = "met the SLO"
			}
			backlog := ""
			if g, ok := r.Metrics[BacklogGrowth]; ok {
				se := r.Metrics[BacklogGrowthSE]
				kept := "kept up"
				if FellBehind(g, se) {
					kept = "fell behind"
				}
				backlog = fmt.Sprintf("; %s: the backlog grew at %.0f%% ± %.0f%% of the offered rate", kept, 100*g, 100*se)
			}
			fmt.Fprintf(progress, "workload %q at %.4g req/s: %s (%.1f%% of requests within the per-request bounds%s)\n",
				c.Name, rate, verdict, 100*Attainment(r), backlog)
			if ok && rate > bestRate || best == nil {
				best, bestRate = r, rate
			}
		}
		capacity, err := FindCapacity(ctx, t, c, CapacityOptions{Seed: seed, Start: start, Observe: observe, Hold: hold})
		if err != nil {
			return nil, err
		}
		if best == nil {
			best = &Result{Metrics: map[string]float64{}}
		}
		best.Metrics[CapacityRPS] = capacity
		out.Workloads[c.Name] = best
	}
	if len(classes) == 1 {
		out.Total = out.Workloads[classes[0].Name]
	}
	return out, nil
}
