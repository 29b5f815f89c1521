#!/usr/bin/env bash
# Recall and latency of the hnsw_rs crate's HNSW graph (the local store's
# index before it had its own) on real sentence embeddings rather than
# uniform random vectors (the worst case for a graph index): gathers
# documentation sentences (corpus.py), embeds them with all-MiniLM-L6-v2
# (bench/vectors/embeddings.sh: embedded once and cached), and runs
# hnsw_sweep (the hnsw_rs crate's graph, which the store used before its
# own) on them: the first N vectors are the documents, the 100 after them
# the queries. The store's own graph on the same data: bench/vectors/run.sh.
#
# Usage: bash bench/vectors/real_embeddings.sh N [hnsw_sweep options...]
# e.g.   bash bench/vectors/real_embeddings.sh 100000 --m 32 --ef-construction 200 --ef-search 50,100,200
set -euo pipefail
cd "$(dirname "$0")/../.."
N="${1:?usage: real_embeddings.sh N [hnsw_sweep options...]}"
shift
VECTORS="$(bash bench/vectors/embeddings.sh "$((N + 100))")"
cargo build --release -q -p genkit-bench --bin hnsw_sweep
target="${CARGO_TARGET_DIR:-target}/release"
echo "# $(date -u +%FT%TZ) load: $(cut -d' ' -f1-3 /proc/loadavg)"
"$target/hnsw_sweep" "$N" --vectors "$VECTORS" "$@"
echo "# $(date -u +%FT%TZ) load: $(cut -d' ' -f1-3 /proc/loadavg)"
