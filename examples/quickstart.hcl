# quickstart.hcl: a first study that runs anywhere, without a GPU.
#
#   frontier validate examples/quickstart.hcl
#   frontier plan     examples/quickstart.hcl
#   frontier apply    examples/quickstart.hcl     # about three and a half minutes
#   frontier report   examples/quickstart.hcl
#
# The engine is "sim": frontier's simulated vLLM, which accepts the same flags, serves the same
# endpoints and fails to start in the same ways as vLLM, with the speed of an H100 SXM
# predicted by a performance model. Every number it produces is labelled as simulated.
# To tune a real vLLM, change the engine to "vllm" and keep the rest of the plan.

study "quickstart" {
  description = "Llama 3.1 8B on one simulated H100: throughput against tail latency"
  trials      = 20    # how many configurations to measure
  sampler     = "tpe" # tpe | cmaes | random | grid | sobol
  seed        = 1     # same seed, same trials
  confirm     = 1     # measure each configuration on the front once more before recommending it
}

model {
  name          = "meta-llama/Llama-3.1-8B-Instruct" # what the engine serves
  architecture  = "llama-3.1-8b"                     # what the simulator models
  max_model_len = 8192
}

engine "sim" {}

hardware {
  gpus               = 1
  sku                = "h100-sxm"
  price_per_gpu_hour = 2.50
}

# The space: 6 x 5 x 2 x 2 x 2 = 240 configurations. Knob names are vLLM's flags in
# snake_case: max_num_seqs is --max-num-seqs, enable_chunked_prefill = false is
# --no-enable-chunked-prefill, and quantization = "none" passes no flag at all.
knob "max_num_seqs" { values = [8, 16, 32, 64, 128, 256] }
knob "max_num_batched_tokens" { values = [1024, 2048, 4096, 8192, 16384] }
knob "quantization" { values = ["none", "fp8"] }
knob "enable_prefix_caching" { values = [true, false] }
knob "enable_chunked_prefill" { values = [true, false] }

# Rules reject a configuration before any time is spent on it. `frontier plan` shows how many
# configurations each rule removes.
rule "budget-covers-seqs" {
  condition = knob.max_num_batched_tokens >= knob.max_num_seqs
  message   = "vLLM refuses max_num_batched_tokens below max_num_seqs"
}
rule "whole-prompts-fit-without-chunking" {
  condition = knob.enable_chunked_prefill || knob.max_num_batched_tokens >= model.max_model_len
  message   = "without chunked prefill, vLLM needs max_num_batched_tokens >= max_model_len"
}

# Two classes of requests are sent at the same time, each with its own SLO. Each trial's
# measured window lasts about four seconds. A percentile needs about 10 / (1 - q) requests to
# have ten in its tail: 120 chat requests pin a p90 (a p99 over 120 requests is little more
# than the slowest one), so the quickstart judges the p90; a study of the p99 wants 1,000.
workload "chat" {
  requests      = 120
  warmup        = 10
  input_tokens  = lognormal(600, 0.5) # arithmetic mean 600 tokens
  output_tokens = uniform(40, 200)
  prefix_tokens = 300         # a system prompt every chat shares: prefix caching pays off
  arrival       = poisson(30) # requests per second
  slo {
    ttft_p90   = "1s"
    tpot_p90   = "50ms"
    error_rate = 0.01
  }
}

workload "summarize" {
  requests      = 16
  input_tokens  = normal(3000, 400)
  output_tokens = fixed(150)
  arrival       = poisson(4)
  slo {
    e2e_mean = "10s" # 16 requests pin a mean, not a tail percentile
  }
}

objective "throughput" {
  maximize = metric.total.output_token_throughput
}

objective "chat-tail" {
  minimize = metric.chat.ttft_p90_ms
}
