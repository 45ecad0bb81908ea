package sim

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/frontier-llm/frontier/hw"
	"github.com/frontier-llm/frontier/vllm"
	"github.com/frontier-llm/frontier/workload"
)

// presentedVersion is the version the server reports for the vLLM line it emulates.
func presentedVersion(line string) string {
	if line == "" {
		line = vllm.Current
	}
	return line + ".0"
}

// ErrCrashed is returned by Serve when the --fault-crash-after fault fired.
var ErrCrashed = errors.New("engine core died unexpectedly (--fault-crash-after)")

// ServeOptions configure Serve.
type ServeOptions struct {
	Args   ServeArgs
	Arch   Arch
	SKU    hw.SKU
	Config EngineConfig
	// Log receives vLLM's log lines (startup, periodic stats, errors).
	Log io.Writer
	// Ready, when set, is called with the listening address once requests are served.
	Ready func(addr string)
	// Getenv looks up the environment (the NIXL side channel's VLLM_NIXL_SIDE_CHANNEL_HOST
	// and _PORT); nil means os.Getenv.
	Getenv func(string) string
}

// Serve runs the simulated vLLM server until ctx is done: it binds the port (failing with
// "address already in use" when it is taken), runs vLLM's startup checks and logs what vLLM
// logs, then serves /health, /v1/models, /v1/completions, /v1/chat/completions, /version and
// /metrics. A goroutine steps the engine in real time, sleeping each step's modelled
// duration, and streams each sampled token when its step ends. A startup failure is logged
// like vLLM's and returned as a *StartupError.
func Serve(ctx context.Context, o ServeOptions) error {
	lg := &vlog{w: o.Log, pid: os.Getpid()}
	if lg.w == nil {
		lg.w = io.Discard
	}
	host := o.Args.Host
	port := o.Args.Port
	if o.Args.Faults.BindPort > 0 {
		port = o.Args.Faults.BindPort
	}
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	lc := net.ListenConfig{}
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		shown := host
		if shown == "" {
			shown = "0.0.0.0"
		}
		lg.printf("APIServer", "ERROR", "[Errno 98] error while attempting to bind on address ('%s', %d): address already in use", shown, port)
		return fmt.Errorf("binding %s: %w", addr, err)
	}
	defer ln.Close()

	lg.printf("APIServer", "INFO", "[api_server.py] vLLM API server version %s (simulated by frontier on %s)", presentedVersion(o.Args.VLLMVersion), o.SKU.Name)
	if o.Args.VersionWarning != "" {
		lg.printf("APIServer", "WARNING", "[api_server.py] %s", o.Args.VersionWarning)
	}
	lg.printf("APIServer", "INFO", "[utils.py] non-default args: %s", nonDefaultArgs(o.Args))
	if len(o.Args.Other) > 0 {
		lg.printf("APIServer", "INFO", "[sim] accepted without modelling: %s", strings.Join(o.Args.Other, " "))
	}
	startFail := func(se *StartupError) error {
		if se.APIServer {
			// vLLM builds its engine config in the API server process: the exception ends
			// it, with Python's traceback, before any engine core starts.
			lg.raw(fmt.Sprintf("(APIServer pid=%d) Traceback (most recent call last):", lg.pid))
			lg.raw(fmt.Sprintf("(APIServer pid=%d)   File \"vllm/engine/arg_utils.py\", in create_engine_config", lg.pid))
			for _, line := range strings.Split(se.Message, "\n") {
				lg.raw(fmt.Sprintf("(APIServer pid=%d) %s", lg.pid, line))
			}
			return se
		}
		lg.printf("EngineCore_DP0", "ERROR", "[core.py] EngineCore failed to start.")
		for _, line := range strings.Split(se.Message, "\n") {
			lg.printf("EngineCore_DP0", "ERROR", "[core.py] %s", line)
		}
		lg.printf("APIServer", "ERROR", "[utils.py] RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {'EngineCore_DP0': 1}")
		return se
	}
	if o.Args.Faults.HangStartup {
		lg.printf("EngineCore_DP0", "INFO", "[gpu_model_runner.py] Starting to load model %s...", o.Args.Model)
		<-ctx.Done()
		return nil
	}
	if d := o.Args.Faults.SlowStart; d > 0 {
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return nil
		}
	}
	e, err := newEngine(o.Arch, o.SKU, o.Config)
	if o.Args.Faults.StartupOOM && err == nil {
		err = &StartupError{Class: ClassWeightsOOM, Message: fmt.Sprintf("Failed to load model - not enough GPU memory. Try lowering --gpu-memory-utilization to free memory for weights, increasing --tensor-parallel-size, or using --quantization. See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more tips. (original error: CUDA out of memory. Tried to allocate 1.96 GiB. GPU 0 has a total capacity of %.2f GiB of which 512.00 MiB is free.)", o.SKU.MemoryGiB)}
	}
	var se *StartupError
	if errors.As(err, &se) {
		return startFail(se)
	}
	if err != nil {
		return err
	}
	st := e.st
	c := st.Config
	lg.printf("EngineCore_DP0", "INFO", "[core.py] Initializing a V1 LLM engine (v%s) with config: model='%s', tokenizer='%s', max_seq_len=%d, tensor_parallel_size=%d, pipeline_parallel_size=%d, quantization=%s, enforce_eager=%s, kv_cache_dtype=%s, served_model_name=%s, enable_prefix_caching=%s, enable_chunked_prefill=%s, max_num_seqs=%d, max_num_batched_tokens=%d",
		presentedVersion(o.Args.VLLMVersion), o.Args.Model, o.Args.Model, c.MaxModelLen, c.TensorParallelSize, c.PipelineParallelSize, pyNone(c.Quantization), pyBool(c.EnforceEager), c.KVCacheDType, o.Args.ServedModelName, pyBool(c.EnablePrefixCaching), pyBool(c.EnableChunkedPrefill), c.MaxNumSeqs, c.MaxNumBatchedTokens)
	if st.AssumedCheckpoint != "" {
		lg.printf("EngineCore_DP0", "INFO", "[simulated] --quantization %s needs a pre-quantised checkpoint: serving %s (%.4g bytes per linear-layer weight, group scales included)", c.Quantization, st.AssumedCheckpoint, st.WeightBytes)
	}
	for _, w := range st.Warnings {
		lg.printf("EngineCore_DP0", "WARNING", "[config.py] %s", w)
	}
	// Loading the weights takes their size over the load bandwidth (--load-time); the port
	// is bound already, as vLLM binds it before building the engine, so clients that connect
	// meanwhile wait unanswered.
	loadTook := 0.01
	if d := o.Args.loadTime(st.WeightsGiB); d > 0 {
		lg.printf("EngineCore_DP0", "INFO", "[gpu_model_runner.py] Starting to load model %s...", o.Args.Model)
		began := time.Now()
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return nil
		}
		loadTook = time.Since(began).Seconds()
	}
	lg.printf("EngineCore_DP0", "INFO", "[gpu_model_runner.py] Model loading took %.4f GiB memory and %.6f seconds", st.WeightsGiB, loadTook)
	lg.printf("EngineCore_DP0", "INFO", "[gpu_worker.py] Available KV cache memory: %.2f GiB", st.KVCacheGiB)
	if c.NumGPUBlocksOverride > 0 {
		lg.printf("EngineCore_DP0", "INFO", "[kv_cache_utils.py] Overriding num_gpu_blocks=%d with num_gpu_blocks_override=%d", st.ProfiledBlocks, st.NumGPUBlocks)
	}
	lg.printf("EngineCore_DP0", "INFO", "[kv_cache_utils.py] GPU KV cache size: %s tokens", formatThousands(st.KVCacheTokens))
	lg.printf("EngineCore_DP0", "INFO", "[kv_cache_utils.py] Maximum concurrency for %s tokens per request: %.2fx", formatThousands(c.MaxModelLen), st.MaxConcurrency)
	if !c.EnforceEager {
		lg.printf("EngineCore_DP0", "INFO", "[gpu_model_runner.py] Graph capturing finished in 0 secs, took %.2f GiB", st.CUDAGraphGiB)
	}
	lg.printf("EngineCore_DP0", "INFO", "[core.py] init engine (profile, create kv cache, warmup model) took 0.01 seconds")
	lg.printf("APIServer", "INFO", "[loggers.py] Engine 000: vllm cache_config_info with initialization after num_gpu_blocks is: %d", st.NumGPUBlocks)

	sv := &server{o: o, lg: lg, eng: e, start: time.Now(),
		crash: make(chan struct{}), dialect: dialectOf(o.Args.VLLMVersion), api: apiOptionsOf(o.Args)}
	// One engine core per data-parallel rank, each with its own scheduler and KV cache,
	// stepped by a loop of its own; the API server balances requests over them.
	for r := range max(c.DataParallelSize, 1) {
		ce := e
		if r > 0 {
			if ce, err = newEngine(o.Arch, o.SKU, o.Config); err != nil {
				return err
			}
			ce.nextSeed = uint64(r) << 40
		}
		sv.cores = append(sv.cores, &core{rank: r, eng: ce, wake: make(chan struct{}, 1), live: map[*seq]*liveReq{}})
	}
	getenv := o.Getenv
	if getenv == nil {
		getenv = osGetenv
	}
	kv, kvLn, err := newKVConnector(o, st, getenv)
	if err != nil {
		// The connector is built in the engine core: its failure ends the core's start, and
		// the API server reports the core's death.
		return startFail(&StartupError{Class: ClassInvalidArgs, Message: err.Error()})
	}
	sv.kv = kv
	sv.hist.ttft = newHistogram(ttftBuckets)
	sv.hist.itl = newHistogram(itlBuckets)
	sv.hist.e2e = newHistogram(latencyBuckets)
	sv.hist.queue = newHistogram(latencyBuckets)
	loopCtx, stopLoop := context.WithCancel(ctx)
	defer stopLoop()
	var wg sync.WaitGroup
	wg.Add(1 + len(sv.cores))
	for _, co := range sv.cores {
		go func() { defer wg.Done(); sv.loop(loopCtx, co) }()
	}
	go func() { defer wg.Done(); sv.statsLog(loopCtx) }()
	if kv != nil {
		if kv.cfg.KVRole == "kv_both" && kvRoleDeprecated(o.Args.VLLMVersion) {
			lg.printf("EngineCore_DP0", "WARNING", "[nixl_connector.py] Using kv_role='kv_both' with NixlConnector is deprecated and will be removed in a future release. Please set kv_role='kv_producer' for prefill instances and kv_role='kv_consumer' for decode instances.")
		}
		lg.printf("EngineCore_DP0", "INFO", "[nixl_connector.py] NIXL side channel of engine %s on %s:%d (kv_role %s)", kv.engineID, kv.host, kv.port, kv.cfg.KVRole)
		wg.Add(1)
		go func() { defer wg.Done(); kv.serveSideChannel(loopCtx, kvLn) }()
	}

	hs := &http.Server{Handler: sv.routes(), ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return loopCtx }}
	shown := ln.Addr().String()
	lg.printf("APIServer", "INFO", "[api_server.py] Starting vLLM API server 0 on http://%s", shown)
	lg.printf("APIServer", "INFO", "[launcher.py] Available routes are: /health, /v1/models, /v1/completions, /v1/chat/completions, /version, /metrics")
	serveErr := make(chan error, 1)
	go func() { serveErr <- hs.Serve(ln) }()
	lg.raw("INFO:     Application startup complete.")
	if o.Ready != nil {
		o.Ready(shown)
	}
	var result error
	select {
	case <-ctx.Done():
		lg.printf("APIServer", "INFO", "[launcher.py] Shutting down FastAPI HTTP server.")
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = hs.Shutdown(sctx)
		cancel()
	case <-sv.crash:
		lg.printf("APIServer", "ERROR", "[core_client.py] Engine core proc EngineCore_DP0 died unexpectedly, shutting down client.")
		_ = hs.Close()
		result = ErrCrashed
	case err := <-serveErr:
		result = fmt.Errorf("serving: %w", err)
	}
	stopLoop()
	wg.Wait()
	return result
}

