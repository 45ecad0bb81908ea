package vllm

import "slices"

// The flag table. Each entry is one `vllm serve` option over a range of release lines:
// since is the first line that has it ("" for every modelled line, i.e. v0.13 or earlier; a
// line older than v0.13 for a flag that an older vLLM, modelled by v0.13, lacks),
// until the first line that no longer has it ("" for still present). A flag whose type,
// choices or default changed has one entry per range.
//
// Sources (paths are vLLM's; commits in doc.go): engine flags from EngineArgs.add_cli_args
// in vllm/engine/arg_utils.py and the config dataclasses they are generated from
// (vllm/config/{model,cache,parallel,scheduler,compilation,vllm}.py: a bool field becomes
// argparse.BooleanOptionalAction, a Literal field a choices list); frontend flags from
// FrontendArgs in vllm/entrypoints/openai/cli_args.py; `-O`, dotted keys and "_" for "-"
// from FlexibleArgumentParser in vllm/utils/argparse_utils.py.

// Release lines with dated changes (upstream PRs):
//
//	v0.14  async scheduling on by default (#27614); --max-model-len auto / -1 (#29431, 2025-12-24)
//	v0.17  --disable-log-requests removed (#35723, 2026-03-03); --performance-mode (#34936)
//	v0.18  --swap-space removed (#36216, 2026-03-07)
//	v0.19  --disable-frontend-multiprocessing removed (2026-03-20)
//	v0.21  gpu_memory_utilization 0.92 and CUDA graphs inside its budget (#38284, 2026-04-21)
//	v0.28  --max-num-partial-prefills, --max-long-partial-prefills removed (2026-07-21);
//	       --calculate-kv-scales removed (2026-08-03); GPUs of 160 GiB and more default to
//	       16384 batched tokens (#51726, 2026-08-11); --long-prefill-token-threshold must be
//	       between 0 and max_model_len
//
// A change after v0.22 is placed at v0.28, the line of the pinned commit 6adad0876, when it
// is a removal or a new rule, and at v0.23 when it is an addition (a flag or a choice): the
// lines v0.23 to v0.27 are derived, and a derived line neither refuses what the real release
// accepts nor drops what it still has. The same holds for v0.19: the removal of 2026-03-20
// falls between the v0.18 and v0.19 branches, and is placed at the later one.
//
// v0.17 for --disable-log-requests and v0.18 for --swap-space are the first releases without
// them as reported by their users (llm-d-benchmark #781: "removed from vLLM 0.17.0";
// unsloth-zoo #1210: swap_space present up to 0.17.1, absent from 0.18.0).

