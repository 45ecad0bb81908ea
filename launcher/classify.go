package launcher

import (
	"regexp"
	"strconv"
	"strings"
)

// Classification is what the engine's log says about a failed start.
type Classification struct {
	Class FailureClass
	// Message is the engine's own line that gave the class away, without the log prefix.
	Message string
	// EstimatedMaxModelLen is vLLM's "estimated maximum model length" when the KV cache is
	// too small for max_model_len, else 0.
	EstimatedMaxModelLen int
}

// failurePattern maps a line of an engine's log to a failure class. The first pattern that
// matches any line of the log wins, so the specific ones come first.
type failurePattern struct {
	class FailureClass
	re    *regexp.Regexp
}

// vllmFailurePatterns are the messages of vLLM (V1 engine, 0.10 to 0.13+) at startup, which
// `frontier sim serve` reproduces.
func vllmFailurePatterns() []failurePattern {
	p := func(class FailureClass, expr string) failurePattern {
		return failurePattern{class, regexp.MustCompile(expr)}
	}
	return []failurePattern{
		p(FailKVCacheTooSmall, `estimated maximum model length is \d+`),
		p(FailKVCacheTooSmall, `is larger than the maximum number of tokens that can be stored in KV cache`),
		p(FailKVCacheTooSmall, `No available memory for the cache blocks`),
		p(FailWeightsOOM, `Failed to load model - not enough GPU memory`),
		p(FailGPUBusy, `Free memory on device .* is less than desired GPU memory utilization`),
		p(FailGPUBusy, `Error in memory profiling\. Initial free memory`),
		p(FailOOM, `CUDA out of memory occurred when warming up sampler`),
		p(FailUnsupported, `is not supported for the current GPU`),
		p(FailUnsupported, `Unknown quantization method`),
		p(FailUnsupported, `does not match the quantization method specified`),
		p(FailUnsupported, `Cannot find the config file for`),
		p(FailUnsupported, `is not supported for quantization method`),
		p(FailUnsupported, `NotImplementedError`),
		p(FailPortTaken, `(?i)address already in use`),
		p(FailInvalidArgs, `ValueError: `),
		p(FailInvalidArgs, `pydantic.*ValidationError|validation errors? for `),
		p(FailInvalidArgs, `error: (unrecognized arguments|argument |the following arguments are required|invalid choice)`),
		p(FailOOM, `(OutOfMemoryError|CUDA out of memory)`),
		// The process died of a signal, as the shell or the Python runtime reports it.
		p(FailCrash, `Segmentation fault|Bus error|core dumped|Fatal Python error`),
	}
}

