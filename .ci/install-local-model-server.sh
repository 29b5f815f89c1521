#!/usr/bin/env bash
# Install a real OpenAI-compatible server (llama.cpp's own llama-server, from
# the prebuilt PyPI wheel `xllamacpp`) plus a tiny chat model
# (SmolLM2-135M-Instruct, Q4_1 GGUF) into a cache folder outside the repo.
# Nothing is compiled (llama-cpp-python, used before, was built from source:
# about 6 minutes of both cores).
#
# Idempotent: safe on a clean machine and on one where it already ran; nothing
# is re-downloaded when it is already in place.
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
# NOTE: the CPUs of these machines advertise AMX but fault on it (SIGILL from
# llama.cpp built for the host CPU). The xllamacpp CPU wheel targets a fixed
# AVX2 baseline without AMX; the smoke test below catches a wheel that does not.
set -euo pipefail

XLLAMACPP_VERSION="2026.10.11549"

CACHE="${GENKIT_RS_CACHE:-${HOME:-/root}/.cache/genkit-rs}"
VENV="$CACHE/xllamacpp-venv"
PYTHON="${PYTHON:-python3}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

log() { echo "[install-local-model-server] $*" >&2; }
die() { echo "[install-local-model-server] ERROR: $*" >&2; exit 1; }

mkdir -p "$CACHE" || die "cannot create cache dir $CACHE"
START=$(date +%s)

# ---------------------------------------------------------------- venv
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import sys' 2>/dev/null; then
    command -v "$PYTHON" >/dev/null 2>&1 || die "$PYTHON not found (need Python >= 3.9 with venv)"
    log "creating venv $VENV"
    rm -rf "$VENV"
    "$PYTHON" -m venv "$VENV" || die "python -m venv failed (on Debian: apt-get install python3-venv)"
fi
VPY="$VENV/bin/python"

# ---------------------------------------------------------------- xllamacpp
installed_version() {
    "$VPY" - <<'EOF' 2>/dev/null || true
try:
    from importlib.metadata import version
    v = version("xllamacpp")
    import xllamacpp  # noqa: F401  (the native library loads)
    print(v)
except Exception:
    pass
EOF
}

if [ "$(installed_version)" = "$XLLAMACPP_VERSION" ]; then
    log "xllamacpp==$XLLAMACPP_VERSION already installed"
else
    log "installing xllamacpp==$XLLAMACPP_VERSION (prebuilt CPU wheel)"
    # --only-binary: never fall back to compiling llama.cpp from an sdist.
    "$VPY" -m pip install --disable-pip-version-check -q --only-binary=:all: \
        "xllamacpp==$XLLAMACPP_VERSION" >&2 || die "pip install xllamacpp failed"
    [ "$(installed_version)" = "$XLLAMACPP_VERSION" ] \
        || die "xllamacpp installed but not importable at $XLLAMACPP_VERSION"
    log "xllamacpp installed"
fi

# ---------------------------------------------------------------- model
# The same file genkit-local-model's tests use (SHA-256 checked there).
GGUF_LINE=$(PYTHON="$VPY" bash "$HERE/../tests-support/local-model/install-gguf.sh" | tail -n 1)
GGUF="${GGUF_LINE#GENKIT_LOCAL_MODEL_GGUF=}"
[ -f "$GGUF" ] || die "install-gguf.sh gave no model file ($GGUF_LINE)"

# ---------------------------------------------------------------- smoke check
# Load the model in llama-server and generate one token: catches a build that
# uses CPU instructions this machine cannot run (SIGILL, exit 132) before any
# test does.
set +e
"$VPY" - "$GGUF" >"$CACHE/smoke-test.log" 2>&1 <<'EOF'
import json, os, sys, urllib.request
import xllamacpp
p = xllamacpp.CommonParams()
p.model.path = sys.argv[1]
p.n_ctx = 256
p.port = 0
p.hostnames = ["127.0.0.1"]
p.cpuparams.n_threads = 2
p.verbosity = 1
server = xllamacpp.Server(p)
body = json.dumps({"prompt": "The capital of France is", "max_tokens": 1, "temperature": 0})
req = urllib.request.Request(server.listening_address + "/v1/completions", body.encode(),
                             {"Content-Type": "application/json"})
with urllib.request.urlopen(req, timeout=120) as resp:
    out = json.load(resp)
print("smoke test token:", repr(out["choices"][0]["text"]), flush=True)
os._exit(0)  # llama-server's native threads would keep the process alive
EOF
RC=$?
set -e
if [ "$RC" -ne 0 ]; then
    tail -n 20 "$CACHE/smoke-test.log" >&2
    [ "$RC" -eq 132 ] && log "SIGILL: the xllamacpp wheel uses CPU instructions this machine lacks"
    die "smoke test (1 token with the model) failed with exit code $RC"
fi
log "$(tail -n 1 "$CACHE/smoke-test.log")"

log "done in $(( $(date +%s) - START )) s"
echo "LLAMA_VENV=$VENV"
echo "LLAMA_PYTHON=$VPY"
echo "SMOLLM2_GGUF=$GGUF"
