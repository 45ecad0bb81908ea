package router

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// MaxRequestBytes bounds a request body the router reads.
const MaxRequestBytes = 64 << 20

// DefaultHealthTimeout is Config.HealthTimeout when it is zero.
const DefaultHealthTimeout = 5 * time.Second

// MaxIdleConnsPerInstance is how many idle connections the default client keeps open to each
// instance, for the next requests to reuse; Go's default of two would open (and leave in
// TIME_WAIT) a connection for nearly every request of a benchmark with more in flight.
const MaxIdleConnsPerInstance = 1024

// Config is what a Router needs: the instances' base URLs ("http://127.0.0.1:8100") and the
// client it reaches them with.
type Config struct {
	Prefill, Decode []string
	// Client sends the requests to the instances; nil means one without a timeout (a decode
	// stream lasts as long as the reply), as vLLM's proxies use, that keeps up to
	// MaxIdleConnsPerInstance idle connections to each instance.
	Client *http.Client
	// HealthTimeout bounds each instance's /health when the router's /health asks it; 0
	// means DefaultHealthTimeout.
	HealthTimeout time.Duration
}

// Router is an http.Handler that runs vLLM's prefill/decode protocol over its instances.
type Router struct {
	prefill, decode []*backend
	client          *http.Client
	healthTimeout   time.Duration
	ids             atomic.Uint64
}

// backend is one instance and the requests the router has in flight to it.
type backend struct {
	url      string
	inFlight atomic.Int64
}

// New checks the configuration and returns the router.
func New(cfg Config) (*Router, error) {
	if len(cfg.Prefill) == 0 || len(cfg.Decode) == 0 {
		return nil, fmt.Errorf("a router needs at least one prefill and one decode instance (got %d and %d)", len(cfg.Prefill), len(cfg.Decode))
	}
	r := &Router{client: cfg.Client, healthTimeout: cfg.HealthTimeout}
	if r.client == nil {
		r.client = &http.Client{Transport: newTransport()}
	}
	if r.healthTimeout <= 0 {
		r.healthTimeout = DefaultHealthTimeout
	}
	for role, urls := range [][]string{cfg.Prefill, cfg.Decode} {
		for _, u := range urls {
			u = strings.TrimRight(strings.TrimSpace(u), "/")
			if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
				return nil, fmt.Errorf("instance %q: want a base URL such as http://127.0.0.1:8100", u)
			}
			b := &backend{url: strings.TrimSuffix(u, "/v1")}
			if role == 0 {
				r.prefill = append(r.prefill, b)
			} else {
				r.decode = append(r.decode, b)
			}
		}
	}
	return r, nil
}

// newTransport is the default client's transport: Go's default one, keeping up to
// MaxIdleConnsPerInstance idle connections to each instance.
func newTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 0 // no bound across instances; each has its own
	t.MaxIdleConnsPerHost = MaxIdleConnsPerInstance
	return t
}

// pick is the instance with the fewest requests in flight, the first on a tie.
func pick(pool []*backend) *backend {
	best := pool[0]
	for _, b := range pool[1:] {
		if b.inFlight.Load() < best.inFlight.Load() {
			best = b
		}
	}
	return best
}

// ServeHTTP routes the OpenAI endpoints: completions and chat completions through the
// protocol, /v1/models from the first decode instance, /health when every instance is
// healthy.
func (r *Router) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	switch {
	case req.URL.Path == "/v1/completions" || req.URL.Path == "/v1/chat/completions":
		if req.Method != http.MethodPost {
			writeError(w, http.StatusMethodNotAllowed, "use POST")
			return
		}
		r.generate(w, req)
	case req.URL.Path == "/v1/models" && req.Method == http.MethodGet:
		r.forward(w, req, r.decode[0])
	case req.URL.Path == "/health" && req.Method == http.MethodGet:
		r.health(w, req)
	default:
		writeError(w, http.StatusNotFound, "the router serves POST /v1/completions, POST /v1/chat/completions, GET /v1/models and GET /health")
	}
}