// server is one running simulated vLLM.
type server struct {
	o  ServeOptions
	lg *vlog
	// eng is the first engine core, whose configuration every core shares; the handlers read
	// only its cfg. cores are the data-parallel engine cores (one without data parallelism).
	eng   *engine
	cores []*core
	start time.Time
	crash chan struct{}
	// dialect and api are the OpenAI server's behaviour: the emulated release's, and the
	// server flags that shape its answers.
	dialect apiDialect
	api     serverOptions

	received  atomic.Int64
	finished  atomic.Int64
	nextID    atomic.Int64
	crashOnce sync.Once
	// lagged is the real time, in nanoseconds, the loop has lost to the host since it
	// started: steps that could not start when they were due (the machine busy) and were
	// started late, off the timeline. /metrics exports it as frontier_sim_lag_seconds_total.
	lagged atomic.Int64

	mu   sync.Mutex // guards what follows, and each core's inbox, aborts, snap and assigned
	hist struct{ ttft, itl, e2e, queue *histogram }
	done map[string]int // finished requests by reason
	// kv is the NixlConnector of --kv-transfer-config (server_disagg.go), or nil.
	kv *kvConnector
}

// core is one engine core (a data-parallel rank): its engine, which only its loop goroutine
// touches, and what the API server hands it.
type core struct {
	rank int
	eng  *engine
	wake chan struct{}
	live map[*seq]*liveReq // the loop goroutine only

	inbox    []*liveReq
	aborts   []*liveReq
	snap     engineSnapshot
	assigned int // requests handed to the core since its last snapshot
}

