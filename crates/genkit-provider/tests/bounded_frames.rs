//! Stream and body caps against a server sending 100 MB without a line end.
//!
//! One test in this binary on purpose: it reads the process's peak resident
//! memory (`VmHWM` in `/proc/self/status`) and no other test may run beside
//! it. The server writes from one static 64 KiB buffer, so what grows is the
//! client's buffering.

use genkit_provider::http::{Deadline, HttpClient};
use genkit_provider::{DEFAULT_MAX_FRAME, FrameReader, NdjsonDecoder};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const HUNDRED_MB: u64 = 100 * 1000 * 1000;

/// A server answering every request with `head` and then up to 100 MB of
/// `x` (chunked), counting the body bytes it managed to send.
async fn endless_server(head: &'static str, chunked: bool) -> (String, Arc<AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let sent = Arc::new(AtomicU64::new(0));
    let counter = sent.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let counter = counter.clone();
            tokio::spawn(async move {
                let mut request = [0u8; 4096];
                let _ = socket.read(&mut request).await;
                let te = if chunked {
                    "Transfer-Encoding: chunked\r\n"
                } else {
                    "Content-Length: 100000000\r\n"
                };
                let header = format!("HTTP/1.1 200 OK\r\n{te}Connection: close\r\n\r\n");
                if socket.write_all(header.as_bytes()).await.is_err() {
                    return;
                }
                let piece = vec![b'x'; 64 * 1024];
                let mut body_sent = 0u64;
                if chunked && !head.is_empty() {
                    let size = format!("{:x}\r\n{head}\r\n", head.len());
                    if socket.write_all(size.as_bytes()).await.is_err() {
                        return;
                    }
                }
                while body_sent < HUNDRED_MB {
                    let result = if chunked {
                        let mut framed = format!("{:x}\r\n", piece.len()).into_bytes();
                        framed.extend_from_slice(&piece);
                        framed.extend_from_slice(b"\r\n");
                        socket.write_all(&framed).await
                    } else {
                        socket.write_all(&piece).await
                    };
                    if result.is_err() {
                        return;
                    }
                    body_sent += piece.len() as u64;
                    counter.store(body_sent, Ordering::SeqCst);
                }
            });
        }
    });
    (url, sent)
}

fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("field present")
}

async fn refused(url: &str, sse: bool) -> String {
    let client = HttpClient::new(
        reqwest::Client::new(),
        url,
        Deadline::PerWait(Duration::from_secs(30)),
    );
    let response = client.send(client.get("stream")).await.expect("headers");
    let mut frames = if sse {
        FrameReader::sse(response, client.deadline())
    } else {
        FrameReader::ndjson(response, client.deadline(), DEFAULT_MAX_FRAME)
    };
    let err = frames
        .next()
        .await
        .expect("an answer")
        .expect_err("refused");
    assert!(frames.next().await.is_none(), "nothing after the error");
    err.to_string()
}

/// Resets the peak (`VmHWM`) to the current RSS, when the kernel allows.
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// How far the peak RSS rose above the RSS at `reset_peak`.
async fn measure<T>(what: &str, run: impl std::future::Future<Output = T>) -> (T, u64) {
    reset_peak();
    let baseline = status_kib("VmRSS:") * 1024;
    let out = run.await;
    let growth = (status_kib("VmHWM:") * 1024).saturating_sub(baseline);
    eprintln!("{what}: peak RSS {growth} bytes above the baseline of {baseline}");
    (out, growth)
}

#[test]
fn hundred_megabyte_lines_and_bodies_are_refused_within_the_cap() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let cap = DEFAULT_MAX_FRAME as u64;
        // The default body cap refuses a declared 100 MB before reading it
        // (and this warms the client and runtime up before measuring).
        let (url, _) = endless_server("", false).await;
        let client = HttpClient::new(reqwest::Client::new(), &url, Deadline::None);
        let response = client.send(client.get("warm")).await.expect("headers");
        let err = client.read_bytes(response).await.expect_err("over the cap");
        assert!(
            err.to_string().contains("longer than 67108864 bytes"),
            "{err}"
        );

        let mut report = Vec::new();
        for (what, head, sse) in [("sse", "data: ", true), ("ndjson", "{\"a\":\"", false)] {
            let (url, sent) = endless_server(head, true).await;
            let (err, growth) = measure(what, refused(&url, sse)).await;
            assert!(err.contains(&format!("longer than {cap} bytes")), "{err}");
            report.push((what, sent.load(Ordering::SeqCst), growth));
        }

        // A chunked (no Content-Length) non-streamed body, capped at the
        // same size.
        let (url, sent) = endless_server("", true).await;
        let client = HttpClient::new(reqwest::Client::new(), &url, Deadline::None)
            .with_max_body(DEFAULT_MAX_FRAME);
        let read = async {
            let response = client.send(client.get("body")).await.expect("headers");
            client.read_bytes(response).await
        };
        let (result, growth) = measure("body", read).await;
        let err = result.expect_err("over the cap");
        assert!(
            err.to_string()
                .contains(&format!("longer than {cap} bytes")),
            "{err}"
        );
        report.push(("body", sent.load(Ordering::SeqCst), growth));

        for (what, sent, growth) in report {
            eprintln!("{what}: the server sent {sent} bytes before the refusal");
            // Reading stops soon after the cap (socket buffers hold a few
            // MiB more): far from the 100 MB offered.
            assert!(sent < cap + 16 * 1024 * 1024, "{what}: read {sent} bytes");
            assert!(growth < 2 * cap, "{what}: peak RSS grew {growth} bytes");
        }
    });

    // A 16 MiB line in 1 KiB pieces: each byte is scanned once, which takes
    // milliseconds in release builds and well under a second in debug ones;
    // the limit is 5 s (5x) for a loaded CI box.
    let start = Instant::now();
    let mut decoder = NdjsonDecoder::new(32 * 1024 * 1024);
    let piece = [b'7'; 1024];
    for _ in 0..16 * 1024 {
        decoder.push(&piece);
        assert!(decoder.next_frame().is_none());
    }
    decoder.push(b"\n");
    let frame = decoder.next_frame().expect("a line").expect("fits");
    assert_eq!(frame.data.len(), 16 * 1024 * 1024);
    let elapsed = start.elapsed();
    eprintln!("16 MiB line in 1 KiB pieces: {elapsed:?}");
    assert!(elapsed < Duration::from_secs(5), "took {elapsed:?}");
}
