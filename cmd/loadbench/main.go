package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/frontier-llm/frontier/workload"
	"github.com/frontier-llm/frontier/workload/workloadtest"
)

func main() {
	requests := flag.Int("requests", 20000, "requests in the short-output test")
	chunks := flag.Int("chunks", 800000, "chunks in the streaming test")
	rate := flag.Float64("rate", 1000, "arrival rate of the schedule test, req/s")
	lagSeconds := flag.Float64("lag-seconds", 5, "length of the schedule test")
	flag.Parse()
	if err := run(os.Stdout, *requests, *chunks, *rate, *lagSeconds); err != nil {
		fmt.Fprintln(os.Stderr, "loadbench:", err)
		os.Exit(1)
	}
}

// cost is what one load test took: wall time and CPU time of the whole process.
type cost struct {
	wall, cpu time.Duration
	requests  int
	chunks    int
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func measure(f func() (requests, chunks int, err error)) (cost, error) {
	runtime.GC()
	w0, c0 := time.Now(), cpuTime()
	n, ch, err := f()
	return cost{wall: time.Since(w0), cpu: cpuTime() - c0, requests: n, chunks: ch}, err
}

func run(w io.Writer, requests, chunks int, rate, lagSeconds float64) error {
	fmt.Fprintf(w, "loadbench: %d CPUs, GOMAXPROCS %d, %s\n\n", runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version())

	// Short outputs: 2 tokens a request, 64 requests in flight.
	short, err := workloadtest.Start(workloadtest.Options{Tokens: 2, IgnoreBody: true})
	if err != nil {
		return err
	}
	defer short.Close()
	shortClass := workload.Class{Name: "short", Requests: requests,
		InputTokens: workload.Dist{Kind: workload.DistFixed, A: 16}, OutputTokens: workload.Dist{Kind: workload.DistFixed, A: 2},
		Arrival: workload.Arrival{Kind: workload.ArrivalConcurrency, Concurrency: 64}}
	if err := compare(w, "short outputs (2 tokens, 64 in flight)", short.URL(), shortClass, 64); err != nil {
		return err
	}

	// Long outputs: 2,000 tokens a request, one chunk each, 16 in flight.
	const tokens = 2000
	long, err := workloadtest.Start(workloadtest.Options{Tokens: tokens, IgnoreBody: true})
	if err != nil {
		return err
	}
	defer long.Close()
	longClass := workload.Class{Name: "long", Requests: max(chunks/tokens, 1),
		InputTokens: workload.Dist{Kind: workload.DistFixed, A: 16}, OutputTokens: workload.Dist{Kind: workload.DistFixed, A: tokens},
		Arrival: workload.Arrival{Kind: workload.ArrivalConcurrency, Concurrency: 16}}
	if err := compare(w, "long outputs (2,000 tokens, 16 in flight)", long.URL(), longClass, 16); err != nil {
		return err
	}

	// The schedule: Poisson arrivals at rate for lagSeconds.
	lagClass := workload.Class{Name: "lag", Requests: int(rate * lagSeconds),
		InputTokens: workload.Dist{Kind: workload.DistFixed, A: 16}, OutputTokens: workload.Dist{Kind: workload.DistFixed, A: 2},
		Arrival: workload.Arrival{Kind: workload.ArrivalPoisson, Rate: rate}}
	res, err := workload.Run(context.Background(), workload.Target{URL: short.URL(), Model: "m", TokenIDs: true}, []workload.Class{lagClass}, workload.RunOptions{Seed: 1})
	if err != nil {
		return err
	}
	lags := make([]float64, 0, len(res.Records))
	for _, r := range res.Records {
		lags = append(lags, float64(r.Sent-r.Scheduled)/1e6)
	}
	bare, err := bareSchedule(short.URL(), lagClass)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "schedule at %.0f req/s (Poisson, %d requests), send lag:\n", rate, len(lags))
	for _, r := range []struct {
		name string
		lags []float64
	}{{"frontier generator", lags}, {"bare timer loop", bare}} {
		slices.Sort(r.lags)
		fmt.Fprintf(w, "  %-18s p50 %7.3f ms  p99 %7.3f ms  max %7.3f ms\n", r.name,
			workload.Percentile(r.lags, 50), workload.Percentile(r.lags, 99), r.lags[len(r.lags)-1])
	}
	if f := res.Measurement.Total.Metrics[workload.Failed]; f > 0 {
		return fmt.Errorf("%v requests of the schedule failed: %v", f, res.Measurement.Total.Errors)
	}
	return nil
}