// engineSnapshot is the engine's state after its latest step.
type engineSnapshot struct {
	running, waiting                          int
	kvUsage                                   float64
	preemptions, prefixQueries, prefixHits    int
	extQueries, extHits                       int // the CPU tier's (kv_offloading_size)
	promptTokens, generationTokens            int
	lastPromptTokens, lastGenTokens, lastTime float64 // for the periodic log
}

// liveReq is a request in flight.
type liveReq struct {
	s      seq
	core   *core         // the engine core the load balancer handed it to
	out    chan tokenMsg // shared by a request's choices
	choice int           // the choice (n > 1) this sequence generates
}

// tokenMsg tells a request's handler that its n-th token was sampled.
type tokenMsg struct {
	choice   int
	n        int
	finished bool
	failed   bool
	queue    float64 // seconds waiting before first scheduled, on the first token
}

// maxLag is how far the real-time loop may fall behind its timeline and still catch up.
const maxLag = 50 * time.Millisecond

// loop steps one engine core in real time.
func (sv *server) loop(ctx context.Context, co *core) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var pending []tokenMsg
	var targets []*liveReq
	// prevEnd is when the previous step was due to end. Steps are laid end to end on that
	// timeline, so a late wake-up shortens the next sleep instead of adding up.
	var prevEnd time.Time
	for {
		sv.mu.Lock()
		for _, r := range co.inbox {
			co.live[&r.s] = r
			co.eng.add(&r.s)
		}
		co.inbox = co.inbox[:0]
		for _, r := range co.aborts {
			if _, ok := co.live[&r.s]; ok {
				co.eng.abort(&r.s)
				delete(co.live, &r.s)
			}
		}
		co.aborts = co.aborts[:0]
		sv.mu.Unlock()
		if co.eng.idle() {
			sv.snapshot(co)
			prevEnd = time.Time{}
			select {
			case <-co.wake:
				continue
			case <-ctx.Done():
				return
			}
		}
		t0 := time.Now()
		if !prevEnd.IsZero() {
			if late := t0.Sub(prevEnd); late < maxLag {
				t0 = prevEnd
			} else {
				sv.lagged.Add(int64(late))
			}
		}
		dt, events := co.eng.step(t0.Sub(sv.start).Seconds())
		pending, targets = pending[:0], targets[:0]
		if dt == 0 {
			// Nothing fits (a request larger than the whole cache): fail the first waiting one.
			var v *seq
			if len(co.eng.preempted) > 0 {
				v = co.eng.preempted[len(co.eng.preempted)-1]
			} else if co.eng.qhead < len(co.eng.queue) {
				v = co.eng.queue[co.eng.qhead]
			}
			if v != nil {
				co.eng.abort(v)
				if r := co.live[v]; r != nil {
					delete(co.live, v)
					r.out <- tokenMsg{choice: r.choice, failed: true}
				}
			}
			continue
		}
		for _, ev := range events {
			r := co.live[ev.s]
			if r == nil {
				continue
			}
			m := tokenMsg{choice: r.choice, n: ev.s.generated, finished: ev.finished}
			if ev.s.generated == 1 {
				m.queue = max(ev.s.firstSch-ev.s.arrival, 0)
			}
			pending = append(pending, m)
			targets = append(targets, r)
			if ev.finished {
				delete(co.live, ev.s)
			}
		}
		prevEnd = t0.Add(time.Duration(dt * float64(time.Second)))
		timer.Reset(time.Until(prevEnd))
		select {
		case <-timer.C:
		case <-ctx.Done():
			return
		}
		for i, r := range targets {
			r.out <- pending[i] // never blocks: the channel holds every token of the request
		}
		sv.snapshot(co)
	}
}

