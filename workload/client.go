package workload

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Target is the server a workload is sent to.
type Target struct {
	// URL is the server's base URL, e.g. "http://127.0.0.1:8000"; a trailing "/v1" is
	// accepted.
	URL string `json:"url"`
	// Model is the model name put in every request.
	Model string `json:"model"`
	// Endpoint is EndpointCompletions or EndpointChat, for classes that name none; "" means
	// completions.
	Endpoint string `json:"endpoint,omitempty"`
	// APIKey is sent as a bearer token. It is never printed, logged or stored: String, GoString
	// and JSON leave it out.
	APIKey string `json:"-"`
	// Options are extra JSON fields merged into every request body (Ollama's "options"); they
	// take precedence over the fields frontier sets.
	Options map[string]any `json:"options,omitempty"`
	// TokenIDs sends synthetic prompts to /v1/completions as lists of token ids, with
	// ignore_eos and min_tokens = max_tokens, so that lengths are exact (vLLM and the
	// simulator). Otherwise synthetic prompts are text of about the wanted length.
	TokenIDs bool `json:"token_ids,omitempty"`
	// MetricsURL is the engine's Prometheus endpoint, scraped during a run; "" means none.
	MetricsURL string `json:"metrics_url,omitempty"`
}

// String describes t without its API key.
func (t Target) String() string {
	key := ""
	if t.APIKey != "" {
		key = " key=REDACTED"
	}
	return fmt.Sprintf("%s model=%s endpoint=%s%s", t.URL, t.Model, t.endpointOr(""), key)
}

// GoString describes t without its API key.
func (t Target) GoString() string { return "workload.Target{" + t.String() + "}" }

func (t Target) endpointOr(class string) string {
	switch {
	case class != "":
		return class
	case t.Endpoint != "":
		return t.Endpoint
	}
	return EndpointCompletions
}

// baseURL returns the URL without a trailing slash or "/v1".
func (t Target) baseURL() (string, error) {
	u, err := url.Parse(t.URL)
	if err != nil {
		return "", fmt.Errorf("target URL %q: %w", t.URL, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return "", fmt.Errorf("target URL %q: want http://HOST:PORT or https://HOST:PORT", t.URL)
	}
	s := strings.TrimRight(u.String(), "/")
	return strings.TrimSuffix(s, "/v1"), nil
}

// newTransport is an HTTP transport for load generation: no compression, no connection
// limit, enough idle connections to reuse one per request in flight.
func newTransport() *http.Transport {
	return &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: (&net.Dialer{
			Timeout:   30 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		MaxIdleConns:          0, // no limit
		MaxIdleConnsPerHost:   100000,
		IdleConnTimeout:       90 * time.Second,
		DisableCompression:    true,
		ForceAttemptHTTP2:     false,
		ResponseHeaderTimeout: 0, // a long prefill is not a failure; Class.Timeout bounds it
		WriteBufferSize:       16 << 10,
		ReadBufferSize:        16 << 10,
	}
}

// client sends requests and records what happened to each.
type client struct {
	hc      *http.Client
	target  Target
	base    string
	auth    string
	start   time.Time // the run's time base; every offset is time.Since(start)
	options map[string]json.RawMessage
	prefix  map[string]*classPrompt
	readers sync.Pool // *sseReader, reused across requests
}

// classPrompt holds what every request of a class shares: the rendered prefixes, one per
// prefix group.
type classPrompt struct {
	endpoint string
	groups   []prefixText
}

// prefixText is one shared prefix, rendered both ways.
type prefixText struct {
	ids  []byte // JSON numbers with trailing commas: "1,2,3,"
	text string
}

// group returns the prefix of group g; the zero prefixText when the class has none.
func (cp *classPrompt) group(g int) prefixText {
	if g < 0 || g >= len(cp.groups) {
		return prefixText{}
	}
	return cp.groups[g]
}

func newClient(t Target, classes []Class, start time.Time, transport http.RoundTripper) (*client, error) {
	base, err := t.baseURL()
	if err != nil {
		return nil, err
	}
	c := &client{
		hc:     &http.Client{Transport: transport},
		target: t,
		base:   base,
		start:  start,
		prefix: make(map[string]*classPrompt, len(classes)),
	}
	if t.APIKey != "" {
		c.auth = "Bearer " + t.APIKey
	}
	if len(t.Options) > 0 {
		c.options = make(map[string]json.RawMessage, len(t.Options))
		for k, v := range t.Options {
			b, err := json.Marshal(v)
			if err != nil {
				return nil, fmt.Errorf("request option %q: %w", k, err)
			}
			c.options[k] = b
		}
	}
	for _, cl := range classes {
		ep := t.endpointOr(cl.Endpoint)
		if ep != EndpointCompletions && ep != EndpointChat {
			return nil, fmt.Errorf("workload %q: endpoint %q: want %q or %q", cl.Name, ep, EndpointCompletions, EndpointChat)
		}
		cp := &classPrompt{endpoint: ep}
		if cl.PrefixTokens > 0 {
			for g := range max(cl.PrefixGroups, 1) {
				seed := PrefixSeed(cl.Name, g)
				cp.groups = append(cp.groups, prefixText{
					ids:  appendTokenIDs(nil, seed, cl.PrefixTokens),
					text: renderText(rand.New(rand.NewPCG(seed, 1)), cl.PrefixTokens, ""),
				})
			}
		}
		c.prefix[cl.Name] = cp
	}
	return c, nil
}

func (c *client) since() time.Duration { return time.Since(c.start) }

// words are short, common English words; each is about one token in the usual tokenizers.
var words = strings.Fields(`the of and to in is it that was for on are as with his they at be this
from have or by one had not but what all were when we there can an your which their said if do
will each about how up out them then she many some so these would other into has more her two
like him see time could no make than first been its who now people my made over did down only
way find use may water long little very after words called just where most know`)

// renderText returns about n tokens of text: a marker, then words drawn from r.
func renderText(r *rand.Rand, n int, marker string) string {
	var b strings.Builder
	b.Grow(n * 5)
	if marker != "" {
		b.WriteString(marker)
		n -= 2
	}
	for i := 0; i < n; i++ {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[r.IntN(len(words))])
	}
	return b.String()
}

// appendTokenIDs appends n token ids drawn from seed, each followed by a comma. The ids stay
// within [1000, 21000), ordinary tokens in every common vocabulary.
func appendTokenIDs(b []byte, seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 2))
	for i := 0; i < n; i++ {
		b = strconv.AppendInt(b, int64(1000+r.IntN(20000)), 10)
		b = append(b, ',')
	}
	return b
}

