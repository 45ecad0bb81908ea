package main

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/frontier-llm/frontier/launcher"
	"github.com/frontier-llm/frontier/report"
)

// simFlagCase is one `frontier sim serve` command line with a value vLLM refuses, or takes
// in a way that is easy to get wrong, and what vLLM does with it: the class the launcher
// gives the server's log and the engine's own line that gave the class away. Class "starts"
// is a server that comes up.
type simFlagCase struct {
	name, flags   string
	class, engine string
}

const (
	pydanticScheduler = "pydantic_core._pydantic_core.ValidationError: 2 validation errors for SchedulerConfig"
	noCacheMemory     = "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine. See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."
)

func simFlagCases() []simFlagCase {
	return []simFlagCase{
		{"max_num_seqs 0", "--max-num-seqs 0", "invalid_args", pydanticScheduler},
		{"max_num_seqs negative", "--max-num-seqs -5", "invalid_args", pydanticScheduler},
		{"max_num_seqs past a derived value's range", "--max-num-seqs 9223372036854775807", "invalid_args",
			"ValueError: max_num_batched_tokens (8192) must be greater than or equal to max_num_seqs (9223372036854775807)."},
		{"max_num_batched_tokens 0", "--max-num-batched-tokens 0", "invalid_args", pydanticScheduler},
		{"block_size 0", "--block-size 0", "invalid_args", "pydantic_core._pydantic_core.ValidationError: 1 validation error for CacheConfig"},
		{"block_size 7 (any int to the current argparse; the attention kernels take multiples of 16)", "--block-size 7", "invalid_args",
			"ValueError: No common block size for 7."},
		{"block_size 48 (a multiple of 16: the current line takes it)", "--block-size 48", "starts", ""},
		{"stream_interval 0", "--stream-interval 0", "invalid_args", "pydantic_core._pydantic_core.ValidationError: 1 validation error for SchedulerConfig"},
		{"num_gpu_blocks_override 0 (int | None: an override of no blocks)", "--num-gpu-blocks-override 0", "kv_cache_too_small", noCacheMemory},
		{"kv_cache_memory_bytes 0 (vLLM reads 0 as unset)", "--kv-cache-memory-bytes 0", "starts", ""},
		{"kv_cache_memory_bytes negative", "--kv-cache-memory-bytes -5", "kv_cache_too_small", noCacheMemory},
		{"long_prefill_token_threshold negative (a plain int; no cap unless above 0)", "--long-prefill-token-threshold -5", "starts", ""},
		{"int with underscores around", "--max-num-seqs _64_", "invalid_args", "vllm serve: error: argument --max-num-seqs: invalid int value: '_64_'"},
		{"int with two underscores", "--max-num-seqs 6__4", "invalid_args", "vllm serve: error: argument --max-num-seqs: invalid int value: '6__4'"},
		{"int with one underscore between digits (Python's 64)", "--max-num-seqs 6_4", "starts", ""},
		{"quantization in capitals (compared as given)", "--quantization FP8", "unsupported", "ValueError: Unknown quantization method: FP8. Must be one of"},
		{"nargs + flag with = takes one value", "--served-model-name=a b", "invalid_args", "vllm: error: unrecognized arguments: b"},
		{"gpu_memory_utilization nan", "--gpu-memory-utilization nan", "invalid_args", "pydantic_core._pydantic_core.ValidationError: 1 validation error for CacheConfig"},
		{"float in hexadecimal (Go reads it, Python does not)", "--gpu-memory-utilization 0x1p-1", "invalid_args",
			"vllm serve: error: argument --gpu-memory-utilization: invalid float value: '0x1p-1'"},
	}
}

// simServe runs `frontier sim serve` as a real subprocess with one case's flags for Llama
// 3.1 8B on an H100 (the test's marker is the model name) and returns its exit status, the
// launcher's reading of its log and what it left running. A server that comes up is
// stopped with SIGTERM once it says so.
func simServe(t *testing.T, mk, flags string) (int, string, string, string) {
	t.Helper()
	args := append([]string{"sim", "serve", mk, "--architecture", "llama-3.1-8b", "--sku", "h100-sxm", "--host", "127.0.0.1", "--port", "0"},
		strings.Fields(flags)...)
	r := startFrontier(t, t.TempDir(), nil, args...)
	timeout := time.After(time.Minute)
wait:
	for {
		select {
		case l := <-r.lines:
			if strings.Contains(l, "Application startup complete.") {
				break wait
			}
		case <-r.done:
			break wait
		case <-timeout:
			break wait
		}
	}
	select {
	case <-r.done:
	default:
		// Still running: it came up (or hangs); stop it as the launcher would.
		_ = r.cmd.Process.Signal(syscall.SIGTERM)
	}
	res := r.wait(t, 30*time.Second)
	if strings.Contains(res.stderr, "Application startup complete.") {
		return res.code, "starts", "", left(mk, res.pid)
	}
	c := launcher.ClassifyVLLMLog(res.stderr)
	return res.code, string(c.Class), c.Message + pydanticFields(res.stderr, c.Message), left(mk, res.pid)
}

