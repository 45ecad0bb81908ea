package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Request is one request of a class, before it is sent: its lengths, its prompt and, for
// open-loop arrivals, when it is due.
type Request struct {
	Class string `json:"class"`
	Index int    `json:"index"` // position in the class, warm-up requests first
	// At is when the request is due, from the start of the run; ignored in closed loop.
	At           time.Duration `json:"at"`
	Warmup       bool          `json:"warmup"`
	InputTokens  int           `json:"input_tokens"`  // intended prompt length, prefix included
	OutputTokens int           `json:"output_tokens"` // intended output length (max_tokens)
	PrefixTokens int           `json:"prefix_tokens"` // leading tokens shared by every request of the class
	// Prompt is the text to send; Messages replaces it on the chat endpoint. Synthetic
	// requests leave both empty and are rendered by the client (token ids where the engine
	// takes them, text otherwise).
	Prompt   string    `json:"prompt,omitempty"`
	Messages []Message `json:"messages,omitempty"`
	// Cancel asks the client to abandon the request after its first chunk.
	Cancel bool `json:"cancel,omitempty"`
	// PrefixGroup is which of the class's PrefixGroups shared prefixes the request starts
	// with; 0 when the class has one.
	PrefixGroup int `json:"prefix_group,omitempty"`
	// Conversation and Turn place a turn of a class of conversations (see Record); Turn is
	// 0 for an independent request. For a turn, InputTokens is the prompt's intended length
	// when every earlier reply has its intended length, NewTokens the tokens the turn adds
	// to the history, and Think the wait after the previous turn's reply (0 for the first).
	Conversation int           `json:"conversation,omitempty"`
	Turn         int           `json:"turn,omitempty"`
	NewTokens    int           `json:"new_tokens,omitempty"`
	Think        time.Duration `json:"think,omitempty"`
}

// Message is one chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Synthesize draws a class's requests (warm-up first) from its length distributions and its
// arrival process; for a class of conversations, every turn of every conversation (see
// Class.Conversations), whose arrival process starts the conversations. The same class and seed give the same requests; a class with its own Seed
// uses that instead of seed. Classes with a dataset or a trace need their files: see Load.
func Synthesize(c Class, seed uint64) ([]Request, error) {
	if !c.InputTokens.IsSet() || !c.OutputTokens.IsSet() {
		return nil, fmt.Errorf("workload %q: input_tokens and output_tokens are needed for synthetic requests", c.Name)
	}
	seed = classSeed(c, seed)
	if c.Conversations > 0 {
		return conversations(c, seed, conversationStarts(c, seed)), nil
	}
	n := c.Warmup + c.Requests
	lengths := rand.New(rand.NewPCG(seed, hashName(c.Name)))
	groups := prefixGroups(c, seed, n)
	reqs := make([]Request, n)
	for i := range reqs {
		in := c.InputTokens.Sample(lengths)
		if in < c.PrefixTokens+1 {
			in = c.PrefixTokens + 1
		}
		reqs[i] = Request{
			InputTokens:  in,
			OutputTokens: c.OutputTokens.Sample(lengths),
			PrefixTokens: c.PrefixTokens,
			PrefixGroup:  groups[i],
		}
	}
	arrange(c, seed, reqs, true)
	return reqs, nil
}

// classSeed is the seed of a class's requests: its own Seed when set, else the study's.
func classSeed(c Class, seed uint64) uint64 {
	if c.Seed != 0 {
		return uint64(c.Seed)
	}
	return seed
}

// arrange sets what every source shares: class, index, warm-up, the cancel draw and, when
// schedule is set, the open-loop arrival times from the class's arrival process.
func arrange(c Class, seed uint64, reqs []Request, schedule bool) {
	gaps := rand.New(rand.NewPCG(seed^0x9e3779b97f4a7c15, hashName(c.Name)))
	cancels := rand.New(rand.NewPCG(seed^0x5851f42d4c957f2d, hashName(c.Name)))
	var at time.Duration
	for i := range reqs {
		r := &reqs[i]
		r.Class = c.Name
		r.Index = i
		r.Warmup = i < c.Warmup
		r.Cancel = c.CancelFraction > 0 && cancels.Float64() < c.CancelFraction
		if schedule {
			r.At = at
			at += Gap(c.Arrival, gaps)
		}
	}
}

// Gap draws the time between two arrivals of an open-loop process; 0 for immediate, closed
// loop and trace arrivals (whose times come from elsewhere).
func Gap(a Arrival, r *rand.Rand) time.Duration {
	if a.Rate <= 0 || math.IsInf(a.Rate, 1) {
		return 0
	}
	var s float64
	switch a.Kind {
	case ArrivalPoisson:
		s = r.ExpFloat64() / a.Rate
	case ArrivalConstant:
		s = 1 / a.Rate
	case ArrivalGamma:
		// As vllm bench serve: shape = burstiness, scale = 1 / (rate * burstiness), so the
		// mean gap is 1/rate; burstiness 1 is Poisson, lower is burstier.
		k := a.Burstiness
		if k <= 0 {
			k = 1
		}
		s = gammaSample(r, k) / (a.Rate * k)
	default:
		return 0
	}
	return time.Duration(s * float64(time.Second))
}

// gammaSample draws from Gamma(k, 1) (Marsaglia and Tsang).
func gammaSample(r *rand.Rand, k float64) float64 {
	if k < 1 {
		u := r.Float64()
		return gammaSample(r, k+1) * math.Pow(u, 1/k)
	}
	d := k - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := r.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := r.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}

func hashName(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}