// snapshot publishes an engine core's gauges and counters.
func (sv *server) snapshot(co *core) {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	s := &co.snap
	e := co.eng
	s.running, s.waiting, s.kvUsage = len(e.running), e.waiting()+len(co.inbox), e.kvUsage()
	s.preemptions, s.prefixQueries, s.prefixHits = e.preemptions, e.prefixQueries, e.prefixHits
	s.extQueries, s.extHits = e.off.queryTokens(), e.off.hitTokens()
	s.promptTokens, s.generationTokens = e.promptTokens, e.generatedTotal
	co.assigned = 0
}

// statsLog writes vLLM's periodic stats line every 10 seconds while there is work.
func (sv *server) statsLog(ctx context.Context) {
	t := time.NewTicker(10 * time.Second)
	defer t.Stop()
	last := time.Now()
	var lastLag int64
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			sv.mu.Lock()
			snaps := make([]engineSnapshot, len(sv.cores))
			for i, co := range sv.cores {
				snaps[i] = co.snap
				co.snap.lastPromptTokens, co.snap.lastGenTokens = float64(co.snap.promptTokens), float64(co.snap.generationTokens)
			}
			sv.mu.Unlock()
			el := now.Sub(last).Seconds()
			last = now
			total := sv.lagged.Load()
			lag := time.Duration(total - lastLag)
			lastLag = total
			if lag.Seconds() > workload.MaxSimLagShare*el {
				sv.lg.printf("EngineCore", "WARNING", "[frontier sim] the simulated engine fell %s behind real time in the last %.0f s: the host was too busy to run its steps when due, so latencies measured in that time are slower than the model's", lag.Round(time.Millisecond), el)
			}
			// One line per engine core, as vLLM logs each data-parallel rank.
			for i, s := range snaps {
				dp, dg := float64(s.promptTokens)-s.lastPromptTokens, float64(s.generationTokens)-s.lastGenTokens
				if dp == 0 && dg == 0 && s.running == 0 && s.waiting == 0 {
					continue
				}
				hit := 0.0
				if s.prefixQueries > 0 {
					hit = 100 * float64(s.prefixHits) / float64(s.prefixQueries)
				}
				ext := ""
				if sv.eng.off != nil {
					// vLLM adds the KV connector's hit rate when one is configured.
					r := 0.0
					if s.extQueries > 0 {
						r = 100 * float64(s.extHits) / float64(s.extQueries)
					}
					ext = fmt.Sprintf(", External prefix cache hit rate: %.1f%%", r)
				}
				sv.lg.printf("APIServer", "INFO", "[loggers.py] Engine %03d: Avg prompt throughput: %.1f tokens/s, Avg generation throughput: %.1f tokens/s, Running: %d reqs, Waiting: %d reqs, Preemptions: %d, GPU KV cache usage: %.1f%%, Prefix cache hit rate: %.1f%%%s",
					i, dp/el, dg/el, s.running, s.waiting, s.preemptions, 100*s.kvUsage, hit, ext)
			}
		}
	}
}

