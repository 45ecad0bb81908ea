# Prefill/decode disaggregation on the offline model: one engine instance, or one prefill and
# one decode instance, each on one GPU, for 8,000-token prompts whose prefill chunks
# interrupt the aggregated engine's decodes.
study "pd" {
  trials  = 2
  sampler = "grid"
  seed    = 1
}

model {
  name          = "meta-llama/Llama-3.1-8B-Instruct"
  architecture  = "llama-3.1-8b"
  max_model_len = 16384
}

engine "sim" {}

hardware {
  gpus               = 2
  sku                = "h100-sxm"
  price_per_gpu_hour = 2.0
}

knob "disaggregation"         { values = ["none", "1p1d"] }
knob "enable_chunked_prefill" { values = [true] }

workload "rag" {
  requests      = 300
  input_tokens  = fixed(8000)
  output_tokens = fixed(200)
  arrival       = poisson(3)
}

objective "tpot" {
  minimize = metric.total.tpot_p99_ms
}
