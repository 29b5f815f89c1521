//! Helpers shared by the integration tests (each test file uses some).
#![allow(dead_code)]

use genkit_server::FlowServer;
use std::net::SocketAddr;
use std::path::PathBuf;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A flow server running on 127.0.0.1 (random port) until `stop()`.
pub struct Running {
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    pub task: JoinHandle<Result<(), genkit_server::ServerError>>,
}

impl Running {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Triggers graceful shutdown (the task ends once in-flight requests finish).
    pub fn stop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }
}

pub async fn start(server: FlowServer) -> Running {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = oneshot::channel::<()>();
    let task = tokio::spawn(server.serve_with_shutdown(listener, async move {
        let _ = rx.await;
    }));
    Running { addr, stop: Some(tx), task }
}

pub fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
}

/// The Genkit conformance folder (`GENKIT_CONFORMANCE_DIR`, default
/// `../shared/conformance/genkit` beside the repo).
pub fn conformance_dir() -> PathBuf {
    std::env::var_os("GENKIT_CONFORMANCE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/conformance/genkit"))
}

/// Splits a flow SSE body into frames (each ends with a blank line).
pub fn sse_frames(body: &str) -> Vec<String> {
    assert!(body.ends_with("\n\n"), "body must end with a frame delimiter: {body:?}");
    body.split_terminator("\n\n").map(str::to_owned).collect()
}
