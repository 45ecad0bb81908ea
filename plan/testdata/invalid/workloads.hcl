# Workloads and SLOs that cannot be measured.
model { name = "m" }
engine "vllm" {}

workload "no-lengths" { # ERROR: Workload without lengths or dataset
  requests = 10
  arrival  = poisson(1)
}
workload "slo" {
  requests      = 10
  input_tokens  = lognormal(800, 0.6)
  output_tokens = uniform(50, 300)
  arrival       = concurrency(4)
  slo {
    ttft_p99                    = "600 ms" # ERROR: Invalid duration
    tpot_p99                    = "40ms"
    p99_latency                 = "1s" # ERROR: Unknown SLO
    error_rate                  = 0.01
    min_output_token_throughput = 100
  }
}
workload "missing-dataset" {
  requests = 10
  dataset  = "data/nowhere.jsonl" # ERROR: File not found
  arrival  = poisson(2)
}
workload "wrong-shapes" {
  requests      = 10
  input_tokens  = poisson(3) # ERROR: Not a length distribution
  output_tokens = fixed(10)
  arrival       = uniform(1, 2) # ERROR: Not an arrival process
}
workload "bad-args" {
  requests      = 10
  input_tokens  = uniform(300, 50) # ERROR: Invalid function argument
  output_tokens = fixed(10)
  arrival       = poisson(0) # ERROR: Invalid function argument
}
workload "total" { # ERROR: Invalid workload name
  requests      = 1
  input_tokens  = fixed(10)
  output_tokens = fixed(10)
  arrival       = immediate()
  timeout       = "soon" # ERROR: Invalid duration
  endpoint      = "embeddings" # ERROR: Invalid value for endpoint
}
workload "slo" { # ERROR: Duplicate workload
  requests      = 1
  input_tokens  = fixed(10)
  output_tokens = fixed(10)
  arrival       = immediate()
}
objective "t" {
  maximize = metric.total.output_token_throughput
}
workload "no-requests" { # ERROR: Missing required attribute
  input_tokens  = fixed(10)
  output_tokens = fixed(10)
  arrival       = immediate()
}
quality "q" { # ERROR: Missing required attribute
  scorer = "exact"
  min    = 1
}
