package workloadtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Fault is a failure the server injects into one request.
type Fault int

// Faults.
const (
	FaultNone           Fault = iota
	Fault429                  // answer 429 Too Many Requests
	Fault500                  // answer 500 Internal Server Error
	FaultReset                // close the connection before any response
	FaultResetMidway          // abort the connection after the first token
	FaultMalformed            // send a first token, then an event that is not JSON
	FaultStreamError          // send a first token, then an error object and [DONE]
	FaultNoDone               // stream every token and the usage, but no [DONE]
	FaultEmpty                // stream [DONE] without any token
	FaultNoUsage              // stream the tokens and [DONE] without the usage chunk
	FaultOneChunkPerTwo       // send two tokens per chunk
)

// Options configure a Server. The zero Options stream 16 tokens (or max_tokens) at once.
type Options struct {
	// TTFT is the delay from receiving a request to its first token.
	TTFT time.Duration
	// ITL is the gap between tokens. When it is 0 the tokens are written back to back and
	// flushed together, so the stream costs the server as little as possible.
	ITL time.Duration
	// Tokens is the number of output tokens when a request has no max_tokens; 0 means 16.
	Tokens int
	// Fault chooses the fault of the n-th request (0-based, in arrival order); nil means none.
	Fault func(n int) Fault
	// Metrics returns the body of GET /metrics; nil means /metrics answers 404.
	Metrics func() string
	// IgnoreBody reads and discards request bodies instead of decoding them: every stream
	// has Tokens tokens and the usage reports 0 prompt tokens. It keeps the server cheap
	// for benchmarks of the client.
	IgnoreBody bool
	// Slots, when above 0, is how many requests are served at once; the others wait in a
	// queue, so the server has a capacity: Slots / (TTFT + (tokens-1) * ITL) requests a second.
	Slots int
}

// Server is a running test server.
type Server struct {
	opts     Options
	srv      *http.Server
	ln       net.Listener
	n        atomic.Int64
	inFlight atomic.Int64
	maxIn    atomic.Int64
	slots    chan struct{}

	mu       sync.Mutex
	last     map[string]any
	lastAuth string
	arrivals []time.Time
	traces   []Trace
}

// Trace is what the server did for one request, on its own clock: when the request arrived
// and when each chunk with content was written.
type Trace struct {
	Arrival time.Time
	Chunks  []time.Time
	End     time.Time // when the last flush began
}

// Start listens on a free port of 127.0.0.1 and serves until Close.
func Start(opts Options) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening on loopback: %w", err)
	}
	s := &Server{opts: opts, ln: ln}
	if opts.Slots > 0 {
		s.slots = make(chan struct{}, opts.Slots)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) { s.serve(w, r, false) })
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) { s.serve(w, r, true) })
	mux.HandleFunc("GET /metrics", s.metrics)
	mux.HandleFunc("GET /health", func(http.ResponseWriter, *http.Request) {})
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// URL is the server's base URL.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// Close stops the server and closes its connections.
func (s *Server) Close() error { return s.srv.Close() }

// Requests is the number of requests that reached a slot (all of them without Slots).
func (s *Server) Requests() int { return int(s.n.Load()) }

// MaxInFlight is the most requests the server has handled at once.
func (s *Server) MaxInFlight() int { return int(s.maxIn.Load()) }

// Last returns the JSON body and the Authorization header of the last request.
func (s *Server) Last() (body map[string]any, authorization string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last, s.lastAuth
}

// Traces returns what the server did for each stream it finished without a fault, in the
// order they ended; nothing when IgnoreBody is set.
func (s *Server) Traces() []Trace {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Trace(nil), s.traces...)
}

// Arrivals returns when each request arrived, in arrival order.
func (s *Server) Arrivals() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.arrivals...)
}

