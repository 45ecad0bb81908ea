# Classes of conversations that cannot be measured.
model { name = "m" }
engine "vllm" {}
objective "t" {
  maximize = metric.total.output_token_throughput
}

workload "both-sizes" {
  requests      = 10
  conversations = 5 # ERROR: Conflicting class sizes
  turns         = 3
  input_tokens  = fixed(100)
  output_tokens = fixed(10)
  arrival       = poisson(1)
}
workload "no-turns" {
  conversations = 5
  turns         = 0 # ERROR: Invalid number of turns
  input_tokens  = fixed(100)
  output_tokens = fixed(10)
  arrival       = poisson(1)
}
workload "half-turn" {
  conversations = 5
  turns         = 2.5 # ERROR: Invalid number of turns
  input_tokens  = fixed(100)
  output_tokens = fixed(10)
  arrival       = poisson(1)
}
workload "endless" {
  conversations = 5
  turns         = uniform(2, 20000) # ERROR: Too many turns
  input_tokens  = fixed(100)
  output_tokens = fixed(10)
  arrival       = poisson(1)
}
workload "turns-shape" {
  conversations = 5
  turns         = poisson(3) # ERROR: Not a number of turns
  input_tokens  = fixed(100)
  output_tokens = fixed(10)
  arrival       = poisson(1)
}
workload "think" {
  conversations = 5
  turns         = 3
  think_time    = "a while" # ERROR: Invalid duration
  input_tokens  = fixed(100)
  output_tokens = fixed(10)
  arrival       = poisson(1)
}
workload "think-too-long" {
  conversations = 5
  turns         = 3
  think_time    = "1000000h" # ERROR: Value out of range
  input_tokens  = fixed(100)
  output_tokens = fixed(10)
  arrival       = poisson(1)
}
workload "think-without-conversations" {
  requests      = 10
  think_time    = "3s" # ERROR: Attribute of conversations
  turns         = 2 # ERROR: Attribute of conversations
  input_tokens  = fixed(100)
  output_tokens = fixed(10)
  arrival       = poisson(1)
}
workload "groups-without-prefix" {
  requests      = 10
  prefix_groups = 4 # ERROR: Prefix groups without a prefix
  input_tokens  = fixed(100)
  output_tokens = fixed(10)
  arrival       = poisson(1)
}
workload "no-groups" {
  requests      = 10
  prefix_tokens = 20
  prefix_groups = 0 # ERROR: Value out of range
  input_tokens  = fixed(100)
  output_tokens = fixed(10)
  arrival       = poisson(1)
}
workload "no-conversations" {
  conversations = 0 # ERROR: Value out of range
  turns         = 2
  input_tokens  = fixed(100)
  output_tokens = fixed(10)
  arrival       = poisson(1)
}
workload "conversations-from-a-dataset" {
  conversations = 4
  turns         = 2
  dataset       = "../data/histories.jsonl" # ERROR: Conflicting prompt sources
  arrival       = poisson(1)
}
workload "conversations-without-lengths" { # ERROR: Conversations without lengths
  conversations = 4
  turns         = 2
  input_tokens  = fixed(100)
  arrival       = poisson(1)
}
