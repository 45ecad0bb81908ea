# Search benchmark space: seven list knobs of Llama 3.1 8B on H100 SXM GPUs, 1,296
# configurations the rules allow. Run by cmd/searchbench.
variable "sampler" {
  default = "tpe"
}
variable "seed" {
  default = 1
}
variable "prior" {
  default = true
}

study "list7" {
  trials        = 30
  sampler       = var.sampler
  seed          = var.seed
  prior         = var.prior
  workload_seed = 7
  confirm       = 0
}

model {
  name          = "meta-llama/Llama-3.1-8B-Instruct"
  architecture  = "llama-3.1-8b"
  max_model_len = 8192
}

engine "sim" {}

hardware {
  gpus = 4
  sku  = "h100-sxm"
}

knob "max_num_seqs" { values = [16, 32, 64, 128, 256, 512] }
knob "max_num_batched_tokens" { values = [2048, 4096, 8192, 16384] }
knob "gpu_memory_utilization" { values = [0.8, 0.9, 0.95] }
knob "enable_chunked_prefill" { values = [true, false] }
knob "quantization" { values = ["none", "fp8"] }
knob "kv_cache_dtype" { values = ["auto", "fp8"] }
knob "tensor_parallel_size" { values = [1, 2, 4] }

rule "whole-prompts-fit-without-chunking" {
  condition = knob.enable_chunked_prefill || knob.max_num_batched_tokens >= model.max_model_len
  message   = "without chunked prefill, vLLM needs max_num_batched_tokens >= max_model_len"
}

workload "chat" {
  requests      = 200
  input_tokens  = lognormal(1000, 0.6)
  output_tokens = uniform(50, 300)
  arrival       = concurrency(128)
  slo {
    ttft_p99 = "3s"
  }
}

objective "throughput-per-gpu" {
  maximize = metric.total.output_token_throughput / trial.gpus
}
objective "tpot" {
  minimize = metric.chat.tpot_p99_ms
}
