#!/usr/bin/env bash
# Starts a private PostgreSQL server for the tests: its own data directory
# in a new temporary directory, 127.0.0.1 on a free port, its unix socket in
# that directory. Installs Debian's postgresql package first when no initdb
# is found under /usr/lib/postgresql/*/bin.
#
# Prints, for `eval`:
#   GENKIT_TEST_POSTGRES_URL=postgres://genkit@127.0.0.1:<port>/postgres
#   GENKIT_TEST_POSTGRES_DIR=<the temporary directory>
# Stop it with: bash tests-support/postgres/stop.sh "$GENKIT_TEST_POSTGRES_DIR"
#
# Options: --durable keeps fsync on (benchmarks); by default the throwaway
# test cluster runs with fsync and synchronous_commit off, for speed.
set -euo pipefail

durable=0
[ "${1:-}" = "--durable" ] && durable=1

find_bin() {
  ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | while read -r d; do
    [ -x "$d/initdb" ] && echo "$d"
  done | tail -n1
}

bin=$(find_bin)
if [ -z "$bin" ]; then
  echo "installing PostgreSQL (apt-get install postgresql)" >&2
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y -q postgresql >&2; then
    apt-get update -q >&2
    apt-get install -y -q postgresql >&2
  fi
  bin=$(find_bin)
  [ -n "$bin" ] || { echo "no initdb under /usr/lib/postgresql/*/bin after installing postgresql" >&2; exit 1; }
fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/genkit-pg.XXXXXX")
mkdir -p "$dir/socket"
# PostgreSQL refuses to run as root: as root, the server runs as the
# `postgres` user the package creates.
as_user() { "$@"; }
if [ "$(id -u)" = 0 ]; then
  id postgres >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin postgres
  chown -R postgres "$dir"
  as_user() { su postgres -s /bin/sh -c "$(printf '%q ' "$@")"; }
fi

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')

as_user "$bin/initdb" -D "$dir/data" -U genkit --auth=trust -E UTF8 --locale=C --no-sync >"$dir/initdb.log" 2>&1 \
  || { cat "$dir/initdb.log" >&2; exit 1; }

settings="-c listen_addresses=127.0.0.1 -p $port -k $dir/socket -c max_connections=400 -c shared_buffers=64MB"
if [ "$durable" = 0 ]; then
  settings="$settings -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
fi
as_user "$bin/pg_ctl" -D "$dir/data" -o "$settings" -l "$dir/server.log" -w -t 60 start >&2 \
  || { cat "$dir/server.log" >&2; exit 1; }

echo "GENKIT_TEST_POSTGRES_URL=postgres://genkit@127.0.0.1:$port/postgres"
echo "GENKIT_TEST_POSTGRES_DIR=$dir"
