# model-upgrade.hcl: regenerate serving configurations after a model upgrade.
#
# The same plan serves every model version; only the variables change:
#
#   frontier apply examples/model-upgrade.hcl          # today's model, into examples/model-upgrade.db
#   frontier apply examples/model-upgrade.hcl --storage upgrade-3.3.db \
#     -var model=meta-llama/Llama-3.3-70B-Instruct -var architecture=llama-3.3-70b \
#     -var warm_start=examples/model-upgrade.db
#   frontier compare examples/model-upgrade.db upgrade-3.3.db
#
# Each model version has a study database of its own (--storage); the second study starts
# from the first one's best configurations (warm_start), and compare puts them side by side.
#
# Variables can also come from a file (-var-file upgrade.hcl, with lines like
# model = "...") or from the environment (FRONTIER_VAR_model=...). Later sources win:
# defaults, then the environment, then -var-file files in order, then -var flags in order.

variable "model" {
  description = "the model to serve, as the engine names it"
  default     = "meta-llama/Llama-3.1-70B-Instruct"
}

variable "architecture" {
  description = "the model's entry in frontier's architecture catalog"
  default     = "llama-3.1-70b"
}

variable "warm_start" {
  description = "the storage (a SQLite file or a database URL) of a previous study to learn from, or empty"
  default     = ""
}

variable "tp" {
  type        = list(number)
  description = "tensor parallel sizes to try, e.g. -var 'tp=[4,8]'"
  default     = [2, 4, 8]
}

study "upgrade" {
  description = "Serving configuration for ${var.model}"
  trials      = 16 # the grid has 24 configurations with the default tp
  seed        = 11
  warm_start  = var.warm_start
}

model {
  name          = var.model
  architecture  = var.architecture
  max_model_len = 16384
}

engine "vllm" {}

hardware {
  gpus               = "all"
  sku                = "h100-sxm"
  price_per_gpu_hour = 2.50
}

knob "tensor_parallel_size" { values = var.tp }
knob "quantization" { values = ["fp8"] }
knob "max_num_seqs" { values = [64, 128, 256, 512] }
knob "max_num_batched_tokens" { values = [8192, 16384] }

workload "chat" {
  endpoint      = "chat"
  requests      = 1000 # a p99 needs about 1000 requests: 10 beyond it
  warmup        = 50
  input_tokens  = lognormal(1500, 0.7)
  output_tokens = lognormal(300, 0.5)
  arrival       = poisson(8)
  seed          = 42 # the same requests for every model version
  slo {
    ttft_p99   = "1500ms"
    tpot_p99   = "60ms"
    error_rate = 0.01
  }
}

objective "throughput-per-gpu" {
  maximize = metric.total.output_token_throughput / trial.gpus
}

objective "tail-latency" {
  minimize = metric.chat.ttft_p99_ms
}
