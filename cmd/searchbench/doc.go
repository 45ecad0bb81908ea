// Command searchbench measures how well the search finds the Pareto front in few trials.
//
// For every plan in a folder (search/testdata/bench by default) it computes the truth of
// the whole space: every configuration the rules allow, estimated by the offline
// performance model on a perturbed copy of each GPU (the truth differs from the model the
// sampler's prior uses), judged against the plan's SLOs. It then runs studies of 60 trials
// over 10 seeds with the default sampler (with and without the prior, and with four
// trials at once) and with random search, answering every trial from the truth, and prints
// the hypervolume of each study's feasible trials after 15, 30 and 60 trials as a share of
// the true front's, and how many trials it took to reach 95% of it.
//
// With -oracle DIR it also writes the truth of each space as JSON, which
// scripts/optuna_bench.py reads to run Optuna's samplers over the same truth:
//
//	go run ./cmd/searchbench -oracle /tmp/oracles
//	python3 scripts/optuna_bench.py /tmp/oracles/*.json
package main
