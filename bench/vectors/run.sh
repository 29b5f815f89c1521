#!/usr/bin/env bash
# Vector store benchmark, side by side in one run: Genkit JS's
# @genkit-ai/dev-local-vectorstore (bench.mjs) and the Rust local store
# (bench/rust/src/bin/vector_bench.rs, exact and HNSW) index and query the
# same documents; each size in its own processes, so each peak RSS is the
# size's own. The JS store cannot hold more than about 47,000 such documents
# (its file's JSON outgrows V8's longest string; bench.mjs then reports how
# many it stored and queries those). Usage: bash bench/vectors/run.sh
# [sizes...] (default 10000). The JS store runs only the sizes up to
# JS_MAX_VECTORS (default 47,000, what it can hold): past that it spends
# minutes building a file it then fails to write. The HNSW parameters:
# bench/rust's hnsw_sweep.
set -euo pipefail
cd "$(dirname "$0")"
sizes=("${@:-10000}")
[ -d node_modules ] || npm ci --no-audit --no-fund --loglevel=error
(cd ../.. && cargo build --release -q -p genkit-bench --bin vector_bench)
bin="${CARGO_TARGET_DIR:-../../target}/release/vector_bench"
echo "# $(date -u +%FT%TZ) load: $(cut -d' ' -f1-3 /proc/loadavg)"
for n in "${sizes[@]}"; do
  [ "$n" -gt "${JS_MAX_VECTORS:-47000}" ] || node bench.mjs "$n"
  "$bin" "$n"
done
echo "# $(date -u +%FT%TZ) load: $(cut -d' ' -f1-3 /proc/loadavg)"
