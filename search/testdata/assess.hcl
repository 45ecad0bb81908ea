# A vLLM plan on a catalog architecture for the offline assessment: awq needs a quantised
# checkpoint that model.name is not, tensor parallelism changes the GPU count, and the chat
# class bounds a metric the offline model never measures (capacity_rps: only a capacity
# search measures it).
study "assess" {
  trials = 4
  seed   = 1
}

model {
  name          = "meta-llama/Llama-3.1-8B-Instruct"
  architecture  = "llama-3.1-8b"
  max_model_len = 4096
}

engine "vllm" {}

hardware {
  gpus               = 2
  sku                = "h100-sxm"
  price_per_gpu_hour = 2.0
}

knob "quantization"         { values = ["none", "awq"] }
knob "tensor_parallel_size" { values = [1, 2] }

workload "chat" {
  requests      = 40
  input_tokens  = uniform(200, 600)
  output_tokens = uniform(50, 150)
  arrival       = poisson(4)
  slo {
    ttft_p99     = "5s"
    capacity_rps = 1
  }
}

objective "throughput" {
  maximize = metric.total.output_token_throughput
}
