variable "model" {
  default = "meta-llama/Llama-3.1-8B-Instruct"
}

study "chat-8b" {
  description = "Interactive Japanese support assistant on one H100"
  trials      = 40
  sampler     = "tpe"        # tpe | cmaes | random | grid | sobol
  seed        = 1
  parallel    = 0            # trials at once; 0: as many as free GPU slots allow
}

model {
  name          = var.model              # what the engine loads and serves
  architecture  = "llama-3.1-8b"         # catalog entry, for the simulator and the pre-screen
  # config_json = "/models/llama/config.json"   # or the architecture read from a local HF config
  max_model_len = 8192
}

engine "vllm" {                          # vllm | sim | ollama
  command         = ["vllm", "serve"]    # the default for the engine
  args            = ["--enable-log-requests"]
  env             = { HF_HUB_OFFLINE = "1" }
  startup_timeout = "20m"
}

hardware {
  gpus               = "all"             # "all" | a count | a list of indices
  sku                = "h100-sxm"        # required for engine "sim"; checked against NVML otherwise
  price_per_gpu_hour = 2.50
}

knob "max_num_seqs" {
  min = 16
  max = 512
  log = true                             # whole-number bounds: an integer knob
}
knob "max_num_batched_tokens" { values = [2048, 4096, 8192, 16384] }
knob "gpu_memory_utilization" {
  min  = 0.80
  max  = 0.95
  step = 0.01
}
knob "tensor_parallel_size"   { values = [1, 2] }
knob "quantization"           { values = ["none", "fp8"] }
knob "kv_cache_dtype"         { values = ["auto", "fp8"] }
knob "enable_chunked_prefill" { values = [true, false] }

rule "budget-covers-seqs" {
  condition = knob.max_num_batched_tokens >= knob.max_num_seqs
  message   = "vLLM refuses max_num_batched_tokens below max_num_seqs"
}

workload "chat" {
  requests      = 400
  warmup        = 40
  input_tokens  = lognormal(800, 0.6)    # fixed(n) | uniform(a, b) | normal(m, sd) | lognormal(mean, sigma)
  output_tokens = uniform(50, 300)
  prefix_tokens = 200                    # a system prompt shared by every request of the class
  arrival       = poisson(8)             # req/s; constant(r) | gamma(r, burstiness) | concurrency(n) | immediate() | trace("f.jsonl")
  slo {
    ttft_p99   = "600ms"
    tpot_p99   = "40ms"
    error_rate = 0.01
  }
}

workload "summarize" {
  dataset  = "data/histories.jsonl"      # prompts from a file instead of synthetic lengths
  requests = 60
  arrival  = concurrency(4)
  slo {
    e2e_p95 = "20s"
  }
}

check "kv-headroom" {
  condition = metric.total.kv_cache_usage_max < 0.98
}

quality "ja-support" {
  dataset  = "evals/ja-support.jsonl"
  scorer   = "chrf"
  baseline = { quantization = "none", kv_cache_dtype = "auto" }
  max_drop = 0.02
}

objective "throughput-per-gpu" {
  maximize = metric.total.output_token_throughput / trial.gpus
}
objective "chat-tail" {
  minimize = metric.chat.ttft_p99_ms
}
