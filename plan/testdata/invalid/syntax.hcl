model { name = "m" }
engine "vllm" {
  args = ["--x",
} # ERROR: Invalid expression
