// Package vllm is a model of vLLM's versions as data: for each release line it knows the
// `vllm serve` flags (type, argparse action, choices, defaults, short forms), when each flag
// appeared, was renamed or was removed, vLLM's GPU-dependent defaults, and how the memory
// budget is accounted. It parses a `vllm serve` command line the way that version's argparse
// does, with the same error messages and exit status.
//
// The tables were written by reading vLLM's own source (vllm/engine/arg_utils.py,
// vllm/config/*.py, vllm/entrypoints/openai/cli_args.py, vllm/utils/argparse_utils.py) at
// two pinned upstream commits:
//
//   - the v0.13 line: 9187de9fac94 (2025-12-19, v0.13.0);
//   - the current line, v0.22: 9aaf83ef502f (main of 2026-05-19), checked against the
//     source listing of docs.vllm.ai/en/latest of May 2026.
//
// The lines in between (v0.14 to v0.21) are derived from the dated changes recorded with
// each flag (Version.Exact is false for them): a flag that exists at v0.22 but not at v0.13
// and whose first release was not pinned is taken to exist from v0.14, so that a derived
// line never refuses a flag the real release accepts.
//
// The package imports no other package of frontier (only a small edit-distance library for its
// suggestions). It leaves launching vLLM to package launcher and simulating it to package sim;
// both ask it what a version accepts.
package vllm
