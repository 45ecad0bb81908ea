# A small simulated study for the pressure tests: a short chat class on one simulated H100
# with few sequences in flight, so it saturates at a rate a test can reach in seconds.
study "pressure-small" {
  trials = 1
  seed   = 1
}

model {
  name          = "meta-llama/Llama-3.1-8B-Instruct"
  architecture  = "llama-3.1-8b"
  max_model_len = 4096
}

engine "sim" {}

hardware {
  gpus = 1
  sku  = "h100-sxm"
}

knob "max_num_seqs" { values = [4] }
knob "max_num_batched_tokens" { values = [2048] }

workload "chat" {
  requests      = 30
  input_tokens  = fixed(200)
  output_tokens = fixed(32)
  arrival       = poisson(4)
  timeout       = "20s"
  slo {
    ttft_p99 = "300ms"
  }
}

workload "long" {
  requests      = 8
  input_tokens  = fixed(2000)
  output_tokens = fixed(32)
  arrival       = poisson(1)
  timeout       = "20s"
  slo {
    e2e_p95 = "2s"
  }
}

objective "throughput" {
  maximize = metric.total.output_token_throughput
}

pressure {
  budget = "60s"
  window = "1s"
  ladder {
    start   = 1
    factor  = 1.6
    past    = 1
    refine  = 3
    duration = "0s"   # the class's own requests per step, as bench --find-capacity sends
    classes = ["chat"]
    mix     = false
  }
  burst {
    factor   = 2
    before   = "2s"
    duration = "2s"
    recover  = "8s"
  }
  restart {
    before = "1s"
    after  = "6s"
  }
  shift {
    from   = { chat = 0.9, long = 0.1 }
    to     = { chat = 0.3, long = 0.7 }
    before = "2s"
    after  = "6s"
  }
}