// prefillParams are the kv_transfer_params of a prefill request: the instance is to keep the
// prompt's KV cache for a decode instance to read, as vLLM's proxies ask.
func prefillParams() map[string]any {
	return map[string]any{
		"do_remote_decode":  true,
		"do_remote_prefill": false,
		"remote_engine_id":  nil,
		"remote_block_ids":  nil,
		"remote_host":       nil,
		"remote_port":       nil,
	}
}

// generate runs one request through a prefill instance and a decode instance.
func (r *Router) generate(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(io.LimitReader(req.Body, MaxRequestBytes+1))
	if err != nil {
		writeError(w, http.StatusBadRequest, "read the request: "+err.Error())
		return
	}
	if len(body) > MaxRequestBytes {
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the request is over %d bytes", MaxRequestBytes))
		return
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		writeError(w, http.StatusBadRequest, "the request body is not a JSON object")
		return
	}
	id := fmt.Sprintf("frontier-router-%d", r.ids.Add(1))

	// The prefill: one token, not streamed, the KV cache kept for the decode instance.
	pre := make(map[string]any, len(fields)+1)
	for k, v := range fields {
		pre[k] = v
	}
	for _, k := range []string{"stream_options", "min_tokens", "min_completion_tokens"} {
		delete(pre, k) // min_tokens above max_tokens 1 would be refused
	}
	pre["kv_transfer_params"] = prefillParams()
	pre["stream"] = false
	pre["max_tokens"] = 1
	if _, ok := fields["max_completion_tokens"]; ok {
		pre["max_completion_tokens"] = 1
	}
	pb := pick(r.prefill)
	pb.inFlight.Add(1)
	resp, err := r.post(req, pb, pre, id)
	if err != nil {
		pb.inFlight.Add(-1)
		r.upstreamFailed(w, req, "prefill", pb, err)
		return
	}
	if resp.StatusCode != http.StatusOK {
		// The prefill instance's refusal (a prompt too long, a bad field) is the client's.
		copyHeader(w.Header(), resp.Header)
		w.WriteHeader(resp.StatusCode)
		stream(w, resp.Body)
		resp.Body.Close()
		pb.inFlight.Add(-1)
		return
	}
	// Only the answer's kv_transfer_params are kept: the rest (an echo of the prompt, its
	// logprobs) may be megabytes a request.
	params, err := readTransferParams(resp.Body)
	drain(resp.Body)
	resp.Body.Close()
	pb.inFlight.Add(-1)
	if err != nil {
		r.upstreamFailed(w, req, "prefill", pb, err) // "prefill instance URL: the answer is not a JSON object: ..."
		return
	}
	dec := make(map[string]any, len(fields)+1)
	for k, v := range fields {
		dec[k] = v
	}
	// The client's own kv_transfer_params are never passed on: the decode instance would
	// read blocks of a request that is not this one.
	delete(dec, "kv_transfer_params")
	switch p := params; {
	case len(p) == 0 || bytes.Equal(p, []byte("null")):
		// An instance without a connector returns none: the decode instance then computes
		// the prompt itself, as with vLLM's proxies.
	case p[0] != '{':
		writeError(w, http.StatusBadGateway, fmt.Sprintf("prefill instance %s returned kv_transfer_params that are not an object: %s", pb.url, p))
		return
	default:
		dec["kv_transfer_params"] = p
	}

	db := pick(r.decode)
	db.inFlight.Add(1)
	defer db.inFlight.Add(-1)
	resp, err = r.post(req, db, dec, id)
	if err != nil {
		r.upstreamFailed(w, req, "decode", db, err)
		return
	}
	defer resp.Body.Close()
	copyHeader(w.Header(), resp.Header)
	w.WriteHeader(resp.StatusCode)
	stream(w, resp.Body)
}

