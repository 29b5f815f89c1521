#!/usr/bin/env bash
# Tracing cost in wall time: `peer generate_tools` paced at RATE ops/s, untraced
# and with the telemetry exporter on, interleaved for ROUNDS rounds of SECONDS
# each; prints each round and the medians of the per-op latency percentiles.
# A traced figure counts only if the exporter dropped no span (the `dropped`
# column): past the rate the worker sustains, drops flatter the traced side.
#
#   bash bench/tracing/run.sh [ROUNDS] [RATE] [SECONDS] [name=peer-binary ...]
#
# With no binaries named, builds and runs this checkout's release `peer`.
# Naming several (e.g. one built from another commit) interleaves them too.
set -euo pipefail
rounds=${1:-8}
rate=${2:-3000}
seconds=${3:-3}
shift $(( $# < 3 ? $# : 3 ))
here=$(cd "$(dirname "$0")/../.." && pwd)
if [ $# -eq 0 ]; then
  target=${CARGO_TARGET_DIR:-$here/target}
  (cd "$here" && cargo build --release -q -p genkit-bench --bin peer)
  set -- "this=$target/release/peer"
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for round in $(seq "$rounds"); do
  for named in "$@"; do
    name=${named%%=*}
    peer=${named#*=}
    for mode in untraced exporter; do
      flag=()
      [ "$mode" = exporter ] && flag=(--exporter)
      "$peer" generate_tools --rate "$rate" --seconds "$seconds" "${flag[@]}" |
        python3 -c '
import json, sys
d = json.load(sys.stdin)
dropped = (d.get("spans_exported_dropped") or [0, 0])[1]
print(sys.argv[1], sys.argv[2], sys.argv[3], int(d["latency_ns_p50"]), int(d["latency_ns_p99"]), int(d["ns_per_op"]), dropped)
' "$round" "$name" "$mode" | tee -a "$out"
    done
  done
done
python3 - "$out" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    _, name, mode, p50, p99, mean, dropped = line.split()
    runs[(name, mode)].append((int(p50), int(p99), int(mean), int(dropped)))
print("name: median p50 / p99 / mean ns, untraced -> exporter on (ratio), dropped; per-round p50 ratios")
for name in dict.fromkeys(k[0] for k in runs):
    u, t = runs[(name, "untraced")], runs[(name, "exporter")]
    med = lambda rows, i: statistics.median(r[i] for r in rows)
    cols = ", ".join(f"{med(u, i):.0f} -> {med(t, i):.0f} ({med(t, i) / med(u, i):.2f}x)" for i in range(3))
    per_round = " ".join(f"{b[0] / a[0]:.2f}" for a, b in zip(u, t))
    print(f"{name}: {cols}, dropped {sum(r[3] for r in t)}; {per_round}")
PY
