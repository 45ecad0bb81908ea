# Search benchmark space: Llama 3.1 70B on eight H100 SXM GPUs: tensor parallelism,
# quantisation and the scheduler. Run by cmd/searchbench.
variable "sampler" {
  default = "tpe"
}
variable "seed" {
  default = 1
}
variable "prior" {
  default = true
}

study "tp70b" {
  trials        = 30
  sampler       = var.sampler
  seed          = var.seed
  prior         = var.prior
  workload_seed = 70
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
  sku  = "h100-sxm"
}

knob "tensor_parallel_size" { values = [1, 2, 4, 8] }
knob "quantization" { values = ["none", "fp8"] }
knob "kv_cache_dtype" { values = ["auto", "fp8"] }
knob "max_num_seqs" { values = [16, 32, 64, 128, 256] }
knob "max_num_batched_tokens" { values = [4096, 8192, 16384] }
knob "enable_chunked_prefill" { values = [true, false] }
knob "gpu_memory_utilization" { values = [0.9, 0.95] }

rule "whole-prompts-fit-without-chunking" {
  condition = knob.enable_chunked_prefill || knob.max_num_batched_tokens >= model.max_model_len
  message   = "without chunked prefill, vLLM needs max_num_batched_tokens >= max_model_len"
}

workload "chat" {
  requests      = 200
  input_tokens  = lognormal(1000, 0.6)
  output_tokens = uniform(50, 300)
  arrival       = concurrency(32)
  slo {
    ttft_p99 = "4s"
  }
}

objective "throughput-per-gpu" {
  maximize = metric.total.output_token_throughput / trial.gpus
}
objective "tpot" {
  minimize = metric.chat.tpot_p99_ms
}
