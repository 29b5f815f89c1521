#!/usr/bin/env bash
# Runs the official `genkit dev:test-model` (npm genkit-cli 1.43.0, pinned in
# crates/genkit-server/tests/js) against the OpenAI-compatible plugin pointed
# at the REAL local llama.cpp server (SmolLM2-135M): builds
# plugins/openai-compat/examples/local_runtime.rs, starts the model server,
# runs test-model-suite.yaml beside this script, stops everything.
#
# Usage: dev-test-model.sh [port]       (default: $LOCAL_MODEL_PORT or 18182)
#
# GENKIT_E2E_LOCAL_MODEL=1 (what CI sets): node/npm and the model server are
#   required (the install script runs first, ~1 s when installed); anything
#   missing is a failure.
# Otherwise: prints "SKIPPED: <reason>" and exits 0 when node/npm or the model
#   server is missing.
# Prints the CLI's log, then "<N> passed, <M> failed"; exits non-zero when a
# check failed.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
PORT="${1:-${LOCAL_MODEL_PORT:-18182}}"
CACHE="${GENKIT_RS_CACHE:-${HOME:-/root}/.cache/genkit-rs}"
RUN_DIR="${LOCAL_MODEL_RUN_DIR:-$CACHE/run}"
REQUIRED="${GENKIT_E2E_LOCAL_MODEL:-0}"
# HOME changes below (scratch HOME for the CLI): pin the cache paths first.
export GENKIT_RS_CACHE="$CACHE" LOCAL_MODEL_RUN_DIR="$RUN_DIR"
JS_DIR="$ROOT/crates/genkit-server/tests/js"
GENKIT="$JS_DIR/node_modules/.bin/genkit"

log() { echo "[dev:test-model] $*" >&2; }
skip_or_fail() {
    if [ "$REQUIRED" = "1" ]; then
        log "ERROR: $*"
        exit 1
    fi
    echo "SKIPPED: genkit dev:test-model against the local model: $*"
    exit 0
}

command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 \
    || skip_or_fail "node and npm are required (not found on PATH)"
if [ "$REQUIRED" = "1" ]; then
    bash "$ROOT/.ci/install-local-model-server.sh" >/dev/null
elif ! { [ -x "$CACHE/xllamacpp-venv/bin/python" ] && [ -f "$CACHE/models/SmolLM2-135M-Instruct.Q4_1.gguf" ]; }; then
    skip_or_fail "the local model server is not installed (run .ci/install-local-model-server.sh)"
fi
if [ ! -x "$GENKIT" ]; then
    log "installing the pinned genkit CLI (npm ci in $JS_DIR)"
    (cd "$JS_DIR" && npm ci --no-audit --no-fund >&2)
fi

log "building the runtime (example local_runtime)"
source "$ROOT/tests-support/test-build-scope.sh"
test_build_scope genkit-openai
(cd "$ROOT" && cargo build -q "${scope[@]}" --example local_runtime)
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
RUNTIME="$TARGET_DIR/debug/examples/local_runtime"
[ -x "$RUNTIME" ] || { log "ERROR: no runtime binary at $RUNTIME"; exit 1; }

SCRATCH="$(mktemp -d)"
STARTED=0
if ! { [ -f "$RUN_DIR/server-$PORT.pid" ] && kill -0 "$(cat "$RUN_DIR/server-$PORT.pid")" 2>/dev/null; }; then
    STARTED=1
fi
cleanup() {
    if [ "$STARTED" = "1" ]; then
        bash "$ROOT/tests-support/local-model/stop-server.sh" "$PORT" || true
    fi
    rm -rf "$SCRATCH"
}
trap cleanup EXIT

ENV_LINES="$(bash "$ROOT/tests-support/local-model/start-server.sh" "$PORT")"
eval "$ENV_LINES"
export LOCAL_MODEL_BASE_URL LOCAL_MODEL_NAME LOCAL_MODEL_EMBED_NAME
log "model server at $LOCAL_MODEL_BASE_URL"

# A scratch project (package.json makes it the CLI's project root, where the
# runtime file goes) and HOME (analytics off, no update check).
mkdir -p "$SCRATCH/home" "$SCRATCH/project"
echo '{"name":"genkit-openai-test-model","private":true}' >"$SCRATCH/project/package.json"
cp "$HERE/test-model-suite.yaml" "$SCRATCH/project/suite.yaml"
export HOME="$SCRATCH/home" GENKIT_CLI_DISABLE_UPDATE_NOTIFICATIONS=1 NO_COLOR=1
unset GENKIT_ENV GENKIT_TELEMETRY_SERVER GENKIT_REFLECTION_PORT GENKIT_RUNTIME_ID
cd "$SCRATCH/project"
"$GENKIT" config set analyticsOptOut true >/dev/null

set +e
"$GENKIT" dev:test-model --non-interactive --from-file suite.yaml -- "$RUNTIME" 2>&1 | tee "$SCRATCH/cli.log"
RC=${PIPESTATUS[0]}
set -e

SUMMARY="$(grep -o 'Tests Completed: [0-9]* Passed, [0-9]* Failed' "$SCRATCH/cli.log" | tail -n 1 || true)"
if [ -z "$SUMMARY" ]; then
    log "ERROR: the CLI printed no summary (exit code $RC)"
    exit 1
fi
PASSED="$(echo "$SUMMARY" | sed -E 's/.*: ([0-9]+) Passed, ([0-9]+) Failed/\1/')"
FAILED="$(echo "$SUMMARY" | sed -E 's/.*: ([0-9]+) Passed, ([0-9]+) Failed/\2/')"
echo "genkit: $PASSED passed, $FAILED failed"
if [ "$RC" -ne 0 ] || [ "$FAILED" -ne 0 ] || [ "$PASSED" -eq 0 ]; then
    exit 1
fi
