# The search benchmark's space: 1,120 configurations of Llama 3.1 8B on one H100 SXM,
# evaluated with the offline estimator (see bench_test.go).
variable "sampler" {
  default = "tpe"
}
variable "seed" {
  default = 1
}

study "bench" {
  trials  = 30
  sampler = var.sampler
  seed    = var.seed
  confirm = 0
}

model {
  name          = "meta-llama/Llama-3.1-8B-Instruct"
  architecture  = "llama-3.1-8b"
  max_model_len = 4096
}

engine "sim" {}

hardware {
  gpus               = 1
  sku                = "h100-sxm"
  price_per_gpu_hour = 2.5
}

knob "max_num_seqs" { values = [8, 16, 32, 64, 128, 256, 512] }
knob "max_num_batched_tokens" { values = [1024, 2048, 4096, 8192, 16384] }
knob "gpu_memory_utilization" { values = [0.7, 0.8, 0.9, 0.95] }
knob "enable_chunked_prefill" { values = [true, false] }
knob "kv_cache_dtype" { values = ["auto", "fp8"] }
knob "enable_prefix_caching" { values = [true, false] }

workload "chat" {
  requests      = 200
  input_tokens  = lognormal(800, 0.5)
  output_tokens = uniform(50, 250)
  prefix_tokens = 200
  arrival       = concurrency(96)
  slo {
    ttft_p99 = "5s"
  }
}

objective "throughput" {
  maximize = metric.total.output_token_throughput
}
objective "token-latency" {
  minimize = metric.chat.tpot_p99_ms
}
