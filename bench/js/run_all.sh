#!/usr/bin/env bash
# Genkit JS peer benchmarks.
#
# Usage:
#   bench/js/run_all.sh                      # run every bench
#   bench/js/run_all.sh <name> [flags...]    # one bench (flow_echo, flow_echo_direct,
#                                            #   generate_plain, generate_tools, generate_stream,
#                                            #   agent_turn, agent_session_50)
#   bench/js/run_all.sh all [flags...]       # every bench, with flags
# Flags are passed to each script: --iterations N | --seconds S |
#   --warmup-iterations N | --warmup-seconds S | --no-otel
# Prints one JSON line per bench on stdout (install/progress chatter goes to stderr).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

# Production mode: never start a reflection server / dev-mode span processors.
unset GENKIT_ENV

if ! command -v node >/dev/null 2>&1; then
  echo "run_all.sh: node not found (need Node.js >= 20)" >&2
  exit 1
fi

# Install pinned deps from package-lock.json when missing or stale.
if [ ! -d node_modules/genkit ] || [ ! -f node_modules/.package-lock.json ] \
   || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "run_all.sh: installing dependencies (npm ci)" >&2
  npm ci --no-audit --no-fund >&2
fi

all=(flow_echo generate_plain generate_tools generate_stream agent_turn agent_session_50)
which="all"
if [ $# -gt 0 ] && [[ "$1" != --* ]]; then
  which="$1"
  shift
fi

run() {
  local script="$1"
  shift
  # --expose-gc only makes global.gc() callable (used after timing to report
  # retained heap); it does not change GC behaviour.
  node --expose-gc "$here/$script.mjs" "$@"
}

case "$which" in
  all)
    for b in "${all[@]}"; do run "$b" "$@"; done
    ;;
  flow_echo|flow_echo_direct)
    # flow_echo.mjs measures both; --only picks one (own process, clean memory numbers).
    run flow_echo --only "$which" "$@"
    ;;
  generate_plain|generate_tools|generate_stream|agent_turn|agent_session_50)
    run "$which" "$@"
    ;;
  *)
    echo "run_all.sh: unknown bench '$which' (expected: all ${all[*]} flow_echo_direct)" >&2
    exit 2
    ;;
esac
