// Package record is the stored record of a study: each trial with its configuration, typed
// state, measurements, quality scores, objectives, structured violations, provenance and GPU
// time, and the study's Pareto front.
//
// It is a leaf: search writes records and report reads them, and neither the storage, the
// samplers, the plan language nor NVML is needed to read one. The Pareto primitives
// (dominance, the non-dominated set, hypervolume) live here too, so that the search and the
// report agree on what the front is.
package record
