// Package launcher starts inference engines for trials and stops them without leaving
// anything behind.
//
// An Engine (vllm, sim, ollama) turns a Spec — the model, the trial's knob settings, the GPU
// slot, the plan's extra arguments and environment — into a running Instance: it builds the
// command line (never through a shell), picks a fresh port on 127.0.0.1, starts the process in
// its own process group with its output in a per-trial log file, and waits until the engine
// answers /health and lists the model on /v1/models. Start is all-or-nothing: when it fails,
// the process group is gone and the error is a *LaunchError whose Class says why (the weights
// do not fit, the KV cache is too small for max_model_len, invalid flags, an unsupported
// quantisation or GPU, a crash, a startup timeout, a taken port) and whose Message is the
// engine's own words, read from its log.
//
// Process, StartProcess, WaitReady and OpenAIProbe are the supervision core that every adapter
// shares: SIGTERM to the whole group on Stop, SIGKILL to the group after a grace period, and a
// SIGKILL to whatever is left of the group whenever the leader exits.
//
// The package leaves to others: which GPUs a trial gets (hw.Allocator), what load is sent to
// the instance (workload), and what is recorded about the trial (search).
package launcher