var (
	estimatedLenRE = regexp.MustCompile(`estimated maximum model length is (\d+)`)
	kvTokensV0RE   = regexp.MustCompile(`maximum number of tokens that can be stored in KV cache \((\d+)\)`)
	// logPrefixRE matches vLLM's log prefix: "(EngineCore_DP0 pid=1) ERROR 12-19 10:00:00 [core.py:1] ".
	logPrefixRE = regexp.MustCompile(`^(\([\w-]+ pid=\d+\)\s*)?([A-Z]+\s+\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)?\s+\[[^\]]*\]\s*)?`)
	// exceptionRE matches a Python exception line, e.g. "RuntimeError: ...".
	exceptionRE = regexp.MustCompile(`^[\w.]*(Error|Exception|Interrupt)\b:?`)
	// ansiRE matches terminal colour and cursor sequences.
	ansiRE = regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]`)
	// foreignPrefixRE matches the prefixes that the programs around an engine put before its
	// lines: an RFC 3339 time (docker logs -t, journald, a container runtime's log file) with
	// a container runtime's stream tag ("stderr F "), and a bracketed source
	// ("[pod/vllm-0/vllm] ") as kubectl logs --prefix writes it.
	foreignPrefixRE = regexp.MustCompile(`^(\[[\w./-]+/[\w./-]+\]\s+)?(\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:?\d\d)?\s+)?((stdout|stderr) [FP] )?`)
)

// unknownLines is how many of the log's last lines make the message of a failure no pattern
// knows.
const unknownLines = 3

// ClassifyVLLMLog reads the tail of a vLLM log and says why the engine did not start. The
// weights being loaded when CUDA ran out of memory is told from a later out-of-memory by
// vLLM's own "Failed to load model" line. A log with no known message is a FailCrash whose
// Message is the last Python exception line when it has one; otherwise the engine did not
// fail in vLLM's code (a wrapper script, a missing interpreter, a container runtime) and it is
// a FailUnknown whose Message is the log's last lines, cleaned of their prefixes and joined
// by " / ".
func ClassifyVLLMLog(log string) Classification {
	lines := strings.Split(log, "\n")
	for _, fp := range vllmFailurePatterns() {
		for _, line := range lines {
			if !fp.re.MatchString(line) {
				continue
			}
			c := Classification{Class: fp.class, Message: engineMessage(line)}
			if m := estimatedLenRE.FindStringSubmatch(line); m != nil {
				c.EstimatedMaxModelLen, _ = strconv.Atoi(m[1])
			} else if m := kvTokensV0RE.FindStringSubmatch(line); m != nil {
				c.EstimatedMaxModelLen, _ = strconv.Atoi(m[1])
			}
			if fp.class == FailOOM && loadingWeights(lines) {
				c.Class = FailWeightsOOM
			}
			return c
		}
	}
	if hasException(lines) {
		return Classification{Class: FailCrash, Message: lastMessage(lines)}
	}
	return Classification{Class: FailUnknown, Message: lastLines(lines, unknownLines)}
}

// hasException reports whether the log holds a Python traceback or exception line.
func hasException(lines []string) bool {
	for _, l := range lines {
		l = engineMessage(l)
		if strings.HasPrefix(l, "Traceback (most recent call last)") || exceptionRE.MatchString(l) {
			return true
		}
	}
	return false
}

// lastLines is the last n non-empty lines of the log, cleaned, joined by " / ".
func lastLines(lines []string, n int) string {
	var out []string
	for i := len(lines) - 1; i >= 0 && len(out) < n; i-- {
		if l := engineMessage(lines[i]); l != "" {
			out = append(out, l)
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return strings.Join(out, " / ")
}

// loadingWeights reports whether the log stops while the weights were loading: vLLM logs
// "Model loading took" once they are in memory.
func loadingWeights(lines []string) bool {
	for _, l := range lines {
		if strings.Contains(l, "Model loading took") || strings.Contains(l, "Loading weights took") {
			return false
		}
	}
	for _, l := range lines {
		if strings.Contains(l, "Starting to load model") || strings.Contains(l, "Loading model") ||
			strings.Contains(l, "Loading safetensors") {
			return true
		}
	}
	return false
}

// engineMessage strips terminal sequences, the prefixes of a container runtime or log
// collector, vLLM's log prefix and surrounding space from a line.
func engineMessage(line string) string {
	line = ansiRE.ReplaceAllString(line, "")
	line = strings.TrimSpace(line)
	line = foreignPrefixRE.ReplaceAllString(line, "")
	line = logPrefixRE.ReplaceAllString(line, "")
	line = strings.TrimSpace(line)
	const max = 2000
	if len(line) > max {
		line = line[:max] + "..."
	}
	return line
}

// lastMessage is the last Python exception line of the log, or its last non-empty line.
// vLLM's "Engine core initialization failed. See root cause above" gives way to the root
// cause when there is one.
func lastMessage(lines []string) string {
	last, wrapper := "", ""
	for i := len(lines) - 1; i >= 0; i-- {
		l := engineMessage(lines[i])
		if l == "" {
			continue
		}
		if last == "" {
			last = l
		}
		if !exceptionRE.MatchString(l) {
			continue
		}
		if strings.Contains(l, "See root cause above") {
			if wrapper == "" {
				wrapper = l
			}
			continue
		}
		return l
	}
	if wrapper != "" {
		return wrapper
	}
	return last
}
