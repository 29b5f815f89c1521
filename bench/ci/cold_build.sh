#!/usr/bin/env bash
# Cold build cost of what .ci/run compiles, for one or more commits side by
# side: for each, a fresh clone, an empty target directory and
# CARGO_INCREMENTAL=0 (as .ci/run), then the two cargo commands of that
# commit's test.sh that compile (clippy of all targets, and the test build),
# each with that commit's own feature list. Prints wall and CPU seconds
# (user + system of every process: the figure to compare on a shared
# machine) and the target directory's size, then deletes it.
#
#   bash bench/ci/cold_build.sh 6d07095 c3569d9     # before and after the crates split
set -uo pipefail
[ $# -ge 1 ] || { echo "usage: cold_build.sh COMMIT..." >&2; exit 2; }
repo="$(cd "$(dirname "$0")/../.." && pwd)"
work="${WORK:-$(mktemp -d)}"
export CARGO_INCREMENTAL=0
for commit in "$@"; do
  dir="$work/src-$commit"; tgt="$work/target-$commit"
  rm -rf "$dir" "$tgt"
  git clone -q "$repo" "$dir" && git -C "$dir" checkout -q "$commit" || exit 1
  # The feature list: test.sh's `features=` line, or (older commits) the
  # first `--features` argument in it.
  feats=$(sed -n 's/^features=\([^ ]*\)$/\1/p' "$dir/test.sh" | head -1)
  [ -n "$feats" ] || feats=$(grep -o -- '--features [^ ]*' "$dir/test.sh" | head -1 | cut -d' ' -f2)
  echo "== $commit features=$feats load=$(cut -d' ' -f1-3 /proc/loadavg) $(date -u +%H:%M:%S)"
  (cd "$dir" && /usr/bin/time -f "$commit clippy wall=%e user=%U sys=%S" \
    env CARGO_TARGET_DIR="$tgt" cargo clippy -q --workspace --all-targets --features "$feats" -- -D warnings 2>&1 | tail -3)
  (cd "$dir" && /usr/bin/time -f "$commit test-build wall=%e user=%U sys=%S" \
    env CARGO_TARGET_DIR="$tgt" cargo test -q --workspace --no-run --features "$feats" 2>&1 | tail -3)
  echo "   load after=$(cut -d' ' -f1-3 /proc/loadavg) target=$(du -sh "$tgt" | cut -f1)"
  rm -rf "$tgt" "$dir"
done
