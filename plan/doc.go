// Package plan reads frontier's plan language: HCL files that describe a study (the model, the
// engine, the hardware, the knobs to search and their rules, the workload classes and their
// SLOs, quality gates, checks and objectives).
//
// Load parses a plan, resolves its variables with Terraform's precedence, decodes every block
// against an explicit schema and checks it statically, collecting every problem as an HCL
// diagnostic with a file, a line and a column. Expressions that depend on a trial (rules,
// checks and objectives) are kept and evaluated later by CheckRules, EvalChecks and
// EvalObjectives, so no other package sees HCL. Knob, Points, Grid and GridSize describe the
// search space.
//
// The package does not run anything: sampling the space is left to package search, launching
// engines to launcher, driving and measuring workloads to workload, scoring quality to
// quality, and checking the hardware a plan asks for to hw and the commands.
package plan
