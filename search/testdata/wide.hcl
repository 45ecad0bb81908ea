# A space of 1,200,000 configurations: more than plan.GridLimit lists at once, fewer than
# the search walks in full when it picks an untried configuration.
study "wide" {
  trials = 4
  seed   = 3
}

model {
  name          = "meta-llama/Llama-3.1-8B-Instruct"
  architecture  = "llama-3.1-8b"
  max_model_len = 4096
}

engine "sim" {}

hardware {
  gpus = 1
  sku  = "l40s"
}

knob "max_num_seqs" {
  min  = 1
  max  = 1200
  step = 1
}
knob "max_num_batched_tokens" {
  min  = 1001
  max  = 2000
  step = 1
}

rule "budget-covers-seqs" {
  condition = knob.max_num_batched_tokens >= knob.max_num_seqs
  message   = "vLLM refuses max_num_batched_tokens below max_num_seqs"
}

workload "chat" {
  requests      = 10
  input_tokens  = uniform(200, 600)
  output_tokens = uniform(50, 150)
  arrival       = poisson(6)
}

objective "throughput" {
  maximize = metric.total.output_token_throughput
}
