//! `ops-agent --serve` driven by Genkit JS's own agent client
//! (`remoteAgent`, npm `genkit`, the version pinned in
//! crates/genkit-server/tests/js): see tests/js/remote_agent.mjs. The client
//! sends the bearer token the app generated and printed at start.

use std::path::PathBuf;
use std::process::Command;

mod common;
use common::{npm_tools, serve_with};

#[test]
fn genkit_js_remote_agent_chats_approves_a_restart_and_aborts() {
    let Some(js) = npm_tools() else {
        eprintln!("SKIPPED: node and npm are required for the remoteAgent test");
        return;
    };
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let script = std::fs::read_to_string(manifest.join("tests/js/remote_agent.mjs"))
        .expect("the client script");

    let dir = tempfile::tempdir().expect("temp dir");
    // Tool calls take 300 ms, so a detached turn is still running when the
    // client aborts it.
    let served = serve_with(dir.path(), None, &["--tool-latency-ms", "300"]);
    // What the app tells a Genkit JS user to write.
    let url = format!("http://127.0.0.1:{}/opsAgent", served.port);
    assert_eq!(
        served.lines[1],
        format!(
            "Genkit JS: remoteAgent({{url: '{url}', headers: {{Authorization: 'Bearer {}'}}}})",
            served.token
        )
    );

    // ESM resolves `genkit/beta/client` from the working directory for -e.
    let out = Command::new("node")
        .args(["--input-type=module", "-e", &script])
        .env("OPS_AGENT_URL", &url)
        .env("OPS_AGENT_TOKEN", &served.token)
        .current_dir(&js)
        .output()
        .expect("running node");
    drop(served);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("remoteAgent: all checks passed"),
        "{stdout}"
    );
}
