// Package search runs a study: it proposes serving configurations with a sampler, keeps out
// the ones the plan's rules or the simulator's memory model reject, measures the rest (on
// launched engines, or on the offline estimator with Options.Estimate), records every trial
// with its provenance, and finds the Pareto front of the plan's objectives among the
// configurations that meet every SLO, check and quality gate.
//
// Assessor is the one offline assessment of a configuration: the plan's rules, then the
// memory model, then the performance model, then the verdict a study gives a measured trial.
// The pre-screen, --estimate, and the commands that judge configurations offline all use it.
// Run reports progress through Options.Events; it prints nothing itself.
//
// A study lives (package search/storage) in an SQL database in goptuna's RDB schema (SQLite, PostgreSQL or MySQL), so
// goptuna's dashboard can read it; frontier's own record of each trial is JSON in the
// trial's system attributes, and the study's plan hash, space hash, budget and objectives are
// study attributes. The database is also the coordinator: trials are claimed under a lock on
// the study's row, so several processes or hosts can work on one study, the budget is met
// exactly and no configuration is measured twice. Running trials send heartbeats; a trial
// whose process stopped is returned to the queue and measured again by the next run.
//
// Samplers: tpe (the default), cmaes, random, grid and sobol, all seeded. The default
// proposes only allowed, untried configurations; it models the knobs jointly (a Parzen
// density over whole configurations), ranks the measured trials as a front (non-domination
// rank, hypervolume contribution, then violation), counts running trials, and where the
// offline model covers the plan starts from the model's predicted front and corrects the
// model with the measured trials (Prior, ModelPrior). Samplers built on goptuna's one value
// see several objectives scalarised ParEGO-style.
//
// The package leaves to others: decoding plans and evaluating their expressions (plan),
// starting engines (launcher), driving workloads (workload), scoring quality (quality), the
// performance model (sim), GPU inventory and allocation (hw), the stored record (record), and
// rendering progress and reports (cmd, report).
package search
