#!/usr/bin/env bash
# Local embedding throughput: genkit-local-embedder (candle, release build)
# against sentence-transformers (PyPI, torch on the CPU), side by side in one
# run, on the same texts (the conformance test's 100 texts, repeated), the
# same model files (tests-support/local-embedder/install.sh) and the same
# batch size. Rounds alternate between the two; prints each round's JSON and
# the medians of wall-clock and of CPU-time throughput (process user + system
# seconds, which other processes' load disturbs far less than wall time) with
# both ratios.
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
# /proc/self/stat counts CPU time in these ticks.
CLK_TCK=$(getconf CLK_TCK)

out=$(mktemp)
trap 'rm -f "$out"' EXIT
echo "$(date -u +%H:%M:%S) UTC load average: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for r in $(seq 1 "$ROUNDS"); do
    "$bin" "$TEXTS" --repeat "$REPEAT" --rounds 1 --batch-size "$BATCH" \
        --model-dir "$GENKIT_LOCAL_EMBEDDER_DIR" --clk-tck "$CLK_TCK" | tee -a "$out"
    "$VENV/bin/python" bench/embedder/st_bench.py "$TEXTS" --repeat "$REPEAT" --rounds 1 \
        --batch-size "$BATCH" --model-dir "$GENKIT_LOCAL_EMBEDDER_DIR" | tee -a "$out"
done
echo "$(date -u +%H:%M:%S) UTC load average: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
python3 - "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
by = {}
for r in rows:
    by.setdefault(r["impl"], []).append(r)
med = {}
for k, rs in by.items():
    cpu = [r["textsPerCpuSecond"] for r in rs if r.get("textsPerCpuSecond")]
    med[k] = (
        statistics.median(r["textsPerSecond"] for r in rs),
        statistics.median(cpu) if cpu else float("nan"),
        statistics.median(r["seconds"] for r in rs),
        statistics.median(r["cpuSeconds"] for r in rs),
    )
    w, c, s, cs = med[k]
    print(f"{k}: median {w:.2f} texts/s wall ({s:.1f} s), {c:.2f} texts/CPU-s ({cs:.1f} CPU-s)"
          f" over {len(rs)} rounds ({rs[0]['texts']} texts each)")
rust = next(v for k, v in med.items() if k.startswith("genkit"))
st = next(v for k, v in med.items() if k.startswith("sentence"))
print(f"ratio wall (genkit-local-embedder / sentence-transformers): {rust[0] / st[0]:.2f}x")
print(f"ratio CPU  (genkit-local-embedder / sentence-transformers): {rust[1] / st[1]:.2f}x")
PY
