package sim

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/frontier-llm/frontier/hw"
	"github.com/frontier-llm/frontier/workload"
)

// Kinds of calibration target.
const (
	// TargetWithin10 is a measurement of current vLLM the model must reproduce within 10%.
	TargetWithin10 = "within 10%"
	// TargetAtLeast is an older engine's result the model must meet or exceed.
	TargetAtLeast = "at least"
	// TargetAtMost is an offline ceiling the model must not exceed.
	TargetAtMost = "at most"
	// TargetInfo is a published number shown for reference, with no requirement.
	TargetInfo = "reference"
)

// CalibrationCase is one published measurement (section 5 of the vLLM reference) and the
// simulation that predicts it.
type CalibrationCase struct {
	Section   string
	Name      string
	Arch      string
	SKU       string
	Settings  map[string]any
	Classes   []workload.Class
	Metric    string  // metric of the total to compare
	Published float64 // in the metric's unit
	Target    string
}

// CalibrationRow is a case with the model's prediction.
type CalibrationRow struct {
	CalibrationCase
	Predicted float64
	// Error is (predicted - published) / published.
	Error float64
	// OK reports whether the prediction meets the target.
	OK bool
}

// CalibrationCases lists the published measurements of the reference's section 5 as
// simulations.
func CalibrationCases() []CalibrationCase {
	var cases []CalibrationCase
	// 5.1: concurrency 1, 128 output tokens, Llama-3.1-8B BF16 on one H100 SXM; ITL is
	// 6.44 ms + 4.37e-5 ms × context with BF16 KV and 6.58 ms + 2.37e-5 ms × context with FP8.
	for _, kv := range []struct {
		dtype            string
		intercept, slope float64
	}{{"auto", 6.44, 4.37e-5}, {"fp8", 6.58, 2.37e-5}} {
		for _, in := range []int{256, 4096, 16384, 65536, 125000} {
			cases = append(cases, CalibrationCase{
				Section: "5.1", Name: fmt.Sprintf("8B ITL, %s KV, %d-token context", kvName(kv.dtype), in),
				Arch: "llama-3.1-8b", SKU: "h100-sxm",
				Settings: map[string]any{"kv_cache_dtype": kv.dtype, "vllm_version": "0.19"},
				Classes:  []workload.Class{fixedCalib(in, 128, 4, workload.Arrival{Kind: workload.ArrivalConcurrency, Concurrency: 1})},
				Metric:   "itl_mean_ms", Published: kv.intercept + kv.slope*float64(in), Target: TargetWithin10,
			})
		}
	}
	// 5.2: vLLM v0.6.0 (an older engine), BF16, 500 prompts sent at once.
	for _, m := range []struct {
		name, arch string
		tp         int64
		sharegpt   float64
		sonnet     float64
		tpot2      float64
	}{{"Llama-3-8B, 1×H100", "llama-3-8b", 1, 37, 31, 8}, {"Llama-3-70B, 4×H100", "llama-3-70b", 4, 17.4, 15.4, 22}} {
		set := map[string]any{"tensor_parallel_size": m.tp}
		cases = append(cases,
			CalibrationCase{Section: "5.2", Name: m.name + ", ShareGPT", Arch: m.arch, SKU: "h100-sxm", Settings: set,
				Classes: []workload.Class{shareGPT(500, workload.Arrival{Kind: workload.ArrivalImmediate})},
				Metric:  workload.RequestThroughput, Published: m.sharegpt, Target: TargetAtLeast},
			CalibrationCase{Section: "5.2", Name: m.name + ", 462 in / 256 out", Arch: m.arch, SKU: "h100-sxm", Settings: set,
				Classes: []workload.Class{fixedCalib(462, 256, 500, workload.Arrival{Kind: workload.ArrivalImmediate})},
				Metric:  workload.RequestThroughput, Published: m.sonnet, Target: TargetAtLeast},
			CalibrationCase{Section: "5.2", Name: m.name + ", ShareGPT, mean TPOT at 2 QPS (ms)", Arch: m.arch, SKU: "h100-sxm", Settings: set,
				Classes: []workload.Class{shareGPT(500, workload.Arrival{Kind: workload.ArrivalPoisson, Rate: 2})},
				Metric:  "tpot_mean_ms", Published: m.tpot2, Target: TargetInfo},
		)
	}
	// 5.3: TensorRT-LLM offline maximum throughput, FP8 weights: ceilings in output tok/s.
	shapes := [][2]int{{128, 128}, {128, 2048}, {1000, 1000}, {2048, 128}, {2048, 2048}, {5000, 500}, {20000, 2000}}
	for _, m := range []struct {
		name, arch, sku string
		tp              int64
		ceil            []float64
	}{
		{"Llama-3.1-8B FP8, 1×H100", "llama-3.1-8b", "h100-sxm", 1, []float64{28312, 22714, 15220, 3450, 9305, 3459, 1351}},
		{"Llama-3.1-8B FP8, 1×H200", "llama-3.1-8b", "h200", 1, []float64{27911, 26221, 17744, 3538, 12194, 3902, 1804}},
		{"Llama-3.3-70B FP8, 2×H100", "llama-3.3-70b", "h100-sxm", 2, []float64{6378, 6651, 4205, 762, 3082, 898, 437}},
		{"Llama-3.3-70B FP8, 1×H200", "llama-3.3-70b", "h200", 1, []float64{3803, 4336, 2909, 442, 2003, 566, 283}},
	} {
		for i, sh := range shapes {
			n := int(math.Min(2000, math.Max(200, math.Min(1.5e6/float64(sh[0]+sh[1]), 1e5/float64(sh[1])))))
			cases = append(cases, CalibrationCase{
				Section: "5.3", Name: fmt.Sprintf("%s, %d/%d", m.name, sh[0], sh[1]), Arch: m.arch, SKU: m.sku,
				Settings: map[string]any{"quantization": "fp8", "tensor_parallel_size": m.tp, "max_model_len": int64(32768)},
				Classes:  []workload.Class{fixedCalib(sh[0], sh[1], n, workload.Arrival{Kind: workload.ArrivalImmediate})},
				Metric:   workload.OutputTokenThroughput, Published: m.ceil[i], Target: TargetAtMost,
			})
		}
	}
	return cases
}

