# Knob domains that cannot be searched.
model { name = "m" }
engine "vllm" {}

knob "max_num_seqs" {
  min = 512 # ERROR: min must not exceed max
  max = 16
}
knob "gpu_memory_utilization" {
  min = 0
  max = 0.9
  log = true # ERROR: Log scale needs positive bounds
}
knob "block_size" {
  values = [] # ERROR: Empty knob
}
knob "quantization" {
  values = ["none", 8] # ERROR: Mixed knob values
}
knob "kv_cache_dtype" {
  values = ["auto", "auto"] # ERROR: Duplicate knob value
}
knob "max_num_batched_tokens" { # ERROR: Knob without a domain
  min = 1024
}
knob "max_num_batched_tokens" { values = [1024] } # ERROR: Duplicate knob
knob "kv_cache_memory_bytes" {
  min  = 1
  max  = 8
  step = 0 # ERROR: Invalid step
}
knob "long_prefill_token_threshold" {
  values = [0, 256]
  max    = 512 # ERROR: Conflicting knob domain
}
knob "stream_interval" {
  min  = 1
  max  = 8
  step = 2 # ERROR: Log scale with a step
  log  = true
}
knob "cpu_offload_gb" {
  type = "int" # ERROR: Integer knob with fractional bounds
  min  = 0.5
  max  = 4
}
knob "num_gpu_blocks_override" {
  min  = 1
  max  = 10
  typo = 3 # ERROR: Unsupported argument
}

workload "chat" {
  requests      = 10
  input_tokens  = fixed(100)
  output_tokens = fixed(10)
  arrival       = poisson(1)
}
objective "t" {
  maximize = metric.total.output_token_throughput
}
