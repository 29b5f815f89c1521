#!/usr/bin/env bash
# Starts a private PostgreSQL server with the pgvector extension for the
# tests. Debian's PostgreSQL has no pgvector; PyPI's `pgserver` 0.1.4 ships
# a PostgreSQL build with `vector.so`: it is pip-installed once into a venv
# under ~/.cache/genkit-rs. The server gets its own data directory in a new
# temporary directory, 127.0.0.1 on a free port, its socket in that
# directory, fsync off (a throwaway cluster).
#
# Prints, for `eval`:
#   GENKIT_TEST_PGVECTOR_URL=postgres://genkit@127.0.0.1:<port>/postgres
#   GENKIT_TEST_PGVECTOR_DIR=<the temporary directory>
# Stop it with: bash tests-support/pgvector/stop.sh "$GENKIT_TEST_PGVECTOR_DIR"
set -euo pipefail

venv="${XDG_CACHE_HOME:-$HOME/.cache}/genkit-rs/pgserver-venv"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import pgserver' 2>/dev/null; then
  echo "installing pgserver 0.1.4 (PyPI) into $venv" >&2
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install --quiet --disable-pip-version-check pgserver==0.1.4 >&2
fi
pgbin=$("$venv/bin/python" -c 'import pgserver, pathlib; print(pathlib.Path(pgserver.__file__).parent / "pginstall" / "bin")')
[ -x "$pgbin/initdb" ] || { echo "no initdb in $pgbin" >&2; exit 1; }

dir=$(mktemp -d "${TMPDIR:-/tmp}/genkit-pgvector.XXXXXX")
mkdir -p "$dir/socket"
# PostgreSQL refuses to run as root: as root, the server runs as the
# `postgres` user (created if missing), which must be able to read the venv.
as_user() { "$@"; }
if [ "$(id -u)" = 0 ]; then
  id postgres >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin postgres
  chown -R postgres "$dir"
  chmod -R o+rX "$venv"
  # Every folder above the install must be traversable too (~ is often 0700).
  d=$(dirname "$pgbin")
  while [ "$d" != / ]; do chmod o+x "$d"; d=$(dirname "$d"); done
  as_user() { su postgres -s /bin/sh -c "$(printf '%q ' "$@")"; }
fi

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')

as_user "$pgbin/initdb" -D "$dir/data" -U genkit --auth=trust -E UTF8 --locale=C --no-sync >"$dir/initdb.log" 2>&1 \
  || { cat "$dir/initdb.log" >&2; exit 1; }

settings="-c listen_addresses=127.0.0.1 -p $port -k $dir/socket -c max_connections=100 -c shared_buffers=128MB -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
as_user "$pgbin/pg_ctl" -D "$dir/data" -o "$settings" -l "$dir/server.log" -w -t 60 start >&2 \
  || { cat "$dir/server.log" >&2; exit 1; }
echo "$pgbin" >"$dir/bin"

echo "GENKIT_TEST_PGVECTOR_URL=postgres://genkit@127.0.0.1:$port/postgres"
echo "GENKIT_TEST_PGVECTOR_DIR=$dir"
