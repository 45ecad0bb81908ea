# The small study of estimate.hcl with a quality gate against a baseline configuration.
variable "trials" {
  default = 12
}
variable "ttft" {
  default = "2s"
}
variable "sampler" {
  default = "tpe"
}
variable "confirm" {
  default = 1
}
variable "gmu_max" {
  default = 0.95
}

study "quality" {
  trials  = var.trials
  sampler = var.sampler
  seed    = 7
  confirm = var.confirm
}

model {
  name          = "meta-llama/Llama-3.1-8B-Instruct"
  architecture  = "llama-3.1-8b"
  max_model_len = 4096
}

engine "sim" {}

hardware {
  gpus               = 2
  sku                = "l40s"
  price_per_gpu_hour = 1.0
}

knob "max_num_seqs" { values = [8, 16, 32, 64, 128, 256] }
knob "max_num_batched_tokens" { values = [512, 1024, 2048, 4096, 8192] }
knob "gpu_memory_utilization" {
  min  = 0.5
  max  = var.gmu_max
  step = 0.05
}
knob "kv_cache_dtype" { values = ["auto", "fp8"] }

rule "budget-covers-seqs" {
  condition = knob.max_num_batched_tokens >= knob.max_num_seqs
  message   = "vLLM refuses max_num_batched_tokens below max_num_seqs"
}

workload "chat" {
  requests      = 60
  warmup        = 5
  input_tokens  = uniform(200, 600)
  output_tokens = uniform(50, 150)
  arrival       = poisson(6)
  slo {
    ttft_p99 = var.ttft
  }
}

quality "summaries" {
  dataset  = "quality.jsonl"
  scorer   = "chrf"
  baseline = { kv_cache_dtype = "auto" }
  max_drop = 0.5
}

objective "throughput" {
  maximize = metric.total.output_token_throughput
}
objective "ttft" {
  minimize = metric.chat.ttft_p99_ms
}
