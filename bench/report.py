"""Folds the measurements of bench/run.sh into bench/RESULTS.md.

The generated part is the top of the file, between the BEGIN/END markers
below: the summary against issue 33's goals, then one section per kind of
work, every figure a median over the run's rounds. Everything after the END
marker (analyses, profiles, one-off comparisons) is kept as it is.
"""
import json
import os
import platform
import subprocess
import sys
import statistics
from datetime import datetime, timezone

BEGIN = "<!-- bench/run.sh: generated from here -->"
END = "<!-- bench/run.sh: generated up to here; what follows is kept -->"

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
        "## Agents (time per turn)",
        "",
        (f"Load average (1, 5, 15 min) before and after the run: {' / '.join(loads)}. " if loads else "")
        + f"Medians of {rounds} rounds, Rust and JS interleaved.",
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

def pick(rows, bench, **match):
    """The median round of `bench` among `rows` matching `match` (by ns per op)."""
    found = [
        r for r in rows
        if r.get("bench") == bench and all(r.get(k) == v for k, v in match.items())
    ]
    if not found:
        return None
    found.sort(key=lambda r: r["ns_per_op"])
    return found[(len(found) - 1) // 2]


def rounds_of(rows, bench, **match):
    return sum(
        1 for r in rows
        if r.get("bench") == bench and all(r.get(k) == v for k, v in match.items())
    )


def cpu():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


rust = load("rust.jsonl")
js = load("js.jsonl")
loads = load("load.jsonl")
calls_rounds = max((rounds_of(rust, b, exporter=False) for b in ("flow_echo",)), default=0)

lines = [
    "# Benchmark results",
    "",
    BEGIN,
    "",
    f"Measured {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')} on {os.cpu_count()} cores ({cpu()})",
    "by one `bench/run.sh` run: Rust and Genkit JS one after the other on the same scripted work, rounds",
    "interleaved, every figure the median of the rounds. Ratios are JS time / Rust time (higher is better",
    "for Rust) unless a row says otherwise; memory is peak RSS of the process. Absolute times vary with the",
    "machine; the ratios are what we track.",
    "",
    "Load average (1, 5, 15 min) as each part started and as the run ended: "
    + "; ".join(f"{r['part']} {r['load_average']}" for r in loads)
    + ".",
    "",
]

# The summary against issue 33's goals, filled in as the parts below are read.
summary = []


def goal_row(work, now, goal, met):
    """`met`: True, False, or a word to show instead (for a row with no pass mark)."""
    mark = met if isinstance(met, str) else ("met" if met else "**not met**")
    summary.append(f"| {work} | {now} | {goal} | {mark} |")


def ns(bench, rows, **m):
    r = pick(rows, bench, **m)
    return r["ns_per_op"] if r else None


calls = [
    "## Calls (time per operation)",
    "",
    f"Medians of {calls_rounds} rounds.",
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
    calls.append(f"| {label} | {ratio(j, r)} | {ratio(j, rx)} | {ratio(jn, r)} | {mem} |")

calls += [
    "",
    "Raw numbers (ns per operation, medians):",
    "",
    "| bench | Rust | Rust + exporter | JS | JS, OTel disabled |",
    "|---|---|---|---|---|",
]
for bench in names:
    cells = []
    for rows, m in ((rust, {"exporter": False}), (rust, {"exporter": True}), (js, {"otel": "default"}), (js, {"otel": "disabled"})):
        r = pick(rows, bench, **m)
        cells.append(f"{r['ns_per_op']:,.0f}" if r else "n/a")
    calls.append(f"| {bench} | " + " | ".join(cells) + " |")
j0 = pick(js, "flow_echo", otel="default") or {}
alloc = (pick(rust, "flow_echo", exporter=False) or {}).get("allocator")
calls += [
    "",
    "Notes:",
    "- \"Tracing as shipped\": both sides as they run in production with no telemetry configured. Genkit JS still",
    "  creates every span with the OpenTelemetry SDK and drops it; Genkit for Rust keeps only trace and span ids until",
    "  a span processor is installed. \"Exporter on\": Rust records every span and serializes it to Genkit's wire",
    "  form inline, on the request path (real exporters do that on a background task), against the same JS default,",
    "  which does not serialize spans for export; this column is an upper bound of Rust's tracing cost.",
    "- JS: npm `genkit` " + j0.get("genkit_version", "?") + " on Node " + j0.get("node_version", "?") + ", run by `bench/js/run_all.sh`.",
    "- Rust: `bench/rust` (`peer` binary, release build"
    + (f", global allocator {alloc}" if alloc else "")
    + "); the same workloads are criterion benches (`cargo bench -p genkit-bench`).",
]

if calls_rounds:
    for bench, work in (("flow_echo", "flow call"), ("generate_plain", "generate, plain"),
                        ("generate_tools", "generate, 3 turns x 2 tools")):
        r, j = ns(bench, rust, exporter=False), ns(bench, js, otel="default")
        if r and j:
            goal_row(work, f"{j / r:.1f}x JS", ">= 50x", j / r >= 50)
    r, j = ns("generate_stream", rust, exporter=False), ns("generate_stream", js, otel="default")
    if r and j:
        goal_row("generate_stream, 1000 chunks", f"{j / r:.1f}x JS ({r / 1000:.0f} ns a chunk)",
                 ">= 50x (<= 40 ns a chunk)", j / r >= 50 and r / 1000 <= 40)
    r, rx, j = ns("generate_tools", rust, exporter=False), ns("generate_tools", rust, exporter=True), ns("generate_tools", js, otel="default")
    if r and rx and j:
        goal_row("exporter on (every span exported), tools", f"{rx / r:.1f}x our untraced time ({j / rx:.1f}x JS)",
                 "<= 1.5x our untraced time", rx / r <= 1.5)

dp = load("dotprompt.jsonl")
dotprompt = []
if dp:
    by = {}
    for r in dp:
        by.setdefault(r["bench"], []).append(r)
    dotprompt += [
        "## Dotprompt: rendering a prompt with a partial and a loop over 100 items",
        "",
        f"Medians of {max(len(v) for v in by.values())} rounds (criterion's mean per round on the Rust side, `bench.mjs` on the JS side).",
        "",
        "| | Rust | npm dotprompt | Rust vs JS |",
        "|---|---|---|---|",
    ]
    for bench, rows in by.items():
        rt = statistics.median(r["rust_ns_per_op"] for r in rows)
        jt = statistics.median(r["js_ns_per_op"] for r in rows)
        dotprompt.append(f"| {bench} | {rt:,.0f} ns | {jt:,.0f} ns | **{jt / rt:.1f}x** |")
        if bench == "dotprompt/compiled":
            goal_row("Dotprompt, compiled template", f"{jt / rt:.1f}x npm dotprompt", ">= 10x", jt / rt >= 10)
    dotprompt += [
        "",
        "`render` compiles the template from source each call (npm dotprompt recompiles too); `compiled` renders a prompt already compiled.",
    ]

srv = load("server.jsonl")
server = []
if srv:
    groups = {}
    for r in srv:
        groups.setdefault((r["target"], r["scenario"]), []).append(r)
    med = {
        k: {m: statistics.median(x[m] for x in v) for m in ("requests_per_sec", "p99_ms", "server_cpu_us_per_req", "peak_rss_mb")}
        for k, v in groups.items()
    }
    errors = sum(r["errors"] for r in srv)
    conn = srv[0].get("connections")
    server += [
        f"## Flows over HTTP (wrk, {conn} connections, medians of {max(len(v) for v in groups.values())} rounds; {errors} errors)",
        "",
        "| target | scenario | requests/s vs bare axum | p99 vs bare axum | server CPU per request vs bare axum | peak RSS |",
        "|---|---|---|---|---|---|",
    ]
    labels = {"bare_axum": "bare axum handler (ceiling)", "genkit_rust": "genkit-server", "genkit_js_express": "Genkit JS (`@genkit-ai/express`)"}
    for (target, scenario), m in sorted(med.items(), key=lambda kv: (kv[0][1], kv[0][0] != "bare_axum", kv[0][0])):
        base = med.get(("bare_axum", scenario))
        if not base:
            continue
        rps = m["requests_per_sec"] / base["requests_per_sec"]
        server.append(
            f"| {labels.get(target, target)} | {scenario} | {rps:.2f}x "
            f"({m['requests_per_sec']:,.0f}/s) | {m['p99_ms'] / base['p99_ms']:.2f}x ({m['p99_ms']:.2f} ms) | "
            f"{m['server_cpu_us_per_req'] / base['server_cpu_us_per_req']:.2f}x | {m['peak_rss_mb']:.0f} MB |"
        )
        if target == "genkit_rust":
            cpu_ratio = m["server_cpu_us_per_req"] / base["server_cpu_us_per_req"]
            goal_row(f"HTTP {scenario} vs bare axum (wrk, every guard on)",
                     f"{rps:.2f}x requests/s, {cpu_ratio:.2f}x server CPU per request", ">= 0.95x", rps >= 0.95)
    server += ["", "`echo`: a flow returning its input; `stream`: a flow streaming 10 chunks over SSE."]

vec = load("vectors.jsonl")
vectors = []
if vec:
    by = {}
    for r in vec:
        if "index_ms" in r:
            by.setdefault((r["side"], r.get("mode", "json file"), r["n"]), []).append(r)
    recall = {}
    for r in vec:
        if "hnsw_recall_at_10" in r:
            recall.setdefault(r["n"], []).append(r["hnsw_recall_at_10"])
    data = next((r["data"] for r in vec if "data" in r), "uniform random vectors")
    vectors += [
        "## Local vector store: Genkit JS's dev-local-vectorstore and the Rust local store (`bench/vectors/run.sh`)",
        "",
        f"Data: {data}. Medians of {max(len(v) for v in by.values())} rounds; index = one `index` call per 1,000",
        "documents into an empty store; query = top 10 of 100 queries. Wall times, and CPU times (less sensitive to",
        "the load).",
        "",
        "| side | mode | documents | index wall | index CPU | query wall | query CPU | recall@10 | peak RSS |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for (side, mode, n), rows in sorted(by.items(), key=lambda kv: (kv[0][2], kv[0][0], kv[0][1])):
        def m(key):
            xs = [r[key] for r in rows if r.get(key) is not None]
            return statistics.median(xs) if xs else None
        # vector_bench puts recall@10 on each HNSW line (older runs: a line of its own).
        rec = m("recall_at_10")
        if rec is None and side == "rust" and mode == "hnsw" and n in recall:
            rec = statistics.median(recall[n])
        cells = [
            f"{m('index_ms') / 1000:,.1f} s" if m("index_ms") is not None else "n/a",
            f"{m('index_cpu_ms') / 1000:,.1f} s" if m("index_cpu_ms") is not None else "n/a",
            f"{m('query_ms'):,.2f} ms" if m("query_ms") is not None else "n/a",
            f"{m('query_cpu_ms'):,.2f} ms" if m("query_cpu_ms") is not None else "n/a",
            f"{rec:.3f}" if rec is not None else ("1 (exact)" if mode in ("exact", "json file") else "n/a"),
            f"{m('peak_rss_mb'):,.0f} MB" if m("peak_rss_mb") is not None else "n/a",
        ]
        stored = m("indexed")
        docs = f"{n:,}" + (f" ({stored:,.0f} stored)" if stored is not None and stored < n else "")
        vectors.append(f"| {'Rust' if side == 'rust' else 'JS'} | {mode} | {docs} | " + " | ".join(cells) + " |")
        if side == "rust" and mode == "hnsw" and n == 100_000:
            idx, q = m("index_ms"), m("query_ms")
            goal_row("local vector store, index 100,000 x 384-dim", f"{idx / 1000:,.1f} s, query {q:.2f} ms"
                     + (f", recall@10 {rec:.3f}" if rec is not None else ""),
                     "<= 30 s, query <= 5 ms at 100k (recall@10 >= 0.99)",
                     idx <= 30_000 and q <= 5 and (rec is None or rec >= 0.99))

agents = agents_section()
if agents:
    rows = load("agents.jsonl")
    def per_turn_median(side, bench):
        xs = [r.get("ns_per_turn", r.get("ns_per_op", 0) / r.get("turns_per_op", 1))
              for r in rows if r.get("side") == side and r.get("bench") == bench and r.get("run") == "time"]
        return statistics.median(xs) if xs else None
    rt, jt = per_turn_median("rust", "agent_turn"), per_turn_median("js", "agent_turn")
    rs, js_s = per_turn_median("rust", "agent_session_50"), per_turn_median("js", "agent_session_50")
    if rt and jt and rs and js_s:
        goal_row("agent turn, fresh session / 50-turn session", f"{jt / rt:.1f}x / {js_s / rs:.1f}x JS", ">= 50x both",
                 jt / rt >= 50 and js_s / rs >= 50)
        goal_row("agents: a fresh-session turn / a continued session's turn", f"Rust {rt / rs:.2f}x, JS {jt / js_s:.2f}x",
                 "what a fresh session pays (no pass mark)", "reported")

lines += [
    "## Against the goals (issue 33)",
    "",
    "| work | now | goal | |",
    "|---|---|---|---|",
] + summary + [
    "| cold `.ci/run` on 2 cores | 24 min 10 s from a fresh clone with empty caches, nothing else running (`1432f1a`) (not run by this script: see \"CI: a cold `.ci/run` from a fresh clone, per step\" below) | <= 30 min | met, on a quiet machine |",
    "",
]
for part in (calls, dotprompt, server, vectors, agents):
    if part:
        lines += [l for l in part] + [""]
lines.append(END)

# Everything after the END marker is kept as it is; a file without the
# markers is not overwritten (its hand-written sections would be lost).
old = open(results).read() if os.path.exists(results) else f"{BEGIN}\n{END}\n"
if BEGIN not in old or END not in old:
    sys.exit(f"report.py: {results} lacks the markers {BEGIN!r} and {END!r}; not overwriting it")
kept = old.split(END, 1)[1].lstrip("\n")
open(results, "w").write("\n".join(lines) + "\n\n" + kept)
