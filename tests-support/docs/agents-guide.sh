#!/usr/bin/env bash
# Follows docs/agents.md as a new user would, running its commands and
# writing its files as they stand in the doc (extracted from it), in a fresh
# project outside the workspace: `cargo new trip-agent`, the dependency
# block, src/main.rs; a first turn (the tool is called, a session id is
# printed, trips.db is written); a second process resuming that session by
# id (it prints the first turn from the store); the agent served with a
# token, what the server refuses (no token, another token, a foreign Host);
# a turn with the doc's curl; a turn from Genkit JS's `remoteAgent`
# continuing curl's session; and the doc's failed turns, in the terminal
# and over HTTP. The model is the real local server (llama.cpp's llama-server +
# SmolLM2-135M) through the doc's OPENAI_BASE_URL and MODEL variables: the
# checks are on structure (tool called, ids, history), never on wording.
#
# What differs from a user's machine, and why:
# - the dependencies resolve to this workspace (`../genkit-rs/` is this
#   checkout; [patch.crates-io], the workspace's Cargo.lock and dev
#   profile), as they are not published yet;
# - the local model server listens on this test's port, not 8080;
# - the ids the reader copies by hand (SESSION, CURL_SESSION) are taken
#   from the output;
# - `npm install genkit@1.42.0` is replaced by a link to the same version
#   installed by npm in crates/genkit-server/tests/js (no download per run).
#
# Usage: agents-guide.sh [model-port]     (default 18284)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PORT="${1:-18284}"
. "$ROOT/tests-support/docs/lib.sh"

DOC="$ROOT/docs/agents.md"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
# The workspace target folder: dependencies built there with the same
# features are reused.
export CARGO_TARGET_DIR="$TARGET"
NODE_MODULES="$ROOT/crates/genkit-server/tests/js/node_modules"
[ -f "$NODE_MODULES/genkit/package.json" ] \
    || docs_die "no genkit JS client in $NODE_MODULES (run: cd crates/genkit-server/tests/js && npm ci)"
AGENT_URL=http://127.0.0.1:3400/tripAgent
curl -s -m 2 -o /dev/null http://127.0.0.1:3400/ && docs_die "port 3400 is taken: the doc serves there"

SCRATCH="$(mktemp -d "${TMPDIR:-/tmp}/agents-guide.XXXXXX")"
SERVER_PID=""
cleanup() {
    docs_stop_group "$SERVER_PID"
    docs_stop_model_server "$PORT"
    rm -rf "$SCRATCH"
}
trap cleanup EXIT

# Starts the doc's `serve` block in the background (its output in `$1`),
# with the environment of the caller, and waits until it listens.
start_server() {
    setsid bash -euo pipefail -c "$(docs_block "$DOC" "agents: serve")" >"$1" 2>&1 &
    SERVER_PID=$!
    docs_wait_for_url "$AGENT_URL" 60 || { cat "$1" >&2; docs_die "the agent did not listen on 3400"; }
}

# The log's colours (tracing-subscriber's default) removed.
no_colors() { sed 's/\x1b\[[0-9;]*m//g'; }

stop_server() {
    docs_stop_group "$SERVER_PID"
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
}

# --- 1. and 2. A new project, the agent
cd "$SCRATCH"
docs_log "step 1: $(docs_block "$DOC" "agents: new" | tr '\n' ';')"
docs_run_block "$DOC" "agents: new"
APP="$SCRATCH/trip-agent"
docs_block "$DOC" "agents: Cargo.toml" | docs_use_dependencies "$APP/Cargo.toml"
docs_block "$DOC" "agents: src/main.rs" >"$APP/src/main.rs"
cd "$APP"
docs_log "building trip-agent"
START=$(date +%s)
cargo build --quiet
docs_log "built in $(( $(date +%s) - START )) s"

# --- 3. The doc's local model server (on this test's port), and its variables
unset OPENAI_API_KEY OPENAI_BASE_URL MODEL GENKIT_ENV TRIP_AGENT_TOKEN SESSION CURL_SESSION
MODEL_SERVER="$(docs_block "$DOC" "agents: local model server" | docs_local_paths | sed "s/\b8080\b/$PORT/g")"
docs_log "step 3: $(tr '\n' ';' <<<"$MODEL_SERVER")"
eval "$MODEL_SERVER" >/dev/null
[ "$OPENAI_BASE_URL" = "http://127.0.0.1:$PORT/v1" ] && [ -n "$MODEL" ] \
    || docs_die "the model server block exported OPENAI_BASE_URL=$OPENAI_BASE_URL MODEL=$MODEL"
