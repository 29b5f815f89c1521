//! The unmodified official Genkit tools against our runtime: the `genkit` CLI
//! (`genkit start`, `flow:run`, its tools API, its telemetry server,
//! `dev:test-model`) and the JS client (`genkit/beta/client`).
//!
//! The npm packages are pinned in `tests/js/package.json` (+ lock) and
//! installed with `npm ci` if `tests/js/node_modules` is missing. These tests
//! skip (saying so) only when `node` or `npm` is not installed.

mod common;

use common::{RuntimeProcess, conformance_dir, free_port, wait_for_port};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use tokio::process::Command;

fn js_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/js")
}

fn has(cmd: &str) -> bool {
    std::process::Command::new(cmd)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Whether node and npm are here, installing the pinned packages once.
fn node_tools() -> bool {
    static READY: OnceLock<bool> = OnceLock::new();
    *READY.get_or_init(|| {
        if !has("node") || !has("npm") {
            eprintln!("SKIPPED: node and npm are required for the official-tools tests (not found on PATH)");
            return false;
        }
        if !js_dir().join("node_modules/.bin/genkit").exists() {
            let st = std::process::Command::new("npm")
                .args(["ci", "--no-audit", "--no-fund"])
                .current_dir(js_dir())
                .status()
                .expect("running npm ci");
            assert!(st.success(), "npm ci failed in {}", js_dir().display());
        }
        true
    })
}

/// `genkit start` runs (or reuses) a telemetry server on the default port
/// 4033: two at once would share it, and the first to stop would take it
/// from the other. The tests that start the CLI take turns.
static GENKIT_START: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn genkit_bin() -> PathBuf {
    js_dir().join("node_modules/.bin/genkit")
}

/// A scratch project (with package.json, so it is the CLI's project root)
/// and a scratch HOME with analytics off.
struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    async fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        std::fs::create_dir_all(dir.path().join("project")).unwrap();
        std::fs::write(
            dir.path().join("project/package.json"),
            r#"{"name":"scratch","private":true}"#,
        )
        .unwrap();
        let me = Self { dir };
        let out = me
            .genkit(&["config", "set", "analyticsOptOut", "true"])
            .await;
        assert!(out.status.success(), "{}", text(&out));
        me
    }

    fn project(&self) -> PathBuf {
        self.dir.path().join("project")
    }

    fn command(&self, program: &Path) -> Command {
        let mut c = Command::new(program);
        c.current_dir(self.project())
            .env("HOME", self.dir.path().join("home"))
            .env("GENKIT_CLI_DISABLE_UPDATE_NOTIFICATIONS", "true")
            .env("NO_COLOR", "1")
            .env_remove("GENKIT_ENV")
            .env_remove("GENKIT_TELEMETRY_SERVER")
            .env_remove("GENKIT_REFLECTION_PORT")
            .env_remove("GENKIT_RUNTIME_ID")
            .env_remove("GENKIT_TEST_FLOW_PORT")
            .kill_on_drop(true);
        c
    }

    async fn genkit(&self, args: &[&str]) -> Output {
        let mut c = self.command(&genkit_bin());
        c.args(args);
        tokio::time::timeout(Duration::from_secs(120), c.output())
            .await
            .unwrap_or_else(|_| panic!("genkit {args:?} timed out"))
            .unwrap()
    }
}

/// Kills a process group (the CLI and the runtime it started) when dropped
/// armed, so a failing test leaves no runtime behind: an orphaned Reflection
/// API v2 runtime keeps reconnecting, and would register with the next
/// CLI that listens on the same port.
struct KillGroup {
    pgid: u32,
    armed: bool,
}

impl KillGroup {
    fn new(pgid: u32) -> Self {
        Self { pgid, armed: true }
    }

