package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"github.com/frontier-llm/frontier/record"
)

// p3Plan is a one-class plan on the simulated engine with arrival and extra blocks; the
// pressure cases send to a loopback server with --url, so no engine is started.
func p3Plan(study, arrival, extra string) string {
	return fmt.Sprintf(`study %s {
  trials  = 1
  sampler = "grid"
}
model {
  name          = "meta-llama/Llama-3.1-8B-Instruct"
  architecture  = "llama-3.1-8b"
  max_model_len = 4096
}
engine "sim" {
  args = ["--chat-template", "$(HF_TOKEN) $$ x"]
  env  = { VLLM_LOGGING_PREFIX = "$(HOME)" }
}
hardware {
  gpus = 1
  sku  = "h100-sxm"
}
knob "max_num_seqs" { values = [64] }
workload "chat" {
  requests      = 12
  input_tokens  = fixed(100)
  output_tokens = fixed(10)
  arrival       = %s
  timeout       = "5s"
  slo {
    ttft_p99 = "30s"
  }
}
objective "throughput" {
  maximize = metric.total.output_token_throughput
}
%s`, study, arrival, extra)
}

// refusing is a real HTTP server on loopback that answers 503 to everything, as an engine
// past its capacity does, and counts the completion requests it got.
func refusing(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/completions") {
			n.Add(1)
		}
		http.Error(w, "overloaded", http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &n
}

// pressureJSON reads the results `frontier pressure --json` printed.
func pressureJSON(t *testing.T, r result) []record.Pressure {
	t.Helper()
	var out []record.Pressure
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("frontier pressure printed no JSON (exit %d): %v\nstdout:\n%.2000s\nstderr:\n%.2000s", r.code, err, r.stdout, r.stderr)
	}
	return out
}

const shortBurst = `  burst {
    before   = "1s"
    duration = "1s"
    recover  = "1s"
  }
`

// retryCase runs a burst against the refusing server with a retry block.
func retryCase(maxRequests int, retry string) func(t *testing.T, dir string) (result, boundRow) {
	return func(t *testing.T, dir string) (result, boundRow) {
		url, got := refusing(t)
		block := fmt.Sprintf("pressure {\n  max_requests = %d\n%s  retry {\n    %s\n  }\n}\n", maxRequests, shortBurst, retry)
		writeFile(t, dir, "plan.hcl", []byte(p3Plan(`"retry"`, "poisson(8)", block)))
		r := frontier(t, dir, nil, "pressure", "plan.hcl", "--url", url, "--json")
		res := pressureJSON(t, r)
		row := boundRow{Saw: saw(r.stderr, "Warning: Retry budget of zero")}
		if len(res) != 1 || res[0].Burst == nil || res[0].Burst.Retry == nil {
			return r, boundRow{Saw: lastLine(r.stderr), Stored: fmt.Sprintf("no burst: %+v", res)}
		}
		b := res[0].Burst
		sent, rt, n := b.Classes[0].Sent, b.Retry, int(got.Load())
		switch {
		case rt.Retries == 0 && n == sent:
			row.Stored = "no request sent twice: the server got as many requests as were sent"
		case n <= maxRequests && rt.Retries > 0:
			row.Stored = fmt.Sprintf("retries sent until max_requests: the server got at most %d requests", maxRequests)
			row.Saw = "the retries past max_requests denied"
			if rt.Denied == 0 {
				row.Saw = "no retry denied"
			}
		default:
			row.Stored = fmt.Sprintf("the server got %d requests for %d sent (%d retries)", n, sent, rt.Retries)
		}
		return r, row
	}
}

// exportCase runs a study whose name holds newlines and a shell command (the offline model,
// no engine), and exports its trial in format; check says what came of the export.
func exportCase(format string, check func(t *testing.T, dir, out string) string) func(t *testing.T, dir string) (result, boundRow) {
	return func(t *testing.T, dir string) (result, boundRow) {
		writeFile(t, dir, "plan.hcl", []byte(p3Plan(`"chat\ntouch pwned\nenforce-eager: true\n#"`, "poisson(8)", "")))
		if r := frontier(t, dir, nil, "apply", "plan.hcl", "--estimate", "--storage", "study.db"); r.code != 0 {
			t.Fatalf("apply exited %d:\n%s", r.code, r.stderr)
		}
		r := frontier(t, dir, nil, "export", "--storage", "study.db", "--trial", "0", "--format", format)
		row := boundRow{Saw: "every line printable: the name shown as \"chat\\ntouch pwned\\nenforce-eager: true\\n#\""}
		if bad := unprintable(r.stdout); len(bad) > 0 {
			row.Saw = "control characters in " + strings.Join(bad, "; ")
		} else if format != "vllm-args" && !strings.Contains(r.stdout, `"chat\ntouch pwned\nenforce-eager: true\n#"`) {
			row.Saw = "the study's name is not shown"
		}
		if format == "vllm-args" {
			row.Saw = strings.Replace(row.Saw, ": the name shown as \"chat\\ntouch pwned\\nenforce-eager: true\\n#\"", "", 1)
		}
		row.Stored = check(t, dir, r.stdout)
		return r, row
	}
}

