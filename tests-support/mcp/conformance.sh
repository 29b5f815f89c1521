#!/usr/bin/env bash
# Runs the official MCP conformance suite (npm @modelcontextprotocol/conformance
# 0.1.16) against genkit-mcp: its server scenarios against
# plugins/mcp/examples/conformance_server.rs and its client scenarios against
# plugins/mcp/examples/conformance_client.rs. Fails if fewer scenarios pass
# than docs/mcp.md records (the floors below), so a regression shows.
#
# The suite needs Node.js 22 or later: npm `node@22` and the suite are
# installed once into ~/.cache/genkit-rs/mcp-conformance. Both runs take a
# few seconds.
#
# Environment:
#   GENKIT_RS_CACHE   cache root (default: $HOME/.cache/genkit-rs)
#   CARGO_TARGET_DIR  where cargo builds the examples (default: target)
set -euo pipefail

SUITE=0.1.16
NODE=22
SERVER_MIN=20 # of 30 active server scenarios (docs/mcp.md)
CLIENT_MIN=4  # of 26 client scenarios (docs/mcp.md)

root=$(cd "$(dirname "$0")/../.." && pwd)
cache="${GENKIT_RS_CACHE:-${HOME:-/root}/.cache/genkit-rs}/mcp-conformance"
node="$cache/node_modules/node/bin/node"
suite_dir="$cache/node_modules/@modelcontextprotocol/conformance"

if [ ! -x "$node" ] || [ ! -f "$suite_dir/dist/index.js" ] ||
  ! grep -q "\"version\": \"$SUITE\"" "$suite_dir/package.json"; then
  echo "[mcp-conformance] installing node@$NODE and @modelcontextprotocol/conformance@$SUITE (npm) into $cache" >&2
  mkdir -p "$cache"
  # A package.json of its own, so npm installs here and not in a parent.
  echo '{"private": true}' >"$cache/package.json"
  (cd "$cache" && npm install --no-audit --no-fund --loglevel=error \
    "node@$NODE" "@modelcontextprotocol/conformance@$SUITE" >&2)
fi
"$node" --version >/dev/null

cd "$root"
source "$root/tests-support/test-build-scope.sh"
test_build_scope genkit-mcp
cargo build --quiet "${scope[@]}" --example conformance_server --example conformance_client
bin="${CARGO_TARGET_DIR:-$root/target}/debug/examples"
out=$(mktemp -d)
server_pid=
cleanup() {
  [ -z "$server_pid" ] || kill "$server_pid" 2>/dev/null || true
  rm -rf "$out"
}
trap cleanup EXIT

# A free port for the server.
port=$("$node" -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
"$bin/conformance_server" "$port" >"$out/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 100); do
  "$node" -e 'require("net").connect(+process.argv[1],"127.0.0.1").on("connect",()=>process.exit(0)).on("error",()=>process.exit(1))' "$port" && break
  kill -0 "$server_pid" 2>/dev/null || {
    cat "$out/server.log" >&2
    echo "[mcp-conformance] the server did not start" >&2
    exit 1
  }
  sleep 0.1
done

# The `✓ <scenario>: ...` lines of a suite summary.
passed() { grep -c '^✓ ' "$1" || true; }

# The suite exits non-zero when any scenario fails; the floors decide.
(cd "$out" && "$node" "$suite_dir/dist/index.js" server \
  --url "http://localhost:$port/mcp" -o "$out/server" >"$out/server.txt" 2>&1) || true
(cd "$out" && "$node" "$suite_dir/dist/index.js" client \
  --command "$bin/conformance_client" --suite all --timeout 15000 \
  -o "$out/client" >"$out/client.txt" 2>&1) || true
server=$(passed "$out/server.txt")
client=$(passed "$out/client.txt")
echo "[mcp-conformance] scenarios passed: server $server (floor $SERVER_MIN), client $client (floor $CLIENT_MIN)"
if [ "$server" -lt "$SERVER_MIN" ] || [ "$client" -lt "$CLIENT_MIN" ]; then
  grep -hE '^(✓|✗) ' "$out/server.txt" "$out/client.txt" >&2 || true
  echo "[mcp-conformance] FAILED: fewer scenarios pass than docs/mcp.md records" >&2
  exit 1
fi
