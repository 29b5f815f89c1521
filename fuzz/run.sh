#!/usr/bin/env bash
# Runs every cargo-fuzz target for a short time (test.sh's fuzzing step):
# FUZZ_SECONDS each (default 15), starting from the committed seeds in
# fuzz/corpus/<target>/, new inputs kept in a temporary folder. A crash, a
# broken invariant, a timeout or an out-of-memory fails the run; libFuzzer
# writes the input to fuzz/artifacts/<target>/ (see docs/fuzzing.md to
# reproduce). The long runs recorded in docs/fuzzing.md use the same
# targets with -max_total_time=600.
#
# `fuzz/run.sh build` builds the targets without running them.
#
# Needs the nightly toolchain (sanitizer instrumentation); installs
# cargo-fuzz into ~/.cargo when missing. The fuzz build has its own target
# folder, ${CARGO_TARGET_DIR:-target}/fuzz (or FUZZ_TARGET_DIR), kept
# between runs like the main one.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${FUZZ_SECONDS:-15}
target_dir=${FUZZ_TARGET_DIR:-${CARGO_TARGET_DIR:-target}/fuzz}
case $target_dir in /*) ;; *) target_dir=$PWD/$target_dir ;; esac

if ! cargo +nightly --version >/dev/null 2>&1; then
  echo "fuzzing needs the nightly toolchain (rustup toolchain install nightly)" >&2
  exit 1
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "installing cargo-fuzz (crates.io, into ~/.cargo/bin)"
  cargo install cargo-fuzz --locked
fi

# These short runs are built at opt-level 1 without debug info (fuzz/Cargo.toml
# asks for level 3 with line tables, which the long runs in docs/fuzzing.md
# use): a cold build then costs about 615 s of CPU instead of 985 s, the most
# expensive compile in a cold CI run, while the sanitizer, the debug
# assertions and every target's own checks stay. FUZZ_OPT_LEVEL=3
# FUZZ_DEBUG=1 builds what the long runs use.
export CARGO_PROFILE_RELEASE_OPT_LEVEL=${FUZZ_OPT_LEVEL:-1}
export CARGO_PROFILE_RELEASE_DEBUG=${FUZZ_DEBUG:-0}

start=$(date +%s)
cargo +nightly fuzz build --target-dir "$target_dir"
echo "fuzz build: $(($(date +%s) - start)) s"
# `run.sh build` only builds (test.sh does it in the background early on).
[ "${1:-}" != build ] || exit 0

cargo +nightly fmt --manifest-path fuzz/Cargo.toml --check

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Targets run FUZZ_JOBS at a time (default: the number of cores): each
# libFuzzer run uses one core, so on 2 cores two targets cost the wall time
# of one, with the same time and inputs each.
jobs=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 2)}
fuzz_one() {
  local target=$1
  mkdir -p "$work/$target"
  # -timeout: one input taking 30 s is a hang, not slowness under load.
  if cargo +nightly fuzz run --target-dir "$target_dir" "$target" \
    "$work/$target" "fuzz/corpus/$target" -- \
    -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=30 \
    -print_final_stats=1 >"$work/$target.log" 2>&1; then
    echo "--- $target (${seconds} s): ok"
    grep -E '^stat::number_of_executed_units|^#[0-9]+.*DONE' "$work/$target.log" || true
  else
    echo "--- $target (${seconds} s): FAILED"
    tail -n 60 "$work/$target.log" >&2
    touch "$work/$target.failed"
  fi
}
targets=$(cargo +nightly fuzz list)
for target in $targets; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  fuzz_one "$target" &
done
wait
failed=()
for target in $targets; do
  [ ! -e "$work/$target.failed" ] || failed+=("$target")
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz targets failed: ${failed[*]} (inputs in fuzz/artifacts/)" >&2
  exit 1
fi
echo "fuzzing: $(echo "$targets" | wc -w) targets, ${seconds} s each, $jobs at a time, no failure"
