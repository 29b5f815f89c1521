#!/usr/bin/env bash
# HTTP load benchmark of genkit-server's flow server, beside a bare axum
# handler doing the same work (the ceiling) and Genkit JS's Express handler.
#
#   bench/server/run.sh                 # 10 s per run, 64 connections
#   DURATION=5 CONNECTIONS=32 ROUNDS=5 bench/server/run.sh
#   SKIP_JS=1 bench/server/run.sh       # Rust targets only
#   SKIP_BUILD=1 bench/server/run.sh    # use already built release examples
#   BEFORE_DIR=/tmp/before bench/server/run.sh
#       # also runs $BEFORE_DIR/bench_flow_server (e.g. built from main) as
#       # target genkit_rust_before, in the same rounds: before and after
#       # under the same load
#
# Load generator: wrk (Debian package `wrk`; installed with apt-get if missing
# and we are root). Everything runs on 127.0.0.1. Two scenarios:
#   echo    POST /echo   {"data":"hello"}                  -> {"result":"hello"}
#   stream  POST /stream {"data":10}, Accept: text/event-stream -> 10 SSE chunks + result
# For each target: requests/s, p50/p99 latency, errors (socket errors and
# non-2xx), the server's CPU time per request (utime+stime from
# /proc/<pid>/stat: robust when other work shares the machine) and its peak
# RSS (VmHWM from /proc/<pid>/status).
# The Rust targets are measured ROUNDS times (default 3), alternating which
# goes first, since the machine may be busy; the summary uses medians.
# Prints one JSON line per run, then median ratios to bare axum.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
DURATION="${DURATION:-10}"
CONNECTIONS="${CONNECTIONS:-64}"
THREADS="${THREADS:-2}"
TARGET_DIR="${CARGO_TARGET_DIR:-$REPO/target}"
OUT="${OUT:-$HERE/results.jsonl}"
PORT_BASE="${PORT_BASE:-3480}"
ROUNDS="${ROUNDS:-3}"

if ! command -v wrk >/dev/null; then
  if [ "$(id -u)" = 0 ]; then
    (apt-get install -y wrk || (apt-get update && apt-get install -y wrk)) >/dev/null
  else
    echo "wrk is required (apt-get install wrk)" >&2
    exit 1
  fi
fi

if [ -z "${SKIP_BUILD:-}" ]; then
  echo "building the Rust targets (release)..." >&2
  (cd "$REPO" && CARGO_TARGET_DIR="$TARGET_DIR" cargo build --release -q -p genkit-server \
    --example bench_flow_server --example bench_bare_axum)
fi

LUA_DIR="$(mktemp -d)"
trap 'rm -rf "$LUA_DIR"; [ -n "${SERVER_PID:-}" ] && kill "$SERVER_PID" 2>/dev/null || true' EXIT
cat >"$LUA_DIR/echo.lua" <<'EOF'
wrk.method = "POST"
wrk.body = '{"data":"hello"}'
wrk.headers["Content-Type"] = "application/json"
EOF
cat >"$LUA_DIR/stream.lua" <<'EOF'
wrk.method = "POST"
wrk.body = '{"data":10}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "text/event-stream"
EOF

wait_port() {
  for _ in $(seq 1 200); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
    sleep 0.05
  done
  echo "server on port $1 did not start" >&2
  return 1
}

# Latency string (e.g. 1.23ms, 850.00us, 1.02s) -> milliseconds.
to_ms() {
  awk -v v="$1" 'BEGIN {
    n = v + 0; u = v; sub(/^[0-9.]+/, "", u);
    if (u == "us") n = n / 1000; else if (u == "s") n = n * 1000; else if (u == "m") n = n * 60000;
    printf "%.3f", n }'
}

# utime + stime of a process, in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

check_response() { # name port
  local echo_body stream_body
  echo_body="$(curl -s -X POST "http://127.0.0.1:$2/echo" -H 'content-type: application/json' -d '{"data":"hello"}')"
  stream_body="$(curl -s -X POST "http://127.0.0.1:$2/stream" -H 'content-type: application/json' \
    -H 'accept: text/event-stream' -d '{"data":10}')"
  if [ "$echo_body" != '{"result":"hello"}' ]; then
    echo "$1: unexpected echo response: $echo_body" >&2; exit 2
  fi
  if [ "$(grep -c '"message"' <<<"$stream_body")" != 10 ] || ! grep -q '"result":"done"' <<<"$stream_body"; then
    echo "$1: unexpected stream response: $stream_body" >&2; exit 2
  fi
}

