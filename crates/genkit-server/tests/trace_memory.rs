//! Trace export memory is bounded: 2,000 runs of a flow with a 1 MiB input
//! (echoed as its output), exported to a telemetry server that accepts
//! connections and never answers, keep the process's peak RSS under a fixed
//! ceiling, and the spans that did not fit are counted as dropped.
//!
//! The runs happen in a child process (this test binary again, with
//! `TRACE_MEMORY_SERVER` set) so the peak RSS read from `/proc/self/status`
//! is theirs alone; the parent plays the unreachable telemetry server.

use genkit::prelude::*;
use std::io::Read;
use std::net::TcpListener;

const MIB: usize = 1024 * 1024;
const REQUESTS: usize = 2_000;
// 1 MiB is already eight times the span's per-value cap (128,000 bytes), so
// every span keeps what a larger input's would; a larger input only made the
// run's own copies slower (10 MiB took 18 s of a CI run's CPU).
const INPUT_BYTES: usize = MIB;

/// The ceiling on the child's peak RSS. What a run needs at once is about
/// four copies of the input (the request, its JSON value, the typed input,
/// the output); the export queue adds at most its byte bound (64 MiB) and
/// the batch being sent. Without the queue's bound, 2,000 queued spans of
/// 256 KB (input and output, each cut at the cap) would hold 500 MB; without
/// the cap as well, 4 GB.
const RSS_CEILING: usize = 256 * MIB;

fn peak_rss() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok())
        .expect("VmHWM present")
        * 1024
}

/// The measured part: installs the Genkit telemetry exporter as an app does
/// (`GENKIT_TELEMETRY_SERVER`), runs the flow, prints the figures.
fn child(server: &str) {
    // `server` is also in GENKIT_TELEMETRY_SERVER, where init_from_env reads it.
    eprintln!("exporting to {server}");
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(tracing_subscriber::filter::LevelFilter::WARN)
        .try_init();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let telemetry = genkit_server::telemetry::init_from_env().expect("exporter installs");
        let ai = Genkit::builder()
            .no_prompt_dir()
            .build()
            .expect("genkit builds");
        let echo = ai.define_flow("echo", |s: String, _ctx| async move { Ok(s) });
        let input = "x".repeat(INPUT_BYTES);
        for _ in 0..REQUESTS {
            let out = echo.run(input.clone()).await.expect("flow runs");
            assert_eq!(out.len(), INPUT_BYTES);
        }
        let stats = telemetry
            .telemetry_server_stats()
            .expect("telemetry server exporter installed");
        println!(
            "RESULT {} {} {} {} {}",
            peak_rss(),
            stats.queued,
            stats.dropped,
            stats.failed,
            stats.pending_bytes
        );
    });
}

/// Accepts connections and never answers (nor closes them) until the child
/// is done: exports hang until their timeout.
fn unreachable_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in listener.incoming().flatten() {
            let mut c = conn;
            // Read a little so the client's writes do not block on a full
            // socket buffer forever; never write back.
            let _ = c.set_read_timeout(Some(std::time::Duration::from_millis(1)));
            let mut buf = [0u8; 4096];
            let _ = c.read(&mut buf);
            held.push(c);
        }
    });
    format!("http://{addr}")
}

// Each run copies its 1 MiB a few times but encodes only what the span
// keeps (the cap, 128,000 bytes per value: long strings are cut before they
// are scanned), so the 2,000 runs take seconds even in a debug build.
#[test]
fn unreachable_telemetry_server_keeps_memory_bounded_and_counts_drops() {
    if let Ok(server) = std::env::var("TRACE_MEMORY_SERVER") {
        child(&server);
        return;
    }
    let url = unreachable_server();
    let exe = std::env::current_exe().expect("test binary");
    let out = std::process::Command::new(exe)
        .args([
            "unreachable_telemetry_server_keeps_memory_bounded_and_counts_drops",
            "--exact",
            "--nocapture",
        ])
        .env("TRACE_MEMORY_SERVER", &url)
        .env("GENKIT_TELEMETRY_SERVER", &url)
        .env_remove("GENKIT_ENV")
        .output()
        .expect("child runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "child failed: {stdout}{stderr}");
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("RESULT "))
        .unwrap_or_else(|| panic!("no result line: {stdout}{stderr}"));
    let n: Vec<usize> = line
        .split(' ')
        .map(|v| v.parse().expect("number"))
        .collect();
    let (rss, queued, dropped, failed, pending) = (n[0], n[1], n[2], n[3], n[4]);
    eprintln!(
        "{REQUESTS} runs of {} MiB: peak RSS {} MiB, spans queued {queued}, dropped {dropped}, \
         failed {failed}, pending {} KiB",
        INPUT_BYTES / MIB,
        rss / MIB,
        pending / 1024
    );
    assert_eq!(
        queued + dropped,
        REQUESTS,
        "every span is queued or dropped"
    );
    assert!(
        dropped > 0,
        "a receiver that never answers must cause drops"
    );
    assert!(
        rss < RSS_CEILING,
        "peak RSS {} MiB over the {} MiB ceiling",
        rss / MIB,
        RSS_CEILING / MIB
    );
    assert!(
        stderr.contains("trace export queue is full"),
        "drops are reported in the log: {stderr}"
    );
}
