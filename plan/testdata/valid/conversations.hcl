# A class of conversations and a class with several shared prefixes.
model { name = "m" }
engine "vllm" {}
objective "t" {
  maximize = metric.total.output_token_throughput
}

workload "chat" {
  conversations = 20
  warmup        = 2
  turns         = uniform(2, 6)
  think_time    = "3s"
  prefix_tokens = 500
  prefix_groups = 4
  input_tokens  = lognormal(150, 0.5)
  output_tokens = uniform(50, 200)
  arrival       = poisson(0.5)
}
workload "tenants" {
  requests      = 50
  prefix_tokens = 200
  prefix_groups = 8
  input_tokens  = fixed(400)
  output_tokens = fixed(50)
  arrival       = concurrency(4)
}