run_target() { # name round port command...
  local name="$1" round="$2" port="$3"; shift 3
  PORT="$port" "$@" >/dev/null 2>&1 &
  SERVER_PID=$!
  wait_port "$port"
  check_response "$name" "$port"
  for scenario in echo stream; do
    # Warm up, then measure.
    wrk -t"$THREADS" -c"$CONNECTIONS" -d2s -s "$LUA_DIR/$scenario.lua" "http://127.0.0.1:$port/$scenario" >/dev/null
    local out rps p50 p99 socket non2xx cpu0 cpu1 reqs
    cpu0="$(cpu_ticks "$SERVER_PID")"
    out="$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" --latency -s "$LUA_DIR/$scenario.lua" \
      "http://127.0.0.1:$port/$scenario")"
    cpu1="$(cpu_ticks "$SERVER_PID")"
    reqs="$(awk '/requests in/ {print $1}' <<<"$out")"
    rps="$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")"
    p50="$(to_ms "$(awk '$1 == "50%" {print $2}' <<<"$out")")"
    p99="$(to_ms "$(awk '$1 == "99%" {print $2}' <<<"$out")")"
    socket="$(awk '/Socket errors:/ {gsub(",", ""); print $4 + $6 + $8 + $10}' <<<"$out")"
    non2xx="$(awk '/Non-2xx or 3xx responses:/ {print $5}' <<<"$out")"
    local hwm
    hwm="$(awk '/^VmHWM:/ {printf "%.1f", $2 / 1024}' "/proc/$SERVER_PID/status")"
    local cpu_us
    cpu_us="$(awk -v t="$((cpu1 - cpu0))" -v r="$reqs" -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%.2f", t * 1e6 / hz / r}')"
    printf '{"target":"%s","round":%s,"scenario":"%s","requests_per_sec":%s,"p50_ms":%s,"p99_ms":%s,"server_cpu_us_per_req":%s,"errors":%s,"peak_rss_mb":%s,"connections":%s,"duration_s":%s}\n' \
      "$name" "$round" "$scenario" "$rps" "$p50" "$p99" "$cpu_us" "$(( ${socket:-0} + ${non2xx:-0} ))" "$hwm" "$CONNECTIONS" "$DURATION" | tee -a "$OUT"
  done
  kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true
  SERVER_PID=""
}

: >"$OUT"
targets=(
  "bare_axum|$((PORT_BASE + 1))|$TARGET_DIR/release/examples/bench_bare_axum"
  "genkit_rust|$PORT_BASE|$TARGET_DIR/release/examples/bench_flow_server"
)
if [ -n "${BEFORE_DIR:-}" ]; then
  targets+=("genkit_rust_before|$((PORT_BASE + 3))|$BEFORE_DIR/bench_flow_server")
fi
for round in $(seq 1 "$ROUNDS"); do
  # Odd rounds in order, even rounds reversed.
  n=${#targets[@]}
  for i in $(seq 0 $((n - 1))); do
    if [ $((round % 2)) = 1 ]; then t="${targets[$i]}"; else t="${targets[$((n - 1 - i))]}"; fi
    IFS='|' read -r name port bin <<<"$t"
    run_target "$name" "$round" "$port" "$bin"
  done
done
if [ -z "${SKIP_JS:-}" ] && command -v node >/dev/null; then
  JS="$REPO/bench/js"
  if [ ! -d "$JS/node_modules" ] || [ "$JS/package-lock.json" -nt "$JS/node_modules" ]; then
    (cd "$JS" && npm ci --no-audit --no-fund >/dev/null)
  fi
  (unset GENKIT_ENV; cd "$JS" && run_target genkit_js_express 1 "$((PORT_BASE + 2))" node flow_server.mjs)
fi

python3 - "$OUT" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
groups = {}
for r in rows:
    groups.setdefault((r["target"], r["scenario"]), []).append(r)
med = {k: {m: statistics.median(x[m] for x in v) for m in ("requests_per_sec", "p50_ms", "p99_ms", "server_cpu_us_per_req", "peak_rss_mb")}
       for k, v in groups.items()}
print("\nmedians (requests/s, p50 ms, p99 ms, server CPU us/request, peak RSS MB) and ratios to bare axum")
for (target, scenario), m in sorted(med.items()):
    base = med.get(("bare_axum", scenario))
    line = (f"  {target:18} {scenario:6} {m['requests_per_sec']:>10.0f} rps  p50 {m['p50_ms']:.2f}"
            f"  p99 {m['p99_ms']:.2f}  cpu {m['server_cpu_us_per_req']:.1f}us  rss {m['peak_rss_mb']:.1f}")
    if base and target != "bare_axum":
        line += (f"   | rps {m['requests_per_sec'] / base['requests_per_sec']:.2f}x"
                 f"  p99 {m['p99_ms'] / base['p99_ms']:.2f}x"
                 f"  cpu/req {m['server_cpu_us_per_req'] / base['server_cpu_us_per_req']:.2f}x")
    print(line)
errors = sum(r["errors"] for r in rows)
print(f"errors: {errors}")
sys.exit(1 if errors else 0)
EOF
