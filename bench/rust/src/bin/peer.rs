//! The Rust side of the peer comparison: runs one workload in a loop the way
//! bench/js/lib/harness.mjs does (warm up, then time sequential awaited ops)
//! and prints one JSON line with time per op and peak memory.
//!
//! `peer <bench> [--seconds S] [--exporter]` where bench is one of
//! flow_echo, generate_plain, generate_tools, generate_stream, agent_turn,
//! agent_session_50.

use genkit_bench::*;
use std::time::{Duration, Instant};

fn peak_rss_mb() -> f64 {
    // VmHWM: the peak resident set size, in kB.
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| {
                l.split_whitespace()
                    .nth(1)
                    .and_then(|v| v.parse::<f64>().ok())
            })
        })
        .map(|kb| kb / 1024.0)
        .unwrap_or(f64::NAN)
}

async fn time<F, Fut>(seconds: f64, mut op: F) -> (u64, f64)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future,
{
    let warm = Instant::now();
    while warm.elapsed() < Duration::from_millis(500) {
        op().await;
    }
    let budget = Duration::from_secs_f64(seconds);
    let start = Instant::now();
    let mut n = 0u64;
    while start.elapsed() < budget {
        for _ in 0..64 {
            op().await;
        }
        n += 64;
    }
    (n, start.elapsed().as_nanos() as f64 / n as f64)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(name) = args.first().cloned() else {
        eprintln!(
            "usage: peer <flow_echo|generate_plain|generate_tools|generate_stream|agent_turn|agent_session_50> [--seconds S] [--exporter]"
        );
        std::process::exit(2);
    };
    let seconds = args
        .iter()
        .position(|a| a == "--seconds")
        .and_then(|i| args.get(i + 1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(3.0);
    let exporter = args.iter().any(|a| a == "--exporter");
    if exporter {
        install_exporter();
    }
    let (n, ns) = match name.as_str() {
        "flow_echo" => {
            let ai = flow_echo();
            assert_eq!(call_flow_echo(&ai).await, "hello");
            time(seconds, || call_flow_echo(&ai)).await
        }
        "generate_plain" => {
            let ai = generate_plain();
            assert_eq!(call_generate_plain(&ai).await, "hello");
            time(seconds, || call_generate_plain(&ai)).await
        }
        "generate_tools" => {
            let (ai, a, b) = generate_tools();
            assert_eq!(call_generate_tools(&ai, &a, &b).await, "done");
            time(seconds, || call_generate_tools(&ai, &a, &b)).await
        }
        "generate_stream" => {
            let ai = generate_stream();
            assert_eq!(call_generate_stream(&ai).await, STREAM_CHUNKS);
            time(seconds, || call_generate_stream(&ai)).await
        }
        "agent_turn" => {
            let (_ai, agent) = agent_assistant();
            assert_eq!(call_agent_turn(&agent).await, "hello");
            time(seconds, || call_agent_turn(&agent)).await
        }
        "agent_session_50" => {
            let (_ai, agent) = agent_assistant();
            assert_eq!(call_agent_session(&agent).await, AGENT_SESSION_TURNS);
            time(seconds, || call_agent_session(&agent)).await
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
    println!(
        "{}",
        serde_json::json!({
            "bench": name,
            "iterations": n,
            "ns_per_op": ns,
            "ns_per_turn": ns / turns,
            "rss_mb_peak": peak_rss_mb(),
            "exporter": exporter,
            "spans_exported_dropped": exporter_counts(),
        })
    );
}