var kvCacheDTypes13 = []string{"auto", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc", "fp8_ds_mla"}

var kvCacheDTypes22 = []string{"auto", "float16", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc",
	"fp8_ds_mla", "fp8_per_token_head", "int8_per_token_head", "nvfp4", "turboquant_k8v4", "turboquant_4bit_nc",
	"turboquant_k3v4_nc", "turboquant_3bit_nc"}

var kvCacheDTypes28 = []string{"auto", "float16", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc",
	"fp8_ds_mla", "fp8_per_token_head", "int8_per_token_head", "int4_per_token_head", "nvfp4", "nvfp4_4over6",
	"turboquant_k8v4", "turboquant_4bit_nc", "turboquant_k3v4_nc", "turboquant_3bit_nc"}

// The methods --quantization takes. Its field is QuantizationMethods | str, so argparse takes
// any string and ModelConfig refuses the rest at startup ("Unknown quantization method: X.
// Must be one of [...]"); a method a plugin registers (register_quantization_config) is not
// listed. v0.13: QuantizationMethods in vllm/model_executor/layers/quantization/__init__.py
// L11-43 at 9187de9fac94; v0.22 and v0.28: the same Literal at 9aaf83ef502f and 6adad0876,
// by the static extraction of the flag tables. A method added between two read lines is
// taken to exist from the line after the older one, one removed to be gone from the newer
// one (as for the flags): the derived lines in between take the methods of both.
var quantization13 = []string{"awq", "deepspeedfp", "tpu_int8", "fp8", "ptpc_fp8", "fbgemm_fp8",
	"fp_quant", "modelopt", "modelopt_fp4", "bitblas", "gguf", "gptq_marlin_24", "gptq_marlin",
	"gptq_bitblas", "awq_marlin", "gptq", "compressed-tensors", "bitsandbytes", "hqq", "experts_int8",
	"ipex", "quark", "moe_wna16", "torchao", "auto-round", "rtn", "inc", "mxfp4", "petit_nvfp4",
	"cpu_gptq", "cpu_awq"}

var quantization22 = []string{"auto_gptq", "awq", "awq_marlin", "bitsandbytes", "compressed-tensors", "cpu_awq",
	"deepseek_v4_fp8", "experts_int8", "fbgemm_fp8", "fp8", "fp8_per_block", "fp8_per_tensor", "fp_quant", "gguf",
	"gpt_oss_mxfp4", "gptq", "gptq_marlin", "humming", "inc", "int8_per_channel_weight_only", "modelopt",
	"modelopt_fp4", "modelopt_mixed", "modelopt_mxfp8", "moe_wna16", "mxfp4", "mxfp8", "online", "quark", "torchao"}

var quantization28 = []string{"auto_awq", "auto_gptq", "awq", "awq_marlin", "compressed-tensors",
	"deepseek_v4_fp8", "experts_int8", "fbgemm_fp8", "fp8", "fp8_per_block", "fp8_per_channel", "fp8_per_tensor",
	"fp_quant", "gpt_oss_mxfp4", "gptq", "gptq_marlin", "humming", "inc", "int8_per_channel_weight_only", "modelopt",
	"modelopt_fp4", "modelopt_mixed", "modelopt_mxfp8", "moe_wna16", "mxfp4", "mxfp8", "nvfp4_per_token", "online",
	"quark", "torchao"}

// union is a's values, then b's that a lacks.
func union(a, b []string) []string {
	out := append([]string(nil), a...)
	for _, x := range b {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// Choices the first reading of v0.22 missed, read again from the static extraction of every
// add_argument call and config field at 9aaf83ef502f (v0.22) and 6adad0876 (v0.28): the
// Literal types of --mamba-cache-dtype and --mamba-ssm-cache-dtype (MambaDType), --lora-dtype,
// --max-lora-rank (MaxLoRARanks), --all2all-backend and, at v0.28 only,
// --safetensors-load-strategy. Whether the lines before v0.22 had them was not read: they
// take any value there, so that a derived line never refuses what the real release accepts;
// a choice list new after v0.22 is a new rule and placed at v0.28, a choice added to one at
// v0.23 (as for the flags).
var mambaDTypes = []string{"auto", "float32", "float16", "bfloat16"}

var all2all22 = []string{"naive", "pplx", "deepep_high_throughput", "deepep_low_latency", "mori", "nixl_ep",
	"allgather_reducescatter", "flashinfer_all2allv", "flashinfer_nvlink_one_sided", "flashinfer_nvlink_two_sided"}

var all2all28 = []string{"naive", "pplx", "deepep_high_throughput", "deepep_low_latency", "deepep_v2",
	"mori_high_throughput", "mori_low_latency", "nixl_ep", "allgather_reducescatter", "flashinfer_all2allv",
	"flashinfer_nvlink_one_sided", "flashinfer_nvlink_two_sided"}

var dtypes = []string{"auto", "half", "float16", "bfloat16", "float", "float32"}

var flagTable = []spec{
	// ModelConfig.
	{name: "--model", typ: String},
	{name: "--runner", typ: String, choices: []string{"auto", "generate", "pooling", "draft"}, def: "auto"},
	{name: "--convert", typ: String, choices: []string{"auto", "none", "embed", "classify", "reward", "mm_encoder_only"}, def: "auto"},
	{name: "--tokenizer", typ: String},
	{name: "--tokenizer-mode", typ: String, def: "auto"},
	{name: "--trust-remote-code", kind: BooleanOptional, def: false},
	{name: "--dtype", typ: String, choices: dtypes, def: "auto"},
	{name: "--seed", typ: Int, def: int64(0)},
	{name: "--hf-config-path", typ: String},
	{name: "--allowed-local-media-path", typ: String},
	{name: "--allowed-media-domains", typ: String, nargs: "+"},
	{name: "--revision", typ: String},
	{name: "--code-revision", typ: String},
	{name: "--tokenizer-revision", typ: String},
	{name: "--max-model-len", typ: HumanInt, until: "0.14"},
	{name: "--max-model-len", typ: HumanIntOrAuto, since: "0.14"},
	{name: "--quantization", short: []string{"-q"}, typ: String, def: "none", valid: quantization13, until: "0.14"},
	{name: "--quantization", short: []string{"-q"}, typ: String, def: "none", valid: union(quantization13, quantization22), since: "0.14", until: "0.22"},
	{name: "--quantization", short: []string{"-q"}, typ: String, def: "none", valid: quantization22, since: "0.22", until: "0.23"},
	{name: "--quantization", short: []string{"-q"}, typ: String, def: "none", valid: union(quantization22, quantization28), since: "0.23", until: "0.28"},
	{name: "--quantization", short: []string{"-q"}, typ: String, def: "none", valid: quantization28, since: "0.28"},
	{name: "--allow-deprecated-quantization", kind: BooleanOptional, def: false, since: "0.14"},
	{name: "--enforce-eager", kind: BooleanOptional, def: false},
	{name: "--max-logprobs", typ: Int, def: int64(20)},
	{name: "--logprobs-mode", typ: String, choices: []string{"raw_logprobs", "raw_logits", "processed_logprobs", "processed_logits"}, def: "raw_logprobs"},
	{name: "--disable-sliding-window", kind: BooleanOptional, def: false},
	{name: "--disable-cascade-attn", kind: BooleanOptional, def: false},
	{name: "--skip-tokenizer-init", kind: BooleanOptional, def: false},
	{name: "--enable-prompt-embeds", kind: BooleanOptional, def: false},
	{name: "--served-model-name", typ: String, nargs: "+"},
	{name: "--config-format", typ: String, def: "auto"},
	{name: "--hf-token", typ: String, nargs: "?"},
	{name: "--hf-overrides", typ: JSON},
	{name: "--pooler-config", typ: JSON},
	{name: "--generation-config", typ: String, def: "auto"},
	{name: "--override-generation-config", typ: JSON},
	{name: "--enable-sleep-mode", kind: BooleanOptional, def: false},
	{name: "--model-impl", typ: String, def: "auto"},
	{name: "--override-attention-dtype", typ: String},
	{name: "--logits-processors", typ: String, nargs: "+"},
	{name: "--io-processor-plugin", typ: String},
	{name: "--renderer-num-workers", typ: Int, since: "0.14"},
	{name: "--enable-return-routed-experts", kind: BooleanOptional, def: false, since: "0.14"},

	// LoadConfig.
	{name: "--load-format", typ: String, def: "auto"},
	{name: "--download-dir", typ: String},
	{name: "--safetensors-load-strategy", typ: String, until: "0.28"},
	{name: "--safetensors-load-strategy", typ: String, choices: []string{"eager", "lazy", "prefetch", "torchao", "None"}, since: "0.28"},
	{name: "--model-loader-extra-config", typ: JSON},
	{name: "--ignore-patterns", typ: String, nargs: "+"},
	{name: "--use-tqdm-on-load", kind: BooleanOptional, def: true},
	{name: "--pt-load-map-location", typ: String},

	// Attention, structured outputs.
	{name: "--attention-backend", typ: String},
	{name: "--reasoning-parser", typ: String},
	{name: "--reasoning-parser-plugin", typ: String},

	// ParallelConfig.
	{name: "--distributed-executor-backend", typ: String, choices: []string{"ray", "mp", "uni", "external_launcher"}},
	{name: "--pipeline-parallel-size", short: []string{"-pp"}, typ: Int, def: int64(1)},
	{name: "--master-addr", typ: String, def: "127.0.0.1"},
	{name: "--master-port", typ: Int, def: int64(29501)},
	{name: "--nnodes", short: []string{"-n"}, typ: Int, def: int64(1)},
	{name: "--node-rank", short: []string{"-r"}, typ: Int, def: int64(0)},
	{name: "--tensor-parallel-size", short: []string{"-tp"}, typ: Int, def: int64(1)},
	{name: "--decode-context-parallel-size", short: []string{"-dcp"}, typ: Int, def: int64(1)},
	{name: "--prefill-context-parallel-size", short: []string{"-pcp"}, typ: Int, def: int64(1), since: "0.14"},
	{name: "--data-parallel-size", short: []string{"-dp"}, typ: Int, def: int64(1)},
	{name: "--data-parallel-rank", short: []string{"-dpn"}, typ: Int},
	{name: "--data-parallel-start-rank", short: []string{"-dpr"}, typ: Int},
	{name: "--data-parallel-size-local", short: []string{"-dpl"}, typ: Int},
	{name: "--data-parallel-address", short: []string{"-dpa"}, typ: String},
	{name: "--data-parallel-rpc-port", short: []string{"-dpp"}, typ: Int},
	{name: "--data-parallel-backend", short: []string{"-dpb"}, typ: String, def: "mp"},
	{name: "--data-parallel-hybrid-lb", short: []string{"-dph"}, kind: BooleanOptional, def: false},
	{name: "--data-parallel-external-lb", short: []string{"-dpe"}, kind: BooleanOptional, def: false},
	{name: "--enable-expert-parallel", short: []string{"-ep"}, kind: BooleanOptional, def: false},
	{name: "--all2all-backend", typ: String, until: "0.22"},
	{name: "--all2all-backend", typ: String, choices: all2all22, def: "allgather_reducescatter", since: "0.22", until: "0.23"},
	{name: "--all2all-backend", typ: String, choices: union(all2all22, all2all28), def: "allgather_reducescatter", since: "0.23", until: "0.28"},
	{name: "--all2all-backend", typ: String, choices: all2all28, def: "allgather_reducescatter", since: "0.28"},
	{name: "--enable-dbo", kind: BooleanOptional, def: false},
	{name: "--enable-eplb", kind: BooleanOptional, def: false},
	{name: "--eplb-config", typ: JSON},
	{name: "--expert-placement-strategy", typ: String, choices: []string{"linear", "round_robin"}, def: "linear"},
	{name: "--max-parallel-loading-workers", typ: Int},
	{name: "--ray-workers-use-nsight", kind: BooleanOptional, def: false},
	{name: "--disable-custom-all-reduce", kind: BooleanOptional, def: false},
	{name: "--worker-cls", typ: String, def: "auto"},
	{name: "--worker-extension-cls", typ: String, def: ""},

	// CacheConfig.
	{name: "--block-size", typ: Int, choices: []string{"1", "8", "16", "32", "64", "128", "256"}, until: "0.14"},
	{name: "--block-size", typ: Int, since: "0.14"},
	{name: "--gpu-memory-utilization", typ: Float, def: 0.9, until: "0.21"},
	{name: "--gpu-memory-utilization", typ: Float, def: 0.92, since: "0.21"},
	{name: "--kv-cache-memory-bytes", typ: HumanInt},
	{name: "--swap-space", typ: Float, def: 4.0, until: "0.18", note: "V1 never used it: it preempts by recomputing"},
	{name: "--kv-cache-dtype", typ: String, choices: kvCacheDTypes13, def: "auto", until: "0.14"},
	{name: "--kv-cache-dtype", typ: String, choices: kvCacheDTypes22, def: "auto", since: "0.14", until: "0.23"},
	{name: "--kv-cache-dtype", typ: String, choices: kvCacheDTypes28, def: "auto", since: "0.23"},
	{name: "--num-gpu-blocks-override", typ: Int},
	{name: "--enable-prefix-caching", kind: BooleanOptional},
	{name: "--prefix-caching-hash-algo", typ: String, choices: []string{"sha256", "sha256_cbor", "xxhash", "xxhash_cbor"}, def: "sha256"},
	{name: "--cpu-offload-gb", typ: Float, def: 0.0},
	{name: "--calculate-kv-scales", kind: BooleanOptional, def: false, until: "0.28",
		note: "removed upstream on 2026-08-03: the scales come from the checkpoint"},
	{name: "--kv-sharing-fast-prefill", kind: BooleanOptional, def: false},
	{name: "--mamba-cache-dtype", typ: String, def: "auto", until: "0.22"},
	{name: "--mamba-cache-dtype", typ: String, choices: mambaDTypes, def: "auto", since: "0.22"},
	{name: "--mamba-ssm-cache-dtype", typ: String, def: "auto", until: "0.22"},
	{name: "--mamba-ssm-cache-dtype", typ: String, choices: mambaDTypes, def: "auto", since: "0.22"},
	{name: "--mamba-block-size", typ: Int},
	// KV offloading to CPU memory (#27621, after the RFC #26858 of 2025-10-15, so after
	// v0.11.0 of 2 Oct 2025): the v0.12 line is the first with it, older than the oldest
	// table, so a vLLM 0.11 or older that a plan names refuses it (Version.Check). Up to v0.13
	// the backend has no default and offloads only when both are given ("You must set
	// kv_offloading_size when kv_offloading_backend is set"); from #32421 (merged 2026-01-15,
	// for v0.14) it defaults to native and the size alone turns offloading on.
	{name: "--kv-offloading-size", typ: Float, since: "0.12"},
	{name: "--kv-offloading-backend", typ: String, choices: []string{"native", "lmcache"}, since: "0.12", until: "0.14"},
	{name: "--kv-offloading-backend", typ: String, choices: []string{"native", "lmcache"}, def: "native", since: "0.14"},

	// MultiModalConfig, LoRAConfig.
	{name: "--limit-mm-per-prompt", typ: JSON},
	{name: "--mm-processor-kwargs", typ: JSON},
	{name: "--mm-processor-cache-gb", typ: Float},
	{name: "--enable-lora", kind: BooleanOptional},
	{name: "--max-loras", typ: Int, def: int64(1)},
	{name: "--max-lora-rank", typ: Int, def: int64(16), until: "0.22"},
	{name: "--max-lora-rank", typ: Int, choices: []string{"1", "8", "16", "32", "64", "128", "256", "320", "512"}, def: int64(16), since: "0.22"},
	{name: "--max-cpu-loras", typ: Int},
	{name: "--fully-sharded-loras", kind: BooleanOptional, def: false},
	{name: "--lora-dtype", typ: String, def: "auto", until: "0.22"},
	{name: "--lora-dtype", typ: String, choices: []string{"auto", "float16", "bfloat16"}, def: "auto", since: "0.22"},

	// ObservabilityConfig.
	{name: "--show-hidden-metrics-for-version", typ: String},
	{name: "--otlp-traces-endpoint", typ: String},
	{name: "--collect-detailed-traces", typ: String},
	{name: "--kv-cache-metrics", kind: BooleanOptional, def: false},
	{name: "--kv-cache-metrics-sample", typ: Float},
	{name: "--cudagraph-metrics", kind: BooleanOptional, def: false},
	{name: "--enable-mfu-metrics", kind: BooleanOptional, def: false, since: "0.14"},
	{name: "--enable-logging-iteration-details", kind: BooleanOptional, def: false, since: "0.14"},

	// SchedulerConfig.
	{name: "--max-num-batched-tokens", typ: HumanInt},
	{name: "--max-num-seqs", typ: Int},
	{name: "--max-num-partial-prefills", typ: Int, def: int64(1), until: "0.28",
		note: "removed upstream on 2026-07-21 with concurrent partial prefills"},
	{name: "--max-long-partial-prefills", typ: Int, def: int64(1), until: "0.28",
		note: "removed upstream on 2026-07-21 with concurrent partial prefills"},
	{name: "--long-prefill-token-threshold", typ: Int, def: int64(0)},
	{name: "--scheduling-policy", typ: String, choices: []string{"fcfs", "priority"}, def: "fcfs"},
	{name: "--enable-chunked-prefill", kind: BooleanOptional},
	{name: "--disable-chunked-mm-input", kind: BooleanOptional, def: false},
	{name: "--scheduler-cls", typ: String},
	{name: "--scheduler-reserve-full-isl", kind: BooleanOptional, def: true, since: "0.14"},
	{name: "--disable-hybrid-kv-cache-manager", kind: BooleanOptional},
	{name: "--async-scheduling", kind: BooleanOptional, def: false, until: "0.14"},
	{name: "--async-scheduling", kind: BooleanOptional, def: true, since: "0.14"},
	{name: "--stream-interval", typ: Int, def: int64(1)},
	{name: "--num-scheduler-steps", typ: Int, until: "0.11", note: "multi-step scheduling was a V0 feature"},
	{name: "--max-seq-len-to-capture", typ: Int, until: "0.11", replacement: "--max-cudagraph-capture-size"},

	// CompilationConfig shortcuts.
	{name: "--cudagraph-capture-sizes", typ: Int, nargs: "+"},
	{name: "--max-cudagraph-capture-size", typ: Int},

	// VllmConfig.
	{name: "--speculative-config", short: []string{"-sc"}, typ: JSON},
	{name: "--kv-transfer-config", typ: JSON},
	{name: "--kv-events-config", typ: JSON},
	{name: "--ec-transfer-config", typ: JSON},
	{name: "--compilation-config", short: []string{"-cc"}, typ: JSON},
	{name: "--attention-config", short: []string{"-ac"}, typ: JSON, since: "0.14"},
	{name: "--kernel-config", typ: JSON, since: "0.14"},
	{name: "--additional-config", typ: JSON},
	{name: "--structured-outputs-config", typ: JSON},
	{name: "--profiler-config", typ: JSON, since: "0.14"},
	{name: "--optimization-level", short: []string{"-O"}, typ: Int, choices: []string{"0", "1", "2", "3"}, def: int64(2)},
	{name: "--performance-mode", typ: String, choices: []string{"balanced", "interactivity", "throughput"}, def: "balanced", since: "0.17"},

	// Other engine arguments.
	{name: "--disable-log-stats", kind: StoreTrue, def: false},
	{name: "--aggregate-engine-logging", kind: StoreTrue, def: false},
	{name: "--enable-log-requests", kind: BooleanOptional, def: false},
	{name: "--disable-log-requests", kind: StoreTrue, until: "0.17", replacement: "--enable-log-requests",
		note: "requests are not logged unless --enable-log-requests is given"},
	{name: "--shutdown-timeout", typ: Int, def: int64(0), since: "0.14"},

	// FrontendArgs (vllm/entrypoints/openai/cli_args.py) and the serve subcommand.
	{name: "--host", typ: String},
	{name: "--port", typ: Int, def: int64(8000)},
	{name: "--uds", typ: String},
	{name: "--uvicorn-log-level", typ: String, choices: []string{"critical", "error", "warning", "info", "debug", "trace"}, def: "info"},
	{name: "--disable-uvicorn-access-log", kind: BooleanOptional, def: false},
	{name: "--disable-access-log-for-endpoints", typ: String, since: "0.14"},
	{name: "--allow-credentials", kind: BooleanOptional, def: false},
	{name: "--allowed-origins", typ: JSON},
	{name: "--allowed-methods", typ: JSON},
	{name: "--allowed-headers", typ: JSON},
	{name: "--api-key", typ: String, nargs: "+"},
	{name: "--lora-modules", typ: String, nargs: "+"},
	{name: "--chat-template", typ: String},
	{name: "--chat-template-content-format", typ: String, choices: []string{"auto", "string", "openai"}, def: "auto"},
	{name: "--trust-request-chat-template", kind: BooleanOptional, def: false},
	{name: "--default-chat-template-kwargs", typ: JSON, since: "0.14"},
	{name: "--response-role", typ: String, def: "assistant"},
	{name: "--ssl-keyfile", typ: String},
	{name: "--ssl-certfile", typ: String},
	{name: "--ssl-ca-certs", typ: String},
	{name: "--enable-ssl-refresh", kind: BooleanOptional, def: false},
	{name: "--ssl-cert-reqs", typ: Int, def: int64(0)},
	{name: "--root-path", typ: String},
	{name: "--middleware", typ: String, nargs: "+"},
	{name: "--return-tokens-as-token-ids", kind: BooleanOptional, def: false},
	{name: "--disable-frontend-multiprocessing", kind: BooleanOptional, def: false, until: "0.19",
		note: "removed upstream on 2026-03-20: the API server and the engine core always run as separate processes"},
	{name: "--enable-request-id-headers", kind: BooleanOptional, def: false},
	{name: "--enable-auto-tool-choice", kind: BooleanOptional, def: false},
	{name: "--exclude-tools-when-tool-choice-none", kind: BooleanOptional, def: false},
	{name: "--tool-call-parser", typ: String},
	{name: "--tool-parser-plugin", typ: String, def: ""},
	{name: "--tool-server", typ: String},
	{name: "--log-config-file", typ: String},
	{name: "--max-log-len", typ: Int},
	{name: "--disable-fastapi-docs", kind: BooleanOptional, def: false},
	{name: "--enable-prompt-tokens-details", kind: BooleanOptional, def: false},
	{name: "--enable-server-load-tracking", kind: BooleanOptional, def: false},
	{name: "--enable-force-include-usage", kind: BooleanOptional, def: false},
	{name: "--enable-tokenizer-info-endpoint", kind: BooleanOptional, def: false},
	{name: "--enable-log-outputs", kind: BooleanOptional, def: false},
	{name: "--log-error-stack", kind: BooleanOptional, def: false},
	{name: "--h11-max-incomplete-event-size", typ: Int},
	{name: "--h11-max-header-count", typ: Int},
	{name: "--tokens-only", kind: BooleanOptional, def: false, since: "0.14"},
	{name: "--headless", kind: StoreTrue, def: false},
	{name: "--api-server-count", short: []string{"-asc"}, typ: Int},
	{name: "--config", typ: String},

	// Flags of the v0.22 commit (9aaf83ef502f) that the first reading missed, read again from
	// the same source (engine, config and frontend arguments alike). Their first release was
	// not pinned: as for every flag newer than v0.13, they are taken to exist from v0.14.
	{name: "--cp-kv-cache-interleave-size", typ: Int, def: int64(1), since: "0.14"},
	{name: "--cpu-offload-params", typ: String, nargs: "+", since: "0.14"},
	{name: "--dbo-decode-token-threshold", typ: Int, def: int64(32), since: "0.14"},
	{name: "--dbo-prefill-token-threshold", typ: Int, def: int64(512), since: "0.14"},
	{name: "--dcp-comm-backend", typ: String, choices: []string{"a2a", "ag_rs"}, def: "ag_rs", since: "0.14"},
	{name: "--dcp-kv-cache-interleave-size", typ: Int, def: int64(1), since: "0.14"},
	{name: "--default-mm-loras", typ: JSON, since: "0.14"},
	{name: "--disable-nccl-for-dp-synchronization", kind: BooleanOptional, since: "0.14"},
	{name: "--distributed-timeout-seconds", typ: Int, since: "0.14"},
	{name: "--enable-elastic-ep", kind: BooleanOptional, def: false, since: "0.14"},
	{name: "--enable-ep-weight-filter", kind: BooleanOptional, def: false, since: "0.14"},
	{name: "--enable-flash-late-interaction", kind: BooleanOptional, def: true, since: "0.14"},
	{name: "--enable-flashinfer-autotune", kind: BooleanOptional, since: "0.14"},
	{name: "--enable-layerwise-nvtx-tracing", kind: BooleanOptional, def: false, since: "0.14"},
	{name: "--enable-log-deltas", kind: BooleanOptional, def: true, since: "0.14"},
	{name: "--enable-mamba-cache-stochastic-rounding", kind: BooleanOptional, def: false, since: "0.14"},
	{name: "--enable-mixed-moe-lora-format", kind: BooleanOptional, def: false, since: "0.14"},
	{name: "--enable-mm-embeds", kind: BooleanOptional, def: false, since: "0.14"},
	{name: "--enable-offline-docs", kind: BooleanOptional, def: false, since: "0.14"},
	{name: "--enable-tower-connector-lora", kind: BooleanOptional, def: false, since: "0.14"},
	{name: "--fail-on-environ-validation", kind: BooleanOptional, def: false, since: "0.14"},
	{name: "--fingerprint-mode", typ: String, choices: []string{"custom", "full", "hash", "none"}, def: "full", since: "0.14"},
	{name: "--fingerprint-value", typ: String, since: "0.14"},
	{name: "--gdn-prefill-backend", typ: String, choices: []string{"flashinfer", "triton"}, since: "0.14", until: "0.23"},
	{name: "--gdn-prefill-backend", typ: String, choices: []string{"flashinfer", "triton", "cutedsl"}, since: "0.23"},
	{name: "--grpc", kind: StoreTrue, def: false, since: "0.14"},
	{name: "--interleave-mm-strings", kind: BooleanOptional, def: false, since: "0.14"},
	{name: "--ir-op-priority", typ: JSON, since: "0.14"},
	{name: "--kv-cache-dtype-skip-layers", typ: String, nargs: "+", since: "0.14"},
	{name: "--language-model-only", kind: BooleanOptional, def: false, since: "0.14"},
	{name: "--linear-backend", typ: String, since: "0.14"},
	{name: "--lora-target-modules", typ: String, nargs: "+", since: "0.14"},
	{name: "--mamba-backend", typ: String, def: "triton", since: "0.14"},
	{name: "--mamba-cache-mode", typ: String, choices: []string{"align", "all", "none"}, def: "none", since: "0.14"},
	{name: "--mamba-cache-philox-rounds", typ: Int, def: int64(0), since: "0.14"},
	{name: "--media-io-kwargs", typ: JSON, since: "0.14"},
	{name: "--mm-encoder-attn-backend", typ: String, since: "0.14"},
	{name: "--mm-encoder-attn-dtype", typ: String, choices: []string{"fp8", "None"}, since: "0.14"},
	{name: "--mm-encoder-fp8-scale-path", typ: String, since: "0.14"},
	{name: "--mm-encoder-fp8-scale-save-margin", typ: Float, def: 1.5, since: "0.14"},
	{name: "--mm-encoder-fp8-scale-save-path", typ: String, since: "0.14"},
	{name: "--mm-encoder-only", kind: BooleanOptional, def: false, since: "0.14"},
	{name: "--mm-encoder-tp-mode", typ: String, choices: []string{"data", "weights"}, def: "weights", since: "0.14"},
	{name: "--mm-processor-cache-type", typ: String, choices: []string{"lru", "shm"}, def: "lru", since: "0.14"},
	{name: "--mm-shm-cache-max-object-size-mb", typ: Int, def: int64(128), since: "0.14"},
	{name: "--mm-tensor-ipc", typ: String, choices: []string{"direct_rpc", "torch_shm"}, def: "direct_rpc", since: "0.14"},
	{name: "--moe-backend", typ: String, since: "0.14"},
	{name: "--numa-bind", kind: BooleanOptional, def: false, since: "0.14"},
	{name: "--numa-bind-cpus", typ: String, nargs: "+", since: "0.14"},
	{name: "--numa-bind-nodes", typ: String, nargs: "+", since: "0.14"},
	{name: "--offload-backend", typ: String, choices: []string{"auto", "prefetch", "uva"}, def: "auto", since: "0.14"},
	{name: "--offload-group-size", typ: Int, def: int64(0), since: "0.14"},
	{name: "--offload-num-in-group", typ: Int, def: int64(1), since: "0.14"},
	{name: "--offload-params", typ: String, nargs: "+", since: "0.14"},
	{name: "--offload-prefetch-step", typ: Int, def: int64(1), since: "0.14"},
	{name: "--quantization-config", typ: JSON, since: "0.14"},
	{name: "--reasoning-config", typ: JSON, since: "0.14"},
	{name: "--safetensors-prefetch-block-size", typ: Int, since: "0.14"},
	{name: "--safetensors-prefetch-num-threads", typ: Int, since: "0.14"},
	{name: "--skip-mm-profiling", kind: BooleanOptional, def: false, since: "0.14"},
	{name: "--spec-method", typ: String, choices: []string{"custom_class", "draft_model", "medusa", "mlp_speculator", "ngram", "suffix", "None"}, since: "0.14"},
	{name: "--spec-model", typ: String, since: "0.14"},
	{name: "--spec-tokens", typ: Int, since: "0.14"},
	{name: "--specialize-active-lora", kind: BooleanOptional, def: false, since: "0.14"},
	{name: "--ssl-ciphers", typ: String, since: "0.14"},
	{name: "--ubatch-size", typ: Int, def: int64(0), since: "0.14"},
	{name: "--use-fp64-gumbel", kind: BooleanOptional, def: false, since: "0.14"},
	{name: "--video-pruning-rate", typ: Float, since: "0.14"},
	{name: "--weight-transfer-config", typ: JSON, since: "0.14"},

	// Added upstream between the v0.22 commit and the v0.28 commit (6adad0876, 2026-08-14). The
	// release each first shipped in is not pinned: they are taken to exist from v0.23, the first
	// line after v0.22, so that a derived line never refuses a flag the real release accepts.
	{name: "--cohere-format", typ: String, def: "cmd4", since: "0.23"},
	{name: "--cohere-is-reasoning-model", kind: BooleanOptional, def: true, since: "0.23"},
	{name: "--cpu-distributed-timeout-seconds", typ: Int, since: "0.23"},
	{name: "--data-parallel-multi-port-external-lb", short: []string{"-dpm"}, kind: StoreTrue, def: false, since: "0.23"},
	{name: "--data-parallel-supervisor-port", typ: Int, def: int64(9256), since: "0.23"},
	{name: "--device-ids", typ: String, since: "0.23"},
	{name: "--diffusion-config", short: []string{"-dc"}, typ: JSON, since: "0.23"},
	{name: "--dp-supervisor-probe-failure-threshold", typ: Int, def: int64(3), since: "0.23"},
	{name: "--dp-supervisor-probe-interval-s", typ: Float, def: 5.0, since: "0.23"},
	{name: "--dp-supervisor-probe-timeout-s", typ: Float, def: 5.0, since: "0.23"},
	{name: "--ec-manager-config", typ: JSON, since: "0.23"},
	{name: "--enable-bf16x3-router-gemm", kind: BooleanOptional, def: false, since: "0.23"},
	{name: "--enable-cumem-allocator", kind: BooleanOptional, def: false, since: "0.23"},
	{name: "--enable-fault-tolerance", kind: BooleanOptional, def: false, since: "0.23"},
	{name: "--enable-moe-shared-loras", kind: BooleanOptional, def: false, since: "0.23"},
	{name: "--enable-per-request-metrics", kind: BooleanOptional, def: false, since: "0.23"},
	{name: "--fault-tolerance-config", typ: JSON, since: "0.23"},
	{name: "--jit-monitor-mode", typ: String, choices: []string{"error", "warn"}, def: "warn", since: "0.23"},
	{name: "--jit-monitor-verbose", kind: BooleanOptional, def: false, since: "0.23"},
	{name: "--kda-prefill-backend", typ: String, choices: []string{"auto", "triton", "flashkda"}, since: "0.23"},
	{name: "--mamba-ssu-algorithm", typ: String, choices: []string{"auto", "horizontal", "simple", "vertical", "None"}, since: "0.23"},
	{name: "--max-num-scheduled-tokens", typ: HumanInt, since: "0.23"},
	{name: "--mm-device-do-normalize", kind: BooleanOptional, since: "0.23"},
	{name: "--mm-hasher-algorithm", typ: String, choices: []string{"blake3", "sha256", "sha512"}, since: "0.23"},
	{name: "--mm-ipc-gpu-memory-gb", typ: Float, def: int64(0), since: "0.23"},
	{name: "--mm-processor-device", typ: String, since: "0.23"}, // its choices depend on the platform
	{name: "--model-class-overrides", typ: JSON, since: "0.23"},
	{name: "--prefill-schedule-interval", typ: Int, def: int64(1), since: "0.23"},
	{name: "--prefix-match-unit", typ: Int, since: "0.23"},
	{name: "--replayssm-buffer-len", typ: Int, def: int64(16), since: "0.23"},
	{name: "--return-sampling-mask", kind: BooleanOptional, def: false, since: "0.23"},
	{name: "--use-replayssm", kind: BooleanOptional, def: false, since: "0.23"},
	{name: "--video-pruning-method", typ: String, choices: []string{"evs", "vidcom2"}, def: "evs", since: "0.23"},
	{name: "--watermark", typ: Float, def: 0.0, since: "0.23"},
}
