#!/usr/bin/env bash
# A throwaway PostgreSQL server on loopback for the distributed-study tests.
#
#   eval "$(scripts/postgres.sh start)"   installs PostgreSQL with apt when it is missing,
#                                         starts a server in a new temporary data folder and
#                                         prints `export FRONTIER_TEST_POSTGRES=postgres://...`
#                                         (and FRONTIER_POSTGRES_DIR, which stop uses)
#   scripts/postgres.sh stop              stops that server and removes its folder
#
# The server runs as the `postgres` user when started by root (PostgreSQL refuses to run as
# root), trusts connections from loopback only, and listens on a free port.
set -euo pipefail

as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

bindir() {
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  if [ -z "$d" ] && command -v initdb >/dev/null 2>&1; then d=$(dirname "$(command -v initdb)"); fi
  echo "$d"
}

install_pg() {
  if [ -n "$(bindir)" ]; then return; fi
  echo "installing postgresql (apt)" >&2
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq postgresql >/dev/null
}

free_port() {
  local p
  for p in $(seq 55432 55532); do
    if ! (exec 3<>/dev/tcp/127.0.0.1/"$p") 2>/dev/null; then echo "$p"; return; fi
  done
  echo "no free port in 55432-55532" >&2
  exit 1
}

start() {
  install_pg
  local bin dir port
  bin=$(bindir)
  dir=$(mktemp -d "${TMPDIR:-/tmp}/frontier-pg.XXXXXX")
  chmod 755 "$dir"
  mkdir -p "$dir/data" "$dir/run"
  if [ "$(id -u)" = 0 ]; then chown -R postgres:postgres "$dir"; fi
  port=$(free_port)
  as_pg "$bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 >"$dir/initdb.log" 2>&1 || {
    cat "$dir/initdb.log" >&2; exit 1; }
  as_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $dir/run -c max_connections=200 -c fsync=off" start >&2 || {
    cat "$dir/server.log" >&2; exit 1; }
  echo "export FRONTIER_POSTGRES_DIR=$dir"
  echo "export FRONTIER_TEST_POSTGRES=postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
}

stop() {
  local dir=${FRONTIER_POSTGRES_DIR:-}
  if [ -z "$dir" ] || [ ! -d "$dir" ]; then
    echo "FRONTIER_POSTGRES_DIR is not set to a running server's folder" >&2
    exit 1
  fi
  as_pg "$(bindir)/pg_ctl" -D "$dir/data" -m fast -w stop >&2 || true
  rm -rf "$dir"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: scripts/postgres.sh start|stop" >&2; exit 1 ;;
esac
