#!/usr/bin/env bash
# Runs Genkit for Rust and Genkit JS side by side on the same scripted work,
# in one run on this machine, and writes the medians and ratios to the
# generated top of bench/RESULTS.md (report.py; the rest of the file is kept).
#
#   bench/run.sh                       # every part, 3 rounds (about 25 minutes)
#   ROUNDS=5 SECONDS_PER_BENCH=5 bench/run.sh
#
# Parts, each with its rounds interleaved Rust / JS so a change in the
# machine's load hits both sides alike:
#   calls      bench/rust's `peer` and bench/js (npm genkit): flow call,
#              generate plain / with tools / streaming 1000 chunks, each with
#              the exporter on (Rust) and OTel disabled (JS) besides
#   dotprompt  criterion's `dotprompt/` benches and npm dotprompt (bench/dotprompt)
#   server     wrk against genkit-server, a bare axum handler and Genkit JS's
#              Express handler (bench/server/run.sh)       SKIP_SERVER=1
#   vectors    the local vector store and @genkit-ai/dev-local-vectorstore at
#              10,000 documents, Rust alone at 100,000 (bench/vectors/run.sh;
#              VECTOR_SIZES to change; JS only up to JS_MAX_VECTORS), on
#              MiniLM embeddings of real sentences, made once and cached on
#              first use (about 45 CPU minutes for the 100,100 vectors of a
#              100,000 run: bench/vectors/embeddings.sh); VECTORS=random for
#              uniform random vectors
#                                                           SKIP_VECTORS=1
#   agents     one turn on a fresh session; a 50-turn session  SKIP_AGENTS=1
# The load average is recorded as each part starts and at the end.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
secs="${SECONDS_PER_BENCH:-3}"
rounds="${ROUNDS:-3}"
out="$here/.results"
mkdir -p "$out"
rm -f "$out"/*.jsonl

load() {
  printf '{"part":"%s","load_average":"%s"}\n' "$1" "$(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/load.jsonl"
}
# Keeps the JSON lines of a command's output, each tagged with its round.
tag() {
  grep '^{' | sed "s/^{/{\"round\":$1,/"
}

echo "bench: building the Rust peer (release)" >&2
(cd "$root" && CARGO_TARGET_DIR="$target" cargo build --release -q -p genkit-bench --bin peer --bin vector_bench)
peer="$target/release/peer"

load calls
for round in $(seq "$rounds"); do
  echo "bench: calls, round $round of $rounds" >&2
  for b in flow_echo generate_plain generate_tools generate_stream; do
    "$peer" "$b" --seconds "$secs" | tag "$round" >> "$out/rust.jsonl"
    "$peer" "$b" --seconds "$secs" --exporter | tag "$round" >> "$out/rust.jsonl"
    "$here/js/run_all.sh" "$b" --seconds "$secs" | tag "$round" >> "$out/js.jsonl"
    "$here/js/run_all.sh" "$b" --seconds "$secs" --no-otel | tag "$round" >> "$out/js.jsonl"
  done
done

if [ "${SKIP_DOTPROMPT:-0}" != 1 ]; then
  load dotprompt
  for round in $(seq "$rounds"); do
    echo "bench: dotprompt render (Rust criterion vs npm dotprompt), round $round of $rounds" >&2
    CARGO_TARGET_DIR="$target" "$here/dotprompt/run.sh" | tag "$round" >> "$out/dotprompt.jsonl"
  done
fi

if [ "${SKIP_SERVER:-0}" != 1 ]; then
  load server
  echo "bench: HTTP flow server (wrk: genkit-server, bare axum, Genkit JS express)" >&2
  CARGO_TARGET_DIR="$target" OUT="$out/server.jsonl" DURATION="${SERVER_DURATION:-8}" \
    ROUNDS="$rounds" "$here/server/run.sh" >&2
fi

if [ "${SKIP_VECTORS:-0}" != 1 ]; then
  load vectors
  for round in $(seq "$rounds"); do
    echo "bench: vector stores, round $round of $rounds" >&2
    CARGO_TARGET_DIR="$target" "$here/vectors/run.sh" ${VECTOR_SIZES:-10000 100000} \
      | tag "$round" >> "$out/vectors.jsonl"
  done
fi

if [ "${SKIP_AGENTS:-0}" != 1 ]; then
  # Timing: the rounds, Rust and JS interleaved (the report takes medians).
  # Memory: one run per side of the same fixed work (warm-up and timed
  # operation counts), since the in-memory store keeps every snapshot and a
  # time-boxed run would store ~20x more turns on the Rust side.
  load agents
  echo "bench: agents (one turn on a fresh session; a 50-turn session)" >&2
  for round in $(seq "$rounds"); do
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
fi
load end

python3 "$here/report.py" "$out" "$here/RESULTS.md"
echo "bench: wrote $here/RESULTS.md" >&2
