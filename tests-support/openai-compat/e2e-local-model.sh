#!/usr/bin/env bash
# End-to-end tests of the OpenAI-compatible plugin (crate genkit-openai)
# against the REAL local server: llama.cpp's llama-server serving SmolLM2-135M
# (tests-support/local-model/). Starts the server, runs the `#[ignore]`d tests
# of plugins/openai-compat/tests/e2e_local_model.rs, stops the server.
#
# Usage: e2e-local-model.sh [port]      (default: $LOCAL_MODEL_PORT or 18181)
#
# GENKIT_E2E_LOCAL_MODEL=1 (what CI sets): the server is required. The install
#   script runs first (idempotent, ~3 s when already installed); any failure to
#   install, start or pass is a failure.
# Otherwise: when the server is not installed, prints "SKIPPED: <reason>" and
#   exits 0 without running (or counting) any test.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
PORT="${1:-${LOCAL_MODEL_PORT:-18181}}"
CACHE="${GENKIT_RS_CACHE:-${HOME:-/root}/.cache/genkit-rs}"
RUN_DIR="${LOCAL_MODEL_RUN_DIR:-$CACHE/run}"
REQUIRED="${GENKIT_E2E_LOCAL_MODEL:-0}"

log() { echo "[openai-compat e2e] $*" >&2; }

installed() {
    [ -x "$CACHE/xllamacpp-venv/bin/python" ] && [ -f "$CACHE/models/SmolLM2-135M-Instruct.Q4_1.gguf" ]
}

if [ "$REQUIRED" = "1" ]; then
    bash "$ROOT/.ci/install-local-model-server.sh" >/dev/null
elif ! installed; then
    echo "SKIPPED: genkit-openai end-to-end tests: the local model server is not installed" \
         "(run .ci/install-local-model-server.sh, or set GENKIT_E2E_LOCAL_MODEL=1 to install and require it)"
    exit 0
fi

# Stop the server on exit only if this script started it.
STARTED=0
if ! { [ -f "$RUN_DIR/server-$PORT.pid" ] && kill -0 "$(cat "$RUN_DIR/server-$PORT.pid")" 2>/dev/null; }; then
    STARTED=1
fi
cleanup() {
    if [ "$STARTED" = "1" ]; then
        bash "$ROOT/tests-support/local-model/stop-server.sh" "$PORT" || true
    fi
}
trap cleanup EXIT

ENV_LINES="$(bash "$ROOT/tests-support/local-model/start-server.sh" "$PORT")"
eval "$ENV_LINES"
export LOCAL_MODEL_BASE_URL LOCAL_MODEL_NAME LOCAL_MODEL_EMBED_NAME
log "server at $LOCAL_MODEL_BASE_URL (log: $LOCAL_MODEL_LOG)"

cd "$ROOT"
# One test at a time: the server serialises requests anyway, and the
# deterministic (greedy) checks compare two runs of the same prompt.
source "$ROOT/tests-support/test-build-scope.sh"
test_build_scope genkit-openai
cargo test "${scope[@]}" --test e2e_local_model -- --ignored --test-threads=1 --nocapture
