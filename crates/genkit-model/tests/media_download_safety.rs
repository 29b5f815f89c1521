//! The HTTP media fetcher refuses what a prompt should not make the server
//! fetch: non-public addresses (before connecting), redirects, and bodies
//! past `max_bytes` (without reading them whole).
#![cfg(feature = "download-media")]

use genkit_core::StatusCode;
use genkit_model::middleware::{HttpMediaFetch, MediaFetcher};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// What a local server saw and sent.
#[derive(Default)]
struct Seen {
    connections: AtomicUsize,
    body_bytes: AtomicU64,
}

/// Serves `head` on 127.0.0.1, followed, when `endless`, by 1 GB in
/// 64 KiB chunks (stopping when the client hangs up).
async fn server(head: String, endless: bool) -> (String, Arc<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let seen = Arc::new(Seen::default());
    let counter = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            counter.connections.fetch_add(1, Ordering::SeqCst);
            let head = head.clone();
            let counter = counter.clone();
            tokio::spawn(async move {
                let mut request = [0u8; 4096];
                let _ = socket.read(&mut request).await;
                if socket.write_all(head.as_bytes()).await.is_err() || !endless {
                    return;
                }
                let mut chunk = format!("{:x}\r\n", 64 * 1024).into_bytes();
                chunk.extend_from_slice(&[0u8; 64 * 1024]);
                chunk.extend_from_slice(b"\r\n");
                let mut sent = 0u64;
                while sent < 1_000_000_000 {
                    if socket.write_all(&chunk).await.is_err() {
                        return;
                    }
                    sent += 64 * 1024;
                    counter.body_bytes.store(sent, Ordering::SeqCst);
                }
            });
        }
    });
    (base, seen)
}

async fn fetch(fetcher: &MediaFetcher, url: &str, max: Option<usize>) -> genkit_core::Error {
    tokio::time::timeout(Duration::from_secs(60), fetcher(url.to_owned(), max))
        .await
        .expect("finished in time")
        .expect_err("refused")
}

fn default_fetcher() -> MediaFetcher {
    HttpMediaFetch::new().fetcher()
}

#[tokio::test]
async fn metadata_and_loopback_addresses_are_refused_without_connecting() {
    let err = fetch(
        &default_fetcher(),
        "http://169.254.169.254/latest/meta-data/",
        None,
    )
    .await;
    assert_eq!(err.status(), StatusCode::InvalidArgument);
    assert!(
        err.message().contains("non-public address 169.254.169.254"),
        "{err}"
    );

    let (base, seen) = server(
        "HTTP/1.1 200 OK\r\ncontent-length: 1\r\n\r\nx".into(),
        false,
    )
    .await;
    let port = base.rsplit(':').next().expect("port");
    for url in [
        format!("{base}/a.png"),
        format!("http://localhost:{port}/a.png"),
        format!("http://[::ffff:127.0.0.1]:{port}/a.png"),
        format!("http://2130706433:{port}/a.png"),
    ] {
        let err = fetch(&default_fetcher(), &url, None).await;
        assert_eq!(err.status(), StatusCode::InvalidArgument, "{url}: {err}");
        assert!(err.message().contains("non-public address"), "{err}");
    }
    assert_eq!(seen.connections.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn redirects_are_not_followed() {
    let (target, target_seen) = server(
        "HTTP/1.1 200 OK\r\ncontent-length: 1\r\n\r\nx".into(),
        false,
    )
    .await;
    let (base, seen) = server(
        format!("HTTP/1.1 302 Found\r\nlocation: {target}/a.png\r\ncontent-length: 0\r\n\r\n"),
        false,
    )
    .await;
    let fetcher = HttpMediaFetch::new().allow_private_addresses().fetcher();
    let err = fetch(&fetcher, &format!("{base}/a.png"), None).await;
    assert_eq!(err.status(), StatusCode::FailedPrecondition, "{err}");
    assert!(
        err.message().contains("redirects are not followed"),
        "{err}"
    );
    assert_eq!(seen.connections.load(Ordering::SeqCst), 1);
    assert_eq!(target_seen.connections.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_gigabyte_body_stops_at_max_bytes() {
    let (base, seen) = server(
        "HTTP/1.1 200 OK\r\ncontent-type: image/png\r\ntransfer-encoding: chunked\r\n\r\n".into(),
        true,
    )
    .await;
    let fetcher = HttpMediaFetch::new().allow_private_addresses().fetcher();
    let max = 1024 * 1024;
    let err = fetch(&fetcher, &format!("{base}/big.png"), Some(max)).await;
    assert_eq!(err.status(), StatusCode::InvalidArgument, "{err}");
    assert!(
        err.message().contains("more than the 1048576 bytes"),
        "{err}"
    );
    // Socket buffers hold a few MiB beyond what was read; 1 GB was offered.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let sent = seen.body_bytes.load(Ordering::SeqCst);
    assert!(sent < 32 * 1024 * 1024, "the server sent {sent} bytes");

    // A declared length over the limit is refused before reading.
    let (base, _) = server(
        "HTTP/1.1 200 OK\r\ncontent-length: 1000000000\r\n\r\n".into(),
        false,
    )
    .await;
    let err = fetch(&fetcher, &format!("{base}/big.png"), Some(max)).await;
    assert!(
        err.message().contains("more than the 1048576 bytes"),
        "{err}"
    );
}

#[tokio::test]
async fn a_silent_server_times_out() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    let fetcher = HttpMediaFetch::new()
        .allow_private_addresses()
        .timeout(Duration::from_millis(200))
        .fetcher();
    let err = fetch(&fetcher, &format!("{base}/slow.png"), None).await;
    assert_eq!(err.status(), StatusCode::DeadlineExceeded, "{err}");
}

#[tokio::test]
async fn non_http_urls_are_refused() {
    let err = fetch(&default_fetcher(), "file:///etc/passwd", None).await;
    assert_eq!(err.status(), StatusCode::InvalidArgument, "{err}");
}
