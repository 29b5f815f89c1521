#!/usr/bin/env bash
# Instructions per operation of the release `peer` (bench/rust) under
# callgrind, for comparing two builds without wall-clock noise.
#
#   bench/callgrind/ops.sh PEER_BINARY [work ...]
#
# For each work it runs `peer <work> --ops N` at two op counts (100 and 600;
# 20 and 120 for the heavy ones) and prints (count at N2 - count at N1) /
# (N2 - N1) for the request thread (callgrind's `-01` file: the bench runs a
# current-thread runtime), so setup (registry, schemas) cancels out.
# Works: flow_echo generate_plain generate_tools generate_stream, and the
# `+exporter` forms generate_plain+exporter generate_tools+exporter.
set -euo pipefail
peer=${1:?usage: ops.sh PEER_BINARY [work ...]}
shift
works=("$@")
[ ${#works[@]} -gt 0 ] || works=(flow_echo generate_plain generate_tools generate_stream generate_plain+exporter generate_tools+exporter)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# Instructions of the request thread for one run.
count() {
  local work=$1 ops=$2 flags=$3 out="$scratch/cg"
  rm -f "$out"*
  # shellcheck disable=SC2086
  valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$out" \
    "$peer" "$work" --ops "$ops" $flags >/dev/null 2>&1
  awk '/^totals:/ {print $2}' "$out-01"
}

for spec in "${works[@]}"; do
  work=${spec%+exporter}
  flags=""
  [ "$spec" = "$work" ] || flags="--exporter"
  n1=100 n2=600
  if [ "$work" = generate_stream ] || { [ -n "$flags" ] && [ "$work" = generate_tools ]; }; then
    n1=20 n2=120
  fi
  c1=$(count "$work" "$n1" "$flags")
  c2=$(count "$work" "$n2" "$flags")
  echo "$spec $(( (c2 - c1) / (n2 - n1) ))"
done
