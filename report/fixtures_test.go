package report

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/frontier-llm/frontier/record"
	"github.com/frontier-llm/frontier/vllm"

	"github.com/frontier-llm/frontier/workload"
)

var writeFixtures = flag.Bool("fixtures", false, "rewrite the study fixtures in testdata/")

// fixtureSpec describes one synthetic study: the same search space on a given SKU.
type fixtureSpec struct {
	file    string
	study   string
	model   string
	sku     string
	gpu     string
	price   float64
	speed   float64 // throughput multiplier of the SKU and model
	quality float64 // baseline quality score
	seed    uint64
	fp8     float64 // throughput gain of fp8 weights
}

var fixtureSpecs = []fixtureSpec{
	{"quickstart.json", "quickstart", "meta-llama/Llama-3.1-8B-Instruct", "h100-sxm", "NVIDIA H100 80GB HBM3", 2.50, 1.0, 0.815, 1, 1.35},
	{"quickstart-h200.json", "quickstart", "meta-llama/Llama-3.1-8B-Instruct", "h200", "NVIDIA H200", 3.80, 1.45, 0.815, 2, 1.35},
	{"quickstart-qwen.json", "quickstart", "Qwen/Qwen2.5-7B-Instruct", "h100-sxm", "NVIDIA H100 80GB HBM3", 2.50, 1.1, 0.842, 3, 1.0},
}