// submit hands a request to the engine core the load balancer picks.
func (sv *server) submit(r *liveReq) {
	sv.mu.Lock()
	r.s.arrival = time.Since(sv.start).Seconds()
	co := sv.balance()
	r.core = co
	co.inbox = append(co.inbox, r)
	co.assigned++
	sv.mu.Unlock()
	select {
	case co.wake <- struct{}{}:
	default:
	}
}

// balance picks the engine core for a new request, under sv.mu, as vLLM's data-parallel load
// balancer does (DPLBAsyncMPClient.get_core_engine_for_request): the lowest waiting × 4 +
// running from the cores' latest published counts, with the requests handed to a core since
// then counted as waiting, the first such core on a tie.
func (sv *server) balance() *core {
	best, bestScore := sv.cores[0], -1
	for _, co := range sv.cores {
		score := 4*(co.snap.waiting+co.assigned) + co.snap.running
		if bestScore < 0 || score < bestScore {
			best, bestScore = co, score
		}
	}
	return best
}

// abort withdraws a request whose client went away.
func (sv *server) abort(r *liveReq) {
	co := r.core
	sv.mu.Lock()
	co.aborts = append(co.aborts, r)
	sv.mu.Unlock()
	select {
	case co.wake <- struct{}{}:
	default:
	}
}

// requestDone counts a finished request and fires the crash fault.
func (sv *server) requestDone(reason string) {
	sv.mu.Lock()
	if sv.done == nil {
		sv.done = map[string]int{}
	}
	sv.done[reason]++
	sv.mu.Unlock()
	n := sv.finished.Add(1)
	if k := sv.o.Args.Faults.CrashAfter; k > 0 && n >= int64(k) {
		sv.crashOnce.Do(func() { close(sv.crash) })
	}
}

func (sv *server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("GET /ping", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("GET /version", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"version": presentedVersion(sv.o.Args.VLLMVersion)})
	})
	mux.HandleFunc("GET /v1/models", sv.handleModels)
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) { sv.handleGenerate(w, r, false) })
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) { sv.handleGenerate(w, r, true) })
	mux.HandleFunc("GET /metrics", sv.handleMetrics)
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusNotFound, map[string]string{"detail": "Not Found"})
	})
	return requireAPIKey(mux, apiKeys(sv.o.Args.Other, os.Getenv("VLLM_API_KEY")))
}

