// Command standin stands in for `vllm serve` in the launcher's tests, on machines without a
// GPU or vLLM: it takes vLLM's command line, prints vLLM's startup log lines, and serves
// /health, /v1/models and /metrics on 127.0.0.1. Flags starting with --fault- make it fail the
// way a test needs.
package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	args := os.Args[1:]
	// STANDIN_VLLM_LINE picks the release whose --version and serve --help=all the stand-in
	// prints: "0.13" (the default) or "0.22", with excerpts of their real help texts.
	line := os.Getenv("STANDIN_VLLM_LINE")
	if len(args) > 0 && args[0] == "--version" {
		if line == "0.22" {
			fmt.Println("0.22.0")
			return
		}
		fmt.Println("0.13.0+standin")
		return
	}
	if len(args) > 1 && args[0] == "serve" && (args[1] == "--help=all" || args[1] == "--help") {
		fmt.Print(helpBoth)
		if line != "0.22" {
			fmt.Print(help13Only)
		}
		return
	}
	if len(args) > 0 && args[0] == "--sleep-forever" {
		signal.Ignore(syscall.SIGTERM)
		time.Sleep(time.Hour)
		return
	}
	if len(args) > 0 && args[0] == "serve" {
		args = args[1:]
	}
	var model, host, port, served string
	flags := map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "--") {
			if model == "" {
				model = a
			}
			continue
		}
		name, val, ok := strings.Cut(a[2:], "=")
		if !ok && i+1 < len(args) && !strings.HasPrefix(args[i+1], "--") {
			val = args[i+1]
			i++
		}
		flags[name] = val
		switch name {
		case "host":
			host = val
		case "port":
			port = val
		case "served-model-name":
			served = val
		}
	}
	if served == "" {
		served = model
	}
	fmt.Printf("(APIServer pid=%d) INFO vLLM API server version 0.13.0+standin\n", os.Getpid())
	fmt.Printf("(APIServer pid=%d) INFO CUDA_VISIBLE_DEVICES=%s\n", os.Getpid(), os.Getenv("CUDA_VISIBLE_DEVICES"))
	// vLLM echoes the flags that differ from their defaults, values and all.
	names := make([]string, 0, len(flags))
	for k := range flags {
		if !strings.HasPrefix(k, "fault-") {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	var echo []string
	for _, k := range names {
		echo = append(echo, fmt.Sprintf("'%s': '%s'", strings.ReplaceAll(k, "-", "_"), flags[k]))
	}
	fmt.Printf("(APIServer pid=%d) INFO non-default args: {%s}\n", os.Getpid(), strings.Join(echo, ", "))
	if _, ok := flags["fault-ignore-term"]; ok {
		signal.Ignore(syscall.SIGTERM)
	}
	if _, ok := flags["fault-spawn-child"]; ok {
		child := exec.Command(os.Args[0], "--sleep-forever")
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Printf("(APIServer pid=%d) INFO child pid %d\n", os.Getpid(), child.Process.Pid)
	}
	if msg, ok := flags["fault-message"]; ok {
		fmt.Fprintln(os.Stderr, msg)
		if _, linger := flags["fault-linger"]; linger {
			// vLLM's API server sometimes stays up after its engine core died.
			fmt.Fprintln(os.Stderr, "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {'EngineCore_DP0': 1}")
			time.Sleep(time.Hour)
		}
		os.Exit(1)
	}
	if _, ok := flags["fault-hang-startup"]; ok {
		fmt.Printf("(APIServer pid=%d) INFO loading the model\n", os.Getpid())
		time.Sleep(time.Hour)
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		fmt.Fprintf(os.Stderr, "ERROR: [Errno 98] error while attempting to bind on address (%s, %s): address already in use\n", host, port)
		os.Exit(1)
	}
	maxLen, _ := strconv.Atoi(flags["max-model-len"])
	if maxLen == 0 {
		maxLen = 8192
	}
	if _, quiet := flags["fault-no-capacity-log"]; !quiet {
		fmt.Printf("(EngineCore_DP0 pid=%d) INFO [kv_cache_utils.py:1087] GPU KV cache size: 425,424 tokens\n", os.Getpid())
		fmt.Printf("(EngineCore_DP0 pid=%d) INFO [kv_cache_utils.py:1091] Maximum concurrency for %s tokens per request: 6.49x\n", os.Getpid(), commas(maxLen))
	}
	fmt.Println("INFO:     Application startup complete.")
	mux := http.NewServeMux()
	mux.HandleFunc("/health", func(w http.ResponseWriter, _ *http.Request) {})
	mux.HandleFunc("/v1/models", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, `{"object":"list","data":[{"id":%q,"object":"model","max_model_len":%d}]}`, served, maxLen)
	})
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "vllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"26589\"} 1.0\n")
	})
	srv := &http.Server{Handler: mux}
	_, ignoreTerm := flags["fault-ignore-term"]
	go func() {
		if ignoreTerm {
			return
		}
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM)
		<-sig
		fmt.Println("INFO:     Shutting down")
		os.Exit(0)
	}()
	_ = srv.Serve(l)
}

func commas(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// helpBoth is what both lines list, in the shape of vLLM's help: groups of options, each
// flag with its argparse forms.
const helpBoth = `usage: vllm serve [model_tag] [options]

ModelConfig:
  --max-model-len MAX_MODEL_LEN, --max_model_len MAX_MODEL_LEN
  --enforce-eager, --no-enforce-eager

CacheConfig:
  --gpu-memory-utilization GPU_MEMORY_UTILIZATION
  --enable-prefix-caching, --no-enable-prefix-caching

SchedulerConfig:
  --max-num-seqs MAX_NUM_SEQS
  --max-num-batched-tokens MAX_NUM_BATCHED_TOKENS
  --long-prefill-token-threshold LONG_PREFILL_TOKEN_THRESHOLD

Frontend:
  --host HOST
  --port PORT
  --served-model-name SERVED_MODEL_NAME [SERVED_MODEL_NAME ...]
  --disable-log-stats   Disable logging statistics.
  --enable-log-requests, --no-enable-log-requests
`

// help13Only lists what v0.13 has and v0.22 dropped.
const help13Only = `  --disable-log-requests
                        [DEPRECATED] Disable logging requests.
  --swap-space SWAP_SPACE
`