func kvName(dtype string) string {
	if dtype == "auto" {
		return "BF16"
	}
	return strings.ToUpper(dtype)
}

func fixedCalib(in, out, n int, arr workload.Arrival) workload.Class {
	return workload.Class{Name: "calibration", Requests: n,
		InputTokens:  workload.Dist{Kind: workload.DistFixed, A: float64(in)},
		OutputTokens: workload.Dist{Kind: workload.DistFixed, A: float64(out)},
		Arrival:      arr}
}

// shareGPT approximates the ShareGPT set of vllm bench serve by log-normal lengths with its
// averages (202 input and 179 output tokens).
func shareGPT(n int, arr workload.Arrival) workload.Class {
	return workload.Class{Name: "calibration", Requests: n,
		InputTokens:  workload.Dist{Kind: workload.DistLogNormal, A: 202, B: 0.8},
		OutputTokens: workload.Dist{Kind: workload.DistLogNormal, A: 179, B: 0.8},
		Arrival:      arr}
}

// Calibrate runs every calibration case.
func Calibrate(ctx context.Context) ([]CalibrationRow, error) {
	var rows []CalibrationRow
	for _, c := range CalibrationCases() {
		arch, ok := LookupArch(c.Arch)
		if !ok {
			return nil, fmt.Errorf("calibration %q: no architecture %q", c.Name, c.Arch)
		}
		sku, ok := hw.LookupSKU(c.SKU)
		if !ok {
			return nil, fmt.Errorf("calibration %q: no SKU %q", c.Name, c.SKU)
		}
		cfg, err := ConfigFromSettings(c.Settings, 0)
		if err != nil {
			return nil, fmt.Errorf("calibration %q: %w", c.Name, err)
		}
		m, err := Estimate(ctx, arch, sku, cfg, c.Classes, 1)
		if err != nil {
			return nil, fmt.Errorf("calibration %q: %w", c.Name, err)
		}
		p := m.Total.Metrics[c.Metric]
		r := CalibrationRow{CalibrationCase: c, Predicted: p, Error: (p - c.Published) / c.Published}
		switch c.Target {
		case TargetWithin10:
			r.OK = math.Abs(r.Error) <= 0.10
		case TargetAtLeast:
			r.OK = p >= c.Published
		case TargetAtMost:
			r.OK = p <= c.Published
		default:
			r.OK = true
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// CalibrationMarkdown renders rows as a Markdown table.
func CalibrationMarkdown(rows []CalibrationRow) string {
	var b strings.Builder
	b.WriteString("| § | measurement | metric | published | predicted | error | target | met |\n")
	b.WriteString("|---|---|---|---:|---:|---:|---|---|\n")
	for _, r := range rows {
		met := "yes"
		if !r.OK {
			met = "**no**"
		}
		if r.Target == TargetInfo {
			met = "n/a"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %+.1f%% | %s | %s |\n", r.Section, r.Name, r.Metric,
			num(r.Published), num(r.Predicted), 100*r.Error, r.Target, met)
	}
	return b.String()
}

func num(v float64) string {
	switch {
	case v >= 1000:
		return formatThousands(int(math.Round(v)))
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}
