# vllm-chat.hcl: tune a real vLLM serving a chat model on one GPU.
#
#   frontier apply examples/vllm-chat.hcl
#   frontier export examples/vllm-chat.hcl --trial N --format vllm-args
#
# Needs vllm on the PATH and one NVIDIA GPU. Each trial starts `vllm serve` with one
# configuration, sends the chat workload, and stops it; a configuration that fails to start
# (out of memory, an invalid combination) is recorded as infeasible with vLLM's own message.

study "vllm-chat" {
  description = "Llama 3.1 8B Instruct on one GPU, chat traffic"
  trials      = 40
  seed        = 7
}

model {
  name          = "meta-llama/Llama-3.1-8B-Instruct"
  architecture  = "llama-3.1-8b" # for the memory pre-screen
  max_model_len = 8192
}

engine "vllm" {
  # command      = ["vllm", "serve"]               # the default
  args            = ["--generation-config", "vllm"]
  env             = { HF_HUB_OFFLINE = "1" }       # weights already in the cache
  secret_env      = ["HF_TOKEN"]                   # passed through, never recorded
  startup_timeout = "15m"
}

hardware {
  gpus               = [0]        # "all" | a count | a list of indices
  sku                = "h100-sxm" # checked against what NVML reports
  price_per_gpu_hour = 2.50
}

knob "max_num_seqs" {
  min = 16
  max = 512
  log = true # whole-number bounds: an integer knob, searched on a log scale
}
knob "max_num_batched_tokens" { values = [2048, 4096, 8192, 16384] }
knob "gpu_memory_utilization" {
  min  = 0.85
  max  = 0.95
  step = 0.01 # 0.85, 0.86, ... 0.95
}
knob "enable_prefix_caching" { values = [true, false] }
knob "kv_cache_dtype" { values = ["auto", "fp8"] }

rule "budget-covers-seqs" {
  condition = knob.max_num_batched_tokens >= knob.max_num_seqs
  message   = "vLLM refuses max_num_batched_tokens below max_num_seqs"
}

workload "chat" {
  endpoint      = "chat" # /v1/chat/completions
  requests      = 1000 # a p99 needs about 1000 requests: 10 beyond it
  warmup        = 50
  input_tokens  = lognormal(1200, 0.7)
  output_tokens = lognormal(250, 0.5)
  prefix_tokens = 400            # the system prompt every conversation shares
  arrival       = gamma(12, 0.5) # 12 req/s, burstier than Poisson
  timeout       = "60s"
  slo {
    ttft_p99   = "800ms"
    tpot_p99   = "50ms"
    error_rate = 0.005
  }
}

# A configuration whose KV cache is nearly full serves today's traffic but not tomorrow's.
check "kv-headroom" {
  condition = metric.total.kv_cache_usage_max < 0.95
  message   = "the KV cache was more than 95% full"
}

objective "goodput" {
  maximize = metric.chat.goodput
}

objective "cost" {
  minimize = metric.total.cost_per_million_output_tokens
}
