"""Folds the peer measurements of bench/run.sh into bench/RESULTS.md."""
import json
import os
import platform
import subprocess
import sys
from datetime import datetime, timezone

out_dir, results = sys.argv[1], sys.argv[2]


def load(name):
    path = os.path.join(out_dir, name)
    if not os.path.exists(path):
        return []
    return [json.loads(line) for line in open(path) if line.strip().startswith("{")]


rust = load("rust.jsonl")
js = load("js.jsonl")


def pick(rows, bench, **match):
    for r in rows:
        if r.get("bench") == bench and all(r.get(k) == v for k, v in match.items()):
            return r
    return None


def cpu():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


lines = [
    "# Benchmark results",
    "",
    f"Measured {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')} on {os.cpu_count()} cores ({cpu()}),",
    "Rust and Genkit JS run one after the other in the same `bench/run.sh` run.",
    "Ratios are JS time / Rust time (higher is better for Rust); memory is peak RSS of the process.",
    "Absolute times vary with the machine; the ratios are what we track.",
    "",
    "## Calls (time per operation)",
    "",
    "| work | Rust vs JS (tracing as shipped) | Rust (exporter on) vs JS | Rust vs JS with OTel disabled | peak RSS Rust / JS |",
    "|---|---|---|---|---|",
]
names = {
    "flow_echo": "trivial flow, looked up in the registry and run",
    "generate_plain": "generate, scripted model, plain text",
    "generate_tools": "generate, model asks for 2 tools on each of 3 turns",
    "generate_stream": "generate_stream of 1000 chunks, every chunk consumed",
}
for bench, label in names.items():
    r = pick(rust, bench, exporter=False)
    rx = pick(rust, bench, exporter=True)
    j = pick(js, bench, otel="default")
    jn = pick(js, bench, otel="disabled")
    if not (r and j):
        continue
    def ratio(a, b):
        return f"**{a['ns_per_op'] / b['ns_per_op']:.1f}x**" if a and b else "n/a"
    mem = f"{r['rss_mb_peak']:.0f} MB / {j['rss_mb_peak']:.0f} MB ({j['rss_mb_peak'] / r['rss_mb_peak']:.0f}x less)"
    lines.append(f"| {label} | {ratio(j, r)} | {ratio(j, rx)} | {ratio(jn, r)} | {mem} |")

lines += [
    "",
    "Raw numbers (ns per operation):",
    "",
    "| bench | Rust | Rust + exporter | JS | JS, OTel disabled |",
    "|---|---|---|---|---|",
]
for bench in names:
    cells = []
    for rows, m in ((rust, {"exporter": False}), (rust, {"exporter": True}), (js, {"otel": "default"}), (js, {"otel": "disabled"})):
        r = pick(rows, bench, **m)
        cells.append(f"{r['ns_per_op']:,.0f}" if r else "n/a")
    lines.append(f"| {bench} | " + " | ".join(cells) + " |")

lines += [
    "",
    "Notes:",
    "- \"Tracing as shipped\": Genkit JS by default records every span with the OpenTelemetry SDK (and drops them when no",
    "  telemetry server is configured); Genkit for Rust records nothing until a span processor is installed. The",
    "  \"exporter on\" column installs the in-memory trace store (what dev mode does), so every span is recorded.",
    "- JS: npm `genkit` " + (j or {}).get("genkit_version", "?") + " on Node " + (j or {}).get("node_version", "?") + ", run by `bench/js/run_all.sh`.",
    "- Rust: `bench/rust` (`peer` binary, release build); the same workloads are criterion benches",
    "  (`cargo bench -p genkit-bench`).",
]

for extra in ("dotprompt.md", "server.md"):
    path = os.path.join(out_dir, extra)
    if os.path.exists(path):
        lines += ["", open(path).read().rstrip()]

open(results, "w").write("\n".join(lines) + "\n")
