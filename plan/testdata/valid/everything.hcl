# Every block and attribute of the plan language, each with a value other than its default.
variable "model" {
  description = "the model"
  type        = string
  default     = "meta-llama/Llama-3.1-8B-Instruct"
}
variable "sizes" {
  type    = list(number)
  default = [1, 2]
}

study "everything" {
  description   = "all of it"
  trials        = 7
  sampler       = "random"
  seed          = 3
  parallel      = 2
  confirm       = 0
  warm_start    = "previous.db"
  workload_seed = 11
  prior         = false
}

model {
  name          = var.model
  architecture  = "llama-3.1-8b"
  config_json   = "../data/histories.jsonl"
  gguf          = "../data/histories.jsonl"
  max_model_len = 4096
}

engine "vllm" {
  command         = ["python", "-m", "vllm.entrypoints.openai.api_server"]
  args            = ["--enable-log-requests"]
  env             = { HF_HUB_OFFLINE = "1", HF_TOKEN = "hf_x" }
  secret_env      = ["HF_TOKEN"]
  startup_timeout = "30m"
}

hardware {
  gpus               = [0, 1]
  sku                = "h100-sxm"
  price_per_gpu_hour = 2.5
  allow_busy         = true
}

knob "tensor_parallel_size" { values = var.sizes }
knob "max_num_seqs" {
  description = "requests per batch"
  min         = 8
  max         = 256
  log         = true
}
knob "gpu_memory_utilization" {
  type = "float"
  min  = 0.8
  max  = 0.95
}
knob "kv_cache_dtype" { values = ["auto", "fp8"] }
knob "enforce_eager" { values = [false, true] }

rule "fits" {
  condition = knob.tensor_parallel_size * 80 >= 16 / var.sizes[0] && trial.gpus <= 2
  message   = "does not fit"
}
rule "sku" {
  condition = hardware.sku != "" && model.max_model_len > 0 && hardware.price_per_gpu_hour < 10
}

workload "chat" {
  description     = "interactive"
  requests        = 1000
  warmup          = 10
  input_tokens    = lognormal(800, 0.6)
  output_tokens   = normal(200, 50)
  prefix_tokens   = 100
  arrival         = gamma(8, 0.5)
  endpoint        = "chat"
  cancel_fraction = 0.1
  timeout         = "30s"
  attainment      = 0.95
  seed            = 9
  slo {
    ttft_p99                    = "600ms"
    itl_p50                     = "20ms"
    error_rate                  = 0.01
    min_output_token_throughput = 100
  }
}
workload "batch" {
  requests      = 10
  input_tokens  = uniform(10, 20)
  output_tokens = 64
  arrival       = constant(2)
}
workload "replay" {
  requests = 10
  arrival  = trace("../data/histories.jsonl")
}
workload "docs" {
  requests      = 5
  dataset       = "../data/histories.jsonl"
  output_tokens = fixed(100)
  arrival       = immediate()
}
workload "loop" {
  requests      = 5
  input_tokens  = fixed(10)
  output_tokens = fixed(10)
  arrival       = concurrency(2)
}

check "kv" {
  condition = metric.total.kv_cache_usage_max < 0.98 && metric["chat"]["goodput"] > 0
  message   = "kv full"
}

quality "judged" {
  dataset      = "../evals/ja-support.jsonl"
  scorer       = "judge"
  judge_model  = "qwen2.5:7b"
  judge_rubric = "Is the summary faithful?"
  judge_url    = "http://127.0.0.1:11434"
  samples      = 4
  min          = 0.5
  baseline     = { kv_cache_dtype = "auto", gpu_memory_utilization = 0.9 }
  max_drop     = 0.05
}

objective "per-gpu" {
  description = "throughput per GPU"
  maximize    = metric.total.output_token_throughput / trial.gpus
}
objective "quality" {
  maximize = quality.judged.score
}
objective "tail" {
  minimize = max(metric.chat.ttft_p99_ms, metric.batch.e2e_p95_ms)
}
