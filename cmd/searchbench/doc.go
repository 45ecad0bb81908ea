// Command searchbench measures how well the search finds the Pareto front in few trials.
//
// For every plan in a folder (search/testdata/bench by default) it computes the truth of
// the whole space under each of several truths (-truths): every configuration the rules
// allow, estimated by the offline performance model on a perturbed copy of each GPU (the
// scaled truth), then reshaped by a mechanism the model does not have (the load, prefill
// and reversed truths: see truth.go), judged against the plan's SLOs. The sampler's prior
// is the model on the catalog's GPU, so it is wrong in scale under the first truth and in
// structure under the others. It then runs studies over 10 seeds with the default sampler
// (with and without the prior, and with four trials at once on the scaled truth) and with
// random search, answering every trial from the truth, and prints the hypervolume of each
// study's feasible trials after 15, 30 and 60 trials (-budgets) as a share of the true
// front's, and how many trials it took to reach 95% of it.
//
// With -oracle DIR it also writes the truth of each space and truth as JSON, which
// scripts/optuna_bench.py reads to run Optuna's samplers over the same truth:
//
//	go run ./cmd/searchbench -oracle /tmp/oracles
//	python3 scripts/optuna_bench.py /tmp/oracles/*.json
//
// -only, -truths, -seeds, -budgets and -parallel 0 make a smaller run; -v prints the true
// front and, for seed 1, each trial with the model's standing after it.
package main
