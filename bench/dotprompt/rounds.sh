#!/usr/bin/env bash
# Rust compiled render vs npm dotprompt's render of an already-compiled
# template, side by side: ROUNDS interleaved rounds (default 3), each one
# criterion run of `dotprompt/compiled` then one `node bench.mjs
# --compiled-only`, with the load average read before each; then the
# medians and their ratio.
#
# Usage: bench/dotprompt/rounds.sh [BEFORE_BENCH_BINARY]
#   BEFORE_BENCH_BINARY: another build of crates/dotprompt's `render` bench
#   (e.g. a copy of target/release/deps/render-*), timed in each round too.
# Env: ROUNDS (3), MEASURE (criterion --measurement-time seconds, 3),
#   ITERATIONS (node iterations, 20000). Honors CARGO_TARGET_DIR.
# Prints one JSON line per round and one with the medians on stdout.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
rounds="${ROUNDS:-3}"
measure="${MEASURE:-3}"
iterations="${ITERATIONS:-20000}"
before="${1:-}"

cd "$here"
if [ ! -d node_modules/dotprompt ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund >&2
fi

# The bench binary (built once, then run directly in each round).
bin="$(bash "$here/bench_bin.sh")"
[ -n "$bin" ] || { echo "rounds.sh: could not build the render bench" >&2; exit 1; }

# criterion's point estimate for dotprompt/compiled, in ns.
crit() {
  "$1" --bench dotprompt/compiled --warm-up-time 1 --measurement-time "$measure" --noplot 2>/dev/null |
    node -e '
      const text = require("fs").readFileSync(0, "utf8");
      const m = text.match(/time:\s+\[\S+ \S+ (\S+) (\S+) \S+ \S+\]/);
      const unit = { ns: 1, "µs": 1e3, us: 1e3, ms: 1e6, s: 1e9 }[m[2]];
      console.log(Math.round(Number(m[1]) * unit));'
}

results=()
for round in $(seq 1 "$rounds"); do
  load="$(cut -d' ' -f1 /proc/loadavg)"
  rust="$(crit "$bin")"
  rust_before=null
  if [ -n "$before" ]; then rust_before="$(crit "$before")"; fi
  js="$(node "$here/bench.mjs" --compiled-only --iterations "$iterations" |
    node -e 'console.log(JSON.parse(require("fs").readFileSync(0, "utf8")).compiled_ns_per_op)')"
  line="{\"round\":$round,\"load\":$load,\"rust_ns\":$rust,\"rust_before_ns\":$rust_before,\"js_ns\":$js}"
  echo "$line"
  results+=("$line")
done

printf '%s\n' "${results[@]}" | node -e '
  const rows = require("fs").readFileSync(0, "utf8").trim().split("\n").map(JSON.parse);
  const median = (xs) => { xs = xs.slice().sort((a, b) => a - b); const n = xs.length;
    return n % 2 ? xs[(n - 1) / 2] : (xs[n / 2 - 1] + xs[n / 2]) / 2; };
  const rust = median(rows.map((r) => r.rust_ns)), js = median(rows.map((r) => r.js_ns));
  const before = rows[0].rust_before_ns === null ? null : median(rows.map((r) => r.rust_before_ns));
  console.log(JSON.stringify({ median: true, rounds: rows.length,
    load: rows.map((r) => r.load), rust_ns: rust, rust_before_ns: before, js_ns: js,
    js_over_rust: Number((js / rust).toFixed(2)),
    js_over_rust_before: before === null ? null : Number((js / before).toFixed(2)) }));'
