package sim

import (
	"context"
	"math"
	"testing"

	"github.com/frontier-llm/frontier/hw"

	"github.com/frontier-llm/frontier/workload"
)

// TestEstimateDisaggregationLowersTPOTUnderLongPrefills offers 8,000-token prompts with
// chunked prefill at a load where the aggregated engine's decodes share steps with prefill
// chunks: one prefill and one decode instance ("1p1d") keep prefills out of the decode
// steps, so the TPOT p99 is clearly lower, the deployment occupies 2 x TP GPUs, and its TTFT
// includes the KV transfer.
func TestEstimateDisaggregationLowersTPOTUnderLongPrefills(t *testing.T) {
	t.Parallel()
	arch, sku := mustArch(t, "llama-3.1-8b"), mustSKU(t, "h100-sxm")
	cls := []workload.Class{fixedClass("rag", 300, 8000, 200, workload.Arrival{Kind: workload.ArrivalPoisson, Rate: 3})}
	cfg := DefaultConfig()
	cfg.MaxModelLen = 16384
	cfg.EnableChunkedPrefill = true
	cfg.TensorParallelSize = 1

	none, err := Estimate(context.Background(), arch, sku, cfg, cls, 1)
	if err != nil {
		t.Fatal(err)
	}
	d := Disaggregation{Prefill: 1, Decode: 1, PrefillTP: 1, DecodeTP: 1}
	if got, want := d.GPUs(cfg), 2*cfg.TensorParallelSize; got != want {
		t.Errorf("1p1d occupies %d GPUs, want 2 x TP = %d", got, want)
	}
	pd, err := EstimateDisaggregated(context.Background(), arch, sku, cfg, d, cls, 1)
	if err != nil {
		t.Fatal(err)
	}
	a, b := none.Total.Metrics, pd.Total.Metrics
	t.Logf("none: TPOT p99 %.1f ms, TTFT mean %.0f ms; 1p1d: TPOT p99 %.1f ms, TTFT mean %.0f ms, transfer %.2f ms (%.1f%% of TTFT)",
		a["tpot_p99_ms"], a["ttft_mean_ms"], b["tpot_p99_ms"], b["ttft_mean_ms"], b[workload.KVTransferMeanMs], 100*b[workload.KVTransferTTFTShare])
	for name, m := range map[string]map[string]float64{"none": a, "1p1d": b} {
		if m[workload.Completed] != 300 {
			t.Errorf("%s: completed %v, want 300", name, m[workload.Completed])
		}
	}
	// The prefills must interrupt the aggregated decodes: a decode step alone takes a few
	// milliseconds on an H100, one with a chunk of 8,192 prompt tokens several times that.
	if a["tpot_p99_ms"] < 2*b["tpot_p99_ms"] {
		t.Errorf("TPOT p99: none %.1f ms, 1p1d %.1f ms; want 1p1d under half of none", a["tpot_p99_ms"], b["tpot_p99_ms"])
	}
	// The transfer: 8,000 tokens x 128 KiB of BF16 KV (32 layers x 8 KV heads x 128 x 2 x 2
	// bytes) over one NVLink 4 direction (450 GB/s) at the fabric's 80%: about 2.9 ms.
	link := NewTransferLink(arch, sku, mustStartup(t, arch, sku, cfg), d, cfg)
	want := 8000 * 131072.0 / (450 * 0.8 * 1e9) * 1000
	if got := link.Seconds(8000) * 1000; math.Abs(got-want) > 0.01 {
		t.Errorf("the transfer of 8,000 tokens takes %.3f ms, want %.3f", got, want)
	}
	if x := b[workload.KVTransferMeanMs]; x < 0.9*want || x > 1.01*want {
		t.Errorf("kv_transfer_mean_ms %.3f, want close to %.3f (every prompt read whole: no prefix is shared)", x, want)
	}
	if s := b[workload.KVTransferTTFTShare]; s <= 0 || math.Abs(s-b[workload.KVTransferMeanMs]/b["ttft_mean_ms"]) > 1e-9 {
		t.Errorf("kv_transfer_ttft_share %v, want transfer / TTFT mean = %v", s, b[workload.KVTransferMeanMs]/b["ttft_mean_ms"])
	}
	if _, ok := a[workload.KVTransferMeanMs]; ok {
		t.Errorf("the aggregated estimate has a KV transfer metric")
	}
}

// TestDisaggregatedTTFTIncludesTheTransfer runs one request at a time, so no queue hides
// anything: the 1p1d TTFT is the aggregated one plus the transfer, the router's extra hop
// through the API servers and the decode instance's first step, and slower links make it
// longer by exactly the extra transfer time.
func TestDisaggregatedTTFTIncludesTheTransfer(t *testing.T) {
	t.Parallel()
	arch := mustArch(t, "llama-3.1-8b")
	cls := []workload.Class{fixedClass("c", 4, 8000, 16, workload.Arrival{Kind: workload.ArrivalConcurrency, Concurrency: 1})}
	cfg := DefaultConfig()
	cfg.MaxModelLen = 16384
	d := Disaggregation{Prefill: 1, Decode: 1, PrefillTP: 1, DecodeTP: 1}
	ttft := map[string]float64{}
	xfer := map[string]float64{}
	for _, name := range []string{"h100-sxm", "h100-pcie"} {
		sku := mustSKU(t, name)
		agg, err := Estimate(context.Background(), arch, sku, cfg, cls, 1)
		if err != nil {
			t.Fatal(err)
		}
		pd, err := EstimateDisaggregated(context.Background(), arch, sku, cfg, d, cls, 1)
		if err != nil {
			t.Fatal(err)
		}
		a, b := agg.Total.Metrics["ttft_mean_ms"], pd.Total.Metrics["ttft_mean_ms"]
		x := pd.Total.Metrics[workload.KVTransferMeanMs]
		t.Logf("%s: TTFT aggregated %.2f ms, 1p1d %.2f ms, transfer %.2f ms", name, a, b, x)
		if b < a+x {
			t.Errorf("%s: 1p1d TTFT %.2f ms is under the aggregated %.2f ms plus the transfer %.2f ms", name, b, a, x)
		}
		ttft[name], xfer[name] = b, x
	}
	// H100 PCIe moves the KV over PCIe Gen5 (64 GB/s one way), the SXM over NVLink (450).
	if xfer["h100-pcie"] < 5*xfer["h100-sxm"] {
		t.Errorf("transfer over PCIe %.2f ms, over NVLink %.2f ms: want PCIe several times slower", xfer["h100-pcie"], xfer["h100-sxm"])
	}
}

func mustStartup(t *testing.T, arch Arch, sku hw.SKU, cfg EngineConfig) Startup {
	t.Helper()
	st, err := CheckStartup(arch, sku, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return st
}
