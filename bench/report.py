"""Folds the peer measurements of bench/run.sh into bench/RESULTS.md."""
import json
import os
import platform
import subprocess
import sys
from datetime import datetime, timezone

# `report.py OUT_DIR RESULTS.md` writes the whole file; `report.py --agents OUT_DIR`
# prints only the "Agents" section (to add it to RESULTS.md without re-running the rest).
agents_only = sys.argv[1] == "--agents"
if agents_only:
    out_dir, results = sys.argv[2], None
else:
    out_dir, results = sys.argv[1], sys.argv[2]


def load(name):
    path = os.path.join(out_dir, name)
    if not os.path.exists(path):
        return []
    return [json.loads(line) for line in open(path) if line.strip().startswith("{")]


def agents_section():
    rows = load("agents.jsonl")
    loads = [r["load_average"] for r in rows if "load_average" in r]
    timed = {}
    memory = {}
    for r in rows:
        if "bench" not in r:
            continue
        key = (r.get("side"), r["bench"])
        if r.get("run") == "memory":
            memory[key] = r
        else:
            timed.setdefault(key, []).append(r)
    if not any(side == "rust" for side, _ in timed):
        return []

    def per_turn(r):
        if "ns_per_turn" in r:
            return r["ns_per_turn"]
        return r["ns_per_op"] / r.get("turns_per_op", 1)

    def median(xs):
        xs = sorted(xs)
        n = len(xs)
        return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2

    def turns_stored(r):
        # Every operation run (the check before warm-up, the warm-up and the
        # timed ones) left its snapshots in the store.
        if "turns_run" in r:
            return r["turns_run"]
        return (1 + r.get("warmup_iterations", 0) + r["iterations"]) * r.get("turns_per_op", 1)

    rounds = min((len(v) for v in timed.values()), default=0)
    out = [
        "",
        "## Agents (time per turn)",
        "",
        f"Load average (1, 5, 15 min) before and after the run: {' / '.join(loads) or '?'} "
        "(a 2-core machine shared with other builds). Medians of "
        f"{rounds} rounds, Rust and JS interleaved.",
        "",
        "| work | Rust per turn | JS per turn | Rust vs JS (median) | rounds: Rust vs JS |",
        "|---|---|---|---|---|",
    ]
    labels = {
        "agent_turn": "one turn of a prompt agent on a fresh session",
        "agent_session_50": "a 50-turn session, history growing",
    }
    for bench, label in labels.items():
        rs, js = timed.get(("rust", bench), []), timed.get(("js", bench), [])
        if not (rs and js):
            continue
        rt = median([per_turn(r) for r in rs])
        jt = median([per_turn(j) for j in js])
        each = ", ".join(f"{per_turn(j) / per_turn(r):.1f}x" for r, j in zip(rs, js))
        out.append(
            f"| {label} | {rt / 1000:,.1f} µs | {jt / 1000:,.1f} µs | **{jt / rt:.1f}x** | {each} |"
        )
    if memory:
        out += [
            "",
            "Memory, both sides doing the same work (the same numbers of warm-up and timed operations, every",
            "snapshot kept by the in-memory store):",
            "",
            "| work | turns stored | peak RSS Rust / JS | RSS growth per stored turn Rust / JS |",
            "|---|---|---|---|",
        ]
        for bench, label in labels.items():
            r, j = memory.get(("rust", bench)), memory.get(("js", bench))
            if not (r and j):
                continue
            growth = [
                (x["rss_mb_peak"] - x["rss_mb_start"]) * 1024 / turns_stored(x) for x in (r, j)
            ]
            out.append(
                f"| {label} | {turns_stored(r):,.0f} / {turns_stored(j):,.0f} | "
                f"{r['rss_mb_peak']:.0f} MB / {j['rss_mb_peak']:.0f} MB | "
                f"{growth[0]:.1f} kB / {growth[1]:.1f} kB |"
            )
    out += [
        "",
        "Both sides: a prompt agent on a scripted model answering \"hello\", sessions kept by the agent",
        "(server managed) in an in-memory store, each turn a bidi run with one input whose every chunk is consumed",
        "before the output. `agent_turn` starts a fresh session per operation; `agent_session_50` runs 50 turns per",
        "operation, each continuing the previous turn's snapshot, and reports the time per turn (the average over the",
        "50 turns, so the later, longer histories count). RSS growth per stored turn is (peak RSS - RSS before the",
        "first operation) / turns stored; JS's peak includes garbage not yet collected.",
    ]
    return out


