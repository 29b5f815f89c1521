#!/usr/bin/env bash
# test.sh lints the workspace inside its test build: clippy-driver as
# RUSTC_WORKSPACE_WRAPPER, `-D warnings` passed in CLIPPY_ARGS. This checks
# that the gate still closes: a one-file crate with a clippy warning
# (`&Vec<i32>` as an argument, clippy::ptr_arg) must fail to build under the
# same two variables, naming that lint, and build once the warning is gone.
set -euo pipefail
: "${RUSTC_WORKSPACE_WRAPPER:?set by test.sh}" "${CLIPPY_ARGS:?set by test.sh}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/gate/src"
cat >"$work/gate/Cargo.toml" <<'TOML'
[package]
name = "lint-gate"
version = "0.0.0"
edition = "2024"
publish = false

[workspace]
TOML
build() { (cd "$work/gate" && CARGO_TARGET_DIR="$work/target" cargo build --quiet --offline 2>&1); }

echo '/// Its length.
pub fn length(v: &Vec<i32>) -> usize { v.len() }' >"$work/gate/src/lib.rs"
if out=$(build); then
  echo "the lint gate is open: a clippy warning (ptr_arg) built without error" >&2
  exit 1
fi
grep -qE 'ptr[-_]arg' <<<"$out" || {
  echo "the build failed, but not on the clippy warning it was given:" >&2
  echo "$out" >&2
  exit 1
}

echo '/// Its length.
pub fn length(v: &[i32]) -> usize { v.len() }' >"$work/gate/src/lib.rs"
out=$(build) || { echo "the crate without the warning did not build:" >&2; echo "$out" >&2; exit 1; }
echo "lint gate: a clippy warning fails the build (clippy::ptr_arg), the same crate without it builds"
