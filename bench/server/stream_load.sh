#!/usr/bin/env bash
# Streaming load test of genkit-server's flow server: CLIENTS (default 1000)
# concurrent clients, each streaming POST /ticks over SSE again and again for
# DURATION seconds (default 60): CHUNKS chunks (default 20) 50 ms apart, so
# about CLIENTS streams are open at any moment. Every stream is checked to
# its end; any refused, failed or incomplete stream is an error. The server's
# RSS is sampled once a second (memory must stay flat, not grow with the
# number of streams served).
#
#   bench/server/stream_load.sh
#   CLIENTS=200 DURATION=10 bench/server/stream_load.sh
#   SKIP_BUILD=1 bench/server/stream_load.sh
#   PROFILE=debug CLIENTS=50 DURATION=5 bench/server/stream_load.sh   # a smoke run
#
# Everything runs on 127.0.0.1. Prints the client's JSON summary line (and
# appends it to bench/.results/stream_load.jsonl); exits non-zero on any error.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
TARGET_DIR="${CARGO_TARGET_DIR:-$REPO/target}"
PORT="${PORT:-3490}"
export CLIENTS="${CLIENTS:-1000}" DURATION="${DURATION:-60}" CHUNKS="${CHUNKS:-20}"
OUT="${OUT:-$REPO/bench/.results/stream_load.jsonl}"
PROFILE="${PROFILE:-release}"
if [ "$PROFILE" = release ]; then BUILD_FLAG=--release; else BUILD_FLAG=; fi

# Each client holds a socket, and so does the server for it: raise the
# open-file limit to the hard limit if the soft one is too low.
need=$((CLIENTS * 2 + 256))
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt "$need" ]; then
  ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
  if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt "$need" ]; then
    echo "open-file limit $(ulimit -n) is below the $need needed (raise the hard limit)" >&2
    exit 1
  fi
fi

if [ -z "${SKIP_BUILD:-}" ]; then
  echo "building the server and the load client ($PROFILE)..." >&2
  (cd "$REPO" && CARGO_TARGET_DIR="$TARGET_DIR" cargo build $BUILD_FLAG -q \
    -p genkit-server --example bench_flow_server -p genkit-bench --bin stream_load)
fi

PORT="$PORT" "$TARGET_DIR/$PROFILE/examples/bench_flow_server" &
SERVER_PID=$!
trap 'kill "$SERVER_PID" 2>/dev/null || true' EXIT
for _ in $(seq 1 200); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then break; fi
  sleep 0.05
done

echo "load ($PROFILE build): $CLIENTS clients x ${DURATION}s, $CHUNKS chunks per stream; load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
set +e
line="$(URL="http://127.0.0.1:$PORT/ticks" SERVER_PID="$SERVER_PID" \
  "$TARGET_DIR/$PROFILE/stream_load")"
status=$?
set -e
echo "$line"
mkdir -p "$(dirname "$OUT")"
echo "$line" >>"$OUT"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
exit "$status"