// body renders a request's JSON body.
func (c *client) body(req *Request, cp *classPrompt) ([]byte, string, error) {
	b := make([]byte, 0, 256+6*req.InputTokens)
	b = append(b, '{')
	field := func(name string, value []byte) {
		if _, ok := c.options[name]; ok {
			return
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, name) // names are plain ASCII
		b = append(b, ':')
		b = append(b, value...)
	}
	str := func(s string) []byte {
		q, _ := json.Marshal(s)
		return q
	}
	synthetic := req.Prompt == "" && len(req.Messages) == 0
	suffix := req.InputTokens - req.PrefixTokens
	path := "/v1/completions"
	switch {
	case cp.endpoint == EndpointChat || len(req.Messages) > 0: // messages need the chat endpoint
		path = "/v1/chat/completions"
		msgs := req.Messages
		if len(msgs) == 0 {
			text := req.Prompt
			if synthetic {
				text = c.syntheticText(req, cp, suffix)
			}
			msgs = []Message{{Role: "user", Content: text}}
		}
		m, err := json.Marshal(msgs)
		if err != nil {
			return nil, "", err
		}
		field("messages", m)
	case synthetic && c.target.TokenIDs:
		prefix := cp.group(req.PrefixGroup).ids
		ids := make([]byte, 0, 1+len(prefix)+7*suffix)
		ids = append(ids, '[')
		ids = append(ids, prefix...)
		ids = appendTokenIDs(ids, hashName(req.Class)^uint64(req.Index+1)*0x9e3779b97f4a7c15, suffix)
		ids[len(ids)-1] = ']'
		field("prompt", ids)
	case synthetic:
		field("prompt", str(c.syntheticText(req, cp, suffix)))
	default:
		field("prompt", str(req.Prompt))
	}
	field("model", str(c.target.Model))
	if req.OutputTokens > 0 {
		n := strconv.AppendInt(nil, int64(req.OutputTokens), 10)
		field("max_tokens", n)
		// A turn's prompt is text (its history holds the replies as received), and its
		// length is as exact as a synthetic request's.
		if (synthetic || req.Turn > 0) && c.target.TokenIDs {
			field("min_tokens", n)
			field("ignore_eos", []byte("true"))
		}
	}
	field("temperature", []byte("0"))
	field("stream", []byte("true"))
	field("stream_options", []byte(`{"include_usage":true}`))
	for _, k := range slices.Sorted(maps.Keys(c.options)) {
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(b, str(k)...)
		b = append(b, ':')
		b = append(b, c.options[k]...)
	}
	return append(b, '}'), path, nil
}

func (c *client) syntheticText(req *Request, cp *classPrompt, suffix int) string {
	r := rand.New(rand.NewPCG(hashName(req.Class), uint64(req.Index)+3))
	rest := renderText(r, suffix, "Request "+strconv.Itoa(req.Index)+":")
	prefix := cp.group(req.PrefixGroup).text
	if prefix == "" {
		return rest
	}
	return prefix + "\n" + rest
}