// post sends a JSON body to the same path on an instance, with the client's Authorization
// header and the request's id, bound to the client's request.
func (r *Router) post(req *http.Request, b *backend, body map[string]any, id string) (*http.Response, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	out, err := http.NewRequestWithContext(req.Context(), http.MethodPost, b.url+req.URL.Path, bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	out.Header.Set("Content-Type", "application/json")
	out.Header.Set("X-Request-Id", id)
	if a := req.Header.Get("Authorization"); a != "" {
		out.Header.Set("Authorization", a)
	}
	return r.client.Do(out)
}

// forward passes a GET through to an instance.
func (r *Router) forward(w http.ResponseWriter, req *http.Request, b *backend) {
	out, err := http.NewRequestWithContext(req.Context(), http.MethodGet, b.url+req.URL.Path, nil)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	if a := req.Header.Get("Authorization"); a != "" {
		out.Header.Set("Authorization", a)
	}
	resp, err := r.client.Do(out)
	if err != nil {
		r.upstreamFailed(w, req, "decode", b, err)
		return
	}
	defer resp.Body.Close()
	copyHeader(w.Header(), resp.Header)
	w.WriteHeader(resp.StatusCode)
	stream(w, resp.Body)
}

// health answers 200 when every instance answers its /health with 200 within the health
// timeout, else 503 naming the first that does not.
func (r *Router) health(w http.ResponseWriter, req *http.Request) {
	all := append(append([]*backend{}, r.prefill...), r.decode...)
	errs := make([]error, len(all))
	var wg sync.WaitGroup
	for i, b := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(req.Context(), r.healthTimeout)
			defer cancel()
			errs[i] = probe(ctx, r.client, b.url+"/health")
			if errors.Is(errs[i], context.DeadlineExceeded) && req.Context().Err() == nil {
				errs[i] = fmt.Errorf("/health gave no answer within %s", r.healthTimeout)
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			writeError(w, http.StatusServiceUnavailable, fmt.Sprintf("instance %s: %v", all[i].url, err))
			return
		}
	}
	w.WriteHeader(http.StatusOK)
}

func probe(ctx context.Context, c *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/health answered %s", resp.Status)
	}
	return nil
}

// upstreamFailed answers a request whose instance could not be reached; nothing is written
// for a client that has gone.
func (r *Router) upstreamFailed(w http.ResponseWriter, req *http.Request, role string, b *backend, err error) {
	if req.Context().Err() != nil && errors.Is(err, req.Context().Err()) {
		return
	}
	writeError(w, http.StatusBadGateway, fmt.Sprintf("%s instance %s: %v", role, b.url, err))
}

// stream copies an answer to the client as it arrives, flushing each read, so that
// server-sent events keep their timing.
func stream(w http.ResponseWriter, body io.Reader) {
	f, _ := w.(http.Flusher)
	if f != nil {
		f.Flush() // the status and headers, before the first event
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return // the client has gone
			}
			if f != nil {
				f.Flush()
			}
		}
		if err != nil {
			return // io.EOF, or the instance broke the stream: the client sees it end
		}
	}
}

// drain reads what is left of an answer, up to 64 KiB, so that its connection can be reused;
// a longer rest is cut off with the connection.
func drain(body io.Reader) {
	_, _ = io.Copy(io.Discard, io.LimitReader(body, 64<<10))
}

// copyHeader copies the headers an answer is read by.
func copyHeader(dst, src http.Header) {
	for _, k := range []string{"Content-Type", "Cache-Control", "X-Request-Id"} {
		if v := src.Get(k); v != "" {
			dst.Set(k, v)
		}
	}
}

// writeError answers with an OpenAI-style error object, as vLLM's server does.
func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"message": msg, "type": http.StatusText(status), "code": status}})
}

// Serve runs r on ln until ctx is done, then stops taking requests and gives those in
// flight a moment to end. It writes one line when it listens.
func Serve(ctx context.Context, ln net.Listener, r *Router, log io.Writer) error {
	hs := &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(log, "frontier router: listening on http://%s for %d prefill and %d decode instances\n", ln.Addr(), len(r.prefill), len(r.decode))
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("router: %w", err)
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx) // what is cut off here was going to be cut off anyway
		fmt.Fprintln(log, "frontier router: stopped")
		return nil
	}
}
