// Package vllm is a model of vLLM's versions as data: for each release line it knows the
// `vllm serve` flags (type, argparse action, choices, defaults, short forms), when each flag
// appeared, was renamed or was removed, vLLM's GPU-dependent defaults, and how the memory
// budget is accounted. It parses a `vllm serve` command line the way that version's argparse
// does, with the same error messages and exit status.
//
// The tables were written by reading vLLM's own source (vllm/engine/arg_utils.py,
// vllm/config/*.py, vllm/entrypoints/openai/cli_args.py, vllm/utils/argparse_utils.py) at
// three pinned upstream commits:
//
//   - the v0.13 line: 9187de9fac94 (2025-12-19, v0.13.0);
//   - the v0.22 line: 9aaf83ef502f (main of 2026-05-19), checked against the source listing
//     of docs.vllm.ai/en/latest of May 2026 and against a static extraction of every
//     add_argument call and config field at that commit;
//   - the newest line, v0.28: 6adad0876 (main of 2026-08-14), the newest source read, by
//     the same extraction.
//
// The lines in between (v0.14 to v0.21, v0.23 to v0.27) are derived from the dated changes
// recorded with each flag (Version.Exact is false for them): a flag that exists at v0.22 but
// not at v0.13 and whose first release was not pinned is taken to exist from v0.14, one added
// after v0.22 from v0.23, so that a derived line never refuses a flag the real release
// accepts.
//
// Any version string is usable (Lookup): a release newer than the newest line is modelled by
// the newest line, an older one by the nearest older line, with Version.Warning saying so.
// The tables serve `frontier validate` and `plan` without a host; on a host, the installed
// vLLM's own `serve --help=all` is the authority (ParseHelp, Version.WithHost).
//
// The package imports no other package of frontier (only a small edit-distance library for its
// suggestions). It leaves launching vLLM to package launcher and simulating it to package sim;
// both ask it what a version accepts.
package vllm
