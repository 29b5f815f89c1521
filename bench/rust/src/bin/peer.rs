//! The Rust side of the peer comparison: runs one workload in a loop the way
//! bench/js/lib/harness.mjs does (warm up, then time sequential awaited ops)
//! and prints one JSON line with time per op and peak memory.
//!
//! `peer <bench> [--seconds S | --warmup-iterations W --iterations N | --ops N]
//! [--exporter]` where bench is one of flow_echo, generate_plain,
//! generate_tools, generate_stream, agent_turn, agent_session_50. `--ops N`
//! runs exactly N ops with no warm-up, for instruction counting
//! (`valgrind --tool=callgrind`). `--rate R` paces the ops at R per second
//! (warm-up included) instead of running them back to back, and reports
//! each op's own latency (mean, p50, p99): the cost of tracing on the
//! request path at a load the exporter can keep up with, where a
//! back-to-back loop measures an overloaded exporter that drops spans.

use genkit_bench::*;
use std::time::{Duration, Instant};

/// A field of /proc/self/status in MB (`VmHWM`: peak RSS; `VmRSS`: now).
fn status_mb(field: &str) -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with(field)).and_then(|l| {
                l.split_whitespace()
                    .nth(1)
                    .and_then(|v| v.parse::<f64>().ok())
            })
        })
        .map(|kb| kb / 1024.0)
        .unwrap_or(f64::NAN)
}

/// How many operations to run: time-boxed (warm up 500 ms, then batches
/// until `seconds`), or fixed counts (`--warmup-iterations W --iterations
/// N`, as bench/js/lib/harness.mjs takes them), so both peers can do the
/// same work, e.g. for comparable memory figures.
#[derive(Clone, Copy)]
struct Plan {
    seconds: f64,
    warmup: Option<u64>,
    iterations: Option<u64>,
    /// Ops per second, paced (`--rate`); `None`: back to back.
    rate: Option<f64>,
}

/// Latency percentiles of a paced run (`--rate`), in ns.
#[derive(Clone, Copy)]
struct Paced {
    p50: f64,
    p99: f64,
}

/// Runs the plan's ops at its rate for its seconds after a paced warm-up
/// of 500 ms; returns (warm-up ops, timed ops, mean ns per op, percentiles),
/// each op timed from its own start.
async fn paced<F, Fut>(plan: Plan, rate: f64, mut op: F) -> (u64, u64, f64, Option<Paced>)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future,
{
    let period = Duration::from_secs_f64(1.0 / rate);
    let warmed = paced_run(period, Duration::from_millis(500), &mut op)
        .await
        .len() as u64;
    let mut latencies = paced_run(period, Duration::from_secs_f64(plan.seconds), &mut op).await;
    latencies.sort_unstable();
    let n = latencies.len().max(1);
    let mean = latencies.iter().sum::<u64>() as f64 / n as f64;
    let at = |q: f64| {
        latencies
            .get(((n - 1) as f64 * q) as usize)
            .copied()
            .unwrap_or(0) as f64
    };
    let pct = Paced {
        p50: at(0.5),
        p99: at(0.99),
    };
    (warmed, latencies.len() as u64, mean, Some(pct))
}

/// Starts an op every `period` for `budget`; returns each op's latency.
async fn paced_run<F, Fut>(period: Duration, budget: Duration, op: &mut F) -> Vec<u64>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future,
{
    let start = tokio::time::Instant::now();
    let mut next = start;
    let mut latencies = Vec::new();
    while next.duration_since(start) < budget {
        tokio::time::sleep_until(next).await;
        let t = Instant::now();
        op().await;
        latencies.push(t.elapsed().as_nanos() as u64);
        next += period;
    }
    latencies
}

/// Runs the plan; returns (warm-up ops, timed ops, ns per timed op, and
/// for a paced plan the latency percentiles).
async fn time<F, Fut>(plan: Plan, mut op: F) -> (u64, u64, f64, Option<Paced>)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future,
{
    if let Some(rate) = plan.rate {
        return paced(plan, rate, op).await;
    }
    let warm = Instant::now();
    let mut warmed = 0u64;
    match plan.warmup {
        Some(w) => {
            for _ in 0..w {
                op().await;
            }
            warmed = w;
        }
        None => {
            while warm.elapsed() < Duration::from_millis(500) {
                op().await;
                warmed += 1;
            }
        }
    }
    let start = Instant::now();
    let mut n = 0u64;
    if let Some(fixed) = plan.iterations {
        for _ in 0..fixed {
            op().await;
        }
        n = fixed;
    } else {
        let budget = Duration::from_secs_f64(plan.seconds);
        while start.elapsed() < budget {
            for _ in 0..64 {
                op().await;
            }
            n += 64;
        }
    }
    (
        warmed,
        n,
        start.elapsed().as_nanos() as f64 / n.max(1) as f64,
        None,
    )
}

