#!/usr/bin/env bash
# Local embedding throughput: genkit-local-embedder (candle, release build)
# against sentence-transformers (PyPI, torch on the CPU), side by side in one
# run, on the same texts (the conformance test's 100 texts, repeated), the
# same model files (tests-support/local-embedder/install.sh) and the same
# batch size. Rounds alternate between the two; prints each round's JSON and
# the medians' ratio.
#
# Usage: bench/embedder/run.sh [repeat] [rounds]     (default 10 and 3)
# Installs sentence-transformers into $GENKIT_RS_CACHE/st-venv on first run
# (several GB: torch pulls its CUDA libraries from PyPI even for CPU use).
set -euo pipefail
cd "$(dirname "$0")/../.."
REPEAT="${1:-10}"
ROUNDS="${2:-3}"
BATCH=32
CACHE="${GENKIT_RS_CACHE:-${HOME:-/root}/.cache/genkit-rs}"
VENV="$CACHE/st-venv"
TEXTS=plugins/local-embedder/tests/fixtures/minilm_texts.json

eval "$(bash tests-support/local-embedder/install.sh | tail -n1)"
if ! "$VENV/bin/python" -c 'import sentence_transformers' 2>/dev/null; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet sentence-transformers
fi
cargo build --quiet --release -p genkit-local-embedder --example throughput
bin="${CARGO_TARGET_DIR:-target}/release/examples/throughput"

out=$(mktemp)
trap 'rm -f "$out"' EXIT
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for r in $(seq 1 "$ROUNDS"); do
    "$bin" "$TEXTS" --repeat "$REPEAT" --rounds 1 --batch-size "$BATCH" \
        --model-dir "$GENKIT_LOCAL_EMBEDDER_DIR" | tee -a "$out"
    "$VENV/bin/python" bench/embedder/st_bench.py "$TEXTS" --repeat "$REPEAT" --rounds 1 \
        --batch-size "$BATCH" --model-dir "$GENKIT_LOCAL_EMBEDDER_DIR" | tee -a "$out"
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
python3 - "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
by = {}
for r in rows:
    by.setdefault(r["impl"], []).append(r["textsPerSecond"])
med = {k: statistics.median(v) for k, v in by.items()}
for k, v in med.items():
    print(f"{k}: median {v:.1f} texts/s over {len(by[k])} rounds ({rows[0]['texts']} texts each)")
rust = next(v for k, v in med.items() if k.startswith("genkit"))
st = next(v for k, v in med.items() if k.startswith("sentence"))
print(f"ratio (genkit-local-embedder / sentence-transformers): {rust / st:.2f}x")
PY
