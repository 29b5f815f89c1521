#!/usr/bin/env bash
# Recall and latency of the local store's HNSW graph on real sentence
# embeddings rather than vector_bench's uniform random vectors (the worst
# case for a graph index): gathers documentation sentences (corpus.py),
# embeds them with genkit-local-embedder's all-MiniLM-L6-v2 (the
# embed_corpus example; CORPUS texts, default 100,100, embedded once and
# cached), and runs hnsw_sweep on them: the first N vectors are the
# documents, the 100 after them the queries.
#
# Usage: bash bench/vectors/real_embeddings.sh N [hnsw_sweep options...]
# e.g.   bash bench/vectors/real_embeddings.sh 100000 --m 32 --ef-construction 200 --ef-search 50,100,200
set -euo pipefail
cd "$(dirname "$0")/../.."
N="${1:?usage: real_embeddings.sh N [hnsw_sweep options...]}"
shift
CACHE="${GENKIT_RS_CACHE:-${HOME:-/root}/.cache/genkit-rs}/vector-corpus"
mkdir -p "$CACHE"
SIZE="${CORPUS:-100100}"
if [ "$((N + 100))" -gt "$SIZE" ]; then
  echo "N + 100 queries must fit in the corpus of $SIZE texts (set CORPUS)" >&2
  exit 2
fi
TEXTS="$CACHE/texts-$SIZE.json"
VECTORS="$CACHE/minilm-$SIZE.f32"
eval "$(bash tests-support/local-embedder/install.sh | tail -n1)"
cargo build --release -q -p genkit-local-embedder --example embed_corpus
cargo build --release -q -p genkit-bench --bin hnsw_sweep
target="${CARGO_TARGET_DIR:-target}/release"
[ -f "$TEXTS" ] || python3 bench/vectors/corpus.py "$SIZE" "$TEXTS"
if [ ! -f "$VECTORS" ]; then
  "$target/examples/embed_corpus" "$TEXTS" "$VECTORS.partial" --progress 5000
  mv "$VECTORS.partial" "$VECTORS"
fi
echo "# $(date -u +%FT%TZ) load: $(cut -d' ' -f1-3 /proc/loadavg)"
"$target/hnsw_sweep" "$N" --vectors "$VECTORS" "$@"
echo "# $(date -u +%FT%TZ) load: $(cut -d' ' -f1-3 /proc/loadavg)"
