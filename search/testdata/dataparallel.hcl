# Data parallel on the offline model: one engine core or two, each on one GPU, under a load
# that saturates one.
study "dp" {
  trials  = 2
  sampler = "grid"
  seed    = 1
}

model {
  name          = "meta-llama/Llama-3.1-8B-Instruct"
  architecture  = "llama-3.1-8b"
  max_model_len = 8192
}

engine "vllm" {}

hardware {
  gpus               = 2
  sku                = "h100-sxm"
  price_per_gpu_hour = 2.0
}

knob "data_parallel_size" { values = [1, 2] }
knob "max_num_seqs"       { values = [128] }

workload "chat" {
  requests      = 1200
  input_tokens  = fixed(1500)
  output_tokens = fixed(200)
  arrival       = poisson(200)
}

objective "throughput-per-gpu" {
  maximize = metric.total.output_token_throughput / trial.gpus
}
