#!/usr/bin/env bash
# Vector store benchmark, side by side in one run: Genkit JS's
# @genkit-ai/dev-local-vectorstore (bench.mjs) and the Rust local store
# (bench/rust/src/bin/vector_bench.rs, exact and HNSW) index and query the
# same documents; each size in its own processes, so each peak RSS is the
# size's own.
#
# Usage: bash bench/vectors/run.sh [--random] [sizes...] (default 10000)
#
# The vectors: all-MiniLM-L6-v2 embeddings of documentation sentences
# (bench/vectors/embeddings.sh: the first N are the documents, the 100
# after them the queries). They are made on first use and cached: about 5
# CPU minutes for a 10,000 run and 45 for 100,000 on a 2-core machine, plus
# an 84 MB model download (see embeddings.sh). `--random` (or
# VECTORS=random) takes uniform random vectors instead (a fixed-seed
# xorshift32, nothing to make; a graph index's worst case).
#
# The JS store cannot hold more than about 47,000 such documents (its
# file's JSON outgrows V8's longest string; bench.mjs then reports how many
# it stored and queries those), so it runs only the sizes up to
# JS_MAX_VECTORS (default 47,000): past that it spends minutes building a
# file it then fails to write.
set -euo pipefail
cd "$(dirname "$0")"
data="${VECTORS:-minilm}"
if [ "${1:-}" = --random ]; then
  data=random
  shift
fi
sizes=("${@:-10000}")
[ -d node_modules ] || npm ci --no-audit --no-fund --loglevel=error
from=()
if [ "$data" = minilm ]; then
  most=0
  for n in "${sizes[@]}"; do [ "$n" -le "$most" ] || most=$n; done
  file="$(bash embeddings.sh "$((most + 100))")"
  from=(--vectors "$file")
  echo '{"data":"all-MiniLM-L6-v2 embeddings of documentation sentences (bench/vectors/embeddings.sh); queries: the 100 sentences after the documents"}'
else
  echo '{"data":"uniform random vectors (xorshift32)"}'
fi
(cd ../.. && cargo build --release -q -p genkit-bench --bin vector_bench)
bin="${CARGO_TARGET_DIR:-../../target}/release/vector_bench"
echo "# $(date -u +%FT%TZ) load: $(cut -d' ' -f1-3 /proc/loadavg)"
for n in "${sizes[@]}"; do
  [ "$n" -gt "${JS_MAX_VECTORS:-47000}" ] || node bench.mjs "${from[@]}" "$n"
  "$bin" "${from[@]}" "$n"
done
echo "# $(date -u +%FT%TZ) load: $(cut -d' ' -f1-3 /proc/loadavg)"
