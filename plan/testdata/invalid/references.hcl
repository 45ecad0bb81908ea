# References to names the plan does not have.
variable "scale" {
  default = 2
}
model { name = "m" }
engine "vllm" {}
knob "max_num_seqs" { values = [8, 16] }

rule "uses-unknown-knob" {
  condition = knob.max_num_batched >= 8 # ERROR: Unknown knob
}
rule "uses-a-metric" {
  condition = metric.total.error_rate < 0.1 # ERROR: Reference not available before the trial
}
rule "uses-unknown-var" {
  condition = knob.max_num_seqs * var.factor > 0 # ERROR: Unknown variable
}
workload "chat" {
  requests      = 10
  input_tokens  = fixed(100)
  output_tokens = fixed(10)
  arrival       = poisson(1)
}
check "bad-metric" {
  condition = metric.chat.ttft_p999_ms < 100 # ERROR: Unknown metric
}
check "bad-workload" {
  condition = metric.summarize.ttft_p99_ms < 100 # ERROR: Unknown workload
}
check "bad-root" {
  condition = trials.gpus < 100 # ERROR: Unknown reference
}
check "bad-model" {
  condition = model.size > 1 # ERROR: Unknown reference
}
objective "a" {
  maximize = quality.ja.score # ERROR: Unknown quality gate
}
objective "b" {
  minimize = sqrt(metric.total.e2e_p99_ms) # ERROR: Unknown function
}
objective "c" {
  maximize = metric.total.output_token_throughput / trial.gpus * var.scale
}