// bareSchedule sends the class's schedule with a plain timer loop, a goroutine a request and
// no measurement beyond the send time, and returns each request's lag in ms: what the
// machine allows any Go load generator.
func bareSchedule(url string, c workload.Class) ([]float64, error) {
	reqs, err := workload.Load(c, 1)
	if err != nil {
		return nil, err
	}
	tr := &http.Transport{MaxIdleConnsPerHost: 100000, DisableCompression: true}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	body := []byte(`{"prompt":[1000,1001],"model":"m","max_tokens":2,"stream":true}`)
	lags := make([]float64, len(reqs))
	var wg sync.WaitGroup
	start := time.Now()
	timer := time.NewTimer(time.Hour)
	for i := range reqs {
		if wait := reqs[i].At - time.Since(start); wait > 0 {
			timer.Reset(wait)
			<-timer.C
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			lags[i] = float64(time.Since(start)-reqs[i].At) / 1e6
			resp, err := hc.Post(url+"/v1/completions", "application/json", bytes.NewReader(body))
			if err != nil {
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}()
	}
	wg.Wait()
	return lags, nil
}

// compare runs the class through the generator and through the bare loop, alternately
// twice, and prints the better run of each and the ratio of their costs.
func compare(w io.Writer, name, url string, c workload.Class, conc int) error {
	var gen, bare cost
	for round := 0; round < 2; round++ {
		g, err := measure(func() (int, int, error) { return generator(url, c) })
		if err != nil {
			return err
		}
		b, err := measure(func() (int, int, error) { return bareLoop(url, c, conc) })
		if err != nil {
			return err
		}
		if round == 0 || g.wall < gen.wall {
			gen = g
		}
		if round == 0 || b.wall < bare.wall {
			bare = b
		}
	}
	fmt.Fprintf(w, "%s:\n", name)
	for _, r := range []struct {
		name string
		c    cost
	}{{"frontier generator", gen}, {"bare HTTP loop", bare}} {
		s := r.c.wall.Seconds()
		fmt.Fprintf(w, "  %-18s %8.0f req/s %10.0f chunks/s  %6.1f µs CPU/request (server included)\n",
			r.name, float64(r.c.requests)/s, float64(r.c.chunks)/s, float64(r.c.cpu.Microseconds())/float64(r.c.requests))
	}
	fmt.Fprintf(w, "  cost ratio (generator / bare): wall %.2f, CPU %.2f\n\n",
		gen.wall.Seconds()/bare.wall.Seconds()*float64(bare.requests)/float64(gen.requests),
		float64(gen.cpu)/float64(bare.cpu)*float64(bare.requests)/float64(gen.requests))
	return nil
}

// generator runs the class with workload.Run and returns its completed requests and chunks.
func generator(url string, c workload.Class) (int, int, error) {
	res, err := workload.Run(context.Background(), workload.Target{URL: url, Model: "m", TokenIDs: true}, []workload.Class{c}, workload.RunOptions{Seed: 1})
	if err != nil {
		return 0, 0, err
	}
	if f := res.Measurement.Total.Metrics[workload.Failed]; f > 0 {
		return 0, 0, fmt.Errorf("%v requests failed: %v", f, res.Measurement.Total.Errors)
	}
	chunks := 0
	for _, r := range res.Records {
		chunks += len(r.Chunks)
	}
	return len(res.Records), chunks, nil
}

// bareLoop sends the same number of requests with the same body size from conc goroutines,
// reading each response to its end and measuring nothing. Chunks are counted as the
// generator would see them, from the data lines, for the chunks/s column.
func bareLoop(url string, c workload.Class, conc int) (int, int, error) {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 100000,
		DisableCompression:  true,
	}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	body := []byte(`{"prompt":[1000,1001,1002,1003,1004,1005,1006,1007,1008,1009,1010,1011,1012,1013,1014,1015],"model":"m","max_tokens":2,"min_tokens":2,"ignore_eos":true,"temperature":0,"stream":true,"stream_options":{"include_usage":true}}`)
	var next, chunks atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, conc)
	for g := 0; g < conc; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 32<<10)
			for next.Add(1) <= int64(c.Requests) {
				resp, err := hc.Post(url+"/v1/completions", "application/json", bytes.NewReader(body))
				if err != nil {
					errs <- err
					return
				}
				n := 0
				for {
					k, err := resp.Body.Read(buf)
					n += bytes.Count(buf[:k], []byte("data: "))
					if err != nil {
						break
					}
				}
				resp.Body.Close()
				chunks.Add(int64(max(n-2, 0))) // less the usage event and [DONE]
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, 0, err
	}
	return c.Requests, int(chunks.Load()), nil
}
