package workload_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/frontier-llm/frontier/workload"
	"github.com/frontier-llm/frontier/workload/workloadtest"
)

func startServer(t *testing.T, opts workloadtest.Options) *workloadtest.Server {
	t.Helper()
	s, err := workloadtest.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func fixed(n int) workload.Dist { return workload.Dist{Kind: workload.DistFixed, A: float64(n)} }

func near(t *testing.T, name string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %.3f, want %.3f ± %.3f", name, got, want, tol)
	}
}

// TestRunMeasuresKnownTiming checks the measurement against the timing the server was asked
// for and, to the millisecond, against the times the server actually wrote each chunk: on a
// loaded machine the server's sleeps overrun, and what is checked is that the client sees
// what happened. It runs alone, not in parallel with other tests.
func TestRunMeasuresKnownTiming(t *testing.T) {
	const ttft, itl, tokens = 40 * time.Millisecond, 8 * time.Millisecond, 10
	s := startServer(t, workloadtest.Options{TTFT: ttft, ITL: itl})
	c := workload.Class{Name: "fixed", Requests: 20, Warmup: 2, InputTokens: fixed(32), OutputTokens: fixed(tokens),
		Arrival: workload.Arrival{Kind: workload.ArrivalConstant, Rate: 25}}
	res, err := workload.Run(context.Background(), workload.Target{URL: s.URL(), Model: "m", TokenIDs: true}, []workload.Class{c}, workload.RunOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	m := res.Measurement.Workloads["fixed"].Metrics
	if m[workload.Completed] != 20 || m[workload.Failed] != 0 {
		t.Fatalf("completed %v, failed %v; want 20 and 0 (errors %v)", m[workload.Completed], m[workload.Failed], res.Measurement.Total.Errors)
	}
	if len(res.Records) != 22 || s.Requests() != 22 {
		t.Errorf("%d records, %d requests served; want 22 with warm-up", len(res.Records), s.Requests())
	}

	// Against what the server did: the client sees each chunk within a few ms of its write,
	// plus the machine's scheduling noise, measured here, when it is loaded.
	slack := 3 + schedulingNoise()
	t.Logf("slack %.3f ms", slack)
	// Records and traces are paired in order of sending and of arrival; on a loaded machine
	// two requests sent together can reach the server in the other order, so TTFT and e2e
	// are compared as order statistics: the k-th shortest the client saw against the k-th
	// shortest the server took. If every request's client time is at least its server time,
	// so is every k-th shortest, whatever the pairing.
	recs := slices.Clone(res.Records)
	slices.SortFunc(recs, func(a, b workload.Record) int { return int(a.Sent - b.Sent) })
	traces := s.Traces()
	slices.SortFunc(traces, func(a, b workloadtest.Trace) int { return a.Arrival.Compare(b.Arrival) })
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	var clientTTFT, serverTTFT, clientE2E, serverE2E, gapErr []float64
	for i, r := range recs {
		if len(r.Chunks) != tokens || r.OutputTokens != tokens || r.InputTokens != 32 {
			t.Errorf("request %d: %d chunks, %d in, %d out; want %d chunks, 32 in, %d out", r.Index, len(r.Chunks), r.InputTokens, r.OutputTokens, tokens, tokens)
			continue
		}
		tr := traces[i]
		clientTTFT = append(clientTTFT, ms(r.FirstToken-r.Sent))
		serverTTFT = append(serverTTFT, ms(tr.Chunks[0].Sub(tr.Arrival)))
		clientE2E = append(clientE2E, ms(r.Chunks[tokens-1]-r.Sent))
		serverE2E = append(serverE2E, ms(tr.Chunks[tokens-1].Sub(tr.Arrival)))
		for j := 1; j < tokens; j++ {
			gapErr = append(gapErr, math.Abs(ms(r.Chunks[j]-r.Chunks[j-1])-ms(tr.Chunks[j].Sub(tr.Chunks[j-1]))))
		}
	}
	byRank := func(client, server []float64) []float64 {
		slices.Sort(client)
		slices.Sort(server)
		d := make([]float64, len(client))
		for k := range client {
			d[k] = client[k] - server[k]
		}
		return d
	}
	ttftErr, e2eErr := byRank(clientTTFT, serverTTFT), byRank(clientE2E, serverE2E)
	for _, e := range []struct {
		name string
		v    []float64
	}{{"TTFT", ttftErr}, {"ITL", gapErr}, {"e2e", e2eErr}} {
		if slices.Min(e.v) < 0 && e.name != "ITL" {
			t.Errorf("%s: a client time shorter than the server took: %.3f ms", e.name, slices.Min(e.v))
		}
		slices.Sort(e.v)
		if p := workload.Percentile(e.v, 50); p < -0.5 || p > slack {
			t.Errorf("%s: the client's median differs from the server's by %.3f ms; want within %.3f ms", e.name, p, slack)
		}
	}

	// Against the timing asked for: medians near it, and never below it.
	q := res.Measurement.Workloads["fixed"].Quantiles
	near(t, "ttft_p50_ms", m["ttft_p50_ms"], 40, 8)
	near(t, "itl_p50_ms", m["itl_p50_ms"], 8, 2)
	near(t, "tpot_p50_ms", m["tpot_p50_ms"], 8, 2)
	near(t, "e2e_p50_ms", m["e2e_p50_ms"], 40+9*8, 10)
	if q["ttft_ms"][0] < 40 || q["e2e_ms"][0] < 40+9*8 {
		t.Errorf("a latency below what the server waits: ttft %v, e2e %v", q["ttft_ms"], q["e2e_ms"])
	}
	// 20 measured requests 40 ms apart, the last one taking 112 ms: 19*40 + 112 = 872 ms, and
	// within a few ms of the server's own span, from the first measured arrival to the last write.
	near(t, "duration_s", m[workload.DurationS], 0.872, 0.1)
	var lastWrite time.Time
	for _, tr := range traces {
		if tr.End.After(lastWrite) {
			lastWrite = tr.End
		}
	}
	if d := m[workload.DurationS] - lastWrite.Sub(traces[2].Arrival).Seconds(); d < 0 || d*1000 > 2*slack {
		t.Errorf("duration_s is %.2f ms longer than the server's span; want 0 to %.3f", d*1000, 2*slack)
	}
	want := 20 / m[workload.DurationS]
	near(t, "request_throughput", m[workload.RequestThroughput], want, 1e-9)
	near(t, "output_token_throughput", m[workload.OutputTokenThroughput], tokens*want, 1e-9)
	near(t, "input_token_throughput", m[workload.InputTokenThroughput], 32*want, 1e-9)
}

// schedulingNoise is how late, in ms, a goroutine on this machine wakes from a short sleep:
// twice the 90th percentile of 20 tries. It is near 0 on a quiet machine.
func schedulingNoise() float64 {
	late := make([]float64, 20)
	for i := range late {
		t0 := time.Now()
		time.Sleep(time.Millisecond)
		late[i] = float64(time.Since(t0)-time.Millisecond) / 1e6
	}
	slices.Sort(late)
	return 2 * workload.Percentile(late, 90)
}

func TestRunOpenLoopKeepsScheduleWhateverTheLatency(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		ttft time.Duration
	}{{"fast server", 0}, {"slow server", time.Second}} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := startServer(t, workloadtest.Options{TTFT: tt.ttft, Tokens: 2})
			c := workload.Class{Name: "p", Requests: 40, InputTokens: fixed(8), OutputTokens: fixed(2),
				Arrival: workload.Arrival{Kind: workload.ArrivalPoisson, Rate: 100}}
			res, err := workload.Run(context.Background(), workload.Target{URL: s.URL(), Model: "m"}, []workload.Class{c}, workload.RunOptions{Seed: 3})
			if err != nil {
				t.Fatal(err)
			}
			want, _ := workload.Load(c, 3)
			byIndex := map[int]workload.Record{}
			var lags []float64
			for _, r := range res.Records {
				byIndex[r.Index] = r
				lags = append(lags, float64(r.Sent-r.Scheduled)/1e6)
			}
			for _, w := range want {
				r := byIndex[w.Index]
				if r.Scheduled != w.At {
					t.Errorf("request %d scheduled at %v, want %v", w.Index, r.Scheduled, w.At)
				}
			}
			slices.Sort(lags)
			if lags[0] < 0 {
				t.Errorf("a request was sent %.3f ms before its time", -lags[0])
			}
			// A schedule that waited for answers would fall a second behind with each request
			// on the slow server. The precision of send times on a quiet machine is the
			// load-generator benchmark's business; here the machine may be busy.
			if p := lags[len(lags)-1]; p > 500 {
				t.Errorf("largest send lag %.3f ms; the schedule waits for the server", p)
			}
			// 40 requests due within about 0.4 s, each taking a second: all in flight at once.
			if tt.ttft > 0 && s.MaxInFlight() != 40 {
				t.Errorf("%d requests in flight at most; want all 40 sent on schedule", s.MaxInFlight())
			}
			if !res.Measurement.Simulated && len(res.Records) != 40 {
				t.Errorf("%d records, want 40", len(res.Records))
			}
		})
	}
}