// apiKeys are the keys the server enforces, as vLLM's API server does: those of --api-key,
// else the VLLM_API_KEY environment variable; none means no key is needed.
func apiKeys(other []string, env string) []string {
	var keys []string
	for i := 0; i < len(other); i++ {
		if v, ok := strings.CutPrefix(other[i], "--api-key="); ok {
			keys = append(keys, v)
			continue
		}
		if other[i] != "--api-key" {
			continue
		}
		for i+1 < len(other) && !strings.HasPrefix(other[i+1], "--") {
			i++
			keys = append(keys, other[i])
		}
	}
	if len(keys) == 0 && env != "" {
		keys = []string{env}
	}
	return keys
}

// requireAPIKey answers 401 {"error": "Unauthorized"}, as vLLM's authentication middleware
// does, to a request for a path under /v1 (not OPTIONS) without "Authorization: Bearer KEY"
// for one of keys. /health, /metrics and /version stay open.
func requireAPIKey(next http.Handler, keys []string) http.Handler {
	if len(keys) == 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodOptions && strings.HasPrefix(r.URL.Path, "/v1") {
			auth := r.Header.Get("Authorization")
			ok := false
			for _, k := range keys {
				ok = ok || subtle.ConstantTimeCompare([]byte(auth), []byte("Bearer "+k)) == 1
			}
			if !ok {
				writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "Unauthorized"})
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func (sv *server) handleModels(w http.ResponseWriter, _ *http.Request) {
	name := sv.o.Args.ServedModelName
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{map[string]any{
		"id": name, "object": "model", "created": sv.start.Unix(), "owned_by": "vllm", "root": sv.o.Args.Model,
		"parent": nil, "max_model_len": sv.eng.cfg.MaxModelLen,
		"permission": []any{map[string]any{"id": "modelperm-sim", "object": "model_permission", "created": sv.start.Unix(),
			"allow_create_engine": false, "allow_sampling": true, "allow_logprobs": true, "allow_search_indices": false,
			"allow_view": true, "allow_fine_tuning": false, "organization": "*", "group": nil, "is_blocking": false}},
	}}})
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// PromptTokens counts a prompt's tokens as the simulator does: a token-id list has one token
// per id; text has one token per whitespace-separated word (at least one).
func PromptTokens(raw json.RawMessage) (int, error) {
	t, err := promptUnits(raw)
	return len(t), err
}

// promptUnits returns one hash per prompt token: the ids of a token-id list, or the words of
// a text.
func promptUnits(raw json.RawMessage) ([]uint64, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		u := wordUnits(nil, s)
		if len(u) == 0 {
			u = append(u, 0)
		}
		return u, nil
	}
	var ids []int64
	if err := json.Unmarshal(raw, &ids); err == nil {
		if len(ids) == 0 {
			return nil, errors.New("prompt must not be empty")
		}
		u := make([]uint64, len(ids))
		for i, id := range ids {
			u[i] = uint64(id)
		}
		return u, nil
	}
	var batch []json.RawMessage
	if err := json.Unmarshal(raw, &batch); err == nil && len(batch) == 1 {
		return promptUnits(batch[0])
	}
	return nil, errors.New("prompt must be a string, a list of token ids, or a list with one of those")
}

func wordUnits(u []uint64, s string) []uint64 {
	for _, w := range strings.Fields(s) {
		h := uint64(14695981039346656037)
		for i := 0; i < len(w); i++ {
			h ^= uint64(w[i])
			h *= 1099511628211
		}
		u = append(u, h|1<<63)
	}
	return u
}

// The chat template's tokens: per message, and for the generation prompt at the end.
const (
	chatTemplateTokens     = 4
	generationPromptTokens = 1
)

// chatUnits is promptUnits for chat messages: the chat template adds chatTemplateTokens per
// message and generationPromptTokens at the end.
func chatUnits(msgs []chatMessage) ([]uint64, error) {
	if len(msgs) == 0 {
		return nil, errors.New("messages must not be empty")
	}
	var u []uint64
	for _, m := range msgs {
		u = wordUnits(u, "<|start|> "+m.Role+" <|header|> <|end|>")
		var s string
		if err := json.Unmarshal(m.Content, &s); err == nil {
			u = wordUnits(u, s)
			continue
		}
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(m.Content, &parts); err != nil && len(m.Content) > 0 && string(m.Content) != "null" {
			return nil, fmt.Errorf("message content must be a string or a list of parts")
		}
		for _, p := range parts {
			u = wordUnits(u, p.Text)
		}
	}
	return wordUnits(u, "<|assistant|>"), nil
}

// blockHashes hashes a prompt's whole KV blocks as vLLM does, each over its own tokens and
// the blocks before it, so that equal hashes mean equal prefixes.
func blockHashes(units []uint64, bs int) []uint64 {
	hashes := make([]uint64, 0, len(units)/bs)
	h := uint64(14695981039346656037)
	for i := 0; i+bs <= len(units); i += bs {
		for _, t := range units[i : i+bs] {
			h ^= t
			h *= 1099511628211
			h ^= h >> 29
		}
		hashes = append(hashes, h)
	}
	return hashes
}

