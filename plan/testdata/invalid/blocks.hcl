# ERROR(plan): Missing objective block
# Blocks and settings frontier does not know.
study "s" {
  sampler = "annealing" # ERROR: Invalid value for sampler
  trials  = 0 # ERROR: Value out of range
}
model {
  name          = "m"
  max_model_len = "long" # ERROR: Wrong type
}
engine "tgi" {} # ERROR: Unknown engine
hardware {
  gpus = "some" # ERROR: Wrong type
}
knob "max_num_seqs" { values = [8, 16] }
knob "quantization" { values = ["none", "fp8"] }
workload "chat" {
  requests      = 10
  input_tokens  = fixed(100)
  output_tokens = fixed(10)
  arrival       = poisson(1)
}
quality "q" {
  dataset  = "../evals/ja-support.jsonl"
  scorer   = "bleu" # ERROR: Invalid value for scorer
  baseline = {
    quantization = "int4" # ERROR: Baseline outside the knob's domain
    kv_cache     = "auto" # ERROR: Unknown knob in baseline
  }
  max_drop = 0.02
}
deployment "x" {} # ERROR: Unsupported block type
