package workload_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frontier-llm/frontier/workload"
)

func TestATraceMayStartWithAByteOrderMark(t *testing.T) {
	t.Parallel()
	trace := filepath.Join(t.TempDir(), "trace.jsonl")
	body := "\xef\xbb\xbf" + `{"timestamp": 0, "input_tokens": 10, "output_tokens": 5}` + "\n" + `{"timestamp": 1.5, "input_tokens": 20, "output_tokens": 6}` + "\n"
	if err := os.WriteFile(trace, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	c := workload.Class{Name: "c", Arrival: workload.Arrival{Kind: workload.ArrivalTrace, TraceFile: trace}}
	reqs, err := workload.Load(c, 1)
	if err != nil {
		t.Fatalf("Load of a trace with a byte order mark = %v, want it read", err)
	}
	if len(reqs) != 2 || reqs[0].InputTokens != 10 || reqs[1].At != 1500*time.Millisecond {
		t.Errorf("requests = %+v, want the two lines of the trace", reqs)
	}
	if w := workload.TraceWarnings(trace); len(w) != 0 {
		t.Errorf("TraceWarnings = %q, want none", w)
	}
}

// bigDataset writes a JSONL dataset of about mb megabytes.
func bigDataset(t *testing.T, mb int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "prompts.jsonl")
	line := []byte(`{"prompt": "` + strings.Repeat("lorem ipsum ", 80) + `"}` + "\n")
	var b bytes.Buffer
	for b.Len() < mb<<20 {
		b.Write(line)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Not parallel: writing and reading 64 MiB stalls the timing-bound tests beside it (the
// closed loop's 0.16 s took 1.8 s on two cores), so it runs before them.
func TestLoadContextStopsALargeDatasetReadWhenCancelled(t *testing.T) {
	path := bigDataset(t, 64)
	c := workload.Class{Name: "chat", Dataset: path, Requests: 10, Arrival: workload.Arrival{Kind: workload.ArrivalImmediate}}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	start := time.Now()
	_, err := workload.LoadContext(ctx, c, 1)
	took := time.Since(start)
	var bad *workload.InputError
	if !errors.Is(err, context.Canceled) || errors.As(err, &bad) || !strings.Contains(err.Error(), "reading the dataset "+path) {
		t.Fatalf("LoadContext cancelled = %v, want context.Canceled naming the dataset, and no InputError", err)
	}
	if took > time.Second {
		t.Errorf("LoadContext returned %v after the start, want within a second of the cancel", took)
	}
}

// /proc/kmsg is a regular file whose read blocks until the kernel logs something: the case
// of the dataset frontier could not stop reading. It needs root (CAP_SYSLOG); reading it
// takes the kernel messages it returns from other readers of it.
func TestLoadContextStopsABlockedReadOfARegularFile(t *testing.T) {
	f, err := os.Open("/proc/kmsg")
	if err != nil {
		t.Skipf("/proc/kmsg: %v", err)
	}
	f.Close()
	c := workload.Class{Name: "chat", Dataset: "/proc/kmsg", Requests: 10, Arrival: workload.Arrival{Kind: workload.ArrivalImmediate}}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = workload.LoadContext(ctx, c, 1)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("LoadContext of /proc/kmsg = %v, want it stopped by the context", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("LoadContext of /proc/kmsg returned after %v, want within a second of the deadline", took)
	}
}

// TestALineOverTheLimitIsNamedAsSuch checks that a trace line longer than MaxTraceLine is
// refused with its file, its line and the limit, not with the scanner's "token too long".
func TestALineOverTheLimitIsNamedAsSuch(t *testing.T) {
	t.Parallel()
	trace := filepath.Join(t.TempDir(), "trace.jsonl")
	long := `{"timestamp": 1, "input_tokens": 10, "output_tokens": 5, "note": "` + strings.Repeat("x", workload.MaxTraceLine) + `"}`
	body := `{"timestamp": 0, "input_tokens": 10, "output_tokens": 5}` + "\n" + long + "\n"
	if err := os.WriteFile(trace, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	c := workload.Class{Name: "c", Arrival: workload.Arrival{Kind: workload.ArrivalTrace, TraceFile: trace}}
	_, err := workload.Load(c, 1)
	var ie *workload.InputError
	if !errors.As(err, &ie) {
		t.Fatalf("Load = %v, want an *InputError", err)
	}
	msg := err.Error()
	if strings.Contains(msg, "token too long") || !strings.Contains(msg, trace+":2: ") || !strings.Contains(msg, "longer than 1 MiB") {
		t.Errorf("Load = %q, want %s:2 named as a line longer than 1 MiB", msg, trace)
	}
}
