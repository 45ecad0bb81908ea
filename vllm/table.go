package vllm

// The flag table. Each entry is one `vllm serve` option over a range of release lines:
// since is the first line that has it ("" for every modelled line, i.e. v0.13 or earlier),
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
//	v0.21  gpu_memory_utilization 0.92 and CUDA graphs inside its budget (#38284, 2026-04-21)
//
// v0.17 for --disable-log-requests and v0.18 for --swap-space are the first releases without
// them as reported by their users (llm-d-benchmark #781: "removed from vLLM 0.17.0";
// unsloth-zoo #1210: swap_space present up to 0.17.1, absent from 0.18.0).

var kvCacheDTypes13 = []string{"auto", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc", "fp8_ds_mla"}

var kvCacheDTypes22 = []string{"auto", "float16", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc",
	"fp8_ds_mla", "nvfp4", "turboquant_k8v4", "turboquant_4bit_nc", "turboquant_k3v4_nc", "turboquant_3bit_nc"}

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
	{name: "--quantization", short: []string{"-q"}, typ: String, def: "none"},
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
	{name: "--safetensors-load-strategy", typ: String},
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
	{name: "--all2all-backend", typ: String},
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
	{name: "--kv-cache-dtype", typ: String, choices: kvCacheDTypes22, def: "auto", since: "0.14"},
	{name: "--num-gpu-blocks-override", typ: Int},
	{name: "--enable-prefix-caching", kind: BooleanOptional},
	{name: "--prefix-caching-hash-algo", typ: String, choices: []string{"sha256", "sha256_cbor", "xxhash", "xxhash_cbor"}, def: "sha256"},
	{name: "--cpu-offload-gb", typ: Float, def: 0.0},
	{name: "--calculate-kv-scales", kind: BooleanOptional, def: false},
	{name: "--kv-sharing-fast-prefill", kind: BooleanOptional, def: false},
	{name: "--mamba-cache-dtype", typ: String, def: "auto"},
	{name: "--mamba-ssm-cache-dtype", typ: String, def: "auto"},
	{name: "--mamba-block-size", typ: Int},
	{name: "--kv-offloading-size", typ: Float, since: "0.14"},
	{name: "--kv-offloading-backend", typ: String, since: "0.14"},

	// MultiModalConfig, LoRAConfig.
	{name: "--limit-mm-per-prompt", typ: JSON},
	{name: "--mm-processor-kwargs", typ: JSON},
	{name: "--mm-processor-cache-gb", typ: Float},
	{name: "--enable-lora", kind: BooleanOptional},
	{name: "--max-loras", typ: Int, def: int64(1)},
	{name: "--max-lora-rank", typ: Int, def: int64(16)},
	{name: "--max-cpu-loras", typ: Int},
	{name: "--fully-sharded-loras", kind: BooleanOptional, def: false},
	{name: "--lora-dtype", typ: String, def: "auto"},

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
	{name: "--max-num-partial-prefills", typ: Int, def: int64(1)},
	{name: "--max-long-partial-prefills", typ: Int, def: int64(1)},
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
	{name: "--disable-frontend-multiprocessing", kind: BooleanOptional, def: false},
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
}
