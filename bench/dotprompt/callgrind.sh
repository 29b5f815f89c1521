#!/usr/bin/env bash
# Instructions (and heap allocations) per `dotprompt/compiled` render,
# under callgrind: the criterion bench runs for a second (`--profile-time
# 1`) with collection on only inside `PromptFunction::render`, and the
# totals are divided by the number of renders counted in the same profile.
# Allocations are the calls to Rust's allocator (`__rust_alloc`,
# `__rust_alloc_zeroed`, `__rust_realloc`) made while collecting.
#
# Usage: bench/dotprompt/callgrind.sh [BENCH_BINARY [OUT_FILE]]
#   BENCH_BINARY: a build of crates/dotprompt's `render` bench (default:
#   build it now). OUT_FILE keeps the profile (for callgrind_annotate).
# Honors CARGO_TARGET_DIR. Prints one JSON line.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bin="${1:-}"
if [ -z "$bin" ]; then
  bin="$(bash "$here/bench_bin.sh")"
fi
out="${2:-$(mktemp)}"
valgrind --tool=callgrind --callgrind-out-file="$out" --toggle-collect='*PromptFunction*render*' \
  "$bin" --bench dotprompt/compiled --profile-time 1 >/dev/null 2>&1

# The render future's id in the profile, then the calls made to it.
id="$(grep -m1 -o 'fn=([0-9]*) dotprompt::dotprompt::PromptFunction::render::{{closure}}' "$out" | grep -o '([0-9]*)')"
total="$(awk '/^(totals|summary):/ {print $2; exit}' "$out")"
calls="$(awk -v id="cfn=$id" '/^cfn=/ {c = (index($0, id) == 1)} /^calls=/ && c {split($0, a, "[= ]"); n += a[2]} END {print n}' "$out")"
allocs="$(awk '
  /^c?fn=\([0-9]+\) / { id = substr($1, index($1, "(")); name[id] = $2 }
  /^cfn=/ { id = substr($1, index($1, "(")); alloc = (name[id] ~ /(^|::)__rust_(alloc|alloc_zeroed|realloc)$/) }
  /^calls=/ && alloc { split($0, a, "[= ]"); n += a[2] }
  END { print n + 0 }' "$out")"
echo "{\"bench\":\"dotprompt/compiled\",\"instructions\":$total,\"renders\":$calls,\"instructions_per_render\":$((total / calls)),\"allocations_per_render\":$(awk -v a="$allocs" -v c="$calls" 'BEGIN {printf "%.2f", a / c}')}"
[ -n "${2:-}" ] || rm -f "$out"
