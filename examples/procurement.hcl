# procurement.hcl: which accelerator serves this workload at the lowest cost per token?
#
#   frontier apply   examples/procurement.hcl --estimate   # seconds, offline model
#   frontier apply   examples/procurement.hcl              # the simulated server, in real time
#   frontier report  examples/procurement.hcl
#
# Engine "sim" can simulate GPUs nobody here owns, so the hardware itself is a knob: every
# SKU is tried with 1, 2 and 4 GPUs per replica. Prices per GPU hour come from frontier's SKU
# catalog (`frontier hw --json` lists it). Every number is simulated and labelled as such;
# measure the winners on real hardware before buying.

study "procurement-8b" {
  description = "Llama 3.1 8B chat: cost per million output tokens across accelerators"
  sampler     = "grid" # 5 SKUs x 3 sizes x 3 batch limits: try them all
  trials      = 45
  seed        = 3
}

model {
  name          = "meta-llama/Llama-3.1-8B-Instruct"
  architecture  = "llama-3.1-8b"
  max_model_len = 8192
}

engine "sim" {}

hardware {
  gpus = 8 # eight simulated GPUs of whichever SKU a trial tries: room for two TP=4 trials at once
}

knob "sku" { values = ["h100-sxm", "h200", "l40s", "a100-80gb", "mi300x"] }
knob "tensor_parallel_size" { values = [1, 2, 4] }
knob "max_num_seqs" { values = [16, 32, 64] }

workload "chat" {
  requests      = 300
  warmup        = 30
  input_tokens  = lognormal(1000, 0.6)
  output_tokens = uniform(100, 300)
  arrival       = concurrency(64) # a closed loop keeps every SKU busy, so throughput shows capacity
  slo {
    ttft_p99   = "1s"
    tpot_p99   = "60ms"
    error_rate = 0.01
  }
}

# cost_per_million_output_tokens is price per GPU hour x GPUs / output tokens per hour x 10^6.
objective "cost" {
  minimize = metric.total.cost_per_million_output_tokens
}

objective "throughput" {
  maximize = metric.total.output_token_throughput
}
