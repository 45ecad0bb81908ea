package router

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// promptOf is an 8k-token prompt as token ids, as the load generator sends it.
func promptOf(tokens int) string {
	ids := make([]string, tokens)
	for i := range ids {
		ids[i] = fmt.Sprint(1000 + i%30000)
	}
	return "[" + strings.Join(ids, ",") + "]"
}

// largePrefillServer answers each prefill with about size bytes: prompt_logprobs for every
// prompt token, then the kv_transfer_params. It holds the last bytes of every answer until
// n requests have been answered up to there, so that n answers are in flight at once.
func largePrefillServer(t *testing.T, size, n int) *httptest.Server {
	t.Helper()
	entry := `,{"1234":{"logprob":-1.25,"rank":1,"decoded_token":" the"},"5678":{"logprob":-2.5,"rank":2,"decoded_token":" a"}}`
	chunk := []byte(strings.Repeat(entry, (64<<10)/len(entry)))
	var arrived atomic.Int64
	all := make(chan struct{})
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"cmpl-1","object":"text_completion","choices":[{"index":0,"text":"x","prompt_logprobs":[null`)
		for written := 0; written < size; written += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
		w.(http.Flusher).Flush()
		if arrived.Add(1) == int64(n) {
			close(all)
		}
		select {
		case <-all:
		case <-req.Context().Done():
			return
		case <-time.After(30 * time.Second):
		}
		b, _ := json.Marshal(nixlParams)
		_, _ = fmt.Fprintf(w, `]}],"usage":{"prompt_tokens":8192,"completion_tokens":1},"kv_transfer_params":%s}`, b)
	}))
	t.Cleanup(s.Close)
	return s
}

// TestRouterMemoryStaysSmallUnderLargePrefillAnswers sends 24 requests of 8k-token prompts
// at once, whose prefill answers are 8 MiB each and all in flight together: the router keeps
// only their kv_transfer_params, so the heap grows by well under 100 MB (24 answers held
// whole would be 192 MiB or more). Not parallel: it measures the process's heap.
func TestRouterMemoryStaysSmallUnderLargePrefillAnswers(t *testing.T) {
	const n, answer = 24, 8 << 20
	var dec recorded
	p := largePrefillServer(t, answer, n)
	d := decodeServer(t, &dec, 1, nil)
	rs := routerServer(t, []string{p.URL}, []string{d.URL})
	body := `{"model":"m","prompt":` + promptOf(8192) + `,"max_tokens":4,"stream":true}`

	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Post(rs.URL+"/v1/completions", "application/json", strings.NewReader(body))
			if err != nil {
				errs[i] = err
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !strings.Contains(string(b), "[DONE]") {
				errs[i] = fmt.Errorf("%d %.300s", resp.StatusCode, b)
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-sampled
	for i, err := range errs {
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	dec.mu.Lock()
	defer dec.mu.Unlock()
	if len(dec.bodies) != n || dec.bodies[0]["kv_transfer_params"] == nil {
		t.Fatalf("the decode instance got %d requests (first %v), want %d with the prefill's params", len(dec.bodies), dec.bodies[0]["kv_transfer_params"], n)
	}
	grew := int64(peak.Load()) - int64(base)
	t.Logf("heap in use: %d MB before, peak %d MB", base>>20, peak.Load()>>20)
	if grew > 100<<20 {
		t.Errorf("the heap grew by %d MB with %d prefill answers of %d MiB in flight; want under 100 MB: the router holds the answers", grew>>20, n, answer>>20)
	}
}

// countConns counts the connections a test server accepts.
func countConns(s *httptest.Server) *atomic.Int64 {
	var n atomic.Int64
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			n.Add(1)
		}
	}
	return &n
}

// TestRouterReusesConnectionsToTheInstances sends eight rounds of 16 requests at once: the
// router opens about 16 connections to each instance and reuses them, where Go's default of
// two idle connections a host would open some 100.
func TestRouterReusesConnectionsToTheInstances(t *testing.T) {
	t.Parallel()
	const conc, rounds = 16, 8
	var pre, dec recorded
	p := httptest.NewUnstartedServer(prefillServer(t, &pre).Config.Handler)
	d := httptest.NewUnstartedServer(decodeServer(t, &dec, 2, nil).Config.Handler)
	pn, dn := countConns(p), countConns(d)
	p.Start()
	d.Start()
	t.Cleanup(p.Close)
	t.Cleanup(d.Close)
	rs := routerServer(t, []string{p.URL}, []string{d.URL})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conc}}
	for range rounds {
		var wg sync.WaitGroup
		for range conc {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := client.Post(rs.URL+"/v1/completions", "application/json", strings.NewReader(`{"model":"m","prompt":"a","stream":true}`))
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = io.ReadAll(resp.Body)
				resp.Body.Close()
			}()
		}
		wg.Wait()
	}
	for name, n := range map[string]int64{"prefill": pn.Load(), "decode": dn.Load()} {
		if n > 2*conc {
			t.Errorf("the %s instance accepted %d connections for %d requests, %d at a time; want at most %d: the router does not reuse them", name, n, conc*rounds, conc, 2*conc)
		}
	}
}

// TestRouterHealthIsBoundedWhenAnInstanceHangs: an instance whose /health never answers
// makes the router's /health a prompt 503 naming it.
func TestRouterHealthIsBoundedWhenAnInstanceHangs(t *testing.T) {
	t.Parallel()
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		<-req.Context().Done()
	}))
	t.Cleanup(hung.Close)
	var dec recorded
	d := decodeServer(t, &dec, 1, nil)
	r, err := New(Config{Prefill: []string{hung.URL}, Decode: []string{d.URL}, HealthTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	rs := httptest.NewServer(r)
	t.Cleanup(rs.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, rs.URL+"/health", nil)
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET /health with a hung instance: %v after %s", err, time.Since(start).Round(time.Millisecond))
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || !strings.Contains(string(b), hung.URL) || !strings.Contains(string(b), "no answer within 300ms") {
		t.Errorf("GET /health: %d %s; want 503 naming %s and the timeout", resp.StatusCode, b, hung.URL)
	}
}

// TestRouterDropsTheClientsTransferParams: a client's own kv_transfer_params reach neither
// instance; with a prefill that returns none, the decode request has none.
func TestRouterDropsTheClientsTransferParams(t *testing.T) {
	t.Parallel()
	var pre, dec recorded
	p := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		pre.add(req)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"cmpl-1","choices":[{"text":"x"}],"kv_transfer_params":null}`)
	}))
	t.Cleanup(p.Close)
	d := decodeServer(t, &dec, 1, nil)
	rs := routerServer(t, []string{p.URL}, []string{d.URL})
	resp, err := http.Post(rs.URL+"/v1/completions", "application/json", strings.NewReader(
		`{"model":"m","prompt":"a","kv_transfer_params":{"do_remote_prefill":true,"remote_engine_id":"someone-elses","remote_block_ids":[7]}}`))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if len(dec.bodies) != 1 {
		t.Fatalf("the decode instance got %d requests, want 1", len(dec.bodies))
	}
	if kv, ok := dec.bodies[0]["kv_transfer_params"]; ok {
		t.Errorf("the decode request carries kv_transfer_params %v; the prefill returned none and the client's are not the router's to pass on", kv)
	}
	if kv, _ := pre.bodies[0]["kv_transfer_params"].(map[string]any); kv["remote_engine_id"] != nil || kv["do_remote_decode"] != true {
		t.Errorf("the prefill request's kv_transfer_params %v, want the router's own", kv)
	}
}
