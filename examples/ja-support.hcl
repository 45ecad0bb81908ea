# ja-support.hcl: an interactive Japanese support assistant, with a quality gate.
#
#   frontier apply examples/ja-support.hcl
#
# Two kinds of traffic share the server: live chat, held to a tight time to first token, and
# summaries of customer histories (prompts from data/histories.jsonl). FP8 weights and an FP8
# KV cache are searched too, but a configuration only counts if its answers on the Japanese
# evaluation set (evals/ja-support.jsonl) stay within 2% of the bf16 baseline's chrF score.

variable "model" {
  default = "meta-llama/Llama-3.1-8B-Instruct"
}

study "chat-8b" {
  description = "Interactive Japanese support assistant on one H100"
  trials      = 40
  sampler     = "tpe"
  seed        = 1
  parallel    = 0 # trials at once; 0: as many as free GPU slots allow
}

model {
  name         = var.model
  architecture = "llama-3.1-8b"
  # config_json = "/models/llama/config.json"   # or read the architecture from a local HF config
  max_model_len = 8192
}

engine "vllm" {
  env             = { HF_HUB_OFFLINE = "1" }
  startup_timeout = "20m"
}

hardware {
  gpus               = "all"
  sku                = "h100-sxm"
  price_per_gpu_hour = 2.50
}

knob "max_num_seqs" {
  min = 16
  max = 512
  log = true
}
knob "max_num_batched_tokens" { values = [2048, 4096, 8192, 16384] }
knob "gpu_memory_utilization" {
  min  = 0.80
  max  = 0.95
  step = 0.01
}
knob "tensor_parallel_size" { values = [1, 2] }
knob "quantization" { values = ["none", "fp8"] }
knob "kv_cache_dtype" { values = ["auto", "fp8"] }
knob "enable_chunked_prefill" { values = [true, false] }

rule "budget-covers-seqs" {
  condition = knob.max_num_batched_tokens >= knob.max_num_seqs
  message   = "vLLM refuses max_num_batched_tokens below max_num_seqs"
}

workload "chat" {
  requests      = 1000 # a p99 needs about 1000 requests: 10 beyond it
  warmup        = 40
  input_tokens  = lognormal(800, 0.6)
  output_tokens = uniform(50, 300)
  prefix_tokens = 200 # a system prompt shared by every request of the class
  arrival       = poisson(8)
  slo {
    ttft_p99   = "600ms"
    tpot_p99   = "40ms"
    error_rate = 0.01
  }
}

workload "summarize" {
  dataset  = "data/histories.jsonl" # prompts from a file instead of synthetic lengths
  requests = 100            # a p90 needs about 100 requests: 10 beyond it
  arrival  = concurrency(4) # the first 4 requests, sent at once, are warm-up
  slo {
    e2e_p90 = "20s"
  }
}

check "kv-headroom" {
  condition = metric.total.kv_cache_usage_max < 0.98
}

quality "ja_support" {
  dataset  = "evals/ja-support.jsonl"
  scorer   = "chrf"
  baseline = { quantization = "none", kv_cache_dtype = "auto" }
  max_drop = 0.02 # at most 2% below the baseline's score
}

objective "throughput-per-gpu" {
  maximize = metric.total.output_token_throughput / trial.gpus
}

objective "chat-tail" {
  minimize = metric.chat.ttft_p99_ms
}
