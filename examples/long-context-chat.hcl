# long-context-chat.hcl: a chat service whose conversations grow long, on simulated H200s:
# how many engine cores (data parallel), how wide each (tensor parallel), and how many
# sequences each takes.
#
#   frontier validate examples/long-context-chat.hcl
#   frontier apply    examples/long-context-chat.hcl --estimate   # seconds, on the offline model
#   frontier apply    examples/long-context-chat.hcl              # a few minutes, on `frontier sim serve`
#   frontier report   examples/long-context-chat.hcl              # TTFT by turn in the recommendation
#   frontier report   examples/long-context-chat.hcl --storage examples/long-context-chat.estimate.db
#
# The estimates and the measurements are two studies, each in its own database beside the
# plan (long-context-chat.estimate.db and long-context-chat.db): the second apply measures
# every trial on the simulated server, and the first report shows those measurements (the
# estimates alone until then); the last one shows the estimates. 300 conversations of 2 to 5
# turns make about 1,050 requests, enough for the p99 SLOs (about 1,000: ten beyond the
# p99); the live study took 3 min 17 s on a busy two-core machine, the estimate 2.5 s.
#
# Each conversation sends its turns one after another: every turn's prompt is the whole
# history so far (four tenants' system prompts, the earlier turns and the replies as
# received) plus the user's new message, so later turns are long prompts whose history the
# prefix cache already holds. data_parallel_size = N is vLLM's own flag: one API server over
# N engine cores, each with its own KV cache, on N x tensor_parallel_size GPUs.
# kv_offloading_size keeps histories the GPU cache evicts in host memory (each engine core
# pins its own).
# disaggregation = "1p1d" runs one prefill and one decode instance of that size behind
# frontier's router instead of one instance, so that the long prompts' prefills stay out of
# the decode steps; the KV cache moves between them over NVLink.

study "long-context-chat" {
  description = "Multi-turn chat with long histories on up to four simulated H200s: data parallel, tensor parallel and prefill/decode disaggregation"
  trials      = 12
  sampler     = "tpe"
  seed        = 1
}

model {
  name          = "meta-llama/Llama-3.1-8B-Instruct"
  architecture  = "llama-3.1-8b"
  max_model_len = 32768
}

engine "sim" {}

hardware {
  gpus               = 4
  sku                = "h200"
  price_per_gpu_hour = 3.50
}

knob "data_parallel_size" { values = [1, 2, 4] }
knob "tensor_parallel_size" { values = [1, 2] }
knob "max_num_seqs" { values = [32, 64, 128] }
knob "enable_prefix_caching" { values = [true, false] }
# vLLM's KV offloading: GiB of pinned host memory per engine core for a CPU tier of the prefix
# cache (0: none), whose hits are loaded over the H200's PCIe Gen5 link instead of recomputed.
knob "kv_offloading_size" { values = [0, 64] }
knob "disaggregation" { values = ["none", "1p1d"] }

rule "fits-the-host" {
  condition = (knob.disaggregation == "none" ? 1 : 2) * knob.data_parallel_size * knob.tensor_parallel_size <= 4
  message   = "the instances' GPUs (data_parallel_size x tensor_parallel_size each, two instances for 1p1d) must fit the four GPUs of the host"
}

rule "offload-or-disaggregate" {
  condition = knob.disaggregation == "none" || knob.kv_offloading_size == 0
  message   = "vLLM's KV offloading replaces the NixlConnector a disaggregated instance needs: offload or disaggregate, not both"
}

workload "chat" {
  conversations = 300                 # in place of requests: each is several turns, ~1050 in all
  warmup        = 4                   # warm-up conversations, left out of the metrics
  turns         = uniform(2, 5)
  think_time    = "1s"                # mean wait between a reply and the next turn
  prefix_tokens = 4000                # a long system prompt...
  prefix_groups = 4                   # ...one of four tenants'
  input_tokens  = lognormal(600, 0.5) # each turn's new message
  output_tokens = uniform(50, 150)
  arrival       = poisson(15) # conversations started per second
  slo {
    ttft_p99   = "1500ms"
    tpot_p99   = "15ms"
    error_rate = 0.01
  }
}

objective "throughput-per-gpu" {
  maximize = metric.total.output_token_throughput / trial.gpus
}

objective "chat-tail" {
  minimize = metric.chat.ttft_p99_ms
}
