# Two configurations on the offline estimator, every one measured (grid), with the seed and
# the ttft bound set by the test so that a confirmation run misses the SLO the first run met.
variable "seed" {
  default = 1
}
variable "ttft" {
  default = "2s"
}

study "confirm" {
  trials        = 2
  sampler       = "grid"
  seed          = var.seed
  workload_seed = var.seed
  confirm       = 1
}

model {
  name          = "meta-llama/Llama-3.1-8B-Instruct"
  architecture  = "llama-3.1-8b"
  max_model_len = 4096
}

engine "sim" {}

hardware {
  gpus = 1
  sku  = "l40s"
}

knob "max_num_seqs" { values = [32, 128] }

workload "chat" {
  requests      = 60
  warmup        = 5
  input_tokens  = uniform(200, 600)
  output_tokens = uniform(50, 150)
  arrival       = poisson(8)
  slo {
    ttft_p99 = var.ttft
  }
}

objective "throughput" {
  maximize = metric.total.output_token_throughput
}
objective "ttft" {
  minimize = metric.chat.ttft_p99_ms
}