// fillerWords are the simulated model's output: token i of every answer is
// fillerWords[i mod len] with a leading space.
var fillerWords = [...]string{"the", "model", "is", "simulated", "and", "every", "token", "takes", "its",
	"modelled", "step", "time", "on", "this", "GPU", "so", "throughput", "and", "latency", "follow", "vLLM"}

// fillerText returns tokens from..from+n-1 of the filler output.
func fillerText(from, n int) string {
	var b strings.Builder
	for i := from; i < from+n; i++ {
		b.WriteByte(' ')
		b.WriteString(fillerWords[i%len(fillerWords)])
	}
	return b.String()
}

// unitHash maps n to [0, 1) deterministically.
func unitHash(n uint64) float64 {
	n ^= n >> 33
	n *= 0xff51afd7ed558ccd
	n ^= n >> 33
	n *= 0xc4ceb9fe1a85ec53
	n ^= n >> 33
	return float64(n>>11) / (1 << 53)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	typ := "BadRequestError"
	switch {
	case status == http.StatusTooManyRequests:
		typ = "RateLimitError"
	case status >= 500:
		typ = "InternalServerError"
	}
	writeErrorType(w, status, typ, msg)
}

func writeErrorType(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": status}})
}

// vlog writes log lines in vLLM's format.
type vlog struct {
	mu  sync.Mutex
	w   io.Writer
	pid int
}

func (l *vlog) printf(proc, level, format string, args ...any) {
	l.raw(fmt.Sprintf("(%s pid=%d) %s %s %s", proc, l.pid, level, time.Now().Format("01-02 15:04:05"), fmt.Sprintf(format, args...)))
}

func (l *vlog) raw(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintln(l.w, line)
}

func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

func pyNone(s string) string {
	if s == "" {
		return "None"
	}
	return s
}

