#!/usr/bin/env bash
# Agent turns per second through nginx with 1, 2 and 3 ops-agent replicas on
# one PostgreSQL (issue 32): the deploy/ setup (deploy/nginx.conf,
# round-robin, no stickiness), the ops agent's rule-based model (no API
# key), each request one turn of a new session (`"init": {}`) answered as
# JSON, driven by wrk.
#
#   bash bench/replicas/run.sh                 # 10 s per run, 32 connections, 3 rounds
#   DURATION=5 CONNECTIONS=16 ROUNDS=3 bash bench/replicas/run.sh
#
# PostgreSQL runs with fsync on (tests-support/postgres/start.sh --durable).
# Rounds alternate the order of the replica counts. Prints one line per run
# and the medians.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
DURATION=${DURATION:-10}
CONNECTIONS=${CONNECTIONS:-32}
ROUNDS=${ROUNDS:-3}
target="${CARGO_TARGET_DIR:-$root/target}"
(cd "$root" && cargo build -q --release -p ops-agent)
binary="$target/release/ops-agent"
command -v wrk >/dev/null || { echo "wrk is needed (apt-get install wrk)" >&2; exit 2; }
nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$nginx_bin" ] || { echo "nginx is needed (apt-get install nginx)" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/bench-replicas.XXXXXX")
pids=()
pg_dir=""
stop_all() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  pids=()
}
cleanup() {
  stop_all
  [ -n "$pg_dir" ] && bash "$root/tests-support/postgres/stop.sh" "$pg_dir" >/dev/null 2>&1 || true
}
trap cleanup EXIT

eval "$(bash "$root/tests-support/postgres/start.sh" --durable)"
pg_dir=$GENKIT_TEST_POSTGRES_DIR
export OPS_AGENT_TOKEN=bench-token-0123456789
nginx_port=$((20000 + RANDOM % 20000))
base=$((nginx_port + 1))

cat >"$work/turn.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer $OPS_AGENT_TOKEN"
wrk.body = '{"data":{"message":{"role":"user","content":[{"text":"status of api?"}]}},"init":{}}'
LUA

run() { # $1 = replicas
  local n=$1 i port
  for ((i = 0; i < n; i++)); do
    port=$((base + i))
    PORT=$port OPS_AGENT_DATABASE=$GENKIT_TEST_POSTGRES_URL OPS_AGENT_REPLICA_ID=replica-$((i + 1)) \
      OPS_AGENT_DATA_DIR="$work/replica-$((i + 1))" "$binary" --serve >"$work/replica-$n-$((i + 1)).log" 2>&1 &
    pids+=($!)
  done
  for ((i = 0; i < n; i++)); do
    port=$((base + i))
    for _ in $(seq 1 300); do
      curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break
      sleep 0.1
    done
  done
  rm -rf "$work/nginx"; mkdir -p "$work/nginx/logs" "$work/nginx/tmp"
  # The upstream lists the first n replicas.
  awk -v n="$n" -v base="$base" -v port="$nginx_port" '
    /server 127\.0\.0\.1:340[1-3]/ { k++; if (k <= n) { sub(/127\.0\.0\.1:340[1-3]/, "127.0.0.1:" (base + k - 1)); print }; next }
    { sub(/127\.0\.0\.1:8080/, "127.0.0.1:" port); print }' "$root/deploy/nginx.conf" >"$work/nginx/nginx.conf"
  "$nginx_bin" -p "$work/nginx" -c "$work/nginx/nginx.conf" -e "$work/nginx/logs/error.log" &
  pids+=($!)
  for _ in $(seq 1 100); do
    curl -fsS "http://127.0.0.1:$nginx_port/nginx-healthz" >/dev/null 2>&1 && break
    sleep 0.1
  done
  local out rps non2xx
  out=$(wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" -s "$work/turn.lua" "http://127.0.0.1:$nginx_port/opsAgent")
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  non2xx=$(awk '/Non-2xx/ {print $5}' <<<"$out"); non2xx=${non2xx:-0}
  echo "replicas=$n turns_per_s=$rps non_2xx=$non2xx load=$(cut -d' ' -f1 /proc/loadavg)"
  stop_all
}

echo "# $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), ${DURATION}s x ${CONNECTIONS} connections"
results=()
for ((r = 0; r < ROUNDS; r++)); do
  if ((r % 2 == 0)); then order="1 2 3"; else order="3 2 1"; fi
  for n in $order; do results+=("$(run "$n")"); echo "${results[-1]}"; done
done
echo "# medians"
for n in 1 2 3; do
  printf '%s\n' "${results[@]}" | awk -v n="replicas=$n" '$1 == n {split($2, a, "="); print a[2]}' | sort -n |
    awk -v n="$n" '{v[NR] = $1} END {print "replicas=" n " median_turns_per_s=" v[int((NR + 1) / 2)]}'
done
