# vllm-70b-tp.hcl: a 70B model across 2, 4 or 8 GPUs with tensor parallelism.
#
#   frontier plan  examples/vllm-70b-tp.hcl
#   frontier apply examples/vllm-70b-tp.hcl --parallel 2
#
# With 8 GPUs, trials at tensor_parallel_size 2 or 4 run side by side on separate GPU slots,
# chosen so that the GPUs of one trial share NVLink. FP8 halves the weights (70 GB instead of
# 140 GB) and leaves room for a KV cache on two GPUs.

study "llama-70b-tp" {
  description = "Llama 3.1 70B: GPUs per replica against latency and throughput"
  trials      = 30
  seed        = 70
}

model {
  name          = "meta-llama/Llama-3.1-70B-Instruct"
  architecture  = "llama-3.1-70b"
  max_model_len = 16384
}

engine "vllm" {
  startup_timeout = "40m" # loading 70B weights and capturing CUDA graphs takes a while
}

hardware {
  gpus               = "all"
  sku                = "h100-sxm"
  price_per_gpu_hour = 2.50
}

knob "tensor_parallel_size" { values = [2, 4, 8] }
knob "quantization" { values = ["fp8", "none"] } # "none" passes no flag: the checkpoint's bf16
knob "kv_cache_dtype" { values = ["auto", "fp8"] }
knob "max_num_seqs" { values = [64, 128, 256, 512] }
knob "max_num_batched_tokens" { values = [4096, 8192, 16384] }
knob "gpu_memory_utilization" { values = [0.90, 0.95] }

rule "bf16-needs-four-gpus" {
  condition = knob.quantization == "fp8" || knob.tensor_parallel_size >= 4
  message   = "70B in bf16 leaves no room for a KV cache on two 80 GB GPUs"
}

rule "budget-covers-seqs" {
  condition = knob.max_num_batched_tokens >= knob.max_num_seqs
  message   = "vLLM refuses max_num_batched_tokens below max_num_seqs"
}

workload "chat" {
  endpoint      = "chat"
  requests      = 1000 # a p99 needs about 1000 requests: 10 beyond it
  warmup        = 60
  input_tokens  = lognormal(2000, 0.8)
  output_tokens = lognormal(300, 0.6)
  arrival       = poisson(6)
  slo {
    ttft_p99   = "2s"
    tpot_p99   = "60ms"
    error_rate = 0.01
  }
}

# Throughput per GPU, so that 8 GPUs have to earn their price against 2.
objective "throughput-per-gpu" {
  maximize = metric.total.output_token_throughput / trial.gpus
}

objective "tail-latency" {
  minimize = metric.chat.tpot_p99_ms
}
