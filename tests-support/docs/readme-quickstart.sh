#!/usr/bin/env bash
# Builds and runs the README's quick start exactly as it stands in README.md
# (its Cargo.toml dependency block and src/main.rs, extracted from the
# README), against the real local model server (llama.cpp's llama-server serving
# SmolLM2, tests-support/local-model/) through its documented environment
# variables, and checks that it prints a reply, a structured value and a
# streamed story.
#
# The project (in target/docs-tests/) takes this workspace's crates by path,
# as the README says (`../genkit-rs/` replaced by the checkout), and builds
# into the workspace's target folder, so that it reuses every dependency
# already built there with the same features.
#
# Usage: readme-quickstart.sh [port]      (default 18282)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PORT="${1:-18282}"
. "$ROOT/tests-support/docs/lib.sh"

TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
PROJECT="$TARGET/docs-tests/hello-genkit"
README="$ROOT/README.md"

docs_block "$README" "readme-quickstart: Cargo.toml" | docs_local_paths | docs_new_project "$PROJECT" hello-genkit
docs_block "$README" "readme-quickstart: src/main.rs" >"$PROJECT/src/main.rs"

docs_log "building the quick start ($PROJECT)"
START=$(date +%s)
(cd "$PROJECT" && CARGO_TARGET_DIR="$TARGET" cargo build --quiet)
docs_log "built in $(( $(date +%s) - START )) s"

trap 'docs_stop_model_server "$PORT"' EXIT
docs_start_model_server "$PORT"
docs_log "running it against $LOCAL_MODEL_BASE_URL"
OUT="$PROJECT/output.txt"
START=$(date +%s)
# As the README says to run it for a local server.
if ! (cd "$PROJECT" && env -u OPENAI_API_KEY OPENAI_BASE_URL="$LOCAL_MODEL_BASE_URL" MODEL="$LOCAL_MODEL_NAME" \
    timeout 600 "$TARGET/debug/hello-genkit") >"$OUT" 2>&1; then
    cat "$OUT" >&2
    docs_die "the quick start exited with an error"
fi
docs_log "ran in $(( $(date +%s) - START )) s; it printed:"
cat "$OUT" >&2

python3 - "$OUT" <<'PY' || docs_die "the output lacks a reply, a structured value or a story"
import re, sys
out = open(sys.argv[1], encoding="utf-8").read()
m = re.search(r"^reply: (.*?)^go outside: (true|false) \((.*)\)\n^story: (.*)^\((\d+) characters\)$", out, re.S | re.M)
assert m, "the four parts are not there in order"
reply, _, reason, story, n = m.groups()
assert re.search(r"\w", reply), "empty reply"
assert re.search(r"\w", story) and int(n) > 0, "empty story"
PY
echo "README quick start: 1 passed, 0 failed"
