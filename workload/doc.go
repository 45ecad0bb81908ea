// Package workload generates load against an OpenAI-compatible server and measures it.
//
// It owns the request sources (synthetic lengths, JSONL and ShareGPT datasets, traces), the
// arrival processes, the streaming client that turns each request into a Record, the
// aggregation of Records into the metrics of a Measurement, the scraping of the engine's
// Prometheus metrics, and the search for the highest arrival rate that still meets a class's
// SLO (capacity).
//
// It leaves to others: starting and stopping engines (package launcher), deciding which
// configuration to measure and whether a trial is feasible (package search), scoring output
// quality (package quality), modelling an engine's speed (package sim, which feeds synthesised
// Records to Aggregate and reuses SearchCapacity), and rendering results (package report and
// the command line).
package workload
