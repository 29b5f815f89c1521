#!/usr/bin/env bash
# Start a real OpenAI-compatible server (llama-cpp-python 0.3.36) serving
# SmolLM2-135M-Instruct on 127.0.0.1, in the background.
#
# Usage: start-server.sh [port]        (default: $LOCAL_MODEL_PORT or 18080)
#
# ONE process, ONE base URL, two model names (see WIRE_NOTES.md, "Server setup"):
#   smollm2        chat (/v1/chat/completions). n_batch=1 so that temperature 0 is
#                  deterministic: with a bigger batch the same request can give two
#                  different greedy answers depending on the server's prompt-cache
#                  state (a cold prompt is evaluated in one batch, a repeated one
#                  only re-evaluates the last token; the numerics differ).
#   smollm2-embed  embeddings (/v1/embeddings): embedding=true plus a GGUF override
#                  llama.pooling_type=1 (mean). Without the override the GGUF has no
#                  pooling type, llama.cpp uses NONE and /v1/embeddings returns one
#                  vector PER TOKEN (a list of lists, not OpenAI's shape).
# Launched through serve.py = stock `python -m llama_cpp.server` whose model proxy
# keeps BOTH models loaded (stock swaps them per request: slow, and it crashes the
# server with "double free" after a failed embedding request). An unknown or
# missing "model" falls back to smollm2 (so /v1/embeddings MUST name smollm2-embed).
# interrupt_requests=false: with the default (true) a running stream is cut short
# with "data: [DONE]" (no finish_reason) as soon as another request arrives.
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
#   LOCAL_MODEL_RUN_DIR        pid/log/env/config folder (default $GENKIT_RS_CACHE/run)
#   LOCAL_MODEL_START_TIMEOUT  seconds to wait for readiness (default 120)
#   LOCAL_MODEL_THREADS        llama.cpp threads (default 2; 1 is much more robust
#                              when other CPU-heavy work, e.g. cargo, runs alongside)
#   LOCAL_MODEL_CHAT_BATCH     n_batch of the chat model (default 1 = deterministic;
#                              512 = faster prompt processing, not deterministic)
#   LOCAL_MODEL_VERBOSE        1 = llama.cpp verbose log incl. timings (default 0)
set -euo pipefail

PORT="${1:-${LOCAL_MODEL_PORT:-18080}}"
CACHE="${GENKIT_RS_CACHE:-${HOME:-/root}/.cache/genkit-rs}"
VENV="$CACHE/llama-venv"
VPY="$VENV/bin/python"
GGUF="$CACHE/models/SmolLM2-135M-Instruct.Q4_1.gguf"
RUN_DIR="${LOCAL_MODEL_RUN_DIR:-$CACHE/run}"
TIMEOUT="${LOCAL_MODEL_START_TIMEOUT:-120}"
THREADS="${LOCAL_MODEL_THREADS:-2}"
CHAT_BATCH="${LOCAL_MODEL_CHAT_BATCH:-1}"
VERBOSE="${LOCAL_MODEL_VERBOSE:-0}"
HOST="127.0.0.1"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

PID_FILE="$RUN_DIR/server-$PORT.pid"
LOG_FILE="$RUN_DIR/server-$PORT.log"
ENV_FILE="$RUN_DIR/server-$PORT.env"
CONFIG_FILE="$RUN_DIR/server-$PORT.config.json"
BASE_URL="http://$HOST:$PORT/v1"

log() { echo "[start-server] $*" >&2; }
die() { echo "[start-server] ERROR: $*" >&2; exit 1; }

for v in PORT THREADS CHAT_BATCH TIMEOUT; do
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

# Config file (the only way to give llama_cpp.server two models in one process).
VERBOSE_JSON=false; [ "$VERBOSE" = "1" ] && VERBOSE_JSON=true
GGUF="$GGUF" HOST="$HOST" PORT="$PORT" THREADS="$THREADS" CHAT_BATCH="$CHAT_BATCH" \
VERBOSE_JSON="$VERBOSE_JSON" "$VPY" - >"$CONFIG_FILE" <<'EOF' || die "could not write $CONFIG_FILE"
import json, os
e = os.environ
common = {
    "model": e["GGUF"],
    "n_ctx": 2048,
    "n_threads": int(e["THREADS"]),
    "n_threads_batch": int(e["THREADS"]),
    "verbose": e["VERBOSE_JSON"] == "true",
}
b = int(e["CHAT_BATCH"])
print(json.dumps({
    "host": e["HOST"],
    "port": int(e["PORT"]),
    "interrupt_requests": False,
    "models": [
        # First entry = default for unknown/missing "model".
        dict(common, model_alias="smollm2", n_batch=b, n_ubatch=b),
        # n_batch = n_ctx so that long inputs are not silently truncated.
        dict(common, model_alias="smollm2-embed", embedding=True,
             n_batch=2048, n_ubatch=2048,
             kv_overrides=["llama.pooling_type=int:1"]),
    ],
}, indent=2))
EOF

log "starting llama_cpp.server on $BASE_URL (config: $CONFIG_FILE, log: $LOG_FILE)"
START=$(date +%s.%N)
# Clean environment: llama_cpp.server also reads settings from env vars
# (API_KEY, MODEL, HOST, PORT, CONFIG_FILE, ...), which must not leak in.
# setsid: own process group, so stop-server.sh can end it and its threads cleanly.
setsid env -i PATH="$VENV/bin:/usr/local/bin:/usr/bin:/bin" HOME="${HOME:-/root}" LANG=C.UTF-8 \
    "$VPY" "$HERE/serve.py" --config_file "$CONFIG_FILE" \
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
