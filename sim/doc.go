// Package sim is a simulated vLLM: a memory model, vLLM V1's scheduler over a paged KV
// cache, a step-time model of a GPU SKU running a model architecture, the offline estimator
// (Estimate) and a vLLM-compatible HTTP server, all driven by one engine.
//
// The equations, the efficiency factors and the calibration against published measurements
// are in docs/sim.md; this package leaves load generation and metric definitions to package
// workload (the estimator produces workload.Records and aggregates them with
// workload.Aggregate), the SKU catalog to package hw, and launching to package launcher.
package sim
