//! Servers that break the protocol (`tests-support/mcp/misbehaving-server.mjs`):
//! a broken handshake, malformed JSON-RPC, a flood of garbage with a huge
//! line, silence. Each ends in an error naming the server within its time
//! limit, without a panic or unbounded memory, while a healthy server (the
//! TypeScript SDK one) beside it keeps answering.

mod support;

use genkit_core::{RunOptions, StatusCode};
use genkit_mcp::{McpHost, McpServerConfig};
use serde_json::json;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};
use support::{HttpPeer, peer_dir, stdio_server};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

const TIMEOUT: Duration = Duration::from_secs(20);
/// The time limit of the misbehaving servers.
const SHORT: Duration = Duration::from_secs(3);
/// How long an error may take past that limit on a loaded machine.
const SLACK: Duration = Duration::from_secs(7);

fn script() -> PathBuf {
    peer_dir().join("misbehaving-server.mjs")
}

fn misbehaving(mode: &str) -> McpServerConfig {
    McpServerConfig::stdio("node", [script().display().to_string(), mode.to_owned()]).timeout(SHORT)
}

/// The misbehaving server over Streamable HTTP (killed on drop).
async fn misbehaving_http(mode: &str) -> HttpPeer {
    let mut child = Command::new("node")
        .arg(script())
        .arg(format!("http-{mode}"))
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("starting node");
    let stdout = child.stdout.take().expect("piped stdout");
    let mut line = String::new();
    tokio::time::timeout(
        Duration::from_secs(20),
        BufReader::new(stdout).read_line(&mut line),
    )
    .await
    .expect("the misbehaving HTTP server printed no URL in time")
    .expect("reading its URL");
    HttpPeer::new(line.trim().to_owned(), child)
}

/// The healthy server still lists and calls its tools.
async fn healthy_answers(host: &McpHost) {
    let add = host.tool("healthy", "add").await.unwrap().unwrap();
    let out = add
        .run_json(json!({"a": 20, "b": 22}), RunOptions::default())
        .await
        .unwrap()
        .output;
    assert_eq!(out["output"], json!("42"));
}

fn assert_names(err: &genkit_core::Error, server: &str) {
    assert!(err.to_string().contains(&format!("`{server}`")), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_handshake_fails_the_connect_naming_the_server() {
    let http = misbehaving_http("bad-handshake").await;
    let host = McpHost::new("host");
    for (server, config) in [
        ("stdio-bad", misbehaving("bad-handshake")),
        ("http-bad", McpServerConfig::http(&http.url).timeout(SHORT)),
    ] {
        let started = Instant::now();
        let err = host.connect(server, config).await.unwrap_err();
        assert_names(&err, server);
        assert!(started.elapsed() < SHORT + SLACK, "{:?}", started.elapsed());
    }
    assert!(host.server_names().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_or_missing_replies_end_in_errors_naming_the_server() {
    let http_malformed = misbehaving_http("malformed").await;
    let http_silent = misbehaving_http("silent").await;
    let host = McpHost::with_servers(
        "host",
        [
            ("healthy", stdio_server(TIMEOUT)),
            ("malformed", misbehaving("malformed")),
            ("silent", misbehaving("silent")),
            (
                "http-malformed",
                McpServerConfig::http(&http_malformed.url).timeout(SHORT),
            ),
            (
                "http-silent",
                McpServerConfig::http(&http_silent.url).timeout(SHORT),
            ),
        ],
    )
    .await
    .unwrap();
    for server in ["malformed", "silent", "http-malformed", "http-silent"] {
        let started = Instant::now();
        let err = host.server_tools(server).await.unwrap_err();
        assert_names(&err, server);
        assert!(
            started.elapsed() < SHORT + SLACK,
            "{server}: {:?}",
            started.elapsed()
        );
        let started = Instant::now();
        let err = host
            .read_resource(server, "test://readme")
            .await
            .unwrap_err();
        assert_names(&err, server);
        assert!(started.elapsed() < SHORT + SLACK, "{server}: {err}");
        if server.ends_with("silent") {
            assert_eq!(err.status(), StatusCode::DeadlineExceeded, "{err}");
        }
        if server == "malformed" {
            // The reply of the right id but the wrong shape is the one rmcp
            // reports; the lines that are not JSON-RPC are dropped.
            assert!(err.to_string().contains("malformed"), "{err}");
        }
        healthy_answers(&host).await;
    }
    // Listing every server's tools skips the broken ones.
    let all = host.tools().await;
    assert_eq!(all.len(), 7);
    assert!(all.iter().all(|t| t.name().starts_with("healthy/")));
    host.close().await;
}

/// The resident memory of this process, in bytes.
fn resident_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("reading /proc/self/status");
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc/self/status");
    kb * 1024
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flooding_server_is_cut_off_in_time_with_bounded_memory() {
    let host = McpHost::with_servers(
        "host",
        [
            ("healthy", stdio_server(TIMEOUT)),
            ("flood", misbehaving("flood")),
        ],
    )
    .await
    .unwrap();
    let before = resident_bytes();
    // The request sets the flood off: a 256 MiB line, then 1 MiB garbage
    // lines without end. The host drops what it cannot parse, and a line
    // past rmcp's 16 MiB limit without buffering it.
    let started = Instant::now();
    let err = host.server_tools("flood").await.unwrap_err();
    assert_eq!(err.status(), StatusCode::DeadlineExceeded, "{err}");
    assert_names(&err, "flood");
    assert!(started.elapsed() < SHORT + SLACK, "{:?}", started.elapsed());
    // The flood goes on while the healthy server answers.
    healthy_answers(&host).await;
    let err = host.read_resource("flood", "test://x").await.unwrap_err();
    assert_names(&err, "flood");
    let grown = resident_bytes().saturating_sub(before);
    assert!(
        grown < 128 * 1024 * 1024,
        "the host grew by {} MiB reading the flood",
        grown / (1024 * 1024)
    );
    host.close().await;
}
