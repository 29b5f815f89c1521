# Shared by the docs tests: build a fresh user project from blocks of a
# Markdown file, against this workspace's crates instead of crates.io.
# Source it; needs ROOT (the repository) set.

docs_log() { echo "[docs test] $*" >&2; }
docs_die() { echo "[docs test] FAILED: $*" >&2; exit 1; }

# The block labelled `$2` in the Markdown file `$1` (see extract.py).
docs_block() { python3 "$ROOT/tests-support/docs/extract.py" "$1" "$2"; }

# A dependency block (stdin) with the docs' path to this repository, cloned
# next to the user's project (`../genkit-rs/`), replaced by the real one.
docs_local_paths() { sed "s#\.\./genkit-rs/#$ROOT/#g"; }

# Lines that make a user project build against the workspace: the
# workspace crates its dependencies (in the TOML file `$1`) need that are
# not already taken by path, patched in by path, and the workspace's dev
# profile, so that dependencies compile as they did for the workspace's
# tests (and are reused from its target folder).
docs_workspace_overrides() {
    (cd "$ROOT" && cargo metadata --format-version 1 --locked \
        --filter-platform "$(rustc -vV | sed -n 's/^host: //p')") | python3 -c '
import json, os, sys, tomllib
meta = json.load(sys.stdin)
deps = tomllib.load(open(sys.argv[1], "rb")).get("dependencies", {})
wanted = {n for n, spec in deps.items() if not (isinstance(spec, dict) and "path" in spec)}
members = {p["id"]: p for p in meta["packages"] if p["id"] in meta["workspace_members"]}
nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
todo = [i for i, p in members.items() if p["name"] in wanted]
seen = set()
while todo:
    i = todo.pop()
    if i in seen:
        continue
    seen.add(i)
    for d in nodes[i]["deps"]:
        if d["pkg"] in members and any(k["kind"] is None for k in d["dep_kinds"]):
            todo.append(d["pkg"])
if seen:
    print("\n[patch.crates-io]")
for p in sorted((members[i] for i in seen), key=lambda p: p["name"]):
    name, path = p["name"], os.path.dirname(p["manifest_path"])
    print(f"{name} = {{ path = \"{path}\" }}")
' "$1"
    cat <<'TOML'

[profile.dev]
debug = "line-tables-only"

[profile.dev.package."*"]
debug = false
TOML
}

# Writes a project named `$2` in folder `$1`: its Cargo.toml is a package
# header, then the dependency block read from stdin (also kept beside the
# folder as `$1.dependencies.toml`), then the workspace overrides.
# The workspace's Cargo.lock is copied in, so dependencies keep the versions
# the workspace was tested (and built) with.
docs_new_project() {
    local dir="$1" name="$2"
    rm -rf "$dir"
    mkdir -p "$dir/src"
    local deps="$dir.dependencies.toml"
    cat >"$deps"
    {
        printf '[package]\nname = "%s"\nversion = "0.1.0"\nedition = "2024"\npublish = false\n\n' "$name"
        cat "$deps"
        docs_workspace_overrides "$deps"
        # Its own workspace root, even when created inside this repository.
        printf '\n[workspace]\n'
    } >"$dir/Cargo.toml"
    cp "$ROOT/Cargo.lock" "$dir/Cargo.lock"
}

# Runs the shell block labelled `$2` in the Markdown file `$1` as it
# stands, in the current directory and environment (bash -e, pipefail).
docs_run_block() { bash -euo pipefail -c "$(docs_block "$1" "$2")"; }

# Sources the shell block labelled `$2` of `$1` into the calling shell, for
# blocks that export variables the later steps use.
docs_source_block() {
    local block
    block="$(docs_block "$1" "$2")"
    eval "$block"
}

# Does what a doc tells a reader after `cargo new`: replace the empty
# `[dependencies]` section of the project's Cargo.toml (`$1`) with the
# dependency block read from stdin (`../genkit-rs/` pointing at this
# checkout), plus the workspace overrides (docs_workspace_overrides) and
# the workspace's Cargo.lock.
docs_use_dependencies() {
    local manifest="$1"
    local dir deps
    dir="$(dirname "$manifest")"
    deps="$dir/.docs-dependencies.toml"
    docs_local_paths >"$deps"
    python3 - "$manifest" <<'PY'
import sys
path = sys.argv[1]
text = open(path, encoding="utf-8").read()
head, sep, rest = text.partition("[dependencies]")
assert sep and not rest.strip(), f"unexpected Cargo.toml from cargo new:\n{text}"
open(path, "w", encoding="utf-8").write(head)
PY
    {
        cat "$deps"
        docs_workspace_overrides "$deps"
    } >>"$manifest"
    rm -f "$deps"
    cp "$ROOT/Cargo.lock" "$dir/Cargo.lock"
}

# Waits until `$1` answers HTTP (any status), for at most `$2` seconds.
docs_wait_for_url() {
    local deadline=$(( $(date +%s) + $2 ))
    until curl -s -m 2 -o /dev/null "$1"; do
        [ "$(date +%s)" -lt "$deadline" ] || return 1
        sleep 0.5
    done
}

# Stops the process group led by `$1` (started with setsid): Ctrl-C, then
# SIGKILL to what is left after a second. No-op for an empty pid.
docs_stop_group() {
    [ -n "${1:-}" ] || return 0
    kill -INT -- "-$1" 2>/dev/null || true
    local i
    for i in 1 2 3 4 5 6 7 8 9 10; do
        kill -0 -- "-$1" 2>/dev/null || return 0
        sleep 0.1
    done
    kill -KILL -- "-$1" 2>/dev/null || true
}

# Starts the local OpenAI-compatible model server (installed by
# .ci/install-local-model-server.sh) on port `$1` and exports
# LOCAL_MODEL_BASE_URL / LOCAL_MODEL_NAME. The caller stops it on exit
# (docs_stop_model_server).
docs_start_model_server() {
    local port="$1"
    bash "$ROOT/.ci/install-local-model-server.sh" >/dev/null
    local env_lines
    env_lines="$(bash "$ROOT/tests-support/local-model/start-server.sh" "$port")"
    eval "$env_lines"
    export LOCAL_MODEL_BASE_URL LOCAL_MODEL_NAME
}

docs_stop_model_server() {
    bash "$ROOT/tests-support/local-model/stop-server.sh" "$1" >/dev/null 2>&1 || true
}