    /// The group stopped on its own: nothing to kill.
    fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for KillGroup {
    fn drop(&mut self) {
        if self.armed {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", self.pgid)])
                .status();
        }
    }
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn hex32_after<'a>(s: &'a str, marker: &str) -> &'a str {
    let i = s
        .find(marker)
        .unwrap_or_else(|| panic!("no `{marker}` in:\n{s}"))
        + marker.len();
    let id = s[i..].trim_start().get(..32).unwrap_or("");
    assert!(
        id.chars().all(|c| c.is_ascii_hexdigit()) && id.len() == 32,
        "bad trace id after {marker}: {s}"
    );
    id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn genkit_cli_drives_the_runtime() {
    if !node_tools() {
        return;
    }
    let _turn = GENKIT_START.lock().await;
    let scratch = Scratch::new().await;
    let ui_port = free_port();
    let env_file = scratch.dir.path().join("genkit.env");
    let mut start = scratch.command(&genkit_bin());
    start
        .args([
            "start",
            "--port",
            &ui_port.to_string(),
            "--non-interactive",
            "--write-env-file",
        ])
        .arg(&env_file)
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_genkit-test-runtime"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        // Its own process group, so the CLI and our runtime get Ctrl-C together.
        .process_group(0);
    let mut cli = start.spawn().unwrap();
    let pgid = cli.id().unwrap();
    let mut group = KillGroup::new(pgid);

    let runtimes = scratch.project().join(".genkit/runtimes");
    let deadline = Instant::now() + Duration::from_secs(60);
    let runtime_file = loop {
        if let Some(f) = std::fs::read_dir(&runtimes)
            .ok()
            .and_then(|mut d| d.find_map(|e| e.ok()))
        {
            break f.path();
        }
        assert!(
            Instant::now() < deadline,
            "the runtime never wrote its file under {}",
            runtimes.display()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    wait_for_port(ui_port).await;

    // flow:run, plain.
    let out = scratch
        .genkit(&["flow:run", "hello", "\"Ada\"", "--non-interactive"])
        .await;
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("Result:\nHello, Ada!\n"), "{t}");
    hex32_after(&t, "Trace ID:");

    // flow:run, streaming: chunks, then the result.
    let out = scratch
        .genkit(&["flow:run", "streamy", "3", "-s", "--non-interactive"])
        .await;
    let t = text(&out);
    let chunks: Vec<usize> = (0..3)
        .map(|i| t.find(&format!("\"count\": {i}")).unwrap_or(usize::MAX))
        .collect();
    assert!(
        chunks.windows(2).all(|w| w[0] < w[1]) && chunks[2] != usize::MAX,
        "{t}"
    );
    let result = t
        .find("Result:\ndone 3, streamed: 3 times")
        .unwrap_or_else(|| panic!("{t}"));
    assert!(chunks[2] < result);

    // flow:run, failing: the CLI exits 0 but prints the error.
    let out = scratch
        .genkit(&["flow:run", "fail", "{}", "--non-interactive"])
        .await;
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("Code: 13") && t.contains("Message: boom"), "{t}");
    hex32_after(&t, "Trace ID:");

    // The CLI's tools API lists and runs our actions.
    let http = common::client();
    let tools = format!("http://localhost:{ui_port}");
    let listed: Value = http
        .get(format!("{tools}/api/listActions"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let actions = &listed["result"]["data"];
    assert_eq!(actions["/flow/hello"]["name"], "hello", "{listed}");
    assert_eq!(
        actions["/model/echoModel"]["metadata"]["model"]["supports"]["tools"],
        true
    );
    let ran: Value = http
        .post(format!("{tools}/api/runAction"))
        .json(&json!({"key": "/flow/nested", "input": "bob"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(ran["result"], "Hello, BOB!", "{ran}");
    assert_eq!(ran["genkitVersion"], genkit_core::GENKIT_VERSION);
    let trace_id = ran["telemetry"]["traceId"].as_str().unwrap().to_owned();

    // ... and the trace is in the telemetry server the CLI started.
    let env = std::fs::read_to_string(&env_file).unwrap();
    let telemetry = env
        .lines()
        .find_map(|l| l.strip_prefix("GENKIT_TELEMETRY_SERVER="))
        .unwrap_or_else(|| panic!("{env}"))
        .to_owned();
    let mut trace = Value::Null;
    for _ in 0..50 {
        trace = http
            .get(format!("{telemetry}/api/traces/{trace_id}"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap_or(Value::Null);
        if trace["spans"]
            .as_object()
            .is_some_and(|s| s.len() == 3 && s.values().all(|s| s["endTime"].as_f64() > Some(0.0)))
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let spans: Vec<&Value> = trace["spans"]
        .as_object()
        .unwrap_or_else(|| panic!("{trace}"))
        .values()
        .collect();
    assert_eq!(spans.len(), 3, "{trace:#}");
    assert_eq!(trace["displayName"], "nested");
    let root = spans
        .iter()
        .find(|s| s.get("parentSpanId").is_none())
        .unwrap();
    assert_eq!(root["attributes"]["genkit:isRoot"], true);
    assert_eq!(root["attributes"]["genkit:key"], "/flow/nested");
    assert_eq!(root["attributes"]["genkit:state"], "success");
    let paths: Vec<&str> = spans
        .iter()
        .map(|s| s["attributes"]["genkit:path"].as_str().unwrap())
        .collect();
    for p in [
        "/{nested,t:flow}",
        "/{nested,t:flow}/{shout,t:flowStep}",
        "/{nested,t:flow}/{hello,t:flow,s:flow}",
    ] {
        assert!(paths.contains(&p), "{paths:?}");
    }
    for s in &spans {
        assert_eq!(s["traceId"], trace_id.as_str());
        if s.get("parentSpanId").is_some() {
            assert_eq!(s["parentSpanId"], root["spanId"]);
        }
    }

    // The CLI's model checks, for the capabilities the echo model has.
    let out = scratch
        .genkit(&[
            "dev:test-model",
            "echoModel",
            "--supports",
            "tool-request,structured-output,multiturn,system-role,streaming-multiturn,streaming-tool-request,streaming-structured-output",
            "--non-interactive",
        ])
        .await;
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("Tests Completed: 7 Passed, 0 Failed"), "{t}");

    // Ctrl-C to the group: everything stops and the runtime file goes away.
    let st = std::process::Command::new("kill")
        .args(["-INT", "--", &format!("-{pgid}")])
        .status()
        .unwrap();
    assert!(st.success());
    tokio::time::timeout(Duration::from_secs(20), cli.wait())
        .await
        .expect("genkit start did not stop")
        .unwrap();
    group.disarm();
    for _ in 0..50 {
        if !runtime_file.exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(!runtime_file.exists(), "runtime file left behind");
}

#[tokio::test]
async fn js_client_calls_the_flow_server() {
    if !node_tools() {
        return;
    }
    let cases: Value = serde_yaml::from_str(
        &std::fs::read_to_string(conformance_dir().join("flow_server_tests.yaml")).unwrap(),
    )
    .unwrap();
    let mut rt = RuntimeProcess::start(true, &[]).await;
    let out = Command::new("node")
        .arg(js_dir().join("client_test.mjs"))
        .arg(rt.flow_url(""))
        .arg(cases.to_string())
        .current_dir(js_dir())
        .output()
        .await
        .unwrap();
    let t = text(&out);
    println!("{t}");
    assert!(out.status.success(), "{t}");
    assert!(t.contains(" passed, 0 failed"), "{t}");
    rt.signal("INT");
    rt.wait().await;
}

/// `genkit start --experimental-reflection-v2`: the CLI runs a WebSocket
/// server and our runtime connects to it (Reflection API v2). Driven through
/// the CLI's tools API, as the Dev UI does: list, run, stream, a
/// bidirectional turn, and cancelling a run in flight.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn genkit_cli_drives_the_runtime_over_reflection_v2() {
    if !node_tools() {
        return;
    }
    let _turn = GENKIT_START.lock().await;
    let scratch = Scratch::new().await;
    let ui_port = free_port();
    let mut start = scratch.command(&genkit_bin());
    start
        .args([
            "start",
            "--port",
            &ui_port.to_string(),
            "--non-interactive",
            "--experimental-reflection-v2",
            "--",
        ])
        .arg(env!("CARGO_BIN_EXE_genkit-test-runtime"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0);
    let mut cli = start.spawn().unwrap();
    let pgid = cli.id().unwrap();
    let mut group = KillGroup::new(pgid);
    wait_for_port(ui_port).await;
    let http = common::client();
    let tools = format!("http://localhost:{ui_port}");

    // The runtime registers over the WebSocket; then its actions list.
    let deadline = Instant::now() + Duration::from_secs(60);
    let actions = loop {
        let listed: Value = match http.get(format!("{tools}/api/listActions")).send().await {
            Ok(r) => r.json().await.unwrap_or(Value::Null),
            Err(_) => Value::Null,
        };
        if listed["result"]["data"]["/flow/hello"].is_object() {
            break listed["result"]["data"].clone();
        }
        assert!(
            Instant::now() < deadline,
            "the runtime never registered: {listed}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(actions["/flow/hello"]["name"], "hello");
    assert!(actions["/flow/chat"].is_object(), "{actions}");
    assert!(
        !scratch.project().join(".genkit/runtimes").exists()
            || std::fs::read_dir(scratch.project().join(".genkit/runtimes"))
                .unwrap()
                .next()
                .is_none(),
        "no runtime file with v2"
    );

    // A flow run.
    let ran: Value = http
        .post(format!("{tools}/api/runAction"))
        .json(&json!({"key": "/flow/hello", "input": "Ada"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(ran["result"], "Hello, Ada!", "{ran}");
    assert_eq!(
        ran["telemetry"]["traceId"].as_str().map(str::len),
        Some(32),
        "{ran}"
    );

    // A streaming run: one chunk a line, then the result.
    let body = http
        .post(format!("{tools}/api/streamAction"))
        .json(&json!({"key": "/flow/streamy", "input": 3}))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let lines: Vec<Value> = body
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|_| panic!("{body}")))
        .collect();
    assert_eq!(
        lines[..3],
        [
            json!({"count": 0}),
            json!({"count": 1}),
            json!({"count": 2})
        ],
        "{body}"
    );
    assert_eq!(lines[3]["result"], "done 3, streamed: 3 times", "{body}");

    // A bidirectional turn: the input streams in after the run started.
    let bidi = http
        .post(format!("{tools}/api/streamAction?bidi=true"))
        .json(&json!({"key": "/flow/chat", "init": "> "}))
        .send()
        .await
        .unwrap();
    let trace_id = bidi.headers()["x-genkit-trace-id"]
        .to_str()
        .unwrap()
        .to_owned();
    for word in ["hi", "there"] {
        let r = http
            .post(format!("{tools}/api/sendBidiInput"))
            .json(&json!({"traceId": trace_id, "chunk": word}))
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success());
    }
    let r = http
        .post(format!("{tools}/api/endBidiInput"))
        .json(&json!({"traceId": trace_id}))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success());
    let body = bidi.text().await.unwrap();
    let lines: Vec<Value> = body
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|_| panic!("{body}")))
        .collect();
    assert_eq!(lines[..2], [json!("> hi"), json!("> there")], "{body}");
    assert_eq!(lines[2]["result"], "2 turns", "{body}");

    // Cancelling a run in flight by its trace id.
    let forever = http
        .post(format!("{tools}/api/streamAction"))
        .json(&json!({"key": "/flow/forever", "input": null}))
        .send()
        .await
        .unwrap();
    let trace_id = forever.headers()["x-genkit-trace-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let cancelled: Value = http
        .post(format!("{tools}/api/cancelAction"))
        .json(&json!({"traceId": trace_id}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        cancelled["result"]["data"]["message"], "Action cancelled",
        "{cancelled}"
    );
    let body = tokio::time::timeout(Duration::from_secs(20), forever.text())
        .await
        .expect("the cancelled run ends")
        .unwrap();
    let last: Value = serde_json::from_str(body.lines().last().unwrap_or_default())
        .unwrap_or_else(|_| panic!("{body}"));
    assert_eq!(last["error"]["code"], 1, "CANCELLED: {body}");

    let st = std::process::Command::new("kill")
        .args(["-INT", "--", &format!("-{pgid}")])
        .status()
        .unwrap();
    assert!(st.success());
    tokio::time::timeout(Duration::from_secs(20), cli.wait())
        .await
        .expect("genkit start did not stop")
        .unwrap();
    group.disarm();
}

/// `genkit start --experimental-reflection-v2 -- <a Rust agent app>`: an
/// agent turn run the way the Dev UI runs one (a bidirectional
/// `streamAction` on `/agent/greeter`, the user's message sent as input,
/// then the input closed): the tool's answer and the turn's end stream
/// back, and the turn's output (reply and conversation) is the result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn genkit_cli_runs_a_rust_agent_turn_over_reflection_v2() {
    if !node_tools() {
        return;
    }
    let _turn = GENKIT_START.lock().await;
    let scratch = Scratch::new().await;
    let ui_port = free_port();
    let mut start = scratch.command(&genkit_bin());
    start
        .args([
            "start",
            "--port",
            &ui_port.to_string(),
            "--non-interactive",
            "--experimental-reflection-v2",
            "--",
        ])
        .arg(std::env::current_exe().expect("test binary"))
        .args(["--ignored", "--exact", "rust_agent_runtime", "--nocapture"])
        .env(AGENT_RUNTIME_ENV, "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0);
    let mut cli = start.spawn().unwrap();
    let pgid = cli.id().unwrap();
    let mut group = KillGroup::new(pgid);
    wait_for_port(ui_port).await;
    let http = common::client();
    let tools = format!("http://localhost:{ui_port}");
    let deadline = Instant::now() + Duration::from_secs(60);
    let actions = loop {
        let listed: Value = match http.get(format!("{tools}/api/listActions")).send().await {
            Ok(r) => r.json().await.unwrap_or(Value::Null),
            Err(_) => Value::Null,
        };
        if listed["result"]["data"]["/agent/greeter"].is_object() {
            break listed["result"]["data"].clone();
        }
        assert!(
            Instant::now() < deadline,
            "the agent never registered: {listed}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(actions["/agent/greeter"]["name"], "greeter");

    let turn = http
        .post(format!("{tools}/api/streamAction?bidi=true"))
        .json(&json!({"key": "/agent/greeter", "init": {}}))
        .send()
        .await
        .unwrap();
    let trace_id = turn.headers()["x-genkit-trace-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let r = http
        .post(format!("{tools}/api/sendBidiInput"))
        .json(&json!({"traceId": trace_id, "chunk": {"message": {"role": "user", "content": [{"text": "Hi, I am Ada."}]}}}))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success());
    let r = http
        .post(format!("{tools}/api/endBidiInput"))
        .json(&json!({"traceId": trace_id}))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success());
    let body = tokio::time::timeout(Duration::from_secs(30), turn.text())
        .await
        .expect("the turn ends")
        .unwrap();
    let lines: Vec<Value> = body
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|_| panic!("{body}")))
        .collect();
    let (result, chunks) = lines.split_last().unwrap_or_else(|| panic!("{body}"));
    // The tool's answer streamed as a model chunk, then the turn's end.
    assert_eq!(
        chunks
            .first()
            .map(|c| &c["modelChunk"]["content"][0]["toolResponse"]),
        Some(&json!({"ref": "call-0", "name": "lookupGuest", "output": "guest 7"})),
        "{body}"
    );
    assert_eq!(
        chunks.last().map(|c| &c["turnEnd"]),
        Some(&json!({"finishReason": "stop"})),
        "{body}"
    );
    // The turn's output: the reply, and the conversation in the state.
    let output = &result["result"];
    assert_eq!(
        output["message"]["content"][0]["text"], "Hello, Ada! You are guest 7.",
        "{body}"
    );
    let history = &output["state"]["messages"];
    assert_eq!(history.as_array().map(Vec::len), Some(4), "{body}");
    assert_eq!(
        history[1]["content"][0]["toolRequest"]["name"], "lookupGuest",
        "{body}"
    );
    assert_eq!(result["telemetry"]["traceId"], trace_id.as_str(), "{body}");

    let st = std::process::Command::new("kill")
        .args(["-INT", "--", &format!("-{pgid}")])
        .status()
        .unwrap();
    assert!(st.success());
    tokio::time::timeout(Duration::from_secs(20), cli.wait())
        .await
        .expect("genkit start did not stop")
        .unwrap();
    group.disarm();
}

/// Set for [`rust_agent_runtime`] when a test starts it.
const AGENT_RUNTIME_ENV: &str = "GENKIT_TEST_AGENT_RUNTIME";

/// The Rust agent app of [`genkit_cli_runs_a_rust_agent_turn_over_reflection_v2`],
/// started by the CLI (ignored otherwise): an agent `greeter` whose model
/// calls the `lookupGuest` tool, then greets; the dev tooling (Reflection API
/// v2 under `genkit start --experimental-reflection-v2`), until stopped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the runtime of genkit_cli_runs_a_rust_agent_turn_over_reflection_v2, started by it"]
async fn rust_agent_runtime() {
    use genkit_agent::{AgentOptions, define_prompt_agent_with};
    use genkit_generate::GenerateOptions;
    use genkit_model::testing::ProgrammableModel;
    use genkit_model::tool::Tool;

    assert!(
        std::env::var_os(AGENT_RUNTIME_ENV).is_some(),
        "{AGENT_RUNTIME_ENV} is not set: this runs inside the CLI test"
    );
    let registry = genkit_core::Registry::new();
    ProgrammableModel::define(&registry, "greeterModel")
        .respond_tool_call("lookupGuest", json!({"name": "Ada"}))
        .respond_text("Hello, Ada! You are guest 7.");
    let lookup = Tool::from_json_schema(
        "lookupGuest",
        "Finds a guest's number.",
        Some(json!({"type": "object", "properties": {"name": {"type": "string"}}})),
        None,
        |_input: Value, _ctx| async move { Ok(json!("guest 7")) },
    )
    .expect("tool");
    define_prompt_agent_with(&registry, "greeter", AgentOptions::new(), move || {
        let lookup = lookup.clone();
        async move {
            Ok(GenerateOptions::new()
                .model("greeterModel")
                .system("You greet guests.")
                .tool(lookup))
        }
    })
    .expect("agent");
    let dev = genkit_server::start_dev_tooling_with(
        &registry,
        genkit_server::DevToolingOptions {
            name: Some("agents".into()),
            exit_on_signal: false,
            ..genkit_server::DevToolingOptions::default()
        },
    )
    .await
    .expect("dev tooling")
    .expect("GENKIT_ENV=dev starts the dev tooling");
    genkit_server::shutdown::signal().await;
    dev.shutdown().await;
}
