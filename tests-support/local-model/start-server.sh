#!/usr/bin/env bash
# Start a real OpenAI-compatible server (llama.cpp's llama-server, prebuilt in
# PyPI xllamacpp) serving SmolLM2-135M-Instruct on 127.0.0.1, in the background.
#
# Usage: start-server.sh [port]        (default: $LOCAL_MODEL_PORT or 18080)
#
# ONE process, ONE base URL, two model names for the same loaded model (see
# WIRE_NOTES.md, "Server setup"):
#   smollm2        chat (/v1/chat/completions)
#   smollm2-embed  embeddings (/v1/embeddings, mean-pooled, L2-normalised)
# serve.py runs llama-server on a private port and answers on <port>: every
# request passes through as it is, except a chat request forcing a named
# function (tool_choice {"type":"function",...}), which llama-server does not
# support; serve.py constrains the output to the function's parameters and
# returns it as the tool call. Prompt caching is off so that temperature 0 is
# deterministic (a cached prompt is re-evaluated differently, and the same
# request could give two different greedy answers). One slot: concurrent
# requests queue and each runs to completion.
#
# Needs .ci/install-local-model-server.sh to have run (same GENKIT_RS_CACHE).
#
# On success prints (stdout, eval-able) and writes the same to $RUN_DIR/server-<port>.env:
#   LOCAL_MODEL_BASE_URL=http://127.0.0.1:<port>/v1
#   LOCAL_MODEL_NAME=smollm2
#   LOCAL_MODEL_EMBED_NAME=smollm2-embed
#   LOCAL_MODEL_PID=<pid>
#   LOCAL_MODEL_LOG=<log file>
# Server stdout/stderr go to $RUN_DIR/server-<port>.log (its tail is printed on failure).
#
# Environment:
#   GENKIT_RS_CACHE            cache root (default $HOME/.cache/genkit-rs)
#   LOCAL_MODEL_RUN_DIR        pid/log/env folder (default $GENKIT_RS_CACHE/run)
#   LOCAL_MODEL_START_TIMEOUT  seconds to wait for readiness (default 120)
#   LOCAL_MODEL_THREADS        llama.cpp threads (default 2; 1 is much more robust
#                              when other CPU-heavy work, e.g. cargo, runs alongside)
#   LOCAL_MODEL_VERBOSE        1 = llama-server's full log incl. timings (default 0)
set -euo pipefail

PORT="${1:-${LOCAL_MODEL_PORT:-18080}}"
CACHE="${GENKIT_RS_CACHE:-${HOME:-/root}/.cache/genkit-rs}"
VENV="$CACHE/xllamacpp-venv"
VPY="$VENV/bin/python"
GGUF="$CACHE/models/SmolLM2-135M-Instruct.Q4_1.gguf"
RUN_DIR="${LOCAL_MODEL_RUN_DIR:-$CACHE/run}"
TIMEOUT="${LOCAL_MODEL_START_TIMEOUT:-120}"
THREADS="${LOCAL_MODEL_THREADS:-2}"
VERBOSE="${LOCAL_MODEL_VERBOSE:-0}"
HOST="127.0.0.1"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

PID_FILE="$RUN_DIR/server-$PORT.pid"
LOG_FILE="$RUN_DIR/server-$PORT.log"
ENV_FILE="$RUN_DIR/server-$PORT.env"
BASE_URL="http://$HOST:$PORT/v1"

log() { echo "[start-server] $*" >&2; }
die() { echo "[start-server] ERROR: $*" >&2; exit 1; }

for v in PORT THREADS TIMEOUT; do
    case "${!v}" in ''|*[!0-9]*) die "$v must be a positive number, got '${!v}'";; esac
done
command -v curl >/dev/null 2>&1 || die "curl is required"
[ -x "$VPY" ] || die "no venv at $VENV: run .ci/install-local-model-server.sh first"
[ -f "$GGUF" ] || die "no model at $GGUF: run .ci/install-local-model-server.sh first"
mkdir -p "$RUN_DIR"

ready() { curl -sf -m 3 -o /dev/null "$BASE_URL/models"; }

print_env() {
    {
        echo "LOCAL_MODEL_BASE_URL=$BASE_URL"
        echo "LOCAL_MODEL_NAME=smollm2"
        echo "LOCAL_MODEL_EMBED_NAME=smollm2-embed"
        echo "LOCAL_MODEL_PID=$1"
        echo "LOCAL_MODEL_LOG=$LOG_FILE"
    } | tee "$ENV_FILE"
}

show_log() {
    echo "----- $LOG_FILE: errors -----" >&2
    grep -m 10 -E 'GGML_ASSERT|Traceback|Error|error:|Illegal instruction|Segmentation' "$LOG_FILE" >&2 || true
    echo "----- $LOG_FILE: last 30 lines -----" >&2
    tail -n 30 "$LOG_FILE" >&2 || true
}

# Already running from an earlier call? Reuse it.
if [ -f "$PID_FILE" ]; then
    OLD_PID=$(cat "$PID_FILE" 2>/dev/null || true)
    if [ -n "$OLD_PID" ] && kill -0 "$OLD_PID" 2>/dev/null && ready; then
        log "server already running (pid $OLD_PID) at $BASE_URL"
        print_env "$OLD_PID"
        exit 0
    fi
    rm -f "$PID_FILE"
fi

# Something else on the port? (curl exits 0 on any HTTP answer, 7 on refused)
if curl -s -m 2 -o /dev/null "http://$HOST:$PORT/" 2>/dev/null; then
    die "port $PORT on $HOST is already in use by another process"
fi

VERBOSE_FLAG=(); [ "$VERBOSE" = "1" ] && VERBOSE_FLAG=(--verbose)

log "starting llama-server (xllamacpp) on $BASE_URL (log: $LOG_FILE)"
START=$(date +%s.%N)
# Clean environment: nothing from the caller's (e.g. OMP_* or LLAMA_ARG_*
# variables) changes the server.
# setsid: own process group, so stop-server.sh can end it and its threads cleanly.
setsid env -i PATH="$VENV/bin:/usr/local/bin:/usr/bin:/bin" HOME="${HOME:-/root}" LANG=C.UTF-8 \
    "$VPY" "$HERE/serve.py" --model "$GGUF" --host "$HOST" --port "$PORT" \
    --alias smollm2 --alias smollm2-embed --threads "$THREADS" --ctx 2048 "${VERBOSE_FLAG[@]}" \
    </dev/null >"$LOG_FILE" 2>&1 &
PID=$!
echo "$PID" >"$PID_FILE"

DEADLINE=$(( $(date +%s) + TIMEOUT ))
until ready; do
    if ! kill -0 "$PID" 2>/dev/null; then
        rm -f "$PID_FILE"
        show_log
        die "server process exited before becoming ready"
    fi
    if [ "$(date +%s)" -ge "$DEADLINE" ]; then
        kill -TERM -- "-$PID" 2>/dev/null || kill -TERM "$PID" 2>/dev/null || true
        sleep 1
        kill -KILL -- "-$PID" 2>/dev/null || true
        rm -f "$PID_FILE"
        show_log
        die "server did not answer on $BASE_URL/models within ${TIMEOUT}s"
    fi
    sleep 0.2
done

log "ready in $(awk -v s="$START" -v e="$(date +%s.%N)" 'BEGIN{printf "%.1f", e-s}') s (pid $PID)"
print_env "$PID"