// unprintable returns the lines of out with a character that is not printable.
func unprintable(out string) []string {
	var bad []string
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		for _, r := range line {
			if !strconv.IsPrint(r) {
				bad = append(bad, strconv.Quote(line))
				break
			}
		}
	}
	return bad
}

// runWithStubs runs script with bash, stand-ins for docker and vllm (which cannot run here)
// first in PATH: they record the argv they got. It returns that argv and whether an
// injected command made a file.
func runWithStubs(t *testing.T, dir, script string) ([]string, bool) {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"docker", "vllm"} {
		writeFile(t, bin, name, []byte("#!/bin/sh\nprintf '%s\\0' \"$@\" > \"$STUB_ARGV\"\n"))
		if err := os.Chmod(filepath.Join(bin, name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=" + dir, "STUB_ARGV=" + filepath.Join(dir, "argv")}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("bash: %v\n%s", err, out)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "argv"))
	if err != nil {
		t.Fatalf("the stand-in did not run: %v", err)
	}
	_, statErr := os.Stat(filepath.Join(dir, "pwned"))
	return strings.Split(strings.TrimSuffix(string(raw), "\x00"), "\x00"), statErr == nil
}

// measuredArgs are the flags the study's trial was measured with, after the model, in the
// launcher's order.
var measuredArgs = []string{"--chat-template", "$(HF_TOKEN) $$ x", "--max-num-seqs", "64", "--max-model-len", "4096"}

func shellCheck(t *testing.T, dir, out string) string {
	argv, ran := runWithStubs(t, dir, out)
	i := len(argv) - len(measuredArgs)
	if i < 0 || !cmp.Equal(argv[i:], measuredArgs) || ran {
		return fmt.Sprintf("argv %q, injected command ran: %v", argv, ran)
	}
	return "run by bash: the program got the measured flags, no other command ran"
}

// k8sExpansion applies Kubernetes' expansion of container args and env values as
// k8s.io/api/core/v1 documents it ($(VAR) is the variable's value when defined, $$ is $).
func k8sExpansion(s string, env map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
			continue
		case '(':
			if j := strings.IndexByte(s[i:], ')'); j > 0 {
				if v, ok := env[s[i+2:i+j]]; ok {
					b.WriteString(v)
					i += j
					continue
				}
			}
		}
		b.WriteByte('$')
	}
	return b.String()
}

