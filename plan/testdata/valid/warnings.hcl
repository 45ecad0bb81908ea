# A valid plan whose problems are only warnings.
model { name = "m" }
engine "vllm" {}
knob "max_num_seqs" {
  min  = 16
  max  = 100 # WARNING: max is not on the step grid
  step = 32
}
workload "chat" {
  requests      = 10
  input_tokens  = fixed(100)
  output_tokens = fixed(10)
  prefix_tokens = 100 # WARNING: Prefix as long as the prompt
  arrival       = poisson(1)
}
quality "measured" { # WARNING: Quality gate without a bound
  dataset = "../evals/ja-support.jsonl"
  scorer  = "contains"
}
objective "t" {
  maximize = metric.total.output_token_throughput
}
