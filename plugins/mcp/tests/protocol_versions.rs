//! The server speaks every protocol version the official SDKs still
//! negotiate: a client asking for one of them in `initialize` gets that
//! version back, and a client asking for one the server does not know gets
//! the newest version with an `initialize` handshake (2025-11-25), which the
//! client may accept or refuse (the specification's negotiation).

use genkit_core::Registry;
use genkit_mcp::{McpServer, McpServerOptions};
use serde_json::json;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Sends a raw Streamable HTTP `initialize` asking for `version` and
/// returns the `protocolVersion` of the answer.
async fn negotiated(port: u16, version: &str) -> String {
    let body = json!({
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "raw-client", "version": "1.0.0"},
        },
    })
    .to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    // The answer may come as an SSE event on a stream that stays open: read
    // until the version is in, within a time limit.
    let mut seen = Vec::new();
    let key = "\"protocolVersion\":\"";
    let read = async {
        loop {
            let mut buf = [0u8; 4096];
            let n = stream.read(&mut buf).await.unwrap();
            assert!(
                n > 0,
                "the connection closed: {}",
                String::from_utf8_lossy(&seen)
            );
            seen.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&seen);
            if let Some(start) = text.find(key).map(|i| i + key.len())
                && let Some(len) = text[start..].find('"')
            {
                return text[start..start + len].to_owned();
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(10), read)
        .await
        .expect("an initialize answer within 10 s")
}

#[tokio::test]
async fn initialize_negotiates_every_version_the_sdks_still_speak() {
    let server = McpServer::new(&Registry::new(), McpServerOptions::new("versions"));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let serving = tokio::spawn(server.serve_http(listener, std::future::pending()));
    for version in ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"] {
        assert_eq!(negotiated(port, version).await, version);
    }
    assert_eq!(negotiated(port, "1999-01-01").await, "2025-11-25");
    serving.abort();
}
