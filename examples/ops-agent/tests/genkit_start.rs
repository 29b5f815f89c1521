//! `ops-agent --serve` under Genkit's official CLI (npm `genkit-cli`, the
//! version pinned in crates/genkit-server/tests/js): `genkit start -- ops-agent
//! --serve` starts it, the runtime registers with the CLI, and the agent
//! runs through the CLI's tools API (`/api/runAction` on `/agent/opsAgent`,
//! what the Dev UI calls) for two turns of one session, the second
//! answered from the first.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod common;
use common::{BIN, Child, clean_env, npm_tools};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// Waits until `path` holds a file (the runtime's registration).
async fn first_file(dir: &Path, limit: Duration) -> std::path::PathBuf {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(entry) = std::fs::read_dir(dir)
            .ok()
            .and_then(|mut d| d.find_map(|e| e.ok()))
        {
            return entry.path();
        }
        assert!(
            Instant::now() < deadline,
            "no runtime registered under {}",
            dir.display()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// `POST <tools>/api/runAction` for the agent, as the Dev UI sends it.
async fn run_agent(http: &reqwest::Client, tools: &str, text: &str, init: Value) -> Value {
    let body = json!({
        "key": "/agent/opsAgent",
        "input": {"message": {"role": "user", "content": [{"text": text}]}},
        "init": init,
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        // The CLI answers before it has seen the runtime: retry until it runs.
        let sent = http
            .post(format!("{tools}/api/runAction"))
            .json(&body)
            .send()
            .await;
        if let Ok(response) = sent {
            let status = response.status();
            let value: Value = response.json().await.unwrap_or(Value::Null);
            if status.is_success() && value.get("result").is_some() {
                return value;
            }
            assert!(
                Instant::now() < deadline,
                "runAction kept failing: {status} {value}"
            );
        }
        assert!(
            Instant::now() < deadline,
            "the CLI's tools API never answered"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn genkit_start_runs_the_agent_through_the_cli() {
    let Some(js) = npm_tools() else {
        eprintln!("SKIPPED: node and npm are required for the genkit start test");
        return;
    };
    let scratch = tempfile::tempdir().expect("temp dir");
    let (home, project, data) = (
        scratch.path().join("home"),
        scratch.path().join("project"),
        scratch.path().join("data"),
    );
    for dir in [&home, &project, &data] {
        std::fs::create_dir_all(dir).expect("scratch dirs");
    }
    // A package.json makes the folder the CLI's project root.
    std::fs::write(
        project.join("package.json"),
        r#"{"name":"ops-agent-scratch","private":true}"#,
    )
    .expect("package.json");
    let genkit = js.join("node_modules/.bin/genkit");
    let ui_port = free_port();
    let mut cmd = std::process::Command::new(&genkit);
    clean_env(&mut cmd)
        .current_dir(&project)
        .env("HOME", &home)
        .env("GENKIT_CLI_DISABLE_UPDATE_NOTIFICATIONS", "true")
        .env("NO_COLOR", "1")
        .args([
            "start",
            "--port",
            &ui_port.to_string(),
            "--non-interactive",
            "--",
        ])
        .arg(BIN)
        .arg("--serve")
        .args(["--port", &free_port().to_string()])
        .arg("--data-dir")
        .arg(&data)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // Its own process group: the CLI and the app it started stop together.
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let cli = Child(cmd.spawn().expect("genkit start runs"));
    let group = cli.0.id();
    let _stop = StopGroup(group);

    let runtime = first_file(&project.join(".genkit/runtimes"), Duration::from_secs(90)).await;
    let registered: Value =
        serde_json::from_str(&std::fs::read_to_string(&runtime).unwrap_or_default())
            .unwrap_or(Value::Null);
    assert!(
        registered["reflectionServerUrl"].is_string(),
        "{registered}"
    );

    let http = reqwest::Client::new();
    let tools = format!("http://127.0.0.1:{ui_port}");
    let first = run_agent(&http, &tools, "Why is the scheduler down?", json!({})).await;
    let result = &first["result"];
    let answer = message_text(&result["message"]);
    assert!(
        answer.contains("scheduler is DOWN (not answering health checks)"),
        "{first}"
    );
    assert!(answer.contains("out of memory"), "{first}");
    let snapshot = result["snapshotId"].as_str().unwrap_or_default().to_owned();
    assert!(!snapshot.is_empty(), "{first}");

    let second = run_agent(
        &http,
        &tools,
        "What did you check earlier, and what did the logs say?",
        json!({"snapshotId": snapshot}),
    )
    .await;
    let answer = message_text(&second["result"]["message"]);
    assert!(
        answer.contains("Earlier in this session you asked \"Why is the scheduler down?\""),
        "{second}"
    );
    assert!(answer.contains("code 137 (out of memory)"), "{second}");
}

/// The text parts of a message, joined.
fn message_text(message: &Value) -> String {
    message["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["text"].as_str())
        .collect()
}

/// Sends Ctrl-C to the CLI's process group on drop, so the app it started
/// stops too (the CLI alone would leave it running).
struct StopGroup(u32);

impl Drop for StopGroup {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill")
            .args(["-INT", "--", &format!("-{}", self.0)])
            .status();
    }
}
