// Package sim is a simulated vLLM: a memory model, vLLM V1's scheduler over a paged KV
// cache, a step-time model of a GPU SKU running a model architecture, the offline estimator
// (Estimate) and a vLLM-compatible HTTP server (Serve), all driven by one engine.
//
// # Memory model
//
// Per GPU, with tensor parallelism TP, pipeline parallelism PP, L layers, hidden size h, H
// attention and H_kv KV heads of size d, FFN size F with k active experts, vocabulary V:
//
//	weights   W  = (⌈L/PP⌉·(P_attn + P_mlp)·b_w + P_embed·2) / TP
//	profile   A  = 2·T·(2h + (H+2H_kv)·d/TP + 3·F·k/TP) + 8·max_num_seqs·V + non-torch
//	KV cache  KV = memory·gpu_memory_utilization − W − A
//	blocks    N  = ⌊KV / (2·block_size·(H_kv/TP)·d·b_kv·⌈L/PP⌉)⌋
//
// with T = max_num_batched_tokens, b_w the bytes per linear-layer weight of the
// quantisation and b_kv the bytes per KV element of kv_cache_dtype. CheckStartup fails like
// vLLM, with vLLM's message, when the weights do not fit, no KV block is left, one
// max_model_len request does not fit, or the flags contradict each other.
//
// # Step time
//
// A step computes t tokens (s of them sample) and attends over Σ(c_i+q_i) cached tokens:
//
//	linear    = ⌈L/PP⌉ · max(W_layer/(B·η_w), 2·t·P_layer/TP/(R·η_c))
//	head      = max(2·h·V/TP/(B·η_w), 2·s·h·V/TP/(R·η_c))
//	attention = ⌈L/PP⌉ · max(Σ(c_i+q_i)·2·(H_kv/TP)·d·b_kv/(B·η_kv), 4·Σq_i(c_i+(q_i+1)/2)·(H/TP)·d/(R·η_c))
//	allreduce = 2·⌈L/PP⌉ · (α + 2(TP−1)/TP · 2·t·h/(β·η_link))
//	step      = PP·(linear + attention + allreduce) + head + o
//
// B is the memory bandwidth and R the tensor throughput at the precision the linear layers
// run in. The fitted factors η_w, o, η_kv, η_c and η_c8 come from section 5 of the vLLM
// reference; docs/sim.md lists them with the calibration table that
// `go test ./sim -run TestCalibration -update` writes.
//
// # Prefix cache
//
// With prefix caching every full KV block has a hash chained over the tokens before it; a
// block enters the cache at the end of the step that computes it, and a request scheduled
// from the waiting queue takes the longest run of its leading full blocks that are cached
// (held by running requests or free), leaving at least one token to compute. Freed cached
// blocks are evicted least recently freed first when new blocks are needed. The server
// hashes a prompt's tokens; the estimator takes a class's prefix_tokens as shared and the
// rest of each prompt as the request's own.
//
// # KV offloading
//
// With kv_offloading_size, each engine core has a CPU tier of the prefix cache in pinned
// host memory, as vLLM's OffloadingConnector keeps it: of size·2^30/(TP·PP) / (one block's
// bytes on one GPU) blocks, least recently used evicted. Every block the GPU computes is
// copied there as it is computed, over the SKU's host link (hw.Host) and overlapping the
// steps; a request whose prompt continues past its GPU hit in blocks the tier holds waits
// for their copy back before its prefill; what neither cache holds is recomputed.
//
// # What it leaves to others
//
// Request shapes and metric definitions are package workload's: the estimator draws requests
// with workload.Load and aggregates its workload.Records with workload.Aggregate. SKU specs
// come from package hw; launching `frontier sim serve` is package launcher's.
package sim
