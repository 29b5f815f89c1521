//! Streaming load client for `bench/server/stream_load.sh`: `CLIENTS`
//! concurrent clients, each streaming `POST /ticks` (SSE) from a flow server
//! over and over for `DURATION` seconds, every stream checked to the end
//! (all chunks, then the result frame). Samples the server's RSS once a
//! second when `SERVER_PID` is set. Prints one JSON line.
//!
//! Environment: `URL` (default `http://127.0.0.1:3490/ticks`), `CLIENTS`
//! (1000), `DURATION` (60), `CHUNKS` (chunks per stream, 20), `SERVER_PID`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

#[derive(Default)]
struct Counts {
    streams: AtomicU64,
    chunks: AtomicU64,
    send_errors: AtomicU64,
    status_errors: AtomicU64,
    body_errors: AtomicU64,
    incomplete: AtomicU64,
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

/// The resident set of a process, in KiB (`VmRSS` or `VmHWM`).
fn proc_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
}

/// One stream: every chunk, then the result frame, and nothing else.
async fn one_stream(
    client: &reqwest::Client,
    url: &str,
    chunks: u64,
    counts: &Counts,
) -> Result<(), ()> {
    let sent = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "text/event-stream")
        .body(format!("{{\"data\":{chunks}}}"))
        .send()
        .await;
    let mut response = match sent {
        Ok(r) => r,
        Err(e) => {
            counts.send_errors.fetch_add(1, Ordering::Relaxed);
            eprintln!("send: {e}");
            return Err(());
        }
    };
    if response.status() != 200 {
        counts.status_errors.fetch_add(1, Ordering::Relaxed);
        eprintln!("status {}", response.status());
        return Err(());
    }
    let mut body = Vec::with_capacity(1024);
    loop {
        match response.chunk().await {
            Ok(Some(bytes)) => body.extend_from_slice(&bytes),
            Ok(None) => break,
            Err(e) => {
                counts.body_errors.fetch_add(1, Ordering::Relaxed);
                eprintln!("body: {e}");
                return Err(());
            }
        }
    }
    let text = String::from_utf8_lossy(&body);
    let messages = text.matches("data: {\"message\":").count() as u64;
    let done = text.ends_with(&format!("data: {{\"result\":{chunks}}}\n\n"));
    if messages != chunks || !done {
        counts.incomplete.fetch_add(1, Ordering::Relaxed);
        eprintln!("incomplete stream: {text:?}");
        return Err(());
    }
    counts.chunks.fetch_add(messages, Ordering::Relaxed);
    counts.streams.fetch_add(1, Ordering::Relaxed);
    Ok(())
}

#[tokio::main]
async fn main() {
    let url: String = env_or("URL", "http://127.0.0.1:3490/ticks".to_owned());
    let clients: usize = env_or("CLIENTS", 1000);
    let duration = Duration::from_secs(env_or("DURATION", 60));
    let chunks: u64 = env_or("CHUNKS", 20);
    let server_pid: Option<u32> = std::env::var("SERVER_PID")
        .ok()
        .and_then(|p| p.parse().ok());

    let client = match reqwest::Client::builder()
        .no_proxy()
        .pool_max_idle_per_host(clients)
        .build()
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("no HTTP client: {e}");
            std::process::exit(2);
        }
    };
    let counts = Arc::new(Counts::default());
    let started = Instant::now();
    let end = started + duration;

    let sampler = tokio::spawn(async move {
        let mut samples = Vec::new();
        let Some(pid) = server_pid else {
            return samples;
        };
        while Instant::now() < end {
            if let Some(kib) = proc_kib(pid, "VmRSS:") {
                samples.push(kib);
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        samples
    });

    let tasks: Vec<_> = (0..clients)
        .map(|_| {
            let client = client.clone();
            let url = url.clone();
            let counts = counts.clone();
            tokio::spawn(async move {
                while Instant::now() < end {
                    if one_stream(&client, &url, chunks, &counts).await.is_err() {
                        // Do not spin on a refusing server.
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                }
            })
        })
        .collect();
    for t in tasks {
        let _ = t.await;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let samples = sampler.await.unwrap_or_default();
    let hwm = server_pid.and_then(|pid| proc_kib(pid, "VmHWM:"));
    let c = &*counts;
    let errors = c.send_errors.load(Ordering::Relaxed)
        + c.status_errors.load(Ordering::Relaxed)
        + c.body_errors.load(Ordering::Relaxed)
        + c.incomplete.load(Ordering::Relaxed);
    // RSS after the ramp-up (10 s in), and at the end.
    let after_ramp = samples.get(10).or(samples.first()).copied();
    println!(
        "{{\"clients\":{clients},\"seconds\":{elapsed:.1},\"streams\":{},\"streams_per_s\":{:.0},\"chunks\":{},\"errors\":{errors},\"send_errors\":{},\"status_errors\":{},\"body_errors\":{},\"incomplete\":{},\"rss_kib_after_10s\":{},\"rss_kib_end\":{},\"rss_kib_max_sampled\":{},\"vm_hwm_kib\":{}}}",
        c.streams.load(Ordering::Relaxed),
        c.streams.load(Ordering::Relaxed) as f64 / elapsed,
        c.chunks.load(Ordering::Relaxed),
        c.send_errors.load(Ordering::Relaxed),
        c.status_errors.load(Ordering::Relaxed),
        c.body_errors.load(Ordering::Relaxed),
        c.incomplete.load(Ordering::Relaxed),
        after_ramp.map_or("null".into(), |v| v.to_string()),
        samples.last().map_or("null".into(), |v| v.to_string()),
        samples
            .iter()
            .max()
            .map_or("null".into(), |v| v.to_string()),
        hwm.map_or("null".into(), |v| v.to_string()),
    );
    if errors > 0 {
        std::process::exit(1);
    }
}
