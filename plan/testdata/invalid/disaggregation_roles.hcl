# The role's tensor parallelism without a disaggregation knob.
model { name = "m" }
engine "vllm" {}
objective "t" {
  maximize = metric.total.output_token_throughput
}
workload "chat" {
  requests      = 10
  input_tokens  = fixed(100)
  output_tokens = fixed(10)
  arrival       = poisson(1)
}

knob "decode_tensor_parallel_size" { values = [1, 2] } # ERROR: Role parallelism without disaggregation
