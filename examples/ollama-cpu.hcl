# ollama-cpu.hcl: a real engine on a CPU, with a small generated model.
#
#   frontier testmodel -o examples/tiny.gguf     # a small random GGUF model (0.3 MB)
#   frontier apply examples/ollama-cpu.hcl
#
# Needs the ollama executable: on the PATH, in $FRONTIER_OLLAMA, or built by
# scripts/ollama.sh into .cache/ollama/bin. No GPU, no download. Four trials of about ten
# seconds each.
#
# The knobs are Ollama's own: requests served at once (num_parallel, OLLAMA_NUM_PARALLEL),
# the quantisation of the model (`ollama create --quantize`) and threads per runner
# (num_thread, a model parameter). On two cores, one thread is several times faster than the
# default and far less noisy.
#
# The workload sends bursts of 8 requests, 2 long and 6 short, as a trace. With num_parallel
# = 1 the short ones wait in Ollama's queue behind the long ones; with 4 they start at once,
# so the median TTFT drops.
#
# Ollama 0.6 runs flash attention, and so a quantised KV cache (kv_cache_type), only on GPUs:
# on a CPU, a kv_cache_type other than f16 is refused as unsupported rather than measured as
# something it is not. The quality gate therefore compares quantised weights with F16 ones.

variable "gguf" {
  description = "the GGUF file to serve; relative paths are relative to this file"
  default     = "tiny.gguf"
}

study "ollama-cpu" {
  description = "Ollama on CPU: parallel requests and weight quantisation"
  sampler     = "grid"
  trials      = 4
  seed        = 1
  confirm     = 0
}

model {
  name          = "tiny"
  gguf          = var.gguf
  max_model_len = 512
}

engine "ollama" {
  startup_timeout = "2m"
}

hardware {
  gpus = 0 # CPU only
}

knob "num_parallel" { values = [1, 4] }
knob "quantization" { values = ["none", "q8_0"] }
knob "num_thread" { values = [1] }

workload "bursts" {
  endpoint = "completions"
  warmup   = 8
  requests = 24
  arrival  = trace("data/ollama-bursts.jsonl") # 8 requests every 2.5 s: 2 of 400 tokens, 6 of 8
  timeout  = "60s"
  slo {
    error_rate = 0
  }
}

# Do quantised weights change the answers? Each configuration's greedy outputs are compared
# with those of the F16 model.
quality "agreement" {
  dataset  = "evals/smoke.jsonl"
  scorer   = "baseline_agreement"
  baseline = { quantization = "none" }
  max_drop = 0.1
}

objective "throughput" {
  maximize = metric.total.output_token_throughput
}

objective "median-ttft" {
  minimize = metric.bursts.ttft_p50_ms
}
