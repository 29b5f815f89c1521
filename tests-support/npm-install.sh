#!/usr/bin/env bash
# Installs the npm packages of each folder given (`npm ci`, from its
# package-lock.json) when its node_modules is missing or older than the lock
# file. The folders install at once: npm ci is mostly waiting on the network
# and the disk, and six in a row took about four minutes of a cold CI run.
# npm's cache is safe to share between concurrent installs.
set -euo pipefail
cd "$(dirname "$0")/.."
pids=()
dirs=()
for dir in "$@"; do
  if [ -d "$dir/node_modules" ] && [ ! "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; then
    echo "$dir: up to date"
    continue
  fi
  (
    start=$(date +%s)
    log=$(mktemp)
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error) >"$log" 2>&1 || {
      echo "npm ci failed in $dir:" >&2
      cat "$log" >&2
      rm -f "$log"
      exit 1
    }
    rm -f "$log"
    echo "$dir: installed in $(($(date +%s) - start)) s"
  ) &
  pids+=($!)
  dirs+=("$dir")
done
failed=0
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || { echo "npm install failed: ${dirs[$i]}" >&2; failed=1; }
done
exit $failed
