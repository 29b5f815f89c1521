#!/usr/bin/env bash
# The real-embedding data of the vector benchmarks: the all-MiniLM-L6-v2
# vectors (genkit-local-embedder, 384 little-endian f32s a text) of the
# documentation sentences bench/vectors/corpus.py gathers, in one file that
# grows: the texts file holds CORPUS texts (default 100,100) in a fixed
# shuffled order, and the vectors file their vectors in that order, as many
# as were asked for so far. The first N vectors serve as N documents and
# the 100 after them as queries, so a 10,000 run needs the first 10,100
# and a 100,000 run extends the same file (nothing is embedded twice; an
# interrupted run resumes).
#
# Making them is slow: the model (an 84 MB download, once), the
# embed_corpus build, then about 36 texts per CPU second on a 2-core
# machine of 2026 (10,100 texts: about 5 CPU minutes; 100,100: about 45),
# run under `nice -n 19`. Later runs find them cached in
# ${GENKIT_RS_CACHE:-~/.cache/genkit-rs}/vector-corpus.
#
# Usage: bash bench/vectors/embeddings.sh NEED
# Prints the vectors file's path once it holds at least NEED vectors.
set -euo pipefail
cd "$(dirname "$0")/../.."
NEED="${1:?usage: embeddings.sh NEED}"
CACHE="${GENKIT_RS_CACHE:-${HOME:-/root}/.cache/genkit-rs}/vector-corpus"
SIZE="${CORPUS:-100100}"
if [ "$NEED" -gt "$SIZE" ]; then
  echo "embeddings.sh: $NEED vectors asked for, the corpus has $SIZE texts (set CORPUS)" >&2
  exit 2
fi
mkdir -p "$CACHE"
TEXTS="$CACHE/texts-$SIZE.json"
VECTORS="$CACHE/minilm-$SIZE.f32"
have() { echo $(( $(stat -c %s "$VECTORS" 2>/dev/null || echo 0) / (384 * 4) )); }
if [ "$(have)" -lt "$NEED" ]; then
  # One writer at a time: two runs extending the file would interleave.
  exec 9>"$VECTORS.lock"
  flock 9
fi
if [ "$(have)" -lt "$NEED" ]; then
  if [ ! -f "$TEXTS" ]; then
    python3 bench/vectors/corpus.py "$SIZE" "$TEXTS.tmp" >&2
    mv "$TEXTS.tmp" "$TEXTS"
  fi
  eval "$(bash tests-support/local-embedder/install.sh | tail -n1)"
  export GENKIT_LOCAL_EMBEDDER_DIR
  cargo build --release -q -p genkit-local-embedder --example embed_corpus >&2
  echo "embeddings.sh: embedding texts $(have) to $NEED of $TEXTS (about 36 a CPU second)" >&2
  nice -n 19 "${CARGO_TARGET_DIR:-target}/release/examples/embed_corpus" "$TEXTS" "$VECTORS" \
    --count "$NEED" --progress 5000 >&2
fi
echo "$VECTORS"
