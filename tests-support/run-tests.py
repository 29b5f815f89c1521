#!/usr/bin/env python3
"""Builds the workspace's tests once, then runs the test binaries a few at a
time (test.sh's `cargo test` step).

Why not plain `cargo test`: it runs the ~125 test binaries one after another,
and the slow ones (PostgreSQL and SQLite agent runs, three replicas behind
nginx, a local model in tmux, the genkit CLI) mostly wait on other processes,
so a 2-core machine sat half idle for most of the 9 minutes the step took.
cargo-nextest does this scheduling, but building it from crates.io costs more
CPU on a cold CI machine than it saves, and no prebuilt binary is reachable
from the registries CI has.

Each binary runs as `cargo test` would run it: in its package's folder, with
the CARGO_* variables cargo sets for a test process. Doc tests run as one
more job (`cargo test --doc`). Output is kept per binary: a passing binary
prints its `test result:` line, a failing one prints everything it wrote.
Every binary runs even after a failure; the exit status is 1 if any failed.

Usage: run-tests.py [--jobs N] -- <cargo test arguments, e.g. --workspace --features ...>
Environment: GENKIT_TEST_JOBS (default 3) sets --jobs.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

# Binaries known to take the longest (package, test target): started first,
# so the pool does not end with one long binary running alone.
SLOW_FIRST = [
    ("genkit-store-sql", "agent_turns"),
    ("genkit-store-sql", "suite"),
    ("ops-agent", "replicas"),
    ("ops-agent", "tmux_local_model"),
    ("genkit-agent", "agent_tests"),
    ("genkit-mcp", "bad_input"),
    ("genkit-server", "eval_cli"),
    ("genkit-server", "trace_memory"),
    ("genkit-mcp", "python"),
    ("genkit-server", "server_limits"),
    ("genkit-retrieval", "retrieval_tests"),
    ("genkit-store-sql", "replicas"),
]


def package_of(package_id):
    """(name, version) from a cargo package id.

    Both spellings occur: `path+file:///x/genkit-core#0.1.0` (the folder is
    the name) and `path+file:///x/mcp#genkit-mcp@0.1.0`.
    """
    url, _, fragment = package_id.rpartition("#")
    if "@" in fragment:
        name, _, version = fragment.rpartition("@")
    else:
        name, version = url.rstrip("/").rsplit("/", 1)[-1], fragment
    return name, version


def build(cargo, cargo_args):
    """Builds every test target; returns one job per test binary."""
    cmd = [cargo, "test", "--no-run", "--message-format=json-render-diagnostics", *cargo_args]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    jobs = []
    for line in proc.stdout:
        try:
            msg = json.loads(line)
        except json.JSONDecodeError:
            continue
        if msg.get("reason") != "compiler-artifact" or not msg.get("executable"):
            continue
        if not msg["profile"]["test"]:
            continue
        name, version = package_of(msg["package_id"])
        manifest = msg["manifest_path"]
        target = msg["target"]["name"]
        kind = msg["target"]["kind"][0]
        env = {
            "CARGO": cargo,
            "CARGO_MANIFEST_DIR": os.path.dirname(manifest),
            "CARGO_MANIFEST_PATH": manifest,
            "CARGO_PKG_NAME": name,
            "CARGO_PKG_VERSION": version,
            "CARGO_CRATE_NAME": target.replace("-", "_"),
        }
        exe = msg["executable"]
        env["LD_LIBRARY_PATH"] = os.pathsep.join(
            p for p in [os.path.dirname(exe), os.environ.get("LD_LIBRARY_PATH", "")] if p
        )
        jobs.append(
            {
                "label": f"{name} {kind} {target}",
                "key": (name, target),
                "cmd": [exe],
                "cwd": os.path.dirname(manifest),
                "env": env,
            }
        )
    if proc.wait() != 0:
        sys.exit(f"cargo test --no-run failed (exit {proc.returncode})")
    return jobs


def order(jobs):
    rank = {key: i for i, key in enumerate(SLOW_FIRST)}
    return sorted(jobs, key=lambda j: (rank.get(j["key"], len(rank)), j["label"]))


def summary_line(path):
    """The counts of a job's `test result:` lines, added up (the doc tests
    job prints one per crate)."""
    totals = {}
    lines = 0
    with open(path, errors="replace") as f:
        for line in f:
            if not line.startswith("test result:"):
                continue
            lines += 1
            for count, what in re.findall(r"(\d+) (passed|failed|ignored|measured|filtered out)", line):
                totals[what] = totals.get(what, 0) + int(count)
    if not lines:
        return ""
    counts = "; ".join(f"{totals.get(w, 0)} {w}" for w in ("passed", "failed", "ignored", "filtered out"))
    return f"test result: {counts}" + (f" ({lines} test binaries)" if lines > 1 else "")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=int(os.environ.get("GENKIT_TEST_JOBS", "3")))
    parser.add_argument("cargo_args", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    cargo_args = [a for a in args.cargo_args if a != "--"]
    cargo = os.environ.get("CARGO") or shutil.which("cargo") or "cargo"

    started = time.monotonic()
    jobs = order(build(cargo, cargo_args))
    built = time.monotonic()
    print(f"built {len(jobs)} test binaries in {built - started:.0f} s; running them {args.jobs} at a time", flush=True)
    jobs.insert(
        min(len(jobs), len(SLOW_FIRST)),
        {
            "label": "doc tests (cargo test --doc)",
            "key": ("", "doc"),
            "cmd": [cargo, "test", "--doc", *cargo_args],
            "cwd": os.getcwd(),
            "env": {},
        },
    )

    out_dir = tempfile.mkdtemp(prefix="genkit-tests-")
    lock = threading.Lock()
    queue = list(jobs)
    results = []

    def worker():
        while True:
            with lock:
                if not queue:
                    return
                job = queue.pop(0)
            log = os.path.join(out_dir, f"{len(results)}-{os.getpid()}-{id(job)}.log")
            t0 = time.monotonic()
            with open(log, "w") as f:
                rc = subprocess.call(
                    job["cmd"],
                    cwd=job["cwd"],
                    env={**os.environ, **job["env"]},
                    stdout=f,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                )
            took = time.monotonic() - t0
            with lock:
                results.append((job, rc, took))
                status = "ok" if rc == 0 else f"FAILED (exit {rc})"
                print(f"[{time.monotonic() - started:5.0f} s] {job['label']}: {status}, {took:.1f} s", flush=True)
                if rc == 0:
                    line = summary_line(log)
                    if line:
                        print(f"    {line}", flush=True)
                else:
                    with open(log, errors="replace") as f:
                        sys.stdout.write(f.read())
                    print(f"---- end of {job['label']}", flush=True)

    threads = [threading.Thread(target=worker) for _ in range(max(1, args.jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    shutil.rmtree(out_dir, ignore_errors=True)

    failed = [job["label"] for job, rc, _ in results if rc != 0]
    slowest = sorted(results, key=lambda r: -r[2])[:10]
    print(f"\n{len(results)} jobs in {time.monotonic() - built:.0f} s after the build; the slowest:")
    for job, _, took in slowest:
        print(f"    {took:6.1f} s  {job['label']}")
    if failed:
        print("\nfailed: " + ", ".join(failed), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
