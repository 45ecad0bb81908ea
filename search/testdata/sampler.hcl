# A small space for the sampler's unit tests: 105 configurations the rules allow.
variable "sampler" {
  default = "tpe"
}

study "sampler" {
  trials  = 20
  sampler = var.sampler
  seed    = 3
  confirm = 0
}

model {
  name          = "meta-llama/Llama-3.1-8B-Instruct"
  architecture  = "llama-3.1-8b"
  max_model_len = 4096
}

# A vLLM-compatible server with a command line of its own: frontier does not check its flags,
# so the knobs a to d stay abstract, and the offline model still covers the space (it
# ignores options it does not model).
engine "vllm" {
  command   = ["vllm-compatible-server"]
  model_arg = "--model"
}

hardware {
  gpus = 1
  sku  = "l40s"
}

knob "a" { values = [1, 2, 4, 8] }
knob "b" { values = [true, false] }
knob "c" { values = ["x", "y", "z"] }
knob "d" {
  min = 1
  max = 5
}

rule "no-b-at-eight" {
  condition = !(knob.a == 8 && knob.b)
  message   = "a = 8 takes b = false"
}

workload "chat" {
  requests      = 20
  input_tokens  = 100
  output_tokens = 20
  arrival       = concurrency(4)
}

objective "speed" {
  maximize = metric.total.output_token_throughput
}
objective "latency" {
  minimize = metric.chat.tpot_p99_ms
}
