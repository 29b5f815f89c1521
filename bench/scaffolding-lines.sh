#!/usr/bin/env bash
# Counts the provider-plugin scaffolding (issue 10): the non-test lines of
# each plugin's plugin/error/config module, the kit (`genkit-provider/src/kit`),
# `provider_error.rs` and `config.rs`. A `#[cfg(test)]` module (the attribute
# line, the `mod` line and everything to its closing brace) does not count.
# Prints one line per file, then the total. Run from anywhere in the repo.
set -euo pipefail
cd "$(git -C "$(dirname "$0")" rev-parse --show-toplevel)"
files=(plugins/*/src/plugin.rs plugins/*/src/error.rs plugins/*/src/config.rs
       crates/genkit-provider/src/kit/*.rs crates/genkit-provider/src/provider_error.rs)
[ -f crates/genkit-provider/src/config.rs ] && files+=(crates/genkit-provider/src/config.rs)
for f in "${files[@]}"; do
  [ -f "$f" ] || continue
  awk -v file="$f" '
    skip == 0 && /^[[:space:]]*#\[cfg\(test\)\][[:space:]]*$/ { pending = 1; next }
    pending == 1 {
      pending = 0
      if ($0 ~ /^[[:space:]]*(pub(\([a-z]+\))?[[:space:]]+)?mod[[:space:]]+[A-Za-z_0-9]+[[:space:]]*\{/) {
        skip = 1; depth = 0
      } else { n += 2; next }   # a cfg(test) item that is not a module counts
    }
    skip == 1 {
      line = $0
      opens = gsub(/\{/, "{", line); closes = gsub(/\}/, "}", line)
      depth += opens - closes
      if (depth <= 0) skip = 0
      next
    }
    { n++ }
    END { printf "%6d %s\n", n, file }
  ' "$f"
done | awk '{ print; t += $1 } END { printf "%6d total\n", t }'
