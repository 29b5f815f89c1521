//! The Rust MCP server driven by real clients: the official TypeScript
//! SDK's (`tests-support/mcp/sdk-client.mjs`) and Genkit JS's
//! `@genkit-ai/mcp` (`tests-support/mcp/genkit-client.mjs`), over stdio and
//! Streamable HTTP. Each client lists and calls tools, gets a prompt and
//! reads fixed and templated resources, and prints what it got as JSON.
//! This crate's own host side (rmcp's client) makes the same round trip.
//!
//! This test has its own `main` (`harness = false`): the stdio clients
//! start this very binary with `--serve-stdio` as their server, and a
//! libtest binary would write its own lines to stdout, the protocol stream.

use genkit_core::{Action, ActionKind, Error, Registry};
use genkit_mcp::{McpClient, McpServer, McpServerConfig, McpServerOptions};
use genkit_model::resource::{ResourceOptions, ResourceOutput, define_resource};
use genkit_model::tool::{define_multipart_tool, define_tool};
use genkit_model::types::{MultipartToolResponse, Part};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::process::Command;

const SERVE_STDIO: &str = "--serve-stdio";
const CLIENT_TIMEOUT: Duration = Duration::from_secs(90);
const RED_PIXEL: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

#[derive(Serialize, Deserialize, JsonSchema)]
struct AddInput {
    a: i64,
    b: i64,
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct FailInput {
    reason: String,
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct NoInput {}

#[derive(Serialize, Deserialize, JsonSchema)]
struct CountInput {
    to: u32,
}

/// The registry the server serves: tools that succeed, fail, stream and
/// return an image and an embedded resource; a prompt; a fixed and a
/// templated resource.
fn registry() -> Registry {
    let registry = Registry::new();
    define_tool(
        &registry,
        "add",
        "Adds two integers.",
        |i: AddInput, _ctx| async move { Ok(i.a + i.b) },
    )
    .unwrap();
    define_tool(
        &registry,
        "fail",
        "Always fails.",
        |i: FailInput, _ctx| async move {
            Err::<i64, _>(Error::internal(format!("refused: {}", i.reason)))
        },
    )
    .unwrap();
    define_multipart_tool(
        &registry,
        "picture",
        "A red pixel.",
        |_: NoInput, _ctx| async move {
            Ok(MultipartToolResponse {
                output: Some(json!("a red pixel")),
                content: Some(vec![
                    Part::media(
                        format!("data:image/png;base64,{RED_PIXEL}"),
                        Some("image/png"),
                    ),
                    // Read from a resource: embedded.
                    Part::text("a pixel of #ff0000")
                        .with_metadata("resource", json!({"uri": "docs://pixel"})),
                ]),
                metadata: None,
            })
        },
    )
    .unwrap();
    // A tool that streams: its chunks reach MCP clients as progress. It
    // pauses after each: the TypeScript SDK handles notifications a tick
    // later than responses, so a report read together with the result
    // would find its handler gone.
    let count = Action::<CountInput, String, Value>::new(
        ActionKind::Tool,
        "count",
        |i: CountInput, ctx| async move {
            for n in 1..=i.to {
                ctx.send_chunk(
                    json!({"progress": n, "total": i.to, "message": format!("step {n}")}),
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Ok(format!("counted to {}", i.to))
        },
    );
    registry.register(count).unwrap();
    // A tool that waits to be cancelled, and a resource saying whether it was.
    let cancelled = Arc::new(AtomicBool::new(false));
    let flag = cancelled.clone();
    define_tool(
        &registry,
        "wait",
        "Waits until cancelled.",
        move |_: NoInput, ctx| {
            let flag = flag.clone();
            async move {
                let stopped = tokio::time::timeout(Duration::from_secs(20), ctx.cancel.cancelled());
                if stopped.await.is_ok() {
                    flag.store(true, Ordering::SeqCst);
                }
                Ok("done waiting".to_owned())
            }
        },
    )
    .unwrap();
    define_resource(
        &registry,
        ResourceOptions::uri("cancelled", "state://cancelled"),
        move |_input, _ctx| {
            let was = cancelled.load(Ordering::SeqCst);
            async move { Ok(ResourceOutput::new(vec![Part::text(was.to_string())])) }
        },
    )
    .unwrap();
    genkit_prompt::load_prompt_source(
        &registry,
        "greet",
        "---\ndescription: Greets someone.\ninput:\n  schema:\n    name: string, who to greet\n---\nHello {{name}}!",
        None,
    )
    .unwrap();
    define_resource(
        &registry,
        ResourceOptions::uri("readme", "docs://readme")
            .description("The readme.")
            .metadata("mimeType", json!("text/markdown")),
        |_input, _ctx| async move { Ok(ResourceOutput::new(vec![Part::text("# Readme")])) },
    )
    .unwrap();
    define_resource(
        &registry,
        ResourceOptions::template("user", "users://{id}/profile").description("A user's profile."),
        |input, _ctx| async move {
            let id = input
                .uri
                .trim_start_matches("users://")
                .trim_end_matches("/profile")
                .to_owned();
            Ok(ResourceOutput::new(vec![Part::text(format!(
                "profile of {id}"
            ))]))
        },
    )
    .unwrap();
    registry
}

fn server() -> McpServer {
    McpServer::new(
        &registry(),
        McpServerOptions::new("genkit-rs-test").version("0.9.0"),
    )
}

/// `tests-support/mcp` if its npm packages are installed.
fn peer_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests-support/mcp");
    dir.join("node_modules/@genkit-ai/mcp/package.json")
        .exists()
        .then_some(dir)
}

/// Runs a client script to the end and parses the JSON it prints.
async fn run_client(dir: &Path, script: &str, args: &[String]) -> Value {
    let mut cmd = Command::new("node");
    cmd.arg(dir.join(script)).args(args).kill_on_drop(true);
    let out = tokio::time::timeout(CLIENT_TIMEOUT, cmd.output())
        .await
        .unwrap_or_else(|_| panic!("{script} {args:?} did not finish in {CLIENT_TIMEOUT:?}"))
        .expect("running node");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{script} {args:?} failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .unwrap_or_else(|| {
            panic!(
                "{script} printed no JSON:\n{stdout}\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    serde_json::from_str(line).expect("the client's JSON")
}

fn find<'a>(list: &'a Value, name: &str) -> &'a Value {
    list.as_array()
        .and_then(|l| l.iter().find(|e| e["name"] == name))
        .unwrap_or_else(|| panic!("no `{name}` in {list}"))
}

/// What the official TypeScript SDK client saw.
fn check_sdk(out: &Value, how: &str) {
    let ctx = format!("TypeScript SDK client over {how}: {out:#}");
    assert_eq!(out["server"]["name"], "genkit-rs-test", "{ctx}");
    assert_eq!(out["server"]["version"], "0.9.0", "{ctx}");
    for cap in ["tools", "prompts", "resources"] {
        assert!(out["capabilities"].get(cap).is_some(), "{ctx}");
    }

    // Tools, with their JSON schemas.
    let add = find(&out["tools"], "add");
    assert_eq!(add["description"], "Adds two integers.", "{ctx}");
    assert_eq!(add["inputSchema"]["type"], "object", "{ctx}");
    assert_eq!(
        add["inputSchema"]["properties"]["a"]["type"], "integer",
        "{ctx}"
    );
    let mut required: Vec<&str> = add["inputSchema"]["required"]
        .as_array()
        .expect("required")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    required.sort();
    assert_eq!(required, ["a", "b"], "{ctx}");
    find(&out["tools"], "fail");
    find(&out["tools"], "picture");

    assert_eq!(
        out["add"]["content"],
        json!([{"type": "text", "text": "5"}]),
        "{ctx}"
    );
    assert_ne!(out["add"]["isError"], true, "{ctx}");
    assert_eq!(out["fail"]["isError"], true, "{ctx}");
    assert_eq!(
        out["fail"]["content"][0]["text"], "refused: testing",
        "{ctx}"
    );
    assert_eq!(out["badInput"]["isError"], true, "{ctx}");
    assert_eq!(out["picture"]["content"][0]["text"], "a red pixel", "{ctx}");
    assert_eq!(
        out["picture"]["content"][1],
        json!({"type": "image", "mimeType": "image/png", "data": RED_PIXEL}),
        "{ctx}"
    );
    assert_eq!(
        out["picture"]["content"][2],
        json!({"type": "resource", "resource": {"uri": "docs://pixel", "mimeType": "text/plain", "text": "a pixel of #ff0000"}}),
        "{ctx}"
    );
    assert_eq!(out["unknownTool"]["error"]["code"], -32602, "{ctx}");
    assert_eq!(
        out["count"]["result"]["content"][0]["text"], "counted to 3",
        "{ctx}"
    );
    assert_eq!(
        out["count"]["progress"],
        json!([
            {"progress": 1, "total": 3, "message": "step 1"},
            {"progress": 2, "total": 3, "message": "step 2"},
            {"progress": 3, "total": 3, "message": "step 3"}
        ]),
        "{ctx}"
    );

    // The prompt, its argument from the input schema, rendered.
    let greet = find(&out["prompts"], "greet");
    assert_eq!(greet["description"], "Greets someone.", "{ctx}");
    assert_eq!(
        greet["arguments"],
        json!([{"name": "name", "description": "who to greet", "required": true}]),
        "{ctx}"
    );
    assert_eq!(
        out["greet"]["messages"],
        json!([{"role": "user", "content": {"type": "text", "text": "Hello Ada!"}}]),
        "{ctx}"
    );
    assert_eq!(out["unknownPrompt"]["error"]["code"], -32602, "{ctx}");

    // Resources: the fixed one listed, the template listed apart, both read.
    assert_eq!(
        find(&out["resources"], "readme"),
        &json!({"name": "readme", "description": "The readme.", "mimeType": "text/markdown", "uri": "docs://readme"}),
        "{ctx}"
    );
    assert_eq!(
        out["templates"],
        json!([{"name": "user", "description": "A user's profile.", "uriTemplate": "users://{id}/profile"}]),
        "{ctx}"
    );
    assert_eq!(
        out["readme"]["contents"],
        json!([{"uri": "docs://readme", "mimeType": "text/markdown", "text": "# Readme"}]),
        "{ctx}"
    );
    assert_eq!(
        out["user"]["contents"],
        json!([{"uri": "users://42/profile", "mimeType": "text/plain", "text": "profile of 42"}]),
        "{ctx}"
    );
    assert_eq!(out["unknownResource"]["error"]["code"], -32002, "{ctx}");

    // The client gave up on a call: the tool saw its run cancelled.
    assert!(out["wait"].get("error").is_some(), "{ctx}");
    assert_eq!(out["cancelled"]["contents"][0]["text"], "true", "{ctx}");
}

/// What Genkit JS's MCP client saw.
fn check_genkit(out: &Value, how: &str) {
    let ctx = format!("Genkit JS client over {how}: {out:#}");
    let names: Vec<&str> = out["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    for t in ["rs/add", "rs/fail", "rs/picture"] {
        assert!(names.contains(&t), "{ctx}");
    }
    let add = find(&out["tools"], "rs/add");
    assert_eq!(
        add["inputSchema"]["properties"]["b"]["type"], "integer",
        "{ctx}"
    );
    // Genkit JS parses only object or array text as JSON: the sum is text.
    assert_eq!(out["add"], json!("5"), "{ctx}");
    assert_eq!(out["fail"], json!({"error": "refused: testing"}), "{ctx}");
    assert_eq!(
        out["greet"],
        json!([{"role": "user", "content": [{"text": "Hello Ada!"}]}]),
        "{ctx}"
    );
    let mut resources: Vec<&str> = out["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    resources.sort();
    assert_eq!(resources, ["rs/cancelled", "rs/readme", "rs/user"], "{ctx}");
    assert_eq!(out["readme"]["content"][0]["text"], "# Readme", "{ctx}");
    assert_eq!(out["user"]["content"][0]["text"], "profile of 42", "{ctx}");
}

/// This crate's own host side (rmcp's client) against the server.
async fn check_rust_host(config: McpServerConfig, how: &str) {
    let client = McpClient::connect("rust-host", "rs", &config.timeout(CLIENT_TIMEOUT))
        .await
        .unwrap_or_else(|e| panic!("Rust host over {how}: {e}"));
    let tools = client.list_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "add"), "{how}: {tools:?}");
    let args = |v: Value| v.as_object().cloned();
    let sum = client
        .call_tool("add", args(json!({"a": 2, "b": 3})), None)
        .await
        .unwrap();
    assert_eq!(sum.output, Some(json!("5")), "{how}");
    let err = client
        .call_tool("fail", args(json!({"reason": "testing"})), None)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("refused: testing"), "{how}: {err}");
    let steps = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let seen = steps.clone();
    let report = move |p: genkit_mcp::McpProgress| seen.lock().push(p.progress);
    let counted = client
        .call_tool("count", args(json!({"to": 3})), Some(&report))
        .await
        .unwrap();
    assert_eq!(counted.output, Some(json!("counted to 3")), "{how}");
    assert_eq!(steps.lock().last(), Some(&3.0), "{how}");
    let messages = client
        .get_prompt("greet", args(json!({"name": "Ada"})))
        .await
        .unwrap();
    assert_eq!(messages[0].text(), "Hello Ada!", "{how}");
    let parts = client.read_resource("users://42/profile").await.unwrap();
    assert_eq!(parts[0].as_text(), Some("profile of 42"), "{how}");
    client.close().await;
}

async fn acceptance(dir: &Path) {
    // stdio: each client starts this binary as its server.
    let exe = std::env::current_exe().expect("the test binary's path");
    let stdio = [
        "stdio".to_owned(),
        exe.display().to_string(),
        SERVE_STDIO.to_owned(),
    ];
    check_sdk(&run_client(dir, "sdk-client.mjs", &stdio).await, "stdio");
    check_genkit(&run_client(dir, "genkit-client.mjs", &stdio).await, "stdio");
    let own = McpServerConfig::stdio(exe.display().to_string(), [SERVE_STDIO]);
    check_rust_host(own, "stdio").await;

    // Streamable HTTP on an ephemeral 127.0.0.1 port.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(server().serve_http(listener, async {
        let _ = stopped.await;
    }));
    check_rust_host(McpServerConfig::http(url.clone()), "Streamable HTTP").await;
    let http = ["http".to_owned(), url];
    check_sdk(
        &run_client(dir, "sdk-client.mjs", &http).await,
        "Streamable HTTP",
    );
    check_genkit(
        &run_client(dir, "genkit-client.mjs", &http).await,
        "Streamable HTTP",
    );
    let _ = stop.send(());
    // Streams still open (SSE) must not keep the server from stopping.
    tokio::time::timeout(Duration::from_secs(20), serving)
        .await
        .expect("the HTTP server stops on shutdown")
        .expect("the server task")
        .expect("serving HTTP");
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    // `cargo test -- --list` asks libtest binaries for their tests: this one
    // has no libtest tests to list.
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    if std::env::args().any(|a| a == SERVE_STDIO) {
        if let Err(e) = runtime.block_on(server().serve_stdio()) {
            eprintln!("{e}");
            std::process::exit(1);
        }
        return;
    }
    let Some(dir) = peer_dir() else {
        eprintln!(
            "SKIPPED mcp server acceptance: the npm packages of tests-support/mcp are not installed \
             (run `npm ci` there; test.sh does)"
        );
        return;
    };
    runtime.block_on(acceptance(&dir));
    println!(
        "mcp server acceptance: TypeScript SDK, Genkit JS and Rust host clients over stdio and Streamable HTTP ... ok"
    );
}
