#!/usr/bin/env bash
# Packs every library crate as crates.io would get it, then type-checks each
# packed crate alone, against the other packed crates (not the workspace's
# sources).
#
# Why not `cargo package`'s own verification: it builds each crate with code
# generation in a target folder of its own, and rebuilds our lower crates
# once per feature set a higher crate asks for. With 21 crates that was the
# slowest step after the tests (over 9 minutes on 2 cores). What it catches
# that matters here: a file missing from the package, a dependency only
# reachable by path, a feature a crate uses but does not turn on. A
# `cargo check` of each unpacked crate catches the same (it type-checks
# the packed sources against the packed manifests), shares the third-party
# dependencies already checked by clippy in the same target folder, and
# skips code generation, which a library does not need to prove it builds.
#
# The unpacked crates form a scratch workspace whose `[patch.crates-io]`
# points every crate name at its unpacked folder, so crates depend on each
# other exactly as published versions would; the repository's Cargo.lock
# pins everything else. `cargo check -p NAME` resolves features for NAME's
# own dependency graph only (resolver 2 and later), so each crate is checked
# with its own default features, as crates.io users get it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
case $target in /*) ;; *) target=$root/$target ;; esac
packed="$target/package"
work="$target/package-verify"

rm -rf "$packed"/*.crate "$work"
mkdir -p "$work"
(cd "$root" && cargo package --workspace --no-verify --quiet --target-dir "$target" "$@")

shopt -s nullglob
crates=("$packed"/*.crate)
[ ${#crates[@]} -gt 0 ] || { echo "cargo package produced no .crate file" >&2; exit 1; }
names=()
{
  echo '[workspace]'
  echo 'resolver = "3"'
  echo 'members = ["*"]'
  echo
  echo '[patch.crates-io]'
} >"$work/Cargo.toml"
for crate in "${crates[@]}"; do
  # -m: files get the time of unpacking, so cargo never takes an earlier
  # run's check of the same crate as fresh.
  tar -m -xzf "$crate" -C "$work"
  dir=$(basename "$crate" .crate)
  name=$(sed -n 's/^name = "\(.*\)"$/\1/p' "$work/$dir/Cargo.toml" | head -n 1)
  [ -n "$name" ] || { echo "no package name in $dir/Cargo.toml" >&2; exit 1; }
  names+=("$name")
  echo "$name = { path = \"$dir\" }" >>"$work/Cargo.toml"
done
cp "$root/Cargo.lock" "$work/Cargo.lock"

for name in "${names[@]}"; do
  if ! cargo check --quiet --manifest-path "$work/Cargo.toml" --target-dir "$target" -p "$name"; then
    echo "the packed crate $name does not build alone (unpacked in $work)" >&2
    exit 1
  fi
done
echo "${#names[@]} crates packed and checked alone: ${names[*]}"
