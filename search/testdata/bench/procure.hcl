# Search benchmark space: procurement: which GPU (the sku knob), how many per replica
# and how to run Llama 3.1 70B on it; cost per million output tokens against latency. Run by cmd/searchbench.
variable "sampler" {
  default = "tpe"
}
variable "seed" {
  default = 1
}
variable "prior" {
  default = true
}

study "procure" {
  trials        = 30
  sampler       = var.sampler
  seed          = var.seed
  prior         = var.prior
  workload_seed = 5
  confirm       = 0
}

model {
  name          = "meta-llama/Llama-3.1-70B-Instruct"
  architecture  = "llama-3.1-70b"
  max_model_len = 8192
}

engine "sim" {}

hardware {
  gpus = 8
}

knob "sku" { values = ["h100-sxm", "h200", "a100-80gb", "l40s", "mi300x", "b200"] }
knob "tensor_parallel_size" { values = [1, 2, 4, 8] }
knob "quantization" { values = ["none", "fp8"] }
knob "kv_cache_dtype" { values = ["auto", "fp8"] }
knob "max_num_seqs" { values = [32, 64, 128, 256] }
knob "max_num_batched_tokens" { values = [4096, 8192, 16384] }

workload "chat" {
  requests      = 200
  input_tokens  = lognormal(1000, 0.6)
  output_tokens = uniform(50, 300)
  arrival       = concurrency(128)
  slo {
    ttft_p99 = "5s"
  }
}

objective "cost" {
  minimize = metric.total.cost_per_million_output_tokens
}
objective "tpot" {
  minimize = metric.chat.tpot_p99_ms
}
