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
    Running {
        addr,
        stop: Some(tx),
        task,
    }
}

pub fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
}

/// The Genkit conformance folder (see `genkit_conformance::genkit_dir`).
pub fn conformance_dir() -> PathBuf {
    genkit_conformance::genkit_dir()
}

/// Splits a flow SSE body into frames (each ends with a blank line).
pub fn sse_frames(body: &str) -> Vec<String> {
    assert!(
        body.ends_with("\n\n"),
        "body must end with a frame delimiter: {body:?}"
    );
    body.split_terminator("\n\n").map(str::to_owned).collect()
}

/// A free port on 127.0.0.1 (bound then released).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The test runtime binary started in dev mode in a scratch project.
pub struct RuntimeProcess {
    pub child: tokio::process::Child,
    pub project: tempfile::TempDir,
    pub flow_port: Option<u16>,
    pub runtime_file: PathBuf,
    pub info: serde_json::Value,
}

impl RuntimeProcess {
    /// Starts the runtime with `GENKIT_ENV=dev` in a new folder holding a
    /// `package.json` and waits (up to 30 s) for its runtime file.
    pub async fn start(with_flow_server: bool, extra_env: &[(&str, &str)]) -> Self {
        let project = tempfile::tempdir().unwrap();
        std::fs::write(project.path().join("package.json"), "{}").unwrap();
        let work = project.path().join("src");
        std::fs::create_dir_all(&work).unwrap();
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_genkit-test-runtime"));
        cmd.current_dir(&work)
            .env("GENKIT_ENV", "dev")
            .env_remove("GENKIT_TELEMETRY_SERVER")
            .env_remove("GENKIT_REFLECTION_PORT")
            .env_remove("GENKIT_RUNTIME_ID")
            .env_remove("GENKIT_TEST_FLOW_PORT")
            .kill_on_drop(true);
        let flow_port = with_flow_server.then(free_port);
        if let Some(p) = flow_port {
            cmd.env("GENKIT_TEST_FLOW_PORT", p.to_string());
        }
        for (k, v) in extra_env {
            cmd.env(k, v);
        }
        let child = cmd.spawn().unwrap();
        let dir = project.path().join(".genkit/runtimes");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let runtime_file = loop {
            let found = std::fs::read_dir(&dir)
                .ok()
                .and_then(|mut d| d.find_map(|e| e.ok()).map(|e| e.path()));
            if let Some(f) = found {
                break f;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no runtime file in {}",
                dir.display()
            );
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        };
        let info: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&runtime_file).unwrap()).unwrap();
        if let Some(p) = flow_port {
            wait_for_port(p).await;
        }
        Self {
            child,
            project,
            flow_port,
            runtime_file,
            info,
        }
    }

    pub fn reflection_url(&self) -> String {
        self.info["reflectionServerUrl"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    pub fn flow_url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.flow_port.unwrap())
    }

    /// Sends a signal (`INT`, `TERM`) with `kill`.
    pub fn signal(&self, sig: &str) {
        let pid = self.child.id().unwrap();
        let st = std::process::Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(pid.to_string())
            .status()
            .unwrap();
        assert!(st.success());
    }

    /// Waits (up to 10 s) for the process to exit; its exit code.
    pub async fn wait(&mut self) -> Option<i32> {
        tokio::time::timeout(std::time::Duration::from_secs(10), self.child.wait())
            .await
            .expect("the runtime did not exit")
            .unwrap()
            .code()
    }
}

/// Waits (up to 10 s) until something listens on 127.0.0.1:`port`.
pub async fn wait_for_port(port: u16) {
    for _ in 0..200 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("nothing listens on port {port}");
}

/// A stand-in for the Genkit telemetry server: records every
/// `POST /api/traces` body and merges spans per trace like the real store.
#[derive(Clone, Default)]
pub struct FakeTelemetryServer {
    pub posts: std::sync::Arc<parking_lot::Mutex<Vec<serde_json::Value>>>,
}

impl FakeTelemetryServer {
    pub async fn start() -> (Self, String) {
        Self::start_with_delay(std::time::Duration::ZERO).await
    }

    /// A server that takes `delay` to answer each post (so a queue of spans
    /// builds up in the exporter).
    pub async fn start_with_delay(delay: std::time::Duration) -> (Self, String) {
        let me = Self::default();
        let posts = me.posts.clone();
        let app = axum::Router::new().route(
            "/api/traces",
            axum::routing::post(move |body: axum::body::Bytes| {
                let posts = posts.clone();
                async move {
                    tokio::time::sleep(delay).await;
                    let v: serde_json::Value =
                        serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
                    posts.lock().push(v);
                    "OK"
                }
            }),
        );
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        (me, url)
    }

    /// Every span record received for `trace_id`, in arrival order.
    pub fn records(&self, trace_id: &str) -> Vec<serde_json::Value> {
        self.posts
            .lock()
            .iter()
            .filter(|p| p["traceId"] == trace_id)
            .flat_map(|p| {
                p["spans"]
                    .as_object()
                    .cloned()
                    .unwrap_or_default()
                    .into_values()
            })
            .collect()
    }

    /// The trace as the real store would hold it: the last record of each span
    /// wins, except that a finished span is never replaced by a started one.
    pub fn merged(&self, trace_id: &str) -> std::collections::BTreeMap<String, serde_json::Value> {
        let mut out: std::collections::BTreeMap<String, serde_json::Value> = Default::default();
        for s in self.records(trace_id) {
            let id = s["spanId"].as_str().unwrap().to_owned();
            let done = |v: &serde_json::Value| v["endTime"].as_f64().unwrap_or(0.0) > 0.0;
            if out.get(&id).is_some_and(done) && !done(&s) {
                continue;
            }
            out.insert(id, s);
        }
        out
    }
}