// pydanticFields is what a pydantic ValidationError says after its first line (the message
// the launcher keeps): each field and why, as "; field: reason".
func pydanticFields(log, message string) string {
	if !strings.Contains(message, "ValidationError") {
		return ""
	}
	var fields []string
	after := false
	for _, l := range strings.Split(log, "\n") {
		_, l, _ = strings.Cut(l, ") ") // the process prefix, "(APIServer pid=N) "
		switch {
		case strings.HasSuffix(l, message):
			after = true
		case after && strings.HasPrefix(l, "  "):
			fields[len(fields)-1] += ": " + strings.TrimSpace(l)
		case after && l != "":
			fields = append(fields, l)
		}
	}
	if len(fields) == 0 {
		return ""
	}
	return "; " + strings.Join(fields, "; ")
}

// TestReliabilitySimServeFlags runs each simFlagCase through a real `frontier sim serve`
// and checks that the launcher classifies its log as vLLM's would be, with vLLM's message;
// then a grid over two such values and a good one through `frontier apply`.
func TestReliabilitySimServeFlags(t *testing.T) {
	if testing.Short() {
		t.Skip("starts servers; not in -short")
	}
	var mu sync.Mutex
	rows := map[string]string{}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for _, c := range simFlagCases() {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			t.Run(c.name, func(t *testing.T) {
				mk := marker("simflags " + c.name)
				code, class, engine, leftover := simServe(t, mk, c.flags)
				if class != c.class || !strings.HasPrefix(engine, c.engine) || leftover != "none" {
					t.Errorf("sim serve %s: class %q, message %q, left %s; want class %q, message starting %q, nothing left",
						c.flags, class, engine, leftover, c.class, c.engine)
				}
				if i := strings.Index(engine, " Must be one of"); i > 0 {
					engine = engine[:i] + " Must be one of [...]."
				}
				mu.Lock()
				rows[c.name] = fmt.Sprintf("| %s | `%s` | %d | %s | %s |\n", cell(c.name), c.flags, code, class, cell(engine))
				mu.Unlock()
			})
		}()
	}
	wg.Wait()
	var grid string
	t.Run("grid through frontier apply", func(t *testing.T) { grid = simFlagsGridRow(t) })
	if t.Failed() {
		return
	}
	var b strings.Builder
	b.WriteString("| case | `frontier sim serve MODEL` flags | exit | class the launcher gives the log | the engine's message |\n|---|---|---:|---|---|\n")
	for _, c := range simFlagCases() {
		b.WriteString(rows[c.name])
	}
	b.WriteString("\n" + grid)
	checkReliabilityDoc(t, "simflags", b.String())
}

// simFlagsGridRow runs a grid over max_num_seqs = [0, -5, 16] through `frontier apply` on the
// simulator: the two values vLLM refuses are infeasible trials of class invalid_args, and
// the recommendation is 16. It returns the table of that run.
func simFlagsGridRow(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	mk := marker("simflags grid")
	writePlan(t, dir, relPlan{Model: mk, Trials: 3, Knob: "0, -5, 16", Requests: 8})
	r := frontier(t, dir, nil, "apply", "plan.hcl", "--storage", "study.db")
	rec := study(t, filepath.Join(dir, "study.db"))
	var refused []string
	for _, tr := range rec.Trials {
		if tr.FailureClass != "" {
			refused = append(refused, fmt.Sprintf("max_num_seqs=%v: %s", tr.Config["max_num_seqs"], tr.FailureClass))
			t.Logf("max_num_seqs=%v: %s", tr.Config["max_num_seqs"], tr.Reason)
		}
	}
	sort.Strings(refused)
	recommended := "none"
	if a := report.Analyze(rec); a.Recommended != nil {
		recommended = fmt.Sprintf("max_num_seqs=%v", a.Recommended.Config["max_num_seqs"])
	}
	got := []string{fmt.Sprint(r.code), storedSummary(rec), strings.Join(refused, "; "), recommended, left(mk, r.pid)}
	want := []string{"0", "3 trial(s): 1 complete, 2 infeasible (invalid_args)",
		"max_num_seqs=-5: invalid_args; max_num_seqs=0: invalid_args", "max_num_seqs=16", "none"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("grid over max_num_seqs = [0, -5, 16] (-want +got):\n%s\nstderr:\n%s", diff, r.stderr)
	}
	return "| case | plan | exit | stored | refused | recommended | left running |\n|---|---|---:|---|---|---|---|\n" +
		fmt.Sprintf("| grid through `frontier apply` | `knob \"max_num_seqs\" { values = [0, -5, 16] }` | %s | %s | %s | %s | %s |\n",
			got[0], got[1], got[2], got[3], got[4])
}
