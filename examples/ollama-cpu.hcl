# ollama-cpu.hcl: a real engine on a CPU, with a small generated model.
#
#   frontier testmodel -o tiny.gguf                  # a small random GGUF model
#   frontier apply examples/ollama-cpu.hcl -var gguf=$PWD/tiny.gguf
#
# Needs the ollama binary on the PATH; no GPU. The knobs are Ollama's own settings: the
# number of requests served in parallel (OLLAMA_NUM_PARALLEL), threads per request
# (num_thread), the KV cache type (OLLAMA_KV_CACHE_TYPE) and flash attention
# (OLLAMA_FLASH_ATTENTION, which a quantised KV cache needs).

variable "gguf" {
  description = "the GGUF file to serve; relative paths are relative to this file"
  default     = "tiny.gguf"
}

study "ollama-cpu" {
  description = "Ollama on CPU: parallel requests and KV cache type"
  sampler     = "grid"
  trials      = 4
  seed        = 1
}

model {
  name = "tiny"
  gguf = var.gguf
}

engine "ollama" {
  startup_timeout = "2m"
}

hardware {
  gpus = 0 # CPU only
}

knob "num_parallel" { values = [1, 4] }
knob "num_thread" { values = [1] }
knob "kv_cache_type" { values = ["f16", "q8_0"] }
knob "flash_attention" { values = [true] }

workload "chat" {
  endpoint      = "chat"
  requests      = 32
  warmup        = 4
  input_tokens  = uniform(16, 64)
  output_tokens = fixed(16)
  arrival       = concurrency(8)
  timeout       = "60s"
  slo {
    error_rate = 0.05
  }
}

# Does a q8_0 KV cache change the answers? Each configuration's greedy outputs are compared
# with those of the f16 baseline.
quality "agreement" {
  dataset  = "evals/smoke.jsonl"
  scorer   = "baseline_agreement"
  baseline = { kv_cache_type = "f16" }
  min      = 0.5
}

objective "throughput" {
  maximize = metric.total.output_token_throughput
}

objective "latency" {
  minimize = metric.chat.e2e_p50_ms
}
