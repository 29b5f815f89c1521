#!/usr/bin/env bash
# Stops the server tests-support/pgvector/start.sh started in directory $1
# and removes that directory.
set -uo pipefail
dir=${1:?usage: stop.sh <directory printed by start.sh>}
[ -d "$dir/data" ] || exit 0
bin=$(cat "$dir/bin" 2>/dev/null) || exit 0
if [ "$(id -u)" = 0 ]; then
  su postgres -s /bin/sh -c "$bin/pg_ctl -D $dir/data -m immediate -w stop" >/dev/null 2>&1
else
  "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1
fi
rm -rf "$dir"
