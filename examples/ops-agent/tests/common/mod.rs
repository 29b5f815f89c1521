//! What the app's integration tests share: the binary run with a clean
//! environment (no provider key, address or setting of the developer's
//! leaking in), a child process killed on drop, `--serve` started with its
//! bearer token, plain HTTP requests to it, and the npm packages of
//! Genkit's official tools.
//!
//! Each test file compiles this module on its own and uses part of it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Lines, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{ChildStdout, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The app under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_ops-agent");

/// Every variable that picks or configures the app's model, store, data
/// directory, port or dev mode: removed so a test sets only its own.
pub const APP_ENV: [&str; 25] = [
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GOOGLE_GENAI_API_KEY",
    "GOOGLE_GEMINI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "OLLAMA_HOST",
    "OPS_AGENT_MODEL",
    "OPS_AGENT_GGUF",
    "OPS_AGENT_DATABASE",
    "OPS_AGENT_DATA_DIR",
    "GENKIT_ENV",
    "GENKIT_RUNTIME_ID",
    "GENKIT_TELEMETRY_SERVER",
    "PORT",
    "TMUX",
    "GENKIT_REFLECTION_PORT",
    "OPS_AGENT_TOKEN",
    "OPS_AGENT_HOST",
    "OPS_AGENT_REPLICA_ID",
    "OPS_AGENT_LEASE_MS",
    "OPS_AGENT_DRAIN_DELAY_MS",
    "OPS_AGENT_RESTART_SETTLE_MS",
];

/// Removes [`APP_ENV`] from what `cmd` passes on.
pub fn clean_env(cmd: &mut Command) -> &mut Command {
    for var in APP_ENV {
        cmd.env_remove(var);
    }
    cmd
}

/// `ops-agent --data-dir <data>` with a clean environment.
pub fn ops_agent(data: &Path) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.arg("--data-dir").arg(data);
    clean_env(&mut cmd);
    cmd
}

/// Runs `cmd` off the async runtime (so a scripted server in this process
/// keeps answering), failing the test after `limit`.
pub async fn output_within(mut cmd: Command, limit: Duration) -> Output {
    tokio::time::timeout(limit, tokio::task::spawn_blocking(move || cmd.output()))
        .await
        .expect("the command finished in time")
        .expect("joined")
        .expect("the command ran")
}

/// A child process, killed and reaped on drop (failure or not).
pub struct Child(pub std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The folder with the npm packages of Genkit's tools (`genkit-cli`, the
/// `genkit` JS client), installed with `npm ci` if missing; `None` (the
/// test skips) without node and npm, which CI must have.
pub fn npm_tools() -> Option<PathBuf> {
    let has = |cmd: &str| {
        Command::new(cmd)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !has("node") || !has("npm") {
        let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
        assert!(!ci, "node and npm are needed under CI");
        return None;
    }
    let js = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../crates/genkit-server/tests/js");
    if !js.join("node_modules/.package-lock.json").exists() {
        let st = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
            .current_dir(&js)
            .status()
            .expect("running npm ci");
        assert!(st.success(), "npm ci failed in {}", js.display());
    }
    Some(js)
}

/// A free 127.0.0.1 port.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// `ops-agent --serve` on a free port, once it has announced itself.
pub struct Served {
    pub child: Child,
    pub port: u16,
    /// The bearer token requests need.
    pub token: String,
    /// The announcement: the serving line and the Genkit JS line.
    pub lines: [String; 2],
    /// Kept open: the app may still write to stdout.
    _stdout: Lines<BufReader<ChildStdout>>,
}

/// Starts `ops-agent --serve` with data in `data`; with `token`, as the
/// value of OPS_AGENT_TOKEN, else the app generates one and prints it.
pub fn serve(data: &Path, token: Option<&str>) -> Served {
    serve_with(data, token, &[])
}

/// [`serve`] with more command-line arguments.
pub fn serve_with(data: &Path, token: Option<&str>, extra: &[&str]) -> Served {
    let port = free_port();
    let mut cmd = ops_agent(data);
    cmd.args(["--serve", "--port", &port.to_string()])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if let Some(t) = token {
        cmd.env("OPS_AGENT_TOKEN", t);
    }
    let mut child = Child(cmd.spawn().expect("ops-agent starts"));
    let stdout = child.0.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let start = Instant::now();
    let serving = loop {
        let line = lines
            .next()
            .expect("ops-agent printed its serving line")
            .expect("utf-8");
        if line.starts_with("serving agent opsAgent") {
            break line;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "no serving line");
    };
    let js = lines.next().expect("the Genkit JS line").expect("utf-8");
    let printed = serving
        .split_once("Authorization: Bearer ")
        .and_then(|(_, rest)| rest.split('`').next())
        .expect("the serving line shows the Authorization header")
        .to_owned();
    Served {
        child,
        port,
        token: token.map_or(printed, str::to_owned),
        lines: [serving, js],
        _stdout: lines,
    }
}

/// Sends one HTTP/1.1 request (`Connection: close`) to 127.0.0.1:`port` with
/// `Host: 127.0.0.1:<port>` unless `headers` give one: (status, body).
pub fn request(port: u16, path: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connects");
    let mut head = format!("POST {path} HTTP/1.1\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        head.push_str(&format!("Host: 127.0.0.1:{port}\r\n"));
    }
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ));
    stream.write_all(head.as_bytes()).expect("writes");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("reads");
    let status = response
        .get(9..12)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP response: {response}"));
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or_default();
    (status, body)
}
