package sim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/frontier-llm/frontier/workload"
)

// modelFingerprint runs the performance and answer models on a fixed set of cases and hashes
// what they give, each number to 4 significant digits (so that the last bits of floating
// point arithmetic, which may differ between CPUs, do not count).
func modelFingerprint(t *testing.T) (string, string) {
	t.Helper()
	var b strings.Builder
	type perfCase struct {
		arch, sku string
		disagg    *Disaggregation
		edit      func(*EngineConfig)
	}
	cases := []perfCase{
		{"llama-3.1-8b", "h100-sxm", nil, nil},
		{"llama-3.1-8b", "a100-80gb", nil, func(c *EngineConfig) { c.MaxNumSeqs = 32 }},
		{"llama-3.1-8b", "l40s", nil, func(c *EngineConfig) { c.Quantization = "fp8"; c.KVCacheDType = "fp8" }},
		{"llama-3.1-70b", "h100-sxm", nil, func(c *EngineConfig) { c.TensorParallelSize = 4 }},
		{"qwen3-30b-a3b", "h200", nil, nil},
		{"mixtral-8x7b", "mi300x", nil, func(c *EngineConfig) { c.EnablePrefixCaching = true }},
		{"gpt-oss-20b", "b200", nil, nil},
		// A block-FP8 checkpoint with MLA and a shared expert, expert parallel.
		{"deepseek-r1", "h200", nil, func(c *EngineConfig) { c.TensorParallelSize = 8; c.EnableExpertParallel = true }},
		// A GPU cache of 1 GiB that preempts, with a CPU tier that brings the preempted
		// requests' blocks back (KV offloading).
		{"llama-3.1-8b", "h100-sxm", nil, func(c *EngineConfig) { c.KVCacheMemoryBytes = 1 << 30; c.KVOffloadingSize = 4 }},
		// One prefill and one decode instance, the KV cache moving between them.
		{"llama-3.1-8b", "h100-sxm", &Disaggregation{Prefill: 1, Decode: 1, PrefillTP: 1, DecodeTP: 1}, nil},
	}
	classes := []workload.Class{
		{Name: "chat", Requests: 40, InputTokens: workload.Dist{Kind: workload.DistUniform, A: 200, B: 1200},
			OutputTokens: workload.Dist{Kind: workload.DistUniform, A: 50, B: 250}, Arrival: workload.Arrival{Kind: workload.ArrivalPoisson, Rate: 8}},
		{Name: "batch", Requests: 16, InputTokens: workload.Dist{Kind: workload.DistFixed, A: 3000},
			OutputTokens: workload.Dist{Kind: workload.DistFixed, A: 64}, Arrival: workload.Arrival{Kind: workload.ArrivalConcurrency, Concurrency: 8}},
	}
	metrics := []string{"output_token_throughput", "ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms", "itl_p99_ms", "e2e_p50_ms", "kv_cache_usage_max", "preemptions"}
	for _, c := range cases {
		cfg := DefaultConfig()
		cfg.MaxModelLen = 8192
		if c.edit != nil {
			c.edit(&cfg)
		}
		var m *workload.Measurement
		var err error
		if c.disagg != nil {
			m, err = EstimateDisaggregated(context.Background(), mustArch(t, c.arch), mustSKU(t, c.sku), cfg, *c.disagg, classes, 7)
		} else {
			m, err = Estimate(context.Background(), mustArch(t, c.arch), mustSKU(t, c.sku), cfg, classes, 7)
		}
		if err != nil {
			fmt.Fprintf(&b, "%s/%s: %v\n", c.arch, c.sku, err)
			continue
		}
		fmt.Fprintf(&b, "%s/%s:", c.arch, c.sku)
		for _, name := range metrics {
			fmt.Fprintf(&b, " %s=%.4g", name, m.Total.Metrics[name])
		}
		b.WriteString("\n")
	}
	for _, am := range []AnswerModel{{Seed: 3}, {Quantization: "fp8", Seed: 3}, {Quantization: "awq", KVCacheDtype: "fp8", Seed: 3}, {Checkpoint: "mxfp4", Seed: 3}} {
		rate, err := am.EditRate()
		fmt.Fprintf(&b, "answer %+v: rate=%.4g err=%v", am, rate, err)
		for _, id := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
			out, err := am.Answer(id, "Summarise the passage in two sentences.", "The committee met on Tuesday to review the budget. It approved the plan for the new library and postponed the vote on the bridge until spring.")
			fmt.Fprintf(&b, " %q/%v", out, err)
		}
		b.WriteString("\n")
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	sort.Strings(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return hex.EncodeToString(sum[:6]), b.String()
}

// TestModelVersionIsTheFingerprintOfTheModelsNumbers fails when the model's numbers change
// without a new ModelVersion: a study measured with the old numbers would otherwise be
// resumed, and its trials compared, with the new ones.
func TestModelVersionIsTheFingerprintOfTheModelsNumbers(t *testing.T) {
	t.Parallel()
	if got, cases := modelFingerprint(t); got != ModelVersion {
		t.Logf("the model's numbers on the fingerprint's cases:\n%s", cases)
		t.Errorf("the performance or answer model's numbers changed: their fingerprint is %s, ModelVersion is %s.\n"+
			"Set ModelVersion = %q in sim/modelversion.go in the same change (a simulated study measured with the old numbers is then not resumed with the new ones).",
			got, ModelVersion, got)
	}
}
