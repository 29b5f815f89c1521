//! `ops-agent --serve` driven by Genkit JS's own agent client
//! (`remoteAgent`, npm `genkit`, the version pinned in
//! crates/genkit-server/tests/js): see tests/js/remote_agent.mjs.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_ops-agent");

struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn genkit_js_remote_agent_chats_and_approves_a_restart() {
    let has = |cmd: &str| {
        Command::new(cmd)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !has("node") || !has("npm") {
        let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
        assert!(!ci, "node and npm are needed under CI");
        eprintln!("SKIPPED: node and npm are required for the remoteAgent test");
        return;
    }
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let js = manifest.join("../../crates/genkit-server/tests/js");
    if !js.join("node_modules/genkit/package.json").exists() {
        let st = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
            .current_dir(&js)
            .status()
            .expect("running npm ci");
        assert!(st.success(), "npm ci failed in {}", js.display());
    }
    let script = std::fs::read_to_string(manifest.join("tests/js/remote_agent.mjs"))
        .expect("the client script");

    let dir = tempfile::tempdir().expect("temp dir");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let mut cmd = Command::new(BIN);
    cmd.arg("--data-dir")
        .arg(dir.path())
        .args(["--serve", "--port", &port.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    for var in [
        "OPENAI_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "GOOGLE_GENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "OLLAMA_HOST",
        "OPS_AGENT_MODEL",
        "OPS_AGENT_DATABASE",
        "GENKIT_ENV",
    ] {
        cmd.env_remove(var);
    }
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
