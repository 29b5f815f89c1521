#!/usr/bin/env bash
# Builds the dotprompt `render` criterion bench (release, bench profile)
# without running it and prints its executable's path, for the scripts here
# that run the binary directly (rounds.sh, callgrind.sh). Prints nothing if
# the build failed.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
cargo bench -p dotprompt --bench render --no-run --message-format=json 2>/dev/null |
  node -e '
    let last = "";
    for (const line of require("fs").readFileSync(0, "utf8").split("\n")) {
      if (!line) continue;
      const m = JSON.parse(line);
      if (m.reason === "compiler-artifact" && m.target && m.target.name === "render" && m.executable) last = m.executable;
    }
    console.log(last);'
