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