export OPENAI_BASE_URL MODEL
STARTED=$(date +%s)

# --- 4. A first turn
FIRST_QUESTION="$(docs_block "$DOC" "agents: first turn" | sed -n 's/^cargo run -- "\(.*\)"$/\1/p')"
[ -n "$FIRST_QUESTION" ] || docs_die "the first turn is not \`cargo run -- \"<question>\"\`"
OUT="$(docs_run_block "$DOC" "agents: first turn" 2>"$SCRATCH/first.err")" \
    || { cat "$SCRATCH/first.err" >&2; echo "$OUT" >&2; docs_die "the first turn failed"; }
docs_log "first turn printed:"$'\n'"$OUT"
read -r SESSION FIRST_COUNT < <(python3 -c '
import re, sys
out = sys.argv[1]
assert re.search(r"^\[tool\] getWeather\(.+\)$", out, re.M), "no tool call"
assert re.search(r"^agent> ", out, re.M), "no reply"
m = re.search(r"^session: ([0-9a-f-]{36}) \((\d+) messages stored\)$", out, re.M)
assert m, "no session line"
# The question, the tool request, the tool result, the reply.
assert int(m.group(2)) >= 4, f"{m.group(2)} messages stored"
print(m.group(1), m.group(2))
' "$OUT") || docs_die "the first turn's output lacks a tool call, a reply or the session line"
[ -s trips.db ] || docs_die "no trips.db next to Cargo.toml"
export SESSION

# --- 5. The same session, from a second process
OUT="$(docs_run_block "$DOC" "agents: second turn" 2>"$SCRATCH/second.err")" \
    || { cat "$SCRATCH/second.err" >&2; echo "$OUT" >&2; docs_die "the second turn failed"; }
docs_log "second turn printed:"$'\n'"$OUT"
python3 -c '
import re, sys
out, session, first_count, question = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
lines = out.splitlines()
assert lines[0] == f"session {session} so far:", lines[0]
assert lines[1] == f"  user: {question}", f"the first question is not in the history: {lines[1]}"
assert any(l.startswith("  model: ") for l in lines), "the first reply is not in the history"
assert re.search(r"^\[tool\] getWeather\(.+\)$", out, re.M), "no tool call"
m = re.search(r"^session: (\S+) \((\d+) messages stored\)$", out, re.M)
assert m and m.group(1) == session, "not the same session"
assert int(m.group(2)) >= first_count + 2, f"{m.group(2)} messages after {first_count}"
' "$OUT" "$SESSION" "$FIRST_COUNT" "$FIRST_QUESTION" \
    || docs_die "the second process did not continue the session"

# --- 6. Served over HTTP
docs_source_block "$DOC" "agents: token"
[[ "$TRIP_AGENT_TOKEN" =~ ^[0-9a-f]{64}$ ]] || docs_die "the token block made no token"
export TRIP_AGENT_TOKEN
start_server "$SCRATCH/server.log"
status_of() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
TURN='{"data": {"message": {"role": "user", "content": [{"text": "hi"}]}}, "init": {}}'
JSON=(-H 'content-type: application/json')
[ "$(status_of "$AGENT_URL" "${JSON[@]}" -d "$TURN")" = 401 ] || docs_die "no token: not 401"
[ "$(status_of "$AGENT_URL" "${JSON[@]}" -H 'authorization: Bearer nope' -d "$TURN")" = 403 ] \
    || docs_die "another token: not 403"
[ "$(status_of "$AGENT_URL" "${JSON[@]}" -H "authorization: Bearer $TRIP_AGENT_TOKEN" \
    -H 'host: trips.example.com' -d "$TURN")" = 403 ] || docs_die "a foreign Host: not 403"
[ "$(status_of "$AGENT_URL" -H 'content-type: text/plain' \
    -H "authorization: Bearer $TRIP_AGENT_TOKEN" -d "$TURN")" = 415 ] || docs_die "text/plain: not 415"

# --- 7. A turn with curl
ANSWER="$(docs_run_block "$DOC" "agents: curl")"
docs_log "curl: $ANSWER"
CURL_SESSION="$(python3 -c '
import json, sys
result = json.loads(sys.argv[1])["result"]
assert result["finishReason"] == "stop", result
assert result["message"]["role"] == "model", result
assert result["snapshotId"], result
print(result["sessionId"])
' "$ANSWER")" || docs_die "curl's turn did not answer a result with a session"
grep -q '^\[tool\] getWeather(.\+)$' "$SCRATCH/server.log" \
    || { cat "$SCRATCH/server.log" >&2; docs_die "the served turn called no tool"; }
export CURL_SESSION
# The terminal's session is not the token holder's: NOT_FOUND, as unknown.
FOREIGN="$(curl -s "$AGENT_URL" "${JSON[@]}" -H "authorization: Bearer $TRIP_AGENT_TOKEN" \
    -d "{\"data\": {\"message\": {\"role\": \"user\", \"content\": [{\"text\": \"hi\"}]}}, \"init\": {\"sessionId\": \"$SESSION\"}}")"
docs_log "the terminal's session over HTTP: $FOREIGN"
python3 -c '
import json, sys
answer = json.loads(sys.argv[1])
status = answer.get("status") or answer["result"]["error"]["status"]
assert status == "NOT_FOUND", answer
' "$FOREIGN" || docs_die "the terminal's session was not NOT_FOUND over HTTP"

# --- 8. A turn from Genkit JS, continuing curl's session
SETUP="$(docs_block "$DOC" "agents: node setup")"
grep -qx 'npm install genkit@1.42.0' <<<"$SETUP" || docs_die "the node setup installs no genkit@1.42.0"
SETUP="${SETUP/npm install genkit@1.42.0/ln -s $(printf '%q' "$NODE_MODULES") node_modules}"
bash -euo pipefail -c "$SETUP"
CLIENT="$SCRATCH/trip-client"
docs_block "$DOC" "agents: client.mjs" >"$CLIENT/client.mjs"
OUT="$(cd "$CLIENT" && docs_run_block "$DOC" "agents: node run" 2>&1)" \
    || { echo "$OUT" >&2; docs_die "the node client failed"; }
docs_log "node printed:"$'\n'"$OUT"
python3 -c '
import re, sys
out, session = sys.argv[1], sys.argv[2]
before = int(re.search(r"^history: (\d+) messages$", out, re.M).group(1))
assert before >= 2, f"loadChat restored {before} messages"
assert re.search(r"^agent> ", out, re.M), "no reply"
m = re.search(r"^session: (\S+) \((\d+) messages\)$", out, re.M)
assert m.group(1) == session, f"not curl'"'"'s session: {m.group(1)}"
assert int(m.group(2)) >= before + 2, f"{m.group(2)} messages after {before}"
' "$OUT" "$CURL_SESSION" || docs_die "remoteAgent did not continue curl's session"
stop_server

# --- When a turn fails: in the terminal
set +e
OUT="$(docs_run_block "$DOC" "agents: failed turn" 2>&1)"
CODE=$?
set -e
OUT="$(no_colors <<<"$OUT")"
docs_log "failed turn (exit $CODE):"$'\n'"$(tail -n 3 <<<"$OUT")"
[ "$CODE" = 1 ] || docs_die "the failed turn exited with $CODE, the doc says 1"
grep -q '^Error: UNAVAILABLE: the request to http://127.0.0.1:9/v1/chat/completions failed: cannot connect' <<<"$OUT" \
    || docs_die "main's error is not the turn's cause (\`Error: UNAVAILABLE: the request to ... failed: cannot connect\`)"
grep -q 'ERROR .*agent `tripAgent` turn failed (the client sees `Internal Error`): UNAVAILABLE' <<<"$OUT" \
    || docs_die "the log does not show the failed turn's cause"

# --- and over HTTP: 200, finishReason failed, the error masked; the cause logged
OPENAI_BASE_URL=http://127.0.0.1:9/v1 start_server "$SCRATCH/failing.log"
ANSWER="$(docs_run_block "$DOC" "agents: curl")"
docs_log "a failed turn over HTTP: $ANSWER"
python3 -c '
import json, sys
result = json.loads(sys.argv[1])["result"]
assert result["finishReason"] == "failed", result
assert result["error"] == {"status": "INTERNAL", "message": "Internal Error"}, result
' "$ANSWER" || docs_die "a failed turn over HTTP is not as the doc says"
stop_server
no_colors <"$SCRATCH/failing.log" | grep -q 'turn failed (the client sees `Internal Error`): UNAVAILABLE' \
    || { cat "$SCRATCH/failing.log" >&2; docs_die "the server did not log the cause"; }

docs_log "the guide ran in $(( $(date +%s) - STARTED )) s after the build"
echo "agents guide: 1 passed, 0 failed"
