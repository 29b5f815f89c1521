#!/usr/bin/env bash
# A local deployment: PostgreSQL (tests-support/postgres/start.sh), three
# ops-agent replicas on it and nginx in front, all on 127.0.0.1 and
# unprivileged (nginx runs with its own prefix directory).
#
#   deploy/local.sh [--binary PATH]      # Ctrl-C (or SIGTERM) stops it all
#
# Environment: OPS_AGENT_TOKEN (default: generated and printed),
# NGINX_PORT (default 8080), REPLICA_BASE_PORT (default 3401: replicas on
# 3401..3403), OPS_AGENT_LEASE_MS (default 10000).
# Then: curl -H "Authorization: Bearer $OPS_AGENT_TOKEN" -H "Content-Type: application/json" \
#   -d '{"data":{"message":{"role":"user","content":[{"text":"status of api?"}]}},"init":{}}' \
#   http://127.0.0.1:8080/opsAgent
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

binary=""
if [ "${1:-}" = "--binary" ]; then binary=$2; fi
if [ -z "$binary" ]; then
  (cd "$root" && cargo build -q --release -p ops-agent)
  binary="${CARGO_TARGET_DIR:-$root/target}/release/ops-agent"
fi

if ! command -v nginx >/dev/null 2>&1 && [ ! -x /usr/sbin/nginx ]; then
  echo "installing nginx (apt-get install nginx)" >&2
  sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get install -y -q nginx >&2 || { $sudo apt-get update -q >&2 && $sudo apt-get install -y -q nginx >&2; }
fi
nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)

nginx_port=${NGINX_PORT:-8080}
base=${REPLICA_BASE_PORT:-3401}
export OPS_AGENT_LEASE_MS=${OPS_AGENT_LEASE_MS:-10000}
if [ -z "${OPS_AGENT_TOKEN:-}" ]; then
  OPS_AGENT_TOKEN=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
  echo "token: $OPS_AGENT_TOKEN" >&2
fi
export OPS_AGENT_TOKEN

work=$(mktemp -d "${TMPDIR:-/tmp}/ops-agent-deploy.XXXXXX")
pids=()
pg_dir=""
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  [ -n "$pg_dir" ] && bash "$root/tests-support/postgres/stop.sh" "$pg_dir" >/dev/null 2>&1 || true
  echo "logs kept in $work" >&2
}
trap cleanup EXIT
trap 'exit 0' INT TERM

eval "$(bash "$root/tests-support/postgres/start.sh")"
pg_dir=$GENKIT_TEST_POSTGRES_DIR
echo "postgres: $GENKIT_TEST_POSTGRES_URL" >&2

for i in 0 1 2; do
  port=$((base + i))
  PORT=$port OPS_AGENT_DATABASE=$GENKIT_TEST_POSTGRES_URL OPS_AGENT_REPLICA_ID=replica-$((i + 1)) \
    OPS_AGENT_DATA_DIR="$work/replica-$((i + 1))" \
    "$binary" --serve >"$work/replica-$((i + 1)).log" 2>&1 &
  pids+=($!)
done
for i in 0 1 2; do
  port=$((base + i))
  for _ in $(seq 1 300); do
    curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break
    sleep 0.1
  done
  curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null || { echo "replica on $port not ready; see $work" >&2; exit 1; }
done

mkdir -p "$work/nginx/logs" "$work/nginx/tmp"
sed -e "s/127.0.0.1:8080/127.0.0.1:$nginx_port/" \
    -e "s/127.0.0.1:3401/127.0.0.1:$base/" \
    -e "s/127.0.0.1:3402/127.0.0.1:$((base + 1))/" \
    -e "s/127.0.0.1:3403/127.0.0.1:$((base + 2))/" \
    "$root/deploy/nginx.conf" >"$work/nginx/nginx.conf"
"$nginx_bin" -p "$work/nginx" -c "$work/nginx/nginx.conf" -e "$work/nginx/logs/error.log" &
pids+=($!)
for _ in $(seq 1 100); do
  curl -fsS "http://127.0.0.1:$nginx_port/nginx-healthz" >/dev/null 2>&1 && break
  sleep 0.1
done
echo "serving: http://127.0.0.1:$nginx_port/opsAgent (replicas on $base..$((base + 2)), logs in $work)" >&2
wait
