#!/usr/bin/env bash
# The test command. On a fresh Debian machine with Go and gcc it installs what the tests need
# (PostgreSQL, Chromium and g++ from Debian, Ollama built from its Go module into .cache/), starts a
# throwaway PostgreSQL on loopback, then runs the format check, go vet and every test with the
# race detector.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== tracked files (no build output: no executables, nothing over 4 MiB)"
bad_files=()
while IFS= read -r -d '' f; do
  [ -f "$f" ] || continue
  size=$(stat -c %s "$f")
  if [ "$size" -gt $((4 * 1024 * 1024)) ]; then
    bad_files+=("$f: $size bytes (over 4 MiB)")
    continue
  fi
  magic=$(head -c 4 "$f" | od -An -tx1 | tr -d ' \n')
  case "$magic" in
    7f454c46 | cffaedfe | cefaedfe | feedfacf | feedface | cafebabe) bad_files+=("$f: a compiled executable") ;;
    4d5a*) bad_files+=("$f: a Windows executable") ;;
  esac
done < <(git ls-files -z)
if [ ${#bad_files[@]} -gt 0 ]; then
  echo "build output is tracked by git; remove it (git rm --cached) and ignore it:"
  printf '  %s\n' "${bad_files[@]}"
  exit 1
fi

need=()
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v g++ >/dev/null 2>&1 || need+=(g++) # Ollama's build compiles llama.cpp
if [ ${#need[@]} -gt 0 ]; then
  echo "== installing ${need[*]} (apt)"
  if [ "$(id -u)" = 0 ]; then sudo=""; else sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi
export FRONTIER_CHROMIUM=${FRONTIER_CHROMIUM:-$(command -v chromium)}

if [ -x scripts/ollama.sh ]; then
  echo "== ollama (built from its Go module on first use, into .cache/)"
  FRONTIER_OLLAMA=$(scripts/ollama.sh | tail -n 1)
  export FRONTIER_OLLAMA
fi

if [ -x scripts/postgres.sh ]; then
  echo "== postgresql (a throwaway server on loopback)"
  eval "$(scripts/postgres.sh start)"
  trap 'scripts/postgres.sh stop >/dev/null 2>&1 || true' EXIT
fi

echo "== gofmt"
bad=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$bad" ]; then
  echo "gofmt would change:"; echo "$bad"; exit 1
fi
echo "== go vet"
go vet ./...
echo "== go test -race"
go test -race -count=1 -timeout 30m ./...
echo "== go test (the performance model's validation, too slow under -race)"
go test -count=1 -timeout 10m -run '^TestValidation$' ./sim
