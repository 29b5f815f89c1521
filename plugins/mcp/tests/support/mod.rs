//! The real MCP peer these tests drive: `tests-support/mcp/server.mjs`,
//! written with the official TypeScript SDK (installed by `test.sh`).

#![allow(dead_code)]

use genkit_mcp::McpServerConfig;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// `tests-support/mcp`, after checking its npm packages are installed.
pub fn peer_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests-support/mcp");
    assert!(
        dir.join("node_modules/@modelcontextprotocol/sdk/package.json")
            .exists(),
        "the MCP test server's npm packages are missing: run `npm ci` in {} (test.sh does)",
        dir.display()
    );
    dir
}

/// The test server over stdio.
pub fn stdio_server(timeout: Duration) -> McpServerConfig {
    let dir = peer_dir();
    McpServerConfig::stdio(
        "node",
        [dir.join("server.mjs").display().to_string(), "stdio".into()],
    )
    .timeout(timeout)
}

/// A running Streamable HTTP test server (killed on drop).
pub struct HttpPeer {
    pub url: String,
    _child: Child,
}

/// Starts the test server over Streamable HTTP on a free 127.0.0.1 port.
pub async fn http_server() -> HttpPeer {
    let dir = peer_dir();
    let mut child = Command::new("node")
        .arg(dir.join("server.mjs"))
        .arg("http")
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
    .expect("the HTTP test server printed no URL in time")
    .expect("reading the test server's URL");
    HttpPeer {
        url: line.trim().to_owned(),
        _child: child,
    }
}

/// The environment variable naming the python of a venv with the official
/// MCP Python SDK (`test.sh` sets it, from
/// `tests-support/mcp/install-python-sdk.sh`).
pub const PYTHON_ENV: &str = "GENKIT_TEST_MCP_PYTHON";

/// The Python SDK's python and `tests-support/mcp/server.py`, or `None`
/// (after saying loudly why the test is skipped) when [`PYTHON_ENV`] is
/// unset.
pub fn python_peer() -> Option<(String, PathBuf)> {
    match std::env::var(PYTHON_ENV) {
        Ok(python) if !python.is_empty() => {
            let script =
                PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests-support/mcp/server.py");
            Some((python, script))
        }
        _ => {
            eprintln!(
                "\n*** SKIPPED: the MCP Python SDK peer is not installed. Run \
                 `bash tests-support/mcp/install-python-sdk.sh` and set {PYTHON_ENV} \
                 to the python it prints (test.sh does). ***\n"
            );
            None
        }
    }
}

/// The Python SDK server over stdio.
pub fn python_stdio_server(
    python: &str,
    script: &std::path::Path,
    timeout: Duration,
) -> McpServerConfig {
    McpServerConfig::stdio(python, [script.display().to_string(), "stdio".into()]).timeout(timeout)
}

/// Starts the Python SDK server over Streamable HTTP on a free 127.0.0.1 port.
pub async fn python_http_server(python: &str, script: &std::path::Path) -> HttpPeer {
    let mut child = Command::new(python)
        .arg(script)
        .arg("http")
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("starting the Python MCP server");
    let stdout = child.stdout.take().expect("piped stdout");
    let mut line = String::new();
    tokio::time::timeout(
        Duration::from_secs(30),
        BufReader::new(stdout).read_line(&mut line),
    )
    .await
    .expect("the Python HTTP test server printed no URL in time")
    .expect("reading the Python test server's URL");
    HttpPeer {
        url: line.trim().to_owned(),
        _child: child,
    }
}

impl HttpPeer {
    /// A server process `child` serving `url`.
    pub fn new(url: String, child: Child) -> Self {
        HttpPeer { url, _child: child }
    }
}