fn flag<T: std::str::FromStr>(args: &[String], name: &str) -> Option<T> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|s| s.parse().ok())
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(name) = args.first().cloned() else {
        eprintln!(
            "usage: peer <flow_echo|generate_plain|generate_tools|generate_stream|agent_turn|agent_session_50> [--seconds S | --warmup-iterations W --iterations N | --ops N] [--rate R] [--exporter]"
        );
        std::process::exit(2);
    };
    let plan = Plan {
        seconds: flag(&args, "--seconds").unwrap_or(3.0),
        warmup: flag(&args, "--warmup-iterations"),
        iterations: flag(&args, "--iterations"),
        rate: flag::<f64>(&args, "--rate").filter(|r| *r > 0.0 && r.is_finite()),
    };
    // `--ops N`: exactly N ops and no warm-up, for instruction counting
    // (the difference between two op counts is the cost of the extra ops).
    let ops = flag::<u64>(&args, "--ops");
    if ops.is_some() && plan.rate.is_some() {
        // A paced run is timed by `--seconds`; it would ignore `--ops`.
        eprintln!("peer: --ops and --rate cannot be combined (a paced run lasts --seconds)");
        std::process::exit(2);
    }
    let plan = match ops {
        Some(n) => Plan {
            warmup: Some(0),
            iterations: Some(n),
            ..plan
        },
        None => plan,
    };
    // RSS before the first operation (the agent benches re-read it after
    // their setup and check, where bench/js/lib/harness.mjs reads it).
    let mut rss_start = status_mb("VmRSS:");
    let exporter = args.iter().any(|a| a == "--exporter");
    if exporter {
        install_exporter();
    }
    let (warmed, n, ns, pct) = match name.as_str() {
        "flow_echo" => {
            let ai = flow_echo();
            assert_eq!(call_flow_echo(&ai).await, "hello");
            time(plan, || call_flow_echo(&ai)).await
        }
        "generate_plain" => {
            let ai = generate_plain();
            assert_eq!(call_generate_plain(&ai).await, "hello");
            time(plan, || call_generate_plain(&ai)).await
        }
        "generate_tools" => {
            let (ai, a, b) = generate_tools();
            assert_eq!(call_generate_tools(&ai, &a, &b).await, "done");
            time(plan, || call_generate_tools(&ai, &a, &b)).await
        }
        "generate_stream" => {
            let ai = generate_stream();
            assert_eq!(call_generate_stream(&ai).await, STREAM_CHUNKS);
            time(plan, || call_generate_stream(&ai)).await
        }
        "agent_turn" => {
            let (_ai, agent) = agent_assistant();
            assert_eq!(call_agent_turn(&agent).await, "hello");
            rss_start = status_mb("VmRSS:");
            time(plan, || call_agent_turn(&agent)).await
        }
        "agent_session_50" => {
            let (_ai, agent) = agent_assistant();
            assert_eq!(call_agent_session(&agent).await, AGENT_SESSION_TURNS);
            rss_start = status_mb("VmRSS:");
            time(plan, || call_agent_session(&agent)).await
        }
        other => {
            eprintln!("unknown bench {other}");
            std::process::exit(2);
        }
    };
    // The session bench times whole sessions; report per turn, like the JS peer.
    let turns = if name == "agent_session_50" {
        AGENT_SESSION_TURNS as f64
    } else {
        1.0
    };
    // Every operation ran (the check, the warm-up and the timed ones) is
    // what the in-memory session store of the agent benches holds.
    let ops_run = 1 + warmed + n;
    println!(
        "{}",
        serde_json::json!({
            "bench": name,
            "iterations": n,
            "warmup_iterations": warmed,
            "ns_per_op": ns,
            "ns_per_turn": ns / turns,
            "rss_mb_peak": status_mb("VmHWM:"),
            "rss_mb_start": rss_start,
            "turns_run": ops_run as f64 * turns,
            "exporter": exporter,
            "spans_exported_dropped": exporter_counts(),
            "rate_per_s": plan.rate,
            "latency_ns_p50": pct.map(|p| p.p50),
            "latency_ns_p99": pct.map(|p| p.p99),
        })
    );
}