// TestWriteFixtures regenerates the JSON study records the report tests read, from a small
// analytic model of a serving engine. It runs only with -fixtures.
func TestWriteFixtures(t *testing.T) {
	if !*writeFixtures {
		t.Skip("run with -fixtures to rewrite testdata/*.json")
	}
	for _, s := range fixtureSpecs {
		rec := buildFixture(s)
		data, err := json.MarshalIndent(rec, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join("testdata", s.file), append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func fixtureConfigs() []map[string]any {
	base := map[string]any{
		"max_num_seqs": int64(128), "max_num_batched_tokens": int64(8192),
		"gpu_memory_utilization": 0.9, "enable_chunked_prefill": true,
		"kv_cache_dtype": "auto", "quantization": "none",
	}
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for kk, vv := range base {
			m[kk] = vv
		}
		m[k] = v
		return m
	}
	return []map[string]any{
		base,
		with("max_num_seqs", int64(64)),
		with("max_num_seqs", int64(256)),
		with("max_num_seqs", int64(512)),
		with("max_num_batched_tokens", int64(4096)),
		with("max_num_batched_tokens", int64(16384)),
		with("gpu_memory_utilization", 0.8),
		with("kv_cache_dtype", "fp8"),
		with("quantization", "fp8"),
		with("enable_chunked_prefill", false),
		{"max_num_seqs": int64(32), "max_num_batched_tokens": int64(2048), "gpu_memory_utilization": 0.85, "enable_chunked_prefill": true, "kv_cache_dtype": "auto", "quantization": "none"},
		{"max_num_seqs": int64(16), "max_num_batched_tokens": int64(2048), "gpu_memory_utilization": 0.92, "enable_chunked_prefill": true, "kv_cache_dtype": "fp8", "quantization": "none"},
		{"max_num_seqs": int64(384), "max_num_batched_tokens": int64(16384), "gpu_memory_utilization": 0.95, "enable_chunked_prefill": true, "kv_cache_dtype": "fp8", "quantization": "fp8"},
		{"max_num_seqs": int64(200), "max_num_batched_tokens": int64(8192), "gpu_memory_utilization": 0.93, "enable_chunked_prefill": true, "kv_cache_dtype": "fp8", "quantization": "none"},
		{"max_num_seqs": int64(96), "max_num_batched_tokens": int64(4096), "gpu_memory_utilization": 0.88, "enable_chunked_prefill": true, "kv_cache_dtype": "auto", "quantization": "fp8"},
		{"max_num_seqs": int64(48), "max_num_batched_tokens": int64(2048), "gpu_memory_utilization": 0.81, "enable_chunked_prefill": false, "kv_cache_dtype": "auto", "quantization": "none"},
		{"max_num_seqs": int64(320), "max_num_batched_tokens": int64(8192), "gpu_memory_utilization": 0.9, "enable_chunked_prefill": true, "kv_cache_dtype": "auto", "quantization": "none"},
		{"max_num_seqs": int64(160), "max_num_batched_tokens": int64(16384), "gpu_memory_utilization": 0.94, "enable_chunked_prefill": true, "kv_cache_dtype": "fp8", "quantization": "none"},
		{"max_num_seqs": int64(24), "max_num_batched_tokens": int64(4096), "gpu_memory_utilization": 0.86, "enable_chunked_prefill": true, "kv_cache_dtype": "auto", "quantization": "none"},
		{"max_num_seqs": int64(448), "max_num_batched_tokens": int64(2048), "gpu_memory_utilization": 0.9, "enable_chunked_prefill": true, "kv_cache_dtype": "auto", "quantization": "none"},
	}
}

// quantiles returns 21 percentiles (0, 5, ..., 100) of a log-normal latency with median m.
func quantiles(m, sigma float64) []float64 {
	q := make([]float64, 21)
	for i := range q {
		p := float64(i) / 20
		p = math.Min(math.Max(p, 0.002), 0.998)
		q[i] = round(m*math.Exp(sigma*math.Sqrt2*math.Erfinv(2*p-1)), 2)
	}
	return q
}

func round(v float64, digits int) float64 {
	f := math.Pow(10, float64(digits))
	return math.Round(v*f) / f
}

func buildFixture(s fixtureSpec) *record.Study {
	r := rand.New(rand.NewPCG(s.seed, 42))
	slo := []workload.Bound{
		{Metric: "ttft_p99_ms", Value: 600},
		{Metric: "tpot_p99_ms", Value: 50},
		{Metric: "error_rate", Value: 0.01},
	}
	rec := &record.Study{
		Study:           s.study,
		Description:     "Interactive chat assistant on one " + s.gpu,
		Engine:          "sim",
		Model:           s.model,
		SKU:             s.sku,
		PricePerGPUHour: s.price,
		PlanHash:        fmt.Sprintf("%016x", 0x9e3779b97f4a7c15^s.seed),
		SpaceHash:       "5d41402abc4b2a76",
		Objectives: []record.Objective{
			{Name: "throughput-per-gpu", Maximize: true},
			{Name: "chat-tail", Maximize: false},
		},
		Knobs:       []string{"max_num_seqs", "max_num_batched_tokens", "gpu_memory_utilization", "enable_chunked_prefill", "kv_cache_dtype", "quantization"},
		SLOs:        map[string][]workload.Bound{"chat": slo},
		Budget:      20,
		MaxModelLen: 8192,
		EngineArgs:  []string{"--generation-config=vllm"},
		EngineEnv:   map[string]string{"HF_HUB_OFFLINE": "1", "HF_TOKEN": "REDACTED"},
	}
	start := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	for i, cfg := range fixtureConfigs() {
		seqs := float64(cfg["max_num_seqs"].(int64))
		mbt := float64(cfg["max_num_batched_tokens"].(int64))
		util := cfg["gpu_memory_utilization"].(float64)
		chunked := cfg["enable_chunked_prefill"].(bool)
		fp8kv := cfg["kv_cache_dtype"] == "fp8"
		fp8w := cfg["quantization"] == "fp8"
		t := record.Trial{Number: i, Config: cfg, Simulated: true, GPUs: 1}
		prov := &record.Provenance{
			FrontierVersion: "0.1.0",
			Model:           s.model,
			ModelHash:       "sha256:3f1c0b6e",
			PlanHash:        rec.PlanHash,
			WorkloadSeed:    1,
			Started:         start.Add(time.Duration(i) * 3 * time.Minute),
			Launch: record.Launch{
				Engine: "sim", EngineVersion: "0.13.0",
				Command:  fixtureCommand(rec, s, cfg),
				Env:      map[string]string{"HF_HUB_OFFLINE": "1", "HF_TOKEN": "REDACTED"},
				GPUNames: []string{s.gpu + " (virtual)"},
				Host:     "gpu-host-1",
			},
		}
		prov.Finished = prov.Started.Add(150 * time.Second)
		t.Provenance = prov
		switch {
		case !chunked && mbt < 8192:
			t.State = record.StateInfeasible
			t.FailureClass = record.FailInvalidArgs
			t.EngineMessage = fmt.Sprintf("ValueError: max_num_batched_tokens (%d) is smaller than max_model_len (8192). This effectively limits the maximum sequence length to max_num_batched_tokens and makes vLLM reject longer sequences. Please increase max_num_batched_tokens or decrease max_model_len.", int(mbt))
			t.Reason = "launch failed: invalid_args"
			t.GPUSeconds = 4
			t.SavedGPUSeconds = 140
			rec.Trials = append(rec.Trials, t)
			continue
		case util < 0.805 && seqs >= 128 && !fp8w:
			t.State = record.StateInfeasible
			t.FailureClass = record.FailKVCacheTooSmall
			t.EngineMessage = "ValueError: To serve at least one request with the models's max seq len (8192), (1.00 GiB KV cache is needed, which is larger than the available KV cache memory (0.62 GiB). Based on the available memory, the estimated maximum model length is 5088. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine."
			t.Reason = "launch failed: kv_cache_too_small"
			t.GPUSeconds = 38
			t.SavedGPUSeconds = 110
			rec.Trials = append(rec.Trials, t)
			continue
		case i == 19:
			t.State = record.StateFailed
			t.Reason = "workload: dataset read: open data/chat.jsonl: too many open files"
			t.GPUSeconds = 41
			rec.Trials = append(rec.Trials, t)
			continue
		}
		// A small analytic engine: throughput saturates with batch size and token budget.
		eff := 1.0
		if fp8w {
			eff *= s.fp8
		}
		if fp8kv {
			eff *= 1.08
		}
		conc := math.Min(seqs, 20+60*(util-0.75)/0.2*map[bool]float64{true: 2, false: 1}[fp8kv])
		tput := s.speed * eff * 2600 * (1 - math.Exp(-conc/90)) * (0.85 + 0.15*math.Min(mbt/8192, 1.5))
		tput *= 1 + 0.02*r.NormFloat64()
		ttftMed := 90 + 0.018*mbt + 0.7*math.Max(conc-40, 0)
		if !chunked {
			ttftMed *= 1.4
		}
		ttftMed /= s.speed
		ttftP99 := ttftMed * math.Exp(0.35*2.326)
		tpotMed := (11 + 0.09*conc + 0.0006*mbt) / (s.speed * math.Sqrt(eff))
		tpotP99 := tpotMed * math.Exp(0.3*2.326)
		errRate := 0.0
		if seqs > 400 {
			errRate = 0.004
		}
		m := map[string]float64{
			workload.Completed: 400, workload.Failed: 0, workload.Cancelled: 0, workload.ErrorRate: errRate,
			workload.DurationS:             round(400*175/tput, 2),
			workload.RequestThroughput:     round(tput/175, 3),
			workload.OutputTokenThroughput: round(tput, 1),
			workload.InputTokenThroughput:  round(tput*4.6, 1),
			workload.TotalTokenThroughput:  round(tput*5.6, 1),
			workload.Goodput:               round(tput/175*0.97, 3),
			"ttft_p50_ms":                  round(ttftMed, 1),
			"ttft_p99_ms":                  round(ttftP99, 1),
			"tpot_p50_ms":                  round(tpotMed, 2),
			"tpot_p99_ms":                  round(tpotP99, 2),
			"e2e_p99_ms":                   round(ttftP99+175*tpotP99, 0),
			workload.KVCacheUsageMax:       round(math.Min(0.35+conc/110, 0.99), 3),
			workload.Preemptions:           math.Max(0, math.Round(conc-70)),
			workload.CapacityRPS:           round(tput/175*1.1, 2),
		}
		m[workload.CostPerMillionOutput] = round(s.price/(tput*3600)*1e6, 3)
		res := &workload.Result{
			Metrics: m,
			CI:      map[string][2]float64{"ttft_p99_ms": {round(ttftP99*0.93, 1), round(ttftP99*1.08, 1)}},
			Quantiles: map[string][]float64{
				"ttft_ms": quantiles(ttftMed, 0.35),
				"tpot_ms": quantiles(tpotMed, 0.3),
				"e2e_ms":  quantiles(ttftMed+175*tpotMed, 0.35),
			},
		}
		t.Workloads = map[string]*workload.Result{"chat": res}
		total := *res
		t.Total = &total
		for k := 0; k < 30; k++ {
			x := float64(k) * 2
			t.Series = append(t.Series, workload.Sample{
				T:            x,
				KVCacheUsage: round(math.Min(m[workload.KVCacheUsageMax], m[workload.KVCacheUsageMax]*(1-math.Exp(-x/12))*(0.9+0.1*r.Float64())), 3),
				Running:      math.Round(math.Min(seqs, conc*(1-math.Exp(-x/8)))),
				Waiting:      math.Round(math.Max(0, 8*math.Sin(x/9)+4*r.Float64())),
			})
		}
		q := s.quality
		if fp8w {
			q -= 0.006
		}
		if fp8kv {
			q -= 0.002
		}
		gate := record.QualityScore{Score: round(q, 4), Baseline: s.quality, Simulated: true}
		gate.Passed = (s.quality-q)/s.quality <= 0.02
		gate.Examples = []record.QualityExample{{
			Input:     "お問い合わせ番号を教えてください。",
			Reference: "お問い合わせ番号は 12345 です。",
			Output:    "お問い合わせ番号は 12354 です。",
			Score:     0.61,
		}}
		t.Quality = map[string]record.QualityScore{"ja-support": gate}
		t.Objectives = map[string]float64{"throughput-per-gpu": round(tput, 1), "chat-tail": round(ttftP99, 1)}
		t.Capacity = record.Capacity{KVCacheTokens: int(200000 * util * map[bool]float64{true: 2, false: 1}[fp8kv]), MaxConcurrency: round(24*util*map[bool]float64{true: 2, false: 1}[fp8kv], 2)}
		t.GPUSeconds = round(m[workload.DurationS]+35, 1)
		var missed []string
		for _, b := range slo {
			if !b.Met(m[b.Metric]) {
				missed = append(missed, fmt.Sprintf("chat %s %g > %g", b.Metric, m[b.Metric], b.Value))
			}
		}
		switch {
		case len(missed) > 0 && ttftP99 > 1.3*600:
			t.State = record.StatePruned
			t.Reason = "pruned: " + missed[0] + " after 120 of 400 requests"
			t.SavedGPUSeconds = round(t.GPUSeconds*0.6, 1)
			t.GPUSeconds = round(t.GPUSeconds*0.4, 1)
			t.Series = t.Series[:12]
		case len(missed) > 0:
			t.State = record.StateInfeasible
			t.Reason = "SLO missed: " + missed[0]
		default:
			t.State = record.StateComplete
		}
		rec.Trials = append(rec.Trials, t)
	}
	// The Pareto front of the complete trials.
	for i := range rec.Trials {
		a := &rec.Trials[i]
		if a.State != record.StateComplete {
			continue
		}
		dominated := false
		for j := range rec.Trials {
			b := &rec.Trials[j]
			if i == j || b.State != record.StateComplete {
				continue
			}
			ge := b.Objectives["throughput-per-gpu"] >= a.Objectives["throughput-per-gpu"] && b.Objectives["chat-tail"] <= a.Objectives["chat-tail"]
			gt := b.Objectives["throughput-per-gpu"] > a.Objectives["throughput-per-gpu"] || b.Objectives["chat-tail"] < a.Objectives["chat-tail"]
			if ge && gt {
				dominated = true
				break
			}
		}
		if !dominated {
			a.Pareto = true
			rec.Front = append(rec.Front, a.Number)
		}
	}
	sort.Ints(rec.Front)
	return rec
}

// fixtureCommand is the command line the launcher records for a simulated trial of the
// fixture: the simulator's own flags, the plan's engine arguments, the knobs as vLLM flags,
// the model's max_model_len, and the served name, host and port of that launch.
func fixtureCommand(rec *record.Study, s fixtureSpec, cfg map[string]any) []string {
	argv := append([]string{"frontier", "sim", "serve", s.model, "--sku", s.sku}, rec.EngineArgs...)
	var settings []vllm.Setting
	for _, k := range rec.Knobs {
		settings = append(settings, vllm.Setting{Name: k, Value: cfg[k]})
	}
	line, _ := vllm.Lookup(vllm.Current)
	flags, err := vllm.KnobArgs(line, settings)
	if err != nil {
		panic(err)
	}
	argv = append(argv, flags...)
	return append(argv, "--max-model-len", strconv.Itoa(rec.MaxModelLen), "--served-model-name", s.model, "--host", "127.0.0.1", "--port", "41234")
}
