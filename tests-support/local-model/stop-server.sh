#!/usr/bin/env bash
# Stop a server started by start-server.sh.
# Usage: stop-server.sh [port]   (default: $LOCAL_MODEL_PORT or 18080)
# Exits 0 when the server is stopped (or was not running).
set -euo pipefail

PORT="${1:-${LOCAL_MODEL_PORT:-18080}}"
CACHE="${GENKIT_RS_CACHE:-${HOME:-/root}/.cache/genkit-rs}"
RUN_DIR="${LOCAL_MODEL_RUN_DIR:-$CACHE/run}"
PID_FILE="$RUN_DIR/server-$PORT.pid"
ENV_FILE="$RUN_DIR/server-$PORT.env"

log() { echo "[stop-server] $*" >&2; }

if [ ! -f "$PID_FILE" ]; then
    log "no pid file $PID_FILE: nothing to stop"
    exit 0
fi
PID=$(cat "$PID_FILE" 2>/dev/null || true)
case "$PID" in ''|*[!0-9]*) log "bad pid file, removing"; rm -f "$PID_FILE" "$ENV_FILE"; exit 0;; esac

# Only signal it if it is really our server (the pid may have been reused).
if kill -0 "$PID" 2>/dev/null && tr '\0' ' ' <"/proc/$PID/cmdline" 2>/dev/null | grep -qE "serve\.py"; then
    log "stopping pid $PID"
    # The server runs in its own process group (setsid), led by $PID.
    kill -TERM -- "-$PID" 2>/dev/null || kill -TERM "$PID" 2>/dev/null || true
    for _ in $(seq 1 50); do
        kill -0 "$PID" 2>/dev/null || break
        sleep 0.2
    done
    if kill -0 "$PID" 2>/dev/null; then
        log "pid $PID still alive after 10 s, sending SIGKILL"
        kill -KILL -- "-$PID" 2>/dev/null || kill -KILL "$PID" 2>/dev/null || true
        sleep 0.5
    fi
else
    log "pid $PID is not running"
fi
rm -f "$PID_FILE" "$ENV_FILE"
log "stopped"
