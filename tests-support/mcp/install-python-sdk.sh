#!/usr/bin/env bash
# Installs the official MCP Python SDK (PyPI `mcp` 2.3.0) into a venv under
# ~/.cache/genkit-rs, for plugins/mcp's tests: they run
# tests-support/mcp/server.py with its python as the Python peer.
#
# Idempotent: nothing is installed when the venv already imports that version.
#
# Environment:
#   GENKIT_RS_CACHE   cache root (default: $HOME/.cache/genkit-rs)
#   PYTHON            python 3.10+ with venv (default: python3)
#
# Output (last line, machine-readable):
#   GENKIT_TEST_MCP_PYTHON=<the venv's python>
set -euo pipefail

VERSION=2.3.0
CACHE="${GENKIT_RS_CACHE:-${HOME:-/root}/.cache/genkit-rs}"
venv="$CACHE/mcp-python-sdk-venv"
PYTHON="${PYTHON:-python3}"

installed() {
  [ -x "$venv/bin/python" ] &&
    [ "$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp"))' 2>/dev/null)" = "$VERSION" ]
}

if ! installed; then
  echo "[install-mcp-python-sdk] installing mcp $VERSION (PyPI) into $venv" >&2
  mkdir -p "$CACHE"
  rm -rf "$venv"
  "$PYTHON" -m venv "$venv" >&2
  "$venv/bin/pip" install --quiet --disable-pip-version-check "mcp==$VERSION" >&2
  installed || { echo "[install-mcp-python-sdk] ERROR: mcp $VERSION did not install in $venv" >&2; exit 1; }
fi

echo "GENKIT_TEST_MCP_PYTHON=$venv/bin/python"
