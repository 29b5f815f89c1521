#!/usr/bin/env bash
# Dotprompt render benchmark, Rust vs npm `dotprompt`, on the same prompt
# (prompt.json: a partial plus an {{#each}} over 100 items).
#
# Usage: bench/dotprompt/run.sh [node bench.mjs flags: --iterations N --warmup N]
# Runs `cargo bench -p dotprompt --bench render` (criterion, filter
# `dotprompt/`), then bench.mjs, and prints ns/op of both and the ratio
# JS / Rust (above 1 means Rust is faster). Honors CARGO_TARGET_DIR.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"

if ! command -v node >/dev/null 2>&1; then
  echo "run.sh: node not found (need Node.js >= 20)" >&2
  exit 1
fi

cd "$here"
if [ ! -d node_modules/dotprompt ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "run.sh: installing dependencies (npm ci)" >&2
  npm ci --no-audit --no-fund >&2
fi

echo "run.sh: cargo bench -p dotprompt --bench render -- dotprompt/" >&2
(cd "$root" && CARGO_TARGET_DIR="$target" cargo bench -p dotprompt --bench render -- dotprompt/ >&2)

echo "run.sh: node bench.mjs $*" >&2
js="$(node "$here/bench.mjs" "$@")"

TARGET="$target" JS="$js" node --input-type=module -e '
import { readFileSync } from "node:fs";
const js = JSON.parse(process.env.JS);
const mean = (name) => JSON.parse(readFileSync(
  `${process.env.TARGET}/criterion/dotprompt/${name}/new/estimates.json`, "utf8")).mean.point_estimate;
const rows = [["render", "render_ns_per_op"], ["compiled", "compiled_ns_per_op"]].map(([name, key]) => {
  const rust = mean(name);
  return { bench: `dotprompt/${name}`, rust_ns_per_op: Math.round(rust),
           js_ns_per_op: js[key], js_over_rust: Number((js[key] / rust).toFixed(2)) };
});
for (const row of rows) console.log(JSON.stringify(row));
console.error(`npm dotprompt ${js.dotprompt_version} on node ${js.node}`);
'