func pressure3Cases() []boundCase {
	return []boundCase{
		{
			name: "retry budget 0", input: "`retry { budget = 0, max_retries = 100 }`, a burst against a loopback server that answers 503, `frontier pressure --url`", within: 20 * time.Second,
			want: boundRow{Exit: 0, Saw: "Warning: Retry budget of zero", Stored: "no request sent twice: the server got as many requests as were sent"},
			run:  retryCase(20000, "max_retries = 100\n    budget = 0\n    backoff = \"1ms\""),
		},
		{
			name: "retries bounded by max_requests", input: "`max_requests = 200`, `retry { budget = 100, max_retries = 100, backoff = \"1ms\" }`, the same burst", within: 20 * time.Second,
			want: boundRow{Exit: 0, Saw: "the retries past max_requests denied", Stored: "retries sent until max_requests: the server got at most 200 requests"},
			run:  retryCase(200, "max_retries = 100\n    budget = 100\n    backoff = \"1ms\""),
		},
		{
			name: "ladder factor 1e300", input: "`ladder { factor = 1e300 }`, `frontier validate`", within: 2 * time.Second,
			want: boundRow{Exit: 1, Saw: "The attribute factor of ladder must be above 1 and at most 100, not 1e+300.", Stored: "nothing run"},
			run: func(t *testing.T, dir string) (result, boundRow) {
				writeFile(t, dir, "plan.hcl", []byte(p3Plan(`"x"`, "poisson(8)", "pressure {\n  ladder { factor = 1e300 }\n}\n")))
				r := frontier(t, dir, nil, "validate", "plan.hcl")
				return r, boundRow{Saw: saw(r.stderr, "The attribute factor of ladder must be above 1 and at most 100, not 1e+300."), Stored: "nothing run"}
			},
		},
		{
			name: "rates that overflow", input: "`arrival = poisson(1e300)`, a ladder and a 2x burst, `frontier pressure --url --json`", within: 10 * time.Second,
			want: boundRow{Exit: 0, Saw: "the result printed as JSON", Stored: "ladder boundary max_rate, no request sent; burst: the experiment would send more than max_requests = 20000 requests"},
			run: func(t *testing.T, dir string) (result, boundRow) {
				url, got := refusing(t)
				writeFile(t, dir, "plan.hcl", []byte(p3Plan(`"x"`, "poisson(1e300)", "pressure {\n  ladder {\n    start = 1\n    duration = \"0s\"\n  }\n  burst {}\n}\n")))
				r := frontier(t, dir, nil, "pressure", "plan.hcl", "--url", url, "--json")
				res := pressureJSON(t, r)
				row := boundRow{Saw: "the result printed as JSON"}
				if len(res) == 1 && len(res[0].Ladders) == 1 {
					row.Stored = "ladder boundary " + res[0].Ladders[0].Boundary
					if got.Load() == 0 {
						row.Stored += ", no request sent"
					}
					for _, e := range res[0].Errors {
						if i := strings.Index(e, " (about"); i > 0 {
							e = e[:i]
						}
						row.Stored += "; " + e
					}
				}
				return r, row
			},
		},
		{
			name: "window of 1 ns", input: "`window = \"1ns\"` (budget 2m), `frontier validate`", within: 2 * time.Second,
			want: boundRow{Exit: 1, Saw: "The attribute window of pressure is 1ns; it must be at least 12ms and at most 2m0s.", Stored: "nothing run"},
			run: func(t *testing.T, dir string) (result, boundRow) {
				writeFile(t, dir, "plan.hcl", []byte(p3Plan(`"x"`, "poisson(8)", "pressure {\n  window = \"1ns\"\n  ladder {}\n}\n")))
				r := frontier(t, dir, nil, "validate", "plan.hcl")
				return r, boundRow{Saw: saw(r.stderr, "The attribute window of pressure is 1ns; it must be at least 12ms and at most 2m0s."), Stored: "nothing run"}
			},
		},
		{
			name: "SIGINT during a burst", input: "SIGINT 1 s into a 60 s burst experiment, `frontier pressure --url`", within: 5 * time.Second,
			want: boundRow{Exit: 2, Saw: "interrupted: the experiments finished before the signal are stored, the one it cut short is not; run it again to measure it", Stored: "burst: interrupted before it finished"},
			run: func(t *testing.T, dir string) (result, boundRow) {
				url, _ := refusing(t)
				writeFile(t, dir, "plan.hcl", []byte(p3Plan(`"x"`, "poisson(8)", "pressure {\n  burst {\n    recover = \"60s\"\n  }\n}\n")))
				p := startFrontier(t, dir, nil, "pressure", "plan.hcl", "--url", url, "--json")
				p.await(t, "pressure: burst", 30*time.Second)
				time.Sleep(time.Second)
				sent := time.Now()
				if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
					t.Fatal(err)
				}
				r := p.wait(t, 30*time.Second)
				r.elapsed = time.Since(sent)
				row := boundRow{Saw: saw(r.stderr, "interrupted: the experiments finished before the signal are stored, the one it cut short is not; run it again to measure it")}
				var res []record.Pressure
				if err := json.Unmarshal([]byte(r.stdout), &res); err == nil && len(res) == 1 {
					for _, e := range res[0].Errors {
						if i := strings.Index(e, ";"); i > 0 {
							e = e[:i]
						}
						row.Stored = e
					}
				}
				return r, row
			},
		},
		{
			name: "closed loop under a pressure block", input: "the only workload `concurrency(4)`, a ladder and a burst, `frontier validate`", within: 2 * time.Second,
			want: boundRow{Exit: 1, Saw: "Error: No workload with an arrival rate", Stored: "nothing run"},
			run: func(t *testing.T, dir string) (result, boundRow) {
				writeFile(t, dir, "plan.hcl", []byte(p3Plan(`"x"`, "concurrency(4)", "pressure {\n  ladder {}\n  burst {}\n}\n")))
				r := frontier(t, dir, nil, "validate", "plan.hcl")
				return r, boundRow{Saw: saw(r.stderr, "Error: No workload with an arrival rate"), Stored: "nothing run"}
			},
		},
		{
			name: "immediate() without a pressure block", input: "the only workload `immediate()`, the default experiments, `frontier pressure --url`", within: 5 * time.Second,
			want: boundRow{Exit: 1, Saw: `no workload has an arrival rate to scale: "chat" (immediate())`, Stored: "no request sent"},
			run: func(t *testing.T, dir string) (result, boundRow) {
				url, got := refusing(t)
				writeFile(t, dir, "plan.hcl", []byte(p3Plan(`"x"`, "immediate()", "")))
				r := frontier(t, dir, nil, "pressure", "plan.hcl", "--url", url)
				row := boundRow{Saw: saw(r.stderr, `no workload has an arrival rate to scale: "chat" (immediate())`), Stored: "no request sent"}
				if n := got.Load(); n > 0 {
					row.Stored = fmt.Sprintf("%d requests sent", n)
				}
				return r, row
			},
		},
		{
			name: "study name with a shell command: docker", input: "study `\"chat\\ntouch pwned\\nenforce-eager: true\\n#\"`, `frontier export --format docker`, run with bash", within: 10 * time.Second,
			want: boundRow{Exit: 0, Saw: `every line printable: the name shown as "chat\ntouch pwned\nenforce-eager: true\n#"`, Stored: "run by bash: the program got the measured flags, no other command ran"},
			run:  exportCase("docker", shellCheck),
		},
		{
			name: "study name with a shell command: vllm-args", input: "the same study, `--format vllm-args`, run with bash", within: 10 * time.Second,
			want: boundRow{Exit: 0, Saw: "every line printable", Stored: "run by bash: the program got the measured flags, no other command ran"},
			run:  exportCase("vllm-args", shellCheck),
		},
		{
			name: "study name with a YAML key: vllm-yaml", input: "the same study, `--format vllm-yaml`, read as YAML", within: 10 * time.Second,
			want: boundRow{Exit: 0, Saw: `every line printable: the name shown as "chat\ntouch pwned\nenforce-eager: true\n#"`, Stored: "keys chat-template, max-model-len, max-num-seqs, model; no enforce-eager"},
			run: exportCase("vllm-yaml", func(t *testing.T, dir, out string) string {
				var cfg map[string]any
				if err := yaml.Unmarshal([]byte(out), &cfg); err != nil {
					return "does not parse: " + err.Error()
				}
				var keys []string
				for k := range cfg {
					keys = append(keys, k)
				}
				slices.Sort(keys)
				s := "keys " + strings.Join(keys, ", ")
				if _, ok := cfg["enforce-eager"]; ok {
					return s + "; enforce-eager injected"
				}
				return s + "; no enforce-eager"
			}),
		},
		{
			name: "study name and `$(VAR)`: k8s", input: "the same study, engine arg `$(HF_TOKEN) $$ x` and env `$(HOME)`, `--format k8s`, read with the Kubernetes API types and expanded as Kubernetes does", within: 10 * time.Second,
			want: boundRow{Exit: 0, Saw: `every line printable: the name shown as "chat\ntouch pwned\nenforce-eager: true\n#"`, Stored: "decodes strictly; the annotation is the study's name; after expansion vLLM gets `$(HF_TOKEN) $$ x` and the env `$(HOME)`"},
			run: exportCase("k8s", func(t *testing.T, dir, out string) string {
				var d appsv1.Deployment
				if err := yaml.UnmarshalStrict([]byte(strings.Split(out, "\n---\n")[0]), &d); err != nil {
					return "does not decode: " + err.Error()
				}
				s := "decodes strictly"
				if d.Annotations["frontier.study"] == "chat\ntouch pwned\nenforce-eager: true\n#" {
					s += "; the annotation is the study's name"
				}
				env := map[string]string{"HF_TOKEN": "leaked", "HOME": "/root"}
				c := d.Spec.Template.Spec.Containers[0]
				var args []string
				for _, a := range c.Args {
					args = append(args, k8sExpansion(a, env))
				}
				var prefix string
				for _, e := range c.Env {
					if e.Name == "VLLM_LOGGING_PREFIX" {
						prefix = k8sExpansion(e.Value, env)
					}
				}
				if len(args) > 2 && cmp.Equal(args[len(args)-len(measuredArgs):], measuredArgs) && prefix == "$(HOME)" {
					return s + "; after expansion vLLM gets `$(HF_TOKEN) $$ x` and the env `$(HOME)`"
				}
				return fmt.Sprintf("%s; after expansion args %q, env %q", s, args, prefix)
			}),
		},
	}
}

// TestReliabilityPressureThirdPass runs frontier as a real subprocess on each input of
// pressure3Cases: pressure settings that would retry without end, overflow a rate, a request
// count or a timeline, or scale a class that has no rate, and study names that try to leave
// their place in an export. The observed rows are the "pressure-third-pass" table of
// docs/reliability.md; -update rewrites it.
func TestReliabilityPressureThirdPass(t *testing.T) {
	checkBoundCases(t, "pressure-third-pass", "outcome", pressure3Cases())
}
