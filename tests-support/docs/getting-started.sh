#!/usr/bin/env bash
# Follows docs/getting-started.md as a new user would, running its commands
# and writing its files as they stand in the doc (extracted from it):
# `cargo new`, the dependency block, the prompt file, src/main.rs; the app
# served and called with curl (with and without the `{"data": ...}`
# wrapper); then the app under `genkit start`, a `genkit flow:run`, and the
# run's trace fetched from the CLI's telemetry server. The model is the real
# local server (llama.cpp's llama-server + SmolLM2) through the doc's OPENAI_BASE_URL
# and MODEL variables.
#
# What differs from a user's machine, and why:
# - the dependencies resolve to this workspace ([patch.crates-io], the
#   workspace's Cargo.lock and dev profile), as they are not published yet;
# - `npx genkit-cli@1.43.0` is the same CLI version installed by npm in
#   crates/genkit-server/tests/js (no download per run), called with
#   `--non-interactive` (no terminal) and, for `start`, `--write-env-file` to
#   learn the telemetry server's address; HOME is a scratch folder with the
#   CLI's analytics off.
#
# Usage: getting-started.sh [model-port]     (default 18283)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PORT="${1:-18283}"
. "$ROOT/tests-support/docs/lib.sh"

DOC="$ROOT/docs/getting-started.md"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
# The workspace target folder: dependencies built there with the same
# features are reused.
export CARGO_TARGET_DIR="$TARGET"
GENKIT="$ROOT/crates/genkit-server/tests/js/node_modules/.bin/genkit"
[ -x "$GENKIT" ] || docs_die "no genkit CLI at $GENKIT (run: cd crates/genkit-server/tests/js && npm ci)"

# Fixed now: HOME changes below (the model server's cache is under it).
export GENKIT_RS_CACHE="${GENKIT_RS_CACHE:-${HOME:-/root}/.cache/genkit-rs}"
SCRATCH="$(mktemp -d "${TMPDIR:-/tmp}/getting-started.XXXXXX")"
APP_PID=""
CLI_PID=""
cleanup() {
    docs_stop_group "$APP_PID"
    docs_stop_group "$CLI_PID"
    docs_stop_model_server "$PORT"
    rm -rf "$SCRATCH"
}
trap cleanup EXIT

# --- 1. A new project
cd "$SCRATCH"
docs_log "step 1: $(docs_block "$DOC" "getting-started: new" | tr '\n' ';')"
docs_run_block "$DOC" "getting-started: new"
APP="$SCRATCH/hello-genkit"
docs_block "$DOC" "getting-started: Cargo.toml" | docs_use_dependencies "$APP/Cargo.toml"

# --- 2. and 3. The prompt file and the app
docs_block "$DOC" "getting-started: prompts/hello.prompt" >"$APP/prompts/hello.prompt"
docs_block "$DOC" "getting-started: src/main.rs" >"$APP/src/main.rs"
cd "$APP"
docs_log "building the app"
START=$(date +%s)
cargo build --quiet
docs_log "built in $(( $(date +%s) - START )) s"

docs_start_model_server "$PORT"
# The doc's variables for a local server.
export OPENAI_BASE_URL="$LOCAL_MODEL_BASE_URL" MODEL="$LOCAL_MODEL_NAME"
unset OPENAI_API_KEY GENKIT_ENV

setsid cargo run --quiet >"$SCRATCH/app.log" 2>&1 &
APP_PID=$!
docs_wait_for_url http://127.0.0.1:3400/ 120 || { cat "$SCRATCH/app.log" >&2; docs_die "the app did not listen on 3400"; }

ANSWER="$(docs_run_block "$DOC" "getting-started: call")"
docs_log "call: $ANSWER"
python3 -c '
import json, re, sys
answer = json.loads(sys.argv[1])
assert re.search(r"\w", answer["result"]), answer
' "$ANSWER" || docs_die "the flow did not answer a greeting: $ANSWER"

