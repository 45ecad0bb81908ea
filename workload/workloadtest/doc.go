// Package workloadtest provides an OpenAI-compatible streaming server with known timing and
// injectable faults, on loopback, for tests and benchmarks of load generators. It generates
// no text worth reading: every token is the word " tok".
//
// It leaves real inference, and the simulated vLLM with a performance model, to package sim.
package workloadtest
