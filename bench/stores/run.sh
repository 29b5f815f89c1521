#!/usr/bin/env bash
# Benchmarks of the SQL session stores (crates/genkit-store-sql): turns per
# second on one session and on 100 sessions in parallel, and bytes stored
# per turn for a 200-turn session, on SQLite (a file in a temp dir) and on a
# private PostgreSQL server started with fsync on (tests-support/postgres).
# There is no Genkit JS peer: Genkit JS ships no SQL session store.
#
#   bench/stores/run.sh            # prints one JSON line per measurement
#   TURNS=200 PARALLEL_TURNS=10 bench/stores/run.sh
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"

pg_env=$(bash tests-support/postgres/start.sh --durable)
eval "$pg_env"
trap 'bash tests-support/postgres/stop.sh "$GENKIT_TEST_POSTGRES_DIR"' EXIT
db="${GENKIT_TEST_POSTGRES_URL%/postgres}/bench"
psql_bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n1)
"$psql_bin/psql" -q "$GENKIT_TEST_POSTGRES_URL" -c "CREATE DATABASE bench" >&2

echo "bench: building the store bench (release)" >&2
cargo build --release -q -p genkit-store-sql --features postgres --example store_bench
"${CARGO_TARGET_DIR:-$root/target}/release/examples/store_bench" \
  --postgres "$db" --turns "${TURNS:-200}" --parallel-turns "${PARALLEL_TURNS:-10}"
uptime | sed 's/.*load average: \(.*\)/{"load_average":"\1"}/'