func TestRunClosedLoopKeepsConcurrency(t *testing.T) {
	t.Parallel()
	s := startServer(t, workloadtest.Options{TTFT: 20 * time.Millisecond, Tokens: 2})
	c := workload.Class{Name: "c", Requests: 24, InputTokens: fixed(8), OutputTokens: fixed(2),
		Arrival: workload.Arrival{Kind: workload.ArrivalConcurrency, Concurrency: 3}}
	res, err := workload.Run(context.Background(), workload.Target{URL: s.URL(), Model: "m"}, []workload.Class{c}, workload.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Measurement.Total.Metrics[workload.Completed]; got != 24 {
		t.Errorf("completed = %v, want 24", got)
	}
	if got := s.MaxInFlight(); got != 3 {
		t.Errorf("at most %d requests in flight, want 3", got)
	}
	// 8 rounds of at least 20 ms each: the loop waits for answers.
	if d := res.Measurement.Total.Metrics[workload.DurationS]; d < 0.16 || d > 0.5 {
		t.Errorf("duration_s = %v, want 8 rounds of 20 ms, 0.16 s and some", d)
	}
}

func TestRunRecordsInjectedFaults(t *testing.T) {
	t.Parallel()
	faults := []struct {
		fault  workloadtest.Fault
		class  string
		status int
	}{
		{workloadtest.FaultNone, "", 200},
		{workloadtest.Fault429, workload.ErrHTTP, 429},
		{workloadtest.Fault500, workload.ErrHTTP, 500},
		{workloadtest.FaultReset, workload.ErrConnect, 0},
		{workloadtest.FaultResetMidway, workload.ErrMalformed, 200},
		{workloadtest.FaultMalformed, workload.ErrMalformed, 200},
		{workloadtest.FaultStreamError, workload.ErrStream, 500},
		{workloadtest.FaultNoDone, workload.ErrMalformed, 200},
		{workloadtest.FaultEmpty, workload.ErrMalformed, 200},
		{workloadtest.FaultNoUsage, "", 200},
		{workloadtest.FaultOneChunkPerTwo, "", 200},
	}
	s := startServer(t, workloadtest.Options{Tokens: 4, Fault: func(n int) workloadtest.Fault {
		return faults[n%len(faults)].fault
	}})
	c := workload.Class{Name: "f", Requests: len(faults), InputTokens: fixed(8), OutputTokens: fixed(4),
		Arrival: workload.Arrival{Kind: workload.ArrivalConcurrency, Concurrency: 1}}
	res, err := workload.Run(context.Background(), workload.Target{URL: s.URL(), Model: "m"}, []workload.Class{c}, workload.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	type outcome struct {
		Class  string
		Status int
	}
	var want, got []outcome
	for _, f := range faults {
		want = append(want, outcome{f.class, f.status})
	}
	slices.SortFunc(res.Records, func(a, b workload.Record) int { return a.Index - b.Index })
	for _, r := range res.Records {
		got = append(got, outcome{r.ErrClass, r.Status})
		if !r.OK() && r.Err == "" {
			t.Errorf("request %d failed as %s without a message", r.Index, r.ErrClass)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("outcomes by request (-want +got):\n%s", diff)
	}
	total := res.Measurement.Total
	wantErrors := map[string]int{workload.ErrHTTP: 2, workload.ErrConnect: 1, workload.ErrMalformed: 4, workload.ErrStream: 1}
	if diff := cmp.Diff(wantErrors, total.Errors); diff != "" {
		t.Errorf("errors by class (-want +got):\n%s", diff)
	}
	if total.Metrics[workload.Completed] != 3 || total.Metrics[workload.Failed] != 8 {
		t.Errorf("completed %v failed %v, want 3 and 8", total.Metrics[workload.Completed], total.Metrics[workload.Failed])
	}
	// Without usage, the output is counted from chunks; two tokens a chunk still count two.
	for _, r := range res.Records {
		if r.Index == 10 && (r.OutputTokens != 4 || len(r.Chunks) != 2) {
			t.Errorf("two tokens a chunk: %d tokens in %d chunks, want 4 in 2", r.OutputTokens, len(r.Chunks))
		}
	}
}

func TestRunCancelsAndTimesOut(t *testing.T) {
	t.Parallel()
	s := startServer(t, workloadtest.Options{TTFT: 5 * time.Millisecond, ITL: 5 * time.Millisecond, Tokens: 20})
	slow := startServer(t, workloadtest.Options{TTFT: 2 * time.Second})
	tests := []struct {
		name   string
		url    string
		class  workload.Class
		metric string
		errors map[string]int
	}{
		{"cancel_fraction abandons after the first chunk", s.URL(),
			workload.Class{Name: "c", Requests: 6, CancelFraction: 1, InputTokens: fixed(4), OutputTokens: fixed(20),
				Arrival: workload.Arrival{Kind: workload.ArrivalImmediate}}, workload.Cancelled, nil},
		{"a request past its timeout fails as timeout", slow.URL(),
			workload.Class{Name: "c", Requests: 3, Timeout: 50 * time.Millisecond, InputTokens: fixed(4), OutputTokens: fixed(2),
				Arrival: workload.Arrival{Kind: workload.ArrivalImmediate}}, workload.Failed, map[string]int{workload.ErrTimeout: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			begin := time.Now()
			res, err := workload.Run(context.Background(), workload.Target{URL: tt.url, Model: "m"}, []workload.Class{tt.class}, workload.RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if el := time.Since(begin); el > time.Second {
				t.Errorf("the run took %v; cancelled and timed-out requests must not wait for the server", el)
			}
			tot := res.Measurement.Total
			if got := tot.Metrics[tt.metric]; got != float64(tt.class.Requests) {
				t.Errorf("%s = %v, want %d", tt.metric, got, tt.class.Requests)
			}
			if diff := cmp.Diff(tt.errors, tot.Errors); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRunEarlyStopPrunesAHopelessClass(t *testing.T) {
	t.Parallel()
	s := startServer(t, workloadtest.Options{TTFT: 30 * time.Millisecond, Tokens: 2})
	c := workload.Class{Name: "chat", Requests: 200, InputTokens: fixed(8), OutputTokens: fixed(2),
		Arrival: workload.Arrival{Kind: workload.ArrivalConcurrency, Concurrency: 4},
		SLO:     []workload.Bound{{Metric: "ttft_p99_ms", Value: 10}}}
	res, err := workload.Run(context.Background(), workload.Target{URL: s.URL(), Model: "m"}, []workload.Class{c}, workload.RunOptions{EarlyStop: true})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Pruned || !strings.Contains(res.PruneReason, `"chat"`) || !strings.Contains(res.PruneReason, "ttft_p99_ms") {
		t.Errorf("Pruned %v, reason %q; want pruned naming the class and bound", res.Pruned, res.PruneReason)
	}
	// p99 of 200 allows two slow requests: the third prunes, with at most 4 in flight.
	if s.Requests() > 12 {
		t.Errorf("%d requests sent after the SLO was lost; want the run cancelled at once", s.Requests())
	}
}

func TestRunEarlyStopKeepsARecoverableClass(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	s := startServer(t, workloadtest.Options{Tokens: 2, Fault: func(i int) workloadtest.Fault {
		if n.Add(1) == 1 {
			return workloadtest.Fault500
		}
		return workloadtest.FaultNone
	}})
	c := workload.Class{Name: "c", Requests: 50, InputTokens: fixed(8), OutputTokens: fixed(2),
		Arrival: workload.Arrival{Kind: workload.ArrivalConcurrency, Concurrency: 2},
		SLO:     []workload.Bound{{Metric: "error_rate", Value: 0.05}, {Metric: "ttft_p50_ms", Value: 1000}}}
	res, err := workload.Run(context.Background(), workload.Target{URL: s.URL(), Model: "m"}, []workload.Class{c}, workload.RunOptions{EarlyStop: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Pruned {
		t.Errorf("pruned (%s) with one failure in 50 under error_rate 0.05", res.PruneReason)
	}
}

func TestRunSeveralClassesAtOnce(t *testing.T) {
	t.Parallel()
	s := startServer(t, workloadtest.Options{Tokens: 3})
	classes := []workload.Class{
		{Name: "chat", Requests: 10, Endpoint: workload.EndpointChat, InputTokens: fixed(20), OutputTokens: fixed(3), PrefixTokens: 10,
			Arrival: workload.Arrival{Kind: workload.ArrivalGamma, Rate: 200, Burstiness: 0.5}},
		{Name: "batch", Requests: 5, InputTokens: fixed(50), OutputTokens: fixed(3),
			Arrival: workload.Arrival{Kind: workload.ArrivalConcurrency, Concurrency: 2}},
	}
	var calls atomic.Int64
	res, err := workload.Run(context.Background(), workload.Target{URL: s.URL() + "/v1/", Model: "m"}, classes,
		workload.RunOptions{Progress: func(done, total int) {
			calls.Add(1)
			if total != 15 || done < 1 || done > total {
				t.Errorf("progress %d/%d", done, total)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for name, r := range res.Measurement.Workloads {
		got[name] = r.Metrics[workload.Completed]
	}
	if diff := cmp.Diff(map[string]float64{"chat": 10, "batch": 5}, got); diff != "" {
		t.Errorf("completed by class (-want +got):\n%s", diff)
	}
	if calls.Load() != 15 {
		t.Errorf("Progress called %d times, want 15", calls.Load())
	}
}

func TestRunInterruptedReturnsWhatItHas(t *testing.T) {
	t.Parallel()
	s := startServer(t, workloadtest.Options{TTFT: 10 * time.Millisecond, Tokens: 2})
	c := workload.Class{Name: "c", Requests: 1000, InputTokens: fixed(8), OutputTokens: fixed(2),
		Arrival: workload.Arrival{Kind: workload.ArrivalConstant, Rate: 100}}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	res, err := workload.Run(ctx, workload.Target{URL: s.URL(), Model: "m"}, []workload.Class{c}, workload.RunOptions{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want the context's", err)
	}
	if res == nil || len(res.Records) == 0 || len(res.Records) > 30 {
		t.Fatalf("want the few records measured before the end, got %v", res)
	}
}

func TestRunRejectsUnusableTargets(t *testing.T) {
	t.Parallel()
	c := workload.Class{Name: "c", Requests: 1, InputTokens: fixed(8), OutputTokens: fixed(2)}
	for _, tt := range []struct{ name, url, endpoint string }{
		{"no scheme", "127.0.0.1:1", ""},
		{"bad endpoint", "http://127.0.0.1:1", "embeddings"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := workload.Run(context.Background(), workload.Target{URL: tt.url, Endpoint: tt.endpoint}, []workload.Class{c}, workload.RunOptions{})
			if err == nil {
				t.Errorf("Run accepted URL %q endpoint %q", tt.url, tt.endpoint)
			}
		})
	}
}

func TestRunCountsConnectionRefused(t *testing.T) {
	t.Parallel()
	s := startServer(t, workloadtest.Options{})
	url := s.URL()
	s.Close()
	c := workload.Class{Name: "c", Requests: 3, InputTokens: fixed(8), OutputTokens: fixed(2)}
	res, err := workload.Run(context.Background(), workload.Target{URL: url}, []workload.Class{c}, workload.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int{workload.ErrConnect: 3}, res.Measurement.Total.Errors); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

func TestRequestBodies(t *testing.T) {
	t.Parallel()
	s := startServer(t, workloadtest.Options{Tokens: 2})
	tests := []struct {
		name   string
		target workload.Target
		class  workload.Class
		check  func(body map[string]any) string
	}{
		{"token ids with exact lengths", workload.Target{TokenIDs: true},
			workload.Class{InputTokens: fixed(30), OutputTokens: fixed(7), PrefixTokens: 10},
			func(b map[string]any) string {
				ids, _ := b["prompt"].([]any)
				if len(ids) != 30 || b["max_tokens"] != 7.0 || b["min_tokens"] != 7.0 || b["ignore_eos"] != true {
					return fmt.Sprintf("prompt of %d ids, max %v min %v ignore_eos %v", len(ids), b["max_tokens"], b["min_tokens"], b["ignore_eos"])
				}
				return ""
			}},
		{"text prompts stream with usage", workload.Target{Options: map[string]any{"options": map[string]any{"num_ctx": 2048}, "temperature": 0.7}},
			workload.Class{InputTokens: fixed(40), OutputTokens: fixed(5)},
			func(b map[string]any) string {
				p, _ := b["prompt"].(string)
				so, _ := b["stream_options"].(map[string]any)
				opt, _ := b["options"].(map[string]any)
				switch {
				case len(strings.Fields(p)) < 35 || len(strings.Fields(p)) > 45:
					return fmt.Sprintf("prompt of %d words for 40 tokens", len(strings.Fields(p)))
				case b["stream"] != true || so["include_usage"] != true:
					return "not streaming with usage"
				case b["ignore_eos"] != nil:
					return "ignore_eos on a text prompt"
				case opt["num_ctx"] != 2048.0 || b["temperature"] != 0.7:
					return fmt.Sprintf("options not merged: %v", b)
				}
				return ""
			}},
		{"chat messages", workload.Target{Endpoint: workload.EndpointChat},
			workload.Class{InputTokens: fixed(10), OutputTokens: fixed(3)},
			func(b map[string]any) string {
				msgs, _ := b["messages"].([]any)
				if len(msgs) != 1 || b["model"] != "m" {
					return fmt.Sprintf("messages %v model %v", msgs, b["model"])
				}
				return ""
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Sequential: each case reads the server's last request.
			tt.target.URL, tt.target.Model, tt.target.APIKey = s.URL(), "m", "sk-secret"
			tt.class.Name, tt.class.Requests = "b", 1
			res, err := workload.Run(context.Background(), tt.target, []workload.Class{tt.class}, workload.RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Measurement.Total.Metrics[workload.Completed] != 1 {
				t.Fatalf("not completed: %+v", res.Records)
			}
			body, auth := s.Last()
			if auth != "Bearer sk-secret" {
				t.Errorf("Authorization %q, want the bearer token", auth)
			}
			if msg := tt.check(body); msg != "" {
				t.Error(msg)
			}
		})
	}
}

func TestTargetNeverShowsItsKey(t *testing.T) {
	t.Parallel()
	tg := workload.Target{URL: "http://127.0.0.1:1", Model: "m", APIKey: "sk-very-secret"}
	for _, s := range []string{fmt.Sprint(tg), fmt.Sprintf("%+v", tg), fmt.Sprintf("%#v", tg), fmt.Sprintf("%v", &tg)} {
		if strings.Contains(s, "sk-very-secret") {
			t.Errorf("formatted target shows the key: %s", s)
		}
	}
}

func TestRunSendsDatasetMessagesToChat(t *testing.T) {
	t.Parallel()
	s := startServer(t, workloadtest.Options{Tokens: 2})
	dir := t.TempDir()
	path := dir + "/d.jsonl"
	if err := os.WriteFile(path, []byte(`{"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}], "max_tokens": 2}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := workload.Class{Name: "d", Requests: 1, Dataset: path}
	res, err := workload.Run(context.Background(), workload.Target{URL: s.URL(), Model: "m"}, []workload.Class{c}, workload.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := s.Last()
	if msgs, _ := body["messages"].([]any); len(msgs) != 2 || res.Measurement.Total.Metrics[workload.Completed] != 1 {
		t.Errorf("messages %v sent as %v; want both messages on the chat endpoint", msgs, body)
	}
}

func TestRunReplaysATrace(t *testing.T) {
	t.Parallel()
	s := startServer(t, workloadtest.Options{Tokens: 2})
	path := t.TempDir() + "/t.jsonl"
	trace := `{"timestamp": 10.0, "input_tokens": 5, "output_tokens": 3}
{"timestamp": 10.1, "input_tokens": 6, "output_tokens": 2}
{"timestamp": 10.25, "input_tokens": 7, "output_tokens": 1}
`
	if err := os.WriteFile(path, []byte(trace), 0o644); err != nil {
		t.Fatal(err)
	}
	c := workload.Class{Name: "t", Arrival: workload.Arrival{Kind: workload.ArrivalTrace, TraceFile: path}}
	res, err := workload.Run(context.Background(), workload.Target{URL: s.URL(), Model: "m", TokenIDs: true}, []workload.Class{c}, workload.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[int]time.Duration{}
	for _, r := range res.Records {
		got[r.Index] = r.Scheduled
		if r.Sent < r.Scheduled {
			t.Errorf("request %d sent at %v before its time %v", r.Index, r.Sent, r.Scheduled)
		}
	}
	want := map[int]time.Duration{0: 0, 1: 100 * time.Millisecond, 2: 250 * time.Millisecond}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("scheduled times (-want +got):\n%s", diff)
	}
	if got := res.Measurement.Total.Metrics[workload.Completed]; got != 3 {
		t.Errorf("completed = %v, want 3", got)
	}
}