// do sends one request and fills rec. runCtx is the run's context: its end makes the
// request cancelled rather than failed. Failures are recorded in rec, never returned.
func (c *client) do(runCtx context.Context, req *Request, timeout time.Duration, rec *Record) {
	rec.Class, rec.Index, rec.Warmup = req.Class, req.Index, req.Warmup
	rec.Conversation, rec.Turn = req.Conversation, req.Turn
	cp := c.prefix[req.Class]
	if cp == nil {
		cp = &classPrompt{endpoint: c.target.endpointOr("")}
	}
	body, path, err := c.body(req, cp)
	if err != nil {
		c.fail(rec, ErrMalformed, 0, fmt.Errorf("cannot render the request: %w", err))
		return
	}
	// Only a request with a timeout needs its own context: an abandoned stream is ended by
	// closing its body.
	ctx := runCtx
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(runCtx, timeout)
		defer cancel()
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(body))
	if err != nil {
		c.fail(rec, ErrConnect, 0, err)
		return
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "text/event-stream")
	if c.auth != "" {
		hr.Header.Set("Authorization", c.auth)
	}
	rec.Sent = c.since()
	resp, err := c.hc.Do(hr)
	if err != nil {
		c.fail(rec, c.classify(runCtx, ctx, ErrConnect), 0, err)
		return
	}
	defer resp.Body.Close()
	rec.Status = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, MaxErrorBody))
		kind := ErrHTTP
		if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
			kind = ErrUnauthorized
		}
		c.fail(rec, kind, resp.StatusCode, fmt.Errorf("HTTP %d: %s", resp.StatusCode, engineMessage(body)))
		return
	}
	c.stream(runCtx, ctx, req, resp.Body, rec)
}

// stream reads a 200 response's event stream into rec.
func (c *client) stream(runCtx, ctx context.Context, req *Request, body io.Reader, rec *Record) {
	sse, _ := c.readers.Get().(*sseReader)
	if sse == nil {
		sse = newSSEReader(body)
	} else {
		sse.reset(body)
	}
	defer func() {
		sse.reset(nil)
		c.readers.Put(sse)
	}()
	rec.Chunks = make([]time.Duration, 0, req.OutputTokens+1)
	// A turn keeps its reply's text for the conversation's next prompt.
	var reply []byte
	if req.Turn > 0 {
		defer func() { rec.reply = string(reply) }()
	}
	usage := false
	limit := maxEvents(req.OutputTokens)
	for events := 0; ; events++ {
		if events == limit {
			c.fail(rec, ErrMalformed, rec.Status, fmt.Errorf("the stream sent over %d events for a request of at most %d tokens without ending: frontier stopped reading it", limit, outputBound(req.OutputTokens)))
			return
		}
		payload, err := sse.next()
		now := c.since()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = errors.New("the stream ended without [DONE]")
			}
			c.fail(rec, c.classify(runCtx, ctx, ErrMalformed), rec.Status, err)
			return
		}
		if bytes.Equal(payload, []byte("[DONE]")) {
			rec.End = now
			break
		}
		if len(payload) == 0 {
			continue
		}
		ch, err := parseChunk(payload)
		if err != nil {
			c.fail(rec, ErrMalformed, rec.Status, err)
			return
		}
		if ch.isError {
			status := rec.Status
			if ch.errCode != 0 {
				status = ch.errCode
			}
			c.fail(rec, ErrStream, status, fmt.Errorf("error in the stream: %s", ch.errMsg))
			return
		}
		if ch.content {
			if req.Turn > 0 {
				reply = appendChunkText(reply, payload)
			}
			if len(rec.Chunks) == 0 {
				rec.FirstToken = now
			}
			rec.Chunks = append(rec.Chunks, now)
			if req.Cancel {
				rec.End = now
				rec.OutputTokens = len(rec.Chunks)
				rec.ErrClass, rec.Err = ErrCancelled, "abandoned after the first chunk (cancel_fraction)"
				return
			}
		}
		if ch.finish != "" {
			rec.FinishReason = ch.finish
		}
		if ch.usage {
			usage = true
			rec.InputTokens, rec.OutputTokens = ch.prompt, ch.completed
		}
	}
	if len(rec.Chunks) == 0 {
		c.fail(rec, ErrMalformed, rec.Status, errors.New("the stream carried no content"))
		return
	}
	if !usage {
		// Without usage, the best estimates: the intended prompt, one token per chunk.
		rec.InputTokens, rec.OutputTokens = req.InputTokens, len(rec.Chunks)
	}
}

// outputBound is the most tokens a request asks for: its max_tokens, or MaxTokens when it
// leaves the length to the server.
func outputBound(outputTokens int) int {
	if outputTokens <= 0 || outputTokens > MaxTokens {
		return MaxTokens
	}
	return outputTokens
}

// maxEvents bounds the events of one streamed response, so that a server that never ends a
// stream costs bounded memory (a time per chunk is kept) rather than growing until the
// request's timeout: twice the tokens asked for (one chunk a token, with room for role,
// usage and keep-alive events), plus 64.
func maxEvents(outputTokens int) int {
	return 2*outputBound(outputTokens) + 64
}

// classify names the class of an error that ended a request: cancelled when the run ended,
// timeout when the request's own deadline passed, otherwise fallback.
func (c *client) classify(runCtx, ctx context.Context, fallback string) string {
	switch {
	case runCtx.Err() != nil:
		return ErrCancelled
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return ErrTimeout
	}
	return fallback
}

func (c *client) fail(rec *Record, class string, status int, err error) {
	rec.End = c.since()
	rec.ErrClass = class
	rec.Status = status
	rec.Err = err.Error()
}
