# Prefill/decode disaggregation with values it cannot take.
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

knob "disaggregation" { values = ["none", "1p1d", "2x1", "0p1d"] } # ERROR: Invalid disaggregation value
knob "prefill_tensor_parallel_size" { values = [1, 0] } # ERROR: Invalid prefill_tensor_parallel_size
knob "decode_tensor_parallel_size" { values = [true] } # ERROR: Invalid decode_tensor_parallel_size
