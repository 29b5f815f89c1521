#!/usr/bin/env bash
# genkit-local-model (for this Q4_1 Llama file its llama.cpp-exact forward
# pass, crate genkit-local-model-exact) beside llama.cpp (llama-cpp-python)
# on the same GGUF (SmolLM2-135M-Instruct Q4_1) and the same prompt token
# ids, in one run: load time, prompt tokens/s, decode time per token, RSS,
# and the cost of constrained decoding per token. Rounds alternate between
# the two; prints each round's JSON, then medians and ratios.
#
# Usage: bench/local-model/run.sh [rounds]            (default 3)
#
# The Rust side is a release build with AVX2/FMA/F16C enabled explicitly
# (candle's quantized kernels, used for other files, are compiled in only
# with those target features; the exact forward pass picks its AVX2/FMA
# kernels at run time either way; never `-C target-cpu=native` here: this
# VM advertises AMX but faults on it). Set GENKIT_BENCH_RUSTFLAGS to change that ("" for a
# baseline x86-64 build). llama.cpp is llama-cpp-python 0.3.36 built from
# source in $CACHE/llama-venv (GGML_NATIVE=OFF, AVX2/FMA/F16C), as the
# docstring of plugins/local-model/tests/fixtures/llama_cpp_reference.py
# shows (CI's .ci/install-local-model-server.sh no longer builds it).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS="${1:-3}"
CACHE="${GENKIT_RS_CACHE:-${HOME:-/root}/.cache/genkit-rs}"
PY="${LLAMA_PYTHON:-$CACHE/llama-venv/bin/python}"
export RUSTFLAGS="${GENKIT_BENCH_RUSTFLAGS--C target-feature=+avx,+avx2,+fma,+f16c,+bmi2}"

eval "$(bash tests-support/local-model/install-gguf.sh | tail -n1)"
"$PY" -c 'import llama_cpp' || { echo "llama-cpp-python missing in $PY: build it as plugins/local-model/tests/fixtures/llama_cpp_reference.py says" >&2; exit 1; }
cargo build --quiet --release -p genkit-local-model --example decode_bench
bin="${CARGO_TARGET_DIR:-target}/release/examples/decode_bench"

out=$(mktemp)
ids=$(mktemp)
trap 'rm -f "$out" "$ids"' EXIT
echo "$(date -u +%H:%M:%S) UTC load average: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for r in $(seq 1 "$ROUNDS"); do
    "$bin" "$GENKIT_LOCAL_MODEL_GGUF" --prompt-ids-out "$ids" | tee -a "$out"
    "$PY" bench/local-model/llama_cpp_bench.py "$GENKIT_LOCAL_MODEL_GGUF" "$ids" | tee -a "$out"
done
echo "$(date -u +%H:%M:%S) UTC load average: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
python3 - "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
rust = [r for r in rows if r["impl"] == "genkit-local-model"]
cpp = [r for r in rows if r["impl"] != "genkit-local-model"]
med = lambda rs, k: statistics.median(r[k] for r in rs if r.get(k) is not None)
print(f"rounds: {len(rust)} x {rust[0]['impl']}, {len(cpp)} x {cpp[0]['impl']}; "
      f"prompt {rust[0]['promptTokens']} tokens, decode {rust[0]['decodeTokens']} / {cpp[0]['decodeTokens']} tokens")
print("| | genkit-local-model | llama.cpp | ratio (Rust / llama.cpp) |")
print("|---|---|---|---|")
for label, key, unit, fmt in [
    ("load", "loadSeconds", "s", "{:.3f}"),
    ("prompt processing", "promptTokensPerSecond", "tokens/s", "{:.0f}"),
    ("decode, time per token", "decodeMsPerToken", "ms", "{:.2f}"),
    ("decode", "decodeTokensPerSecond", "tokens/s", "{:.1f}"),
    ("RSS after the run", "rssMiB", "MiB", "{:.0f}"),
    ("peak RSS", "peakRssMiB", "MiB", "{:.0f}"),
]:
    a, b = med(rust, key), med(cpp, key)
    print(f"| {label} | {fmt.format(a)} {unit} | {fmt.format(b)} {unit} | {a / b:.2f}x |")
mask = med(rust, "constraintMsPerToken")
cpp_tok = med(cpp, "decodeMsPerToken")
rust_tok = med(rust, "decodeMsPerToken")
g = med(cpp, "grammarMsPerToken")
free = med(cpp, "sameLengthFreeMsPerToken")
print(f"| constrained decoding, mask cost per token | {mask:.3f} ms "
      f"({100 * mask / rust_tok:.1f}% of own decode, {100 * mask / cpp_tok:.1f}% of llama.cpp's) "
      f"| grammar: {g:.2f} ms/token vs {free:.2f} free ({100 * (g - free) / free:+.1f}%) | |")
print(f"constrained answers valid (Rust): {sum(bool(r['constrainedValid']) for r in rust)}/{len(rust)}; "
      f"Rust constrained tokens {med(rust, 'constrainedTokens'):.0f}, setup {med(rust, 'constraintSetupMs'):.0f} ms")
print("Rust answer:", json.dumps(rust[0]["answer"])[:200])
print("llama.cpp answer:", json.dumps(cpp[0]["answer"])[:200])
PY
