#!/usr/bin/env bash
# Counts the provider-plugin scaffolding (issue 10) of the working tree, or
# of a commit: `bench/scaffolding-lines.sh [REV]`. Prints one line per file
# (or per item), then the total. Run from anywhere in the repo.
#
# What counts is a set of roles, the same on both sides of the redesign:
# registering a plugin and building it (plugin), its HTTP client (client),
# the model and embedder actions around the wire calls (model, embedder,
# stream glue), its errors (error) and its option types (config). Wire
# formats, request/answer translation, stream parsing, model catalogues and
# crate docs are not scaffolding on either side. Where code of a counted
# role lives in a file that otherwise holds another role, only its items
# count (`file:item`: the item's doc comments and attributes, its line,
# and everything to its closing brace).
#
# Before the plugin kit (no crates/genkit-provider/src/kit), the issue's
# list: plugins/*/src/{plugin,client,error,model,embedder,config}.rs; plus
# the pieces whose role the kit took over from files not on that list:
# each stream.rs's `read_stream` (the stream glue of the model action, now
# the kit's), Ollama's `ModelSpec` type in models.rs (now the kit's
# `ModelSpec`; OpenAI's own `ModelSpec` stays in models.rs on both sides),
# and genkit-provider's `ConfigRules` and `embed_options` (the config keys
# refused or ignored and the reading of embed options, now `ProviderInfo`
# and the kit's config parsing; the rest of genkit-provider/src/plugin.rs
# counts on neither side).
#
# With the kit: the same files where they remain, the kit
# (genkit-provider/src/kit), `provider_error.rs` and `config.rs`
# (what the plugins' error and config modules shared), and the embedder
# role's request and answer translation, which left embedder.rs:
# plugins/*/src/convert/embed.rs and `wire::text_embed_body`.
#
# Only the four provider plugins of the issue count: the local embedder
# (plugins/local-embedder, added later for retrieval) runs a model
# in-process, is not built on the kit and has no HTTP scaffolding to share.
#
# Test code does not count: a `#[cfg(test)]` module (the attribute line,
# the `mod` line and everything to its closing brace) is left out; any
# other `#[cfg(test)]` item counts.
set -euo pipefail
cd "$(git -C "$(dirname "$0")" rev-parse --show-toplevel)"
rev=${1:-}
PROVIDERS='(anthropic|google-genai|ollama|openai-compat)'

# The paths below `dir` in the tree counted, matching an extended regex.
paths() {
  if [ -n "$rev" ]; then
    git ls-tree -r --name-only "$rev" -- "$1" | grep -E "$2" || true
  else
    git ls-files --cached --others --exclude-standard -- "$1" | grep -E "$2" || true
  fi
}
show() { if [ -n "$rev" ]; then git show "$rev:$1"; else cat "$1"; fi; }

# Non-test lines of a file; with an item pattern, only of the items whose
# first line matches it (an extended regex).
count() {
  show "$1" | awk -v label="$1${2:+:$2}" -v item="${2:-}" '
    function counted() {
      if (item == "") { n++; return }
      if (inside) {
        n++
        line = $0; depth += gsub(/\{/, "{", line) - gsub(/\}/, "}", line)
        if (depth <= 0 && $0 ~ /[};][[:space:]]*$/) inside = 0
        return
      }
      if ($0 ~ /^[[:space:]]*(\/\/\/|#\[)/) { lead++; return }
      if ($0 ~ item) {
        inside = 1; n += lead + 1
        line = $0; depth = gsub(/\{/, "{", line) - gsub(/\}/, "}", line)
        if (depth <= 0 && $0 ~ /[};][[:space:]]*$/) inside = 0
      }
      lead = 0
    }
    skip == 0 && /^[[:space:]]*#\[cfg\(test\)\][[:space:]]*$/ { pending = 1; next }
    pending == 1 {
      pending = 0
      if ($0 ~ /^[[:space:]]*(pub(\([a-z]+\))?[[:space:]]+)?mod[[:space:]]+[A-Za-z_0-9]+[[:space:]]*\{/) {
        skip = 1; depth_t = 0
      } else {                 # a cfg(test) item that is not a module counts
        if (item == "") n++
        counted(); next
      }
    }
    skip == 1 {
      line = $0
      depth_t += gsub(/\{/, "{", line) - gsub(/\}/, "}", line)
      if (depth_t <= 0) skip = 0
      next
    }
    { counted() }
    END { printf "%6d %s\n", n, label }
  '
}

{
  for f in $(paths plugins "^plugins/$PROVIDERS/src/(plugin|client|error|model|embedder|config)\\.rs\$"); do
    count "$f"
  done
  if [ -z "$(paths crates/genkit-provider/src/kit '\.rs$')" ]; then
    for f in $(paths plugins "^plugins/$PROVIDERS/src/stream\\.rs\$"); do
      count "$f" 'fn read_stream\('
    done
    for f in $(paths plugins/ollama/src '/models\.rs$'); do
      count "$f" '^(pub struct ModelSpec|impl ModelSpec|impl Spec for ModelSpec)'
    done
    count crates/genkit-provider/src/plugin.rs '^pub (struct ConfigRules|fn embed_options)'
  else
    for f in $(paths plugins "^plugins/$PROVIDERS/src/convert/embed\\.rs\$") \
             $(paths crates/genkit-provider/src '^crates/genkit-provider/src/(kit/.*|provider_error|config)\.rs$'); do
      count "$f"
    done
    count crates/genkit-provider/src/wire.rs 'fn text_embed_body\('
  fi
} | awk '{ print; t += $1 } END { printf "%6d total\n", t }'