ANSWER="$(docs_run_block "$DOC" "getting-started: call without data")"
EXPECTED="$(docs_block "$DOC" "getting-started: call without data, answer")"
[ "$ANSWER" = "$EXPECTED" ] || docs_die "without the wrapper: got $ANSWER, the doc says $EXPECTED"

kill -INT -- "-$APP_PID"
wait "$APP_PID" 2>/dev/null || true
APP_PID=""
grep -q "flow server listening on http://127.0.0.1:3400" "$SCRATCH/app.log" \
    || { cat "$SCRATCH/app.log" >&2; docs_die "the log (tracing_subscriber::fmt::init) shows nothing"; }

# --- 4. Under genkit start
export CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}" RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}"
export HOME="$SCRATCH/home" GENKIT_CLI_DISABLE_UPDATE_NOTIFICATIONS=true NO_COLOR=1
mkdir -p "$HOME"
"$GENKIT" config set analyticsOptOut true >/dev/null
ENV_FILE="$SCRATCH/genkit.env"
cli() { # the doc's command line, with the pinned CLI
    local line="$1"
    local genkit env_file
    genkit="$(printf '%q' "$GENKIT")"
    env_file="$(printf '%q' "$ENV_FILE")"
    line="${line/npx genkit-cli@1.43.0 start/$genkit start --non-interactive --write-env-file $env_file}"
    line="${line/npx genkit-cli@1.43.0 flow:run/$genkit flow:run}"
    [[ "$line" == "$genkit "* ]] || docs_die "not a genkit start or flow:run command: $1"
    echo "$line"
}
START_CMD="$(cli "$(docs_block "$DOC" "getting-started: genkit start")")"
docs_log "step 4: $START_CMD"
setsid bash -c "$START_CMD" >"$SCRATCH/cli.log" 2>&1 &
CLI_PID=$!
DEADLINE=$(( $(date +%s) + 180 ))
until ls "$APP"/.genkit/runtimes/*.json >/dev/null 2>&1 && [ -s "$ENV_FILE" ]; do
    [ "$(date +%s)" -lt "$DEADLINE" ] || { cat "$SCRATCH/cli.log" >&2; docs_die "genkit start: no runtime file"; }
    sleep 0.5
done

RUN_CMD="$(cli "$(docs_block "$DOC" "getting-started: flow:run")") --non-interactive"
RAN="$(bash -c "$RUN_CMD" 2>&1)" || { echo "$RAN" >&2; docs_die "genkit flow:run failed"; }
docs_log "flow:run printed: $RAN"
TRACE_ID="$(python3 -c '
import re, sys
out = sys.argv[1]
assert re.search(r"Result:\n.*\w", out), "no result"
print(re.search(r"Trace ID:\s*([0-9a-f]{32})", out).group(1))
' "$RAN")" || docs_die "flow:run printed no result or trace id"

TELEMETRY="$(sed -n 's/^GENKIT_TELEMETRY_SERVER=//p' "$ENV_FILE")"
[ -n "$TELEMETRY" ] || docs_die "no telemetry server in $ENV_FILE"
for _ in $(seq 1 50); do
    TRACE="$(curl -s "$TELEMETRY/api/traces/$TRACE_ID" || true)"
    python3 -c '
import json, sys
spans = json.loads(sys.argv[1])["spans"].values()
names = {s["attributes"].get("genkit:name") for s in spans if s.get("endTime")}
roots = [s for s in spans if "parentSpanId" not in s]
assert {"hello", "openai/'"$MODEL"'"} <= names, names
assert roots and roots[0]["attributes"]["genkit:state"] == "success", roots
' "$TRACE" 2>/dev/null && break
    TRACE=""
    sleep 0.2
done
[ -n "$TRACE" ] || docs_die "trace $TRACE_ID (flow hello and its model call) not in $TELEMETRY"
docs_log "trace $TRACE_ID is in the Dev UI's telemetry server"
echo "getting started: 1 passed, 0 failed"
