package workload_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/frontier-llm/frontier/workload"
)

// TestAnEndlessStreamIsCutAtABoundedNumberOfEvents runs a request against a loopback server
// that streams content chunks forever (a stand-in for a server stuck in a generation loop):
// the request must fail as malformed soon, not grow memory until its timeout.
func TestAnEndlessStreamIsCutAtABoundedNumberOfEvents(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		for r.Context().Err() == nil {
			if _, err := fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n\n"); err != nil {
				return
			}
			fl.Flush()
		}
	}))
	defer srv.Close()
	class := workload.Class{Name: "c", Requests: 1, Timeout: time.Minute, InputTokens: fixed(4), OutputTokens: fixed(8),
		Arrival: workload.Arrival{Kind: workload.ArrivalImmediate}}
	begin := time.Now()
	res, err := workload.Run(context.Background(), workload.Target{URL: srv.URL, Model: "m"}, []workload.Class{class}, workload.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(begin); el > 10*time.Second {
		t.Errorf("the request took %v; an endless stream must be cut after a bounded number of events", el)
	}
	if diff := cmp.Diff(map[string]int{workload.ErrMalformed: 1}, res.Measurement.Total.Errors); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

func TestTraceAndDatasetLengthsAreBounded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	trace := filepath.Join(dir, "trace.jsonl")
	if err := os.WriteFile(trace, []byte(`{"timestamp": 0, "input_tokens": 1000000000000, "output_tokens": 5}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := workload.Load(workload.Class{Name: "c", Arrival: workload.Arrival{Kind: workload.ArrivalTrace, TraceFile: trace}}, 1)
	if err == nil || !strings.Contains(err.Error(), `trace.jsonl:1: "input_tokens" is 1000000000000; it must be at least 1 and at most 2097152`) {
		t.Errorf("Load = %v, want the length refused with the bound", err)
	}
	dataset := filepath.Join(dir, "prompts.jsonl")
	if err := os.WriteFile(dataset, []byte(`{"prompt": "hi", "max_tokens": 99999999999}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = workload.Load(workload.Class{Name: "c", Dataset: dataset, Requests: 1, Arrival: workload.Arrival{Kind: workload.ArrivalImmediate}}, 1)
	if err == nil || !strings.Contains(err.Error(), `prompts.jsonl:1: "max_tokens" is 99999999999; it must be at least 1 and at most 2097152`) {
		t.Errorf("Load = %v, want max_tokens refused with the bound", err)
	}
	// A distribution's long tail is cut at the bound.
	reqs, err := workload.Synthesize(workload.Class{Name: "c", Requests: 50, InputTokens: workload.Dist{Kind: workload.DistLogNormal, A: 1e6, B: 3},
		OutputTokens: fixed(1), Arrival: workload.Arrival{Kind: workload.ArrivalImmediate}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reqs {
		if r.InputTokens > workload.MaxTokens {
			t.Fatalf("a synthetic request of %d input tokens, over MaxTokens", r.InputTokens)
		}
	}
}

func TestDatasetsAndTracesThatAreNotRegularFilesAreRefusedAtOnce(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "prompts.jsonl")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for _, c := range []workload.Class{
		{Name: "fifo", Dataset: fifo, Requests: 1, Arrival: workload.Arrival{Kind: workload.ArrivalImmediate}},
		{Name: "zero", Dataset: "/dev/zero", Requests: 1, Arrival: workload.Arrival{Kind: workload.ArrivalImmediate}},
		{Name: "trace", Arrival: workload.Arrival{Kind: workload.ArrivalTrace, TraceFile: "/dev/zero"}, InputTokens: fixed(1), OutputTokens: fixed(1)},
	} {
		begin := time.Now()
		_, err := workload.Load(c, 1)
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("%s: Load = %v, want it refused as not a regular file", c.Name, err)
		}
		if el := time.Since(begin); el > time.Second {
			t.Errorf("%s: took %v, want at once", c.Name, el)
		}
	}
}

func TestTraceWarningsNameALongGap(t *testing.T) {
	t.Parallel()
	trace := filepath.Join(t.TempDir(), "trace.jsonl")
	if err := os.WriteFile(trace, []byte("{\"timestamp\": 0}\n{\"timestamp\": 1}\n{\"timestamp\": 10000001}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := workload.TraceWarnings(trace)
	want := []string{"the trace " + trace + " waits 115.7 days between the request on line 2 and the next, on line 3 (the longest gap accepted without this warning is 1h0m0s): every trial would wait that long"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	if err := os.WriteFile(trace, []byte("{\"timestamp\": 0}\n{\"timestamp\": 3600}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := workload.TraceWarnings(trace); got != nil {
		t.Errorf("an hour's gap warns: %q", got)
	}
}