if agents_only:
    print("\n".join(agents_section()))
    sys.exit(0)

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
    "- \"Tracing as shipped\": both sides as they run in production with no telemetry configured. Genkit JS still",
    "  creates every span with the OpenTelemetry SDK and drops it; Genkit for Rust keeps only trace and span ids until",
    "  a span processor is installed. \"Exporter on\": Rust records every span and serializes it to Genkit's wire",
    "  form inline, on the request path (real exporters do that on a background task), against the same JS default,",
    "  which does not serialize spans for export; this column is an upper bound of Rust's tracing cost.",
    "- JS: npm `genkit` " + (j or {}).get("genkit_version", "?") + " on Node " + (j or {}).get("node_version", "?") + ", run by `bench/js/run_all.sh`.",
    "- Rust: `bench/rust` (`peer` binary, release build); the same workloads are criterion benches",
    "  (`cargo bench -p genkit-bench`).",
]

dp = load("dotprompt.jsonl")
if dp:
    lines += [
        "",
        "## Dotprompt: rendering a prompt with a partial and a loop over 100 items",
        "",
        "| | Rust | npm dotprompt | Rust vs JS |",
        "|---|---|---|---|",
    ]
    for r in dp:
        lines.append(
            f"| {r['bench']} | {r['rust_ns_per_op']:,} ns | {r['js_ns_per_op']:,.0f} ns | **{r['js_over_rust']:.1f}x** |"
        )
    lines.append("")
    lines.append("`render` compiles the template from source each call (npm dotprompt recompiles too); `compiled` renders a prompt already compiled.")

srv = load("server.jsonl")
if srv:
    import statistics
    groups = {}
    for r in srv:
        groups.setdefault((r["target"], r["scenario"]), []).append(r)
    med = {
        k: {m: statistics.median(x[m] for x in v) for m in ("requests_per_sec", "p99_ms", "server_cpu_us_per_req", "peak_rss_mb")}
        for k, v in groups.items()
    }
    errors = sum(r["errors"] for r in srv)
    conn = srv[0].get("connections")
    lines += [
        "",
        f"## Flows over HTTP (wrk, {conn} connections, medians of {max(len(v) for v in groups.values())} rounds; {errors} errors)",
        "",
        "| target | scenario | requests/s vs bare axum | p99 vs bare axum | server CPU per request vs bare axum | peak RSS |",
        "|---|---|---|---|---|---|",
    ]
    names = {"bare_axum": "bare axum handler (ceiling)", "genkit_rust": "genkit-server", "genkit_js_express": "Genkit JS (`@genkit-ai/express`)"}
    for (target, scenario), m in sorted(med.items(), key=lambda kv: (kv[0][1], kv[0][0] != "bare_axum", kv[0][0])):
        base = med.get(("bare_axum", scenario))
        if not base:
            continue
        lines.append(
            f"| {names.get(target, target)} | {scenario} | {m['requests_per_sec'] / base['requests_per_sec']:.2f}x "
            f"({m['requests_per_sec']:,.0f}/s) | {m['p99_ms'] / base['p99_ms']:.2f}x ({m['p99_ms']:.2f} ms) | "
            f"{m['server_cpu_us_per_req'] / base['server_cpu_us_per_req']:.2f}x | {m['peak_rss_mb']:.0f} MB |"
        )
    lines.append("")
    lines.append("`echo`: a flow returning its input; `stream`: a flow streaming 10 chunks over SSE.")

lines += agents_section()

open(results, "w").write("\n".join(lines) + "\n")