// nonDefaultArgs renders the options given on the command line as vLLM's log does.
func nonDefaultArgs(a ServeArgs) string {
	keys := make([]string, 0, len(a.Settings))
	for k := range a.Settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := []string{fmt.Sprintf("'model': '%s'", a.Model)}
	if a.Host != "" {
		parts = append(parts, fmt.Sprintf("'host': '%s'", a.Host))
	}
	if a.Port != 8000 {
		parts = append(parts, fmt.Sprintf("'port': %d", a.Port))
	}
	if a.ServedModelName != a.Model {
		parts = append(parts, fmt.Sprintf("'served_model_name': ['%s']", a.ServedModelName))
	}
	for _, k := range keys {
		switch v := a.Settings[k].(type) {
		case bool:
			parts = append(parts, fmt.Sprintf("'%s': %s", k, pyBool(v)))
		case string:
			if _, err := strconv.ParseFloat(v, 64); err == nil {
				parts = append(parts, fmt.Sprintf("'%s': %s", k, v))
			} else {
				parts = append(parts, fmt.Sprintf("'%s': '%s'", k, v))
			}
		default:
			parts = append(parts, fmt.Sprintf("'%s': %v", k, v))
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// Histogram buckets of vLLM's metrics.
var (
	ttftBuckets    = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	itlBuckets     = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
	latencyBuckets = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
)

// histogram is a Prometheus histogram.
type histogram struct {
	bounds []float64
	counts []uint64 // per bucket, not cumulative; the last is +Inf
	sum    float64
	n      uint64
}

func newHistogram(bounds []float64) *histogram {
	return &histogram{bounds: bounds, counts: make([]uint64, len(bounds)+1)}
}

func (h *histogram) observe(v float64) {
	i := sort.SearchFloat64s(h.bounds, v)
	h.counts[i]++
	h.sum += v
	h.n++
}

func (h *histogram) write(w io.Writer, name, help, labels string) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name)
	var cum uint64
	for i, b := range h.bounds {
		cum += h.counts[i]
		fmt.Fprintf(w, "%s_bucket{%s,le=\"%s\"} %d\n", name, labels, promFloat(b), cum)
	}
	cum += h.counts[len(h.bounds)]
	fmt.Fprintf(w, "%s_bucket{%s,le=\"+Inf\"} %d\n", name, labels, cum)
	fmt.Fprintf(w, "%s_count{%s} %d\n%s_sum{%s} %s\n", name, labels, h.n, name, labels, promFloat(h.sum))
}

func promFloat(v float64) string {
	if math.IsInf(v, 1) {
		return "+Inf"
	}
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}

func (sv *server) handleMetrics(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	labels := fmt.Sprintf("engine=\"0\",model_name=\"%s\"", sv.o.Args.ServedModelName)
	sv.mu.Lock()
	defer sv.mu.Unlock()
	c := sv.eng.cfg
	// The engine cores' gauges and counters, one series per core with its engine label, as
	// vLLM exports a data-parallel deployment's.
	engineLabels := func(i int) string {
		return fmt.Sprintf("engine=\"%d\",model_name=\"%s\"", i, sv.o.Args.ServedModelName)
	}
	perEngine := func(name, help, typ string, v func(s *engineSnapshot) float64) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
		for i, co := range sv.cores {
			fmt.Fprintf(w, "%s{%s} %s\n", name, engineLabels(i), promFloat(v(&co.snap)))
		}
	}
	gauge := func(name, help string, v func(s *engineSnapshot) float64) { perEngine(name, help, "gauge", v) }
	// prometheus_client names a counter's HELP and TYPE lines with the _total suffix.
	counter := func(name, help string, v func(s *engineSnapshot) float64) {
		perEngine(name+"_total", help, "counter", v)
	}
	fmt.Fprintf(w, "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n# TYPE vllm:cache_config_info gauge\n")
	for i := range sv.cores {
		fmt.Fprintf(w, "vllm:cache_config_info{block_size=\"%d\",cache_dtype=\"%s\",calculate_kv_scales=\"False\",cpu_offload_gb=\"0\",enable_prefix_caching=\"%s\",engine=\"%d\",gpu_memory_utilization=\"%v\",is_attention_free=\"False\",num_cpu_blocks=\"0\",num_gpu_blocks=\"%d\",num_gpu_blocks_override=\"None\",prefix_caching_hash_algo=\"sha256\",sliding_window=\"None\",swap_space=\"4\",swap_space_bytes=\"4294967296\"} 1.0\n",
			c.BlockSize, c.KVCacheDType, pyBool(c.EnablePrefixCaching), i, c.GPUMemoryUtilization, sv.eng.totalBlk)
	}
	gauge("vllm:num_requests_running", "Number of requests in model execution batches.", func(s *engineSnapshot) float64 { return float64(s.running) })
	gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", func(s *engineSnapshot) float64 { return float64(s.waiting) })
	gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", func(s *engineSnapshot) float64 { return s.kvUsage })
	counter("vllm:num_preemptions", "Cumulative number of preemption from the engine.", func(s *engineSnapshot) float64 { return float64(s.preemptions) })
	counter("vllm:prefix_cache_queries", "Prefix cache queries, in terms of number of queried tokens.", func(s *engineSnapshot) float64 { return float64(s.prefixQueries) })
	counter("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.", func(s *engineSnapshot) float64 { return float64(s.prefixHits) })
	if sv.eng.off != nil {
		// vLLM exports the KV connector's prefix cache (here the CPU tier) when one is set.
		counter("vllm:external_prefix_cache_queries", "External prefix cache queries from KV connector cross-instance cache sharing, in terms of number of queried tokens.", func(s *engineSnapshot) float64 { return float64(s.extQueries) })
		counter("vllm:external_prefix_cache_hits", "External prefix cache hits from KV connector cross-instance cache sharing, in terms of number of cached tokens.", func(s *engineSnapshot) float64 { return float64(s.extHits) })
	}
	counter("vllm:prompt_tokens", "Number of prefill tokens processed.", func(s *engineSnapshot) float64 { return float64(s.promptTokens) })
	counter("vllm:generation_tokens", "Number of generation tokens processed.", func(s *engineSnapshot) float64 { return float64(s.generationTokens) })
	// Not a vLLM metric: how far the simulated engine fell behind real time, so that a client
	// can tell the host's slowness from the model's.
	fmt.Fprintf(w, "# HELP frontier_sim_lag_seconds_total Real time the simulated engine fell behind its timeline because the host could not run its steps when due.\n# TYPE frontier_sim_lag_seconds_total counter\nfrontier_sim_lag_seconds_total{%s} %s\n", labels, promFloat(time.Duration(sv.lagged.Load()).Seconds()))
	fmt.Fprintf(w, "# HELP vllm:request_success_total Count of successfully processed requests.\n# TYPE vllm:request_success_total counter\n")
	for _, reason := range []string{"abort", "length", "stop"} {
		fmt.Fprintf(w, "vllm:request_success_total{%s,finished_reason=\"%s\"} %d.0\n", labels, reason, sv.done[reason])
	}
	sv.hist.ttft.write(w, "vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", labels)
	sv.hist.itl.write(w, "vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", labels)
	sv.hist.e2e.write(w, "vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", labels)
	sv.hist.queue.write(w, "vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", labels)
}
