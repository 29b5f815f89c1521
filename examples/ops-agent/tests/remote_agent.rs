//! `ops-agent --serve` driven by Genkit JS's own agent client
//! (`remoteAgent`, npm `genkit`, the version pinned in
//! crates/genkit-server/tests/js): see tests/js/remote_agent.mjs.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{Child, npm_tools, ops_agent};

#[test]
fn genkit_js_remote_agent_chats_and_approves_a_restart() {
    let Some(js) = npm_tools() else {
        eprintln!("SKIPPED: node and npm are required for the remoteAgent test");
        return;
    };
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let script = std::fs::read_to_string(manifest.join("tests/js/remote_agent.mjs"))
        .expect("the client script");

    let dir = tempfile::tempdir().expect("temp dir");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let mut cmd = ops_agent(dir.path());
    cmd.args(["--serve", "--port", &port.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut server = Child(cmd.spawn().expect("ops-agent starts"));
    let stdout = server.0.stdout.take().expect("stdout");
    let start = Instant::now();
    for line in BufReader::new(stdout).lines() {
        if line.expect("utf-8").starts_with("serving agent opsAgent") {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "no serving line");
    }

    // ESM resolves `genkit/beta/client` from the working directory for -e.
    let out = Command::new("node")
        .args(["--input-type=module", "-e", &script])
        .env("OPS_AGENT_URL", format!("http://127.0.0.1:{port}/opsAgent"))
        .current_dir(&js)
        .output()
        .expect("running node");
    drop(server);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("remoteAgent: all checks passed"),
        "{stdout}"
    );
}
