#!/usr/bin/env bash
# The test command: format check, vet, and every test with the race detector.
set -euo pipefail
cd "$(dirname "$0")/.."
bad=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$bad" ]; then
  echo "gofmt would change:"; echo "$bad"; exit 1
fi
go vet ./...
go test -race -count=1 ./...
