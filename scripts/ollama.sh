#!/usr/bin/env bash
# Builds Ollama v0.6.5 from source into .cache/ollama/bin (git-ignored) when
# it is not there yet, and prints the path of the binary.
#
# Newer Ollama releases do not build with a plain `go install`; v0.6.5 does
# and runs CPU-only, which is all the tests need.
#
# Usage: scripts/ollama.sh            # build if missing, print the path
#        FRONTIER_OLLAMA="$(scripts/ollama.sh)" go test ./launcher/...
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bindir="$root/.cache/ollama/bin"
bin="$bindir/ollama"

if [[ ! -x "$bin" ]]; then
	mkdir -p "$bindir"
	echo "building ollama v0.6.5 into $bindir (takes a few minutes)" >&2
	GOBIN="$bindir" GOFLAGS=-mod=mod go install github.com/ollama/ollama@v0.6.5 >&2
fi
echo "$bin"
