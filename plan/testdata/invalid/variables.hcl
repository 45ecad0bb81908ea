variable "trials" {
  type    = number
  default = "many" # ERROR: Invalid default value for variable
}
variable "model" { # ERROR: No value for required variable
}
model { name = var.model }
engine "sim" { # ERROR: Simulated engine without an architecture
}
knob "sku" { values = ["h100-sxm", 2] } # ERROR: Mixed knob values
workload "chat" {
  requests      = 10
  input_tokens  = fixed(100)
  output_tokens = fixed(10)
  arrival       = poisson(1)
}
objective "t" {
  maximize = metric.total.output_token_throughput
}
