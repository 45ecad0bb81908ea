# Search benchmark space: integer, log and float range knobs of Llama 3.1 8B on one L40S, 6,396
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

study "ranges" {
  trials        = 30
  sampler       = var.sampler
  seed          = var.seed
  prior         = var.prior
  workload_seed = 11
  confirm       = 0
}

model {
  name          = "meta-llama/Llama-3.1-8B-Instruct"
  architecture  = "llama-3.1-8b"
  max_model_len = 8192
}

engine "sim" {}

hardware {
  gpus = 1
  sku  = "l40s"
}

knob "max_num_seqs" {
  min = 8
  max = 128
  log = true
}
knob "max_num_batched_tokens" {
  min  = 2048
  max  = 16384
  step = 2048
}
knob "gpu_memory_utilization" {
  min  = 0.80
  max  = 0.95
  step = 0.05
}
knob "enable_chunked_prefill" { values = [true, false] }

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
    ttft_p99 = "5s"
  }
}

objective "throughput-per-gpu" {
  maximize = metric.total.output_token_throughput / trial.gpus
}
objective "tpot" {
  minimize = metric.chat.tpot_p99_ms
}