func (s *Server) metrics(w http.ResponseWriter, _ *http.Request) {
	if s.opts.Metrics == nil {
		http.NotFound(w, nil)
		return
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	_, _ = io.WriteString(w, s.opts.Metrics())
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request, chat bool) {
	arrival := time.Now()
	// The body first: once it is read, the request's context ends when the client goes away,
	// so a request abandoned in the queue leaves it.
	var body map[string]any
	if s.opts.IgnoreBody {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
	} else {
		raw, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if err := json.Unmarshal(raw, &body); err != nil {
			http.Error(w, `{"error": {"message": "the body is not JSON"}}`, http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.last, s.lastAuth = body, r.Header.Get("Authorization")
		s.arrivals = append(s.arrivals, arrival)
		s.mu.Unlock()
	}

	if s.slots != nil {
		select {
		case s.slots <- struct{}{}:
			defer func() { <-s.slots }()
		case <-r.Context().Done():
			return
		}
	}
	start := time.Now()
	n := int(s.n.Add(1) - 1)
	in := s.inFlight.Add(1)
	left := false
	leave := func() { // before the last flush, so a client's next request finds it gone
		if !left {
			left = true
			s.inFlight.Add(-1)
		}
	}
	defer leave()
	for {
		m := s.maxIn.Load()
		if in <= m || s.maxIn.CompareAndSwap(m, in) {
			break
		}
	}
	fault := FaultNone
	if s.opts.Fault != nil {
		fault = s.opts.Fault(n)
	}
	switch fault {
	case Fault429:
		http.Error(w, `{"error": {"message": "too many requests"}}`, http.StatusTooManyRequests)
		return
	case Fault500:
		http.Error(w, `{"error": {"message": "internal error"}}`, http.StatusInternalServerError)
		return
	case FaultReset:
		reset(w)
		return
	}

	tokens := s.opts.Tokens
	if tokens <= 0 {
		tokens = 16
	}
	if mt, ok := body["max_tokens"].(float64); ok && mt >= 1 {
		tokens = int(mt)
	}
	prompt := promptTokens(body)

	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	flush := func() {
		if s.opts.ITL > 0 || s.opts.TTFT > 0 {
			flusher.Flush()
		}
	}
	var buf bytes.Buffer
	event := func(payload string) {
		buf.Reset()
		buf.WriteString("data: ")
		buf.WriteString(payload)
		buf.WriteString("\n\n")
		_, _ = w.Write(buf.Bytes())
	}
	sleepUntil := func(d time.Duration) bool {
		wait := time.Until(start.Add(d))
		if wait <= 0 {
			return r.Context().Err() == nil
		}
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-r.Context().Done():
			return false
		}
	}
	if fault == FaultEmpty {
		event("[DONE]")
		return
	}
	if !sleepUntil(s.opts.TTFT) {
		return
	}
	if chat {
		event(`{"id":"chatcmpl-1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`)
	}
	chunk := `{"id":"cmpl-1","object":"text_completion","model":"m","choices":[{"index":0,"text":" tok","logprobs":null,"finish_reason":null}]}`
	last := `{"id":"cmpl-1","object":"text_completion","model":"m","choices":[{"index":0,"text":" tok","logprobs":null,"finish_reason":"length"}]}`
	if chat {
		chunk = `{"id":"chatcmpl-1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":" tok"},"logprobs":null,"finish_reason":null}]}`
		last = `{"id":"chatcmpl-1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":" tok"},"logprobs":null,"finish_reason":"length"}]}`
	}
	trace := Trace{Arrival: arrival}
	step := 1
	if fault == FaultOneChunkPerTwo {
		step = 2
	}
	for i := 0; i < tokens; i += step {
		if i > 0 && !sleepUntil(s.opts.TTFT+time.Duration(i)*s.opts.ITL) {
			return
		}
		if !s.opts.IgnoreBody {
			trace.Chunks = append(trace.Chunks, time.Now())
		}
		if i+step >= tokens {
			event(last)
		} else {
			event(chunk)
		}
		flush()
		if i == 0 {
			switch fault {
			case FaultResetMidway:
				flusher.Flush()
				panic(http.ErrAbortHandler)
			case FaultMalformed:
				event(`{"choices": [{"text": "x"`)
				event("[DONE]")
				return
			case FaultStreamError:
				event(`{"error": {"object": "error", "message": "engine failed", "type": "InternalServerError", "code": 500}}`)
				event("[DONE]")
				return
			}
		}
	}
	if fault != FaultNoUsage {
		event(`{"id":"cmpl-1","object":"text_completion","model":"m","choices":[],"usage":{"prompt_tokens":` +
			strconv.Itoa(prompt) + `,"completion_tokens":` + strconv.Itoa(tokens) + `,"total_tokens":` + strconv.Itoa(prompt+tokens) + `}}`)
	}
	if fault != FaultNoDone {
		event("[DONE]")
	}
	leave()
	if !s.opts.IgnoreBody {
		trace.End = time.Now()
		s.mu.Lock()
		s.traces = append(s.traces, trace)
		s.mu.Unlock()
	}
	flush()
}

// promptTokens counts a request's prompt: token ids, or words of text.
func promptTokens(body map[string]any) int {
	switch p := body["prompt"].(type) {
	case []any:
		return len(p)
	case string:
		return len(bytes.Fields([]byte(p)))
	}
	n := 0
	if msgs, ok := body["messages"].([]any); ok {
		for _, m := range msgs {
			if mm, ok := m.(map[string]any); ok {
				if c, ok := mm["content"].(string); ok {
					n += len(bytes.Fields([]byte(c)))
				}
			}
		}
	}
	return n
}

// reset closes the request's connection with a TCP reset, before any response.
func reset(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}
