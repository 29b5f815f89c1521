#!/usr/bin/env bash
# Runs Genkit for Rust and Genkit JS side by side on the same scripted work,
# in one run on this machine, and writes the ratios to bench/RESULTS.md.
#
#   bench/run.sh              # all peers (~2 minutes)
#   SECONDS_PER_BENCH=5 bench/run.sh
#
# Rust: bench/rust (the `peer` binary, timing loops the same way as
# bench/js/lib/harness.mjs). JS: bench/js (npm genkit, pinned). Both time
# sequential awaited operations after a warm-up and report peak RSS.
# Then the dotprompt render comparison (bench/dotprompt/run.sh) and the HTTP
# load comparison (bench/server/run.sh); SKIP_DOTPROMPT=1 / SKIP_SERVER=1
# leave them out. Then the agent benches (one turn; a 50-turn session);
# SKIP_AGENTS=1 leaves them out.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
secs="${SECONDS_PER_BENCH:-3}"
out="$here/.results"
mkdir -p "$out"

echo "bench: building the Rust peer (release)" >&2
(cd "$root" && CARGO_TARGET_DIR="$target" cargo build --release -q -p genkit-bench --bin peer)
peer="$target/release/peer"

: > "$out/rust.jsonl"
for b in flow_echo generate_plain generate_tools generate_stream; do
  "$peer" "$b" --seconds "$secs" >> "$out/rust.jsonl"
  "$peer" "$b" --seconds "$secs" --exporter >> "$out/rust.jsonl"
done

: > "$out/js.jsonl"
for b in flow_echo generate_plain generate_tools generate_stream; do
  "$here/js/run_all.sh" "$b" --seconds "$secs" | grep '^{' >> "$out/js.jsonl"
  "$here/js/run_all.sh" "$b" --seconds "$secs" --no-otel | grep '^{' >> "$out/js.jsonl"
done

if [ "${SKIP_DOTPROMPT:-0}" != 1 ]; then
  echo "bench: dotprompt render (Rust criterion vs npm dotprompt)" >&2
  CARGO_TARGET_DIR="$target" "$here/dotprompt/run.sh" | grep '^{' > "$out/dotprompt.jsonl"
fi

if [ "${SKIP_SERVER:-0}" != 1 ]; then
  echo "bench: HTTP flow server (wrk: genkit-server, bare axum, Genkit JS express)" >&2
  : > "$out/server.jsonl"
  CARGO_TARGET_DIR="$target" OUT="$out/server.jsonl" DURATION="${SERVER_DURATION:-8}" \
    ROUNDS="${SERVER_ROUNDS:-3}" "$here/server/run.sh" >&2
fi

if [ "${SKIP_AGENTS:-0}" != 1 ]; then
  # Timing: AGENT_ROUNDS rounds, Rust and JS interleaved (the report takes
  # medians). Memory: one run per side of the same fixed work (warm-up and
  # timed operation counts), since the in-memory store keeps every snapshot
  # and a time-boxed run would store ~20x more turns on the Rust side.
  echo "bench: agents (one turn on a fresh session; a 50-turn session)" >&2
  : > "$out/agents.jsonl"
  uptime | sed 's/.*load average: \(.*\)/{"load_average":"\1"}/' >> "$out/agents.jsonl"
  for round in $(seq "${AGENT_ROUNDS:-3}"); do
    for b in agent_turn agent_session_50; do
      "$peer" "$b" --seconds "$secs" | sed 's/^{/{"side":"rust","run":"time",/' >> "$out/agents.jsonl"
      "$here/js/run_all.sh" "$b" --seconds "$secs" | grep '^{' | sed 's/^{/{"side":"js","run":"time",/' >> "$out/agents.jsonl"
    done
  done
  for spec in "agent_turn 200 2000" "agent_session_50 4 40"; do
    set -- $spec
    "$peer" "$1" --warmup-iterations "$2" --iterations "$3" | sed 's/^{/{"side":"rust","run":"memory",/' >> "$out/agents.jsonl"
    "$here/js/run_all.sh" "$1" --warmup-iterations "$2" --iterations "$3" | grep '^{' | sed 's/^{/{"side":"js","run":"memory",/' >> "$out/agents.jsonl"
  done
  uptime | sed 's/.*load average: \(.*\)/{"load_average":"\1"}/' >> "$out/agents.jsonl"
fi

python3 "$here/report.py" "$out" "$here/RESULTS.md"
echo "bench: wrote $here/RESULTS.md" >&2
