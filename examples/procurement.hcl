# procurement.hcl: which accelerator serves this workload at the lowest cost per token?
#
#   frontier apply   examples/procurement.hcl --estimate   # seconds, offline model
#   frontier report  examples/procurement.hcl --storage examples/procurement.estimate.db
#   frontier apply   examples/procurement.hcl              # the simulated server, in real time:
#                                                          # 45 trials of 10 s to 2 min each
#   frontier report  examples/procurement.hcl
#
# Engine "sim" can simulate GPUs nobody here owns, so the hardware itself is a knob: every
# SKU is tried with 1, 2 and 4 GPUs per replica. Prices per GPU hour come from frontier's SKU
# catalog (`frontier hw --json` lists it). Every number is simulated and labelled as such;
# measure the winners on real hardware before buying.
#
# The closed loop's first 64 requests are sent all at once and queue behind each other's
# prefills; no service whose clients arrive spread out sees that, so they are warm-up (the
# default for concurrency(64)). With a warm-up of 30 instead, 34 of them were measured and
# made 70% of all time to first token: 41 of the 45 configurations missed TTFT p99, against
# 30 without them, and the cheapest one that met it was an H200 pair. The SLO is on p95,
# which 300 requests pin (a p99 would need about 1000).
# `apply --estimate` gives the same answer with the default warm-up (64) and with twice it
# (128): 15 of 45 configurations meet the SLO, the same five are on the front, the
# recommended configuration is one H200 pair (tensor_parallel_size 2, max_num_seqs 64) at
# 0.286 and 0.297 per million output tokens, and the cheapest that meets the SLO is one
# MI300X (max_num_seqs 64) at 0.143 and 0.148.

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
  requests      = 300 # measured after the warm-up: the start-up wave of 64 (see above)
  input_tokens  = lognormal(1000, 0.6)
  output_tokens = uniform(100, 300)
  arrival       = concurrency(64) # a closed loop keeps every SKU busy, so throughput shows capacity
  slo {
    ttft_p95   = "1s"
    tpot_p95   = "60ms"
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
