//! The host against a real MCP server written with the official TypeScript
//! SDK (`tests-support/mcp/server.mjs`), over stdio and Streamable HTTP.

mod support;

use genkit_core::{RunOptions, StatusCode};
use genkit_mcp::{McpHost, McpServerConfig};
use genkit_model::types::{MultipartToolResponse, Role};
use parking_lot::Mutex;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::{http_server, stdio_server};

const TIMEOUT: Duration = Duration::from_secs(20);

async fn call(
    host: &McpHost,
    server: &str,
    tool: &str,
    input: Value,
) -> genkit_core::Result<MultipartToolResponse> {
    let action = host
        .tool(server, tool)
        .await?
        .unwrap_or_else(|| panic!("{server} has no tool {tool}"));
    let out = action.run_json(input, RunOptions::default()).await?.output;
    Ok(serde_json::from_value(out).expect("a multipart tool response"))
}

/// Everything one server offers, through the host.
async fn exercise(host: &McpHost, server: &str) {
    let tools = host.server_tools(server).await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    for t in ["add", "fail", "count", "picture", "add_tool", "hang", "die"] {
        assert!(
            names.contains(&format!("{server}/{t}").as_str()),
            "{names:?}"
        );
    }
    let add = tools
        .iter()
        .find(|t| t.name() == format!("{server}/add"))
        .unwrap();
    assert_eq!(add.desc().kind, genkit_core::ActionKind::ToolV2);
    assert_eq!(add.desc().description.as_deref(), Some("Adds two numbers."));
    assert_eq!(
        add.desc().input_schema.as_ref().unwrap()["required"],
        json!(["a", "b"])
    );

    // A tool that succeeds.
    let r = call(host, server, "add", json!({"a": 2, "b": 3}))
        .await
        .unwrap();
    assert_eq!(r.output, Some(json!("5")));

    // The input schema from the server is enforced before the call.
    let bad = call(host, server, "add", json!({"a": "two"}))
        .await
        .unwrap_err();
    assert_eq!(bad.status(), StatusCode::InvalidArgument, "{bad}");

    // isError: an error naming the server and the tool.
    let err = call(host, server, "fail", json!({"reason": "testing"}))
        .await
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains(&format!("`{server}`")) && msg.contains("`fail`"),
        "{msg}"
    );
    assert!(msg.contains("refused: testing"), "{msg}");

    // Progress reports stream as chunks of the tool action.
    let chunks = Arc::new(Mutex::new(Vec::new()));
    let sink = chunks.clone();
    let count = host.tool(server, "count").await.unwrap().unwrap();
    let out = count
        .run_json(
            json!({"to": 3}),
            RunOptions::default().on_chunk(move |c: Value| sink.lock().push(c)),
        )
        .await
        .unwrap()
        .output;
    assert_eq!(out["output"], json!("counted to 3"));
    // Reports overtaken by later ones are dropped (see `call_tool_raw`):
    // what arrives grows, and ends with the last step.
    let chunks = chunks.lock().clone();
    assert!(!chunks.is_empty() && chunks.len() <= 3, "{chunks:?}");
    let steps: Vec<f64> = chunks
        .iter()
        .map(|c| c["progress"].as_f64().unwrap())
        .collect();
    assert!(steps.windows(2).all(|w| w[0] < w[1]), "{chunks:?}");
    assert_eq!(
        chunks.last().unwrap(),
        &json!({"progress": 3.0, "total": 3.0, "message": "step 3"})
    );

    // An image and an embedded resource.
    let r = call(host, server, "picture", json!({})).await.unwrap();
    assert_eq!(
        r.output,
        Some(json!("a red pixel\n\nResource (test://caption.txt):\nred"))
    );
    let content = r.content.unwrap();
    let media = content[0].as_media().unwrap();
    assert!(
        media.url.starts_with("data:image/png;base64,iVBOR"),
        "{}",
        media.url
    );
    assert_eq!(media.content_type.as_deref(), Some("image/png"));

    // A prompt and a resource.
    let client = host.client(server).unwrap();
    let prompts = client.list_prompts().await.unwrap();
    assert_eq!(
        prompts,
        vec![("greet".to_owned(), Some("Greets someone.".to_owned()))]
    );
    let messages = host
        .get_prompt(
            server,
            "greet",
            BTreeMap::from([("name".into(), "Ada".into())]),
        )
        .await
        .unwrap();
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0].role, Role::User);
    assert_eq!(messages[0].text(), "Say hello to Ada.");
    let resources = client.list_resources().await.unwrap();
    assert_eq!(
        resources,
        vec![("test://readme".to_owned(), "readme".to_owned())]
    );
    let parts = host.read_resource(server, "test://readme").await.unwrap();
    assert_eq!(parts[0].as_text(), Some("This is the readme."));
    let missing = host.read_resource(server, "test://nope").await.unwrap_err();
    assert!(
        missing.to_string().contains(&format!("`{server}`")),
        "{missing}"
    );

    // A tool added at run time shows up after the server's list_changed.
    call(host, server, "add_tool", json!({"name": "late"}))
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if host.tool(server, "late").await.unwrap().is_some() {
            break;
        }
        assert!(Instant::now() < deadline, "the added tool never appeared");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let r = call(host, server, "late", json!({})).await.unwrap();
    assert_eq!(r.output, Some(json!("late")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drives_the_typescript_sdk_server_over_stdio_and_http() {
    let peer = http_server().await;
    let host = McpHost::with_servers(
        "host",
        [
            ("local", stdio_server(TIMEOUT)),
            ("remote", McpServerConfig::http(&peer.url).timeout(TIMEOUT)),
        ],
    )
    .await
    .unwrap();
    assert_eq!(host.server_names(), ["local", "remote"]);
    exercise(&host, "local").await;
    exercise(&host, "remote").await;
    assert_eq!(host.tools().await.len(), 16);
    host.disconnect("local").await.unwrap();
    assert_eq!(host.server_names(), ["remote"]);
    let gone = host.server_tools("local").await.unwrap_err();
    assert_eq!(gone.status(), StatusCode::NotFound);
    host.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_cannot_start_fails_the_connect_and_names_itself() {
    let err = McpHost::with_servers(
        "host",
        [
            ("good", stdio_server(TIMEOUT)),
            (
                "missing",
                McpServerConfig::stdio("/nonexistent/mcp-server", Vec::<String>::new()),
            ),
        ],
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("`missing`"), "{err}");

    // A process that exits before the handshake.
    let host = McpHost::new("host");
    let err = host
        .connect(
            "quits",
            McpServerConfig::stdio("node", ["-e", "process.exit(1)"]).timeout(TIMEOUT),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("`quits`"), "{err}");
    assert!(host.server_names().is_empty());

    // A process that never answers the handshake: the connect times out.
    let started = Instant::now();
    let err = host
        .connect(
            "silent",
            McpServerConfig::stdio("node", ["-e", "setInterval(() => {}, 1000)"])
                .timeout(Duration::from_secs(2)),
        )
        .await
        .unwrap_err();
    assert_eq!(err.status(), StatusCode::DeadlineExceeded, "{err}");
    assert!(err.to_string().contains("`silent`"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(10));

    // Nothing listens there.
    let err = host
        .connect(
            "nobody",
            McpServerConfig::http("http://127.0.0.1:9/mcp").timeout(TIMEOUT),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("`nobody`"), "{err}");
    let err = host
        .connect("tls", McpServerConfig::http("https://example.com/mcp"))
        .await
        .unwrap_err();
    assert_eq!(err.status(), StatusCode::InvalidArgument, "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_hangs_or_dies_mid_call_fails_in_time_and_the_others_keep_serving() {
    let peer = http_server().await;
    let short = Duration::from_secs(2);
    let host = McpHost::with_servers(
        "host",
        [
            ("dying", stdio_server(short)),
            ("hanging", McpServerConfig::http(&peer.url).timeout(short)),
            ("healthy", stdio_server(TIMEOUT)),
        ],
    )
    .await
    .unwrap();

    let started = Instant::now();
    let err = call(&host, "hanging", "hang", json!({})).await.unwrap_err();
    assert_eq!(err.status(), StatusCode::DeadlineExceeded, "{err}");
    assert!(
        err.to_string().contains("`hanging`") && err.to_string().contains("`hang`"),
        "{err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );

    let started = Instant::now();
    let err = call(&host, "dying", "die", json!({})).await.unwrap_err();
    assert!(err.to_string().contains("`dying`"), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    // The dead server keeps failing with its name; listing all tools skips it.
    let err = call(&host, "dying", "add", json!({"a": 1, "b": 1}))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("`dying`"), "{err}");

    // The other servers still answer.
    let r = call(&host, "healthy", "add", json!({"a": 1, "b": 2}))
        .await
        .unwrap();
    assert_eq!(r.output, Some(json!("3")));
    let r = call(&host, "hanging", "add", json!({"a": 1, "b": 3}))
        .await
        .unwrap();
    assert_eq!(r.output, Some(json!("4")));

    // Reconnecting replaces the dead connection.
    host.connect("dying", stdio_server(TIMEOUT)).await.unwrap();
    let r = call(&host, "dying", "add", json!({"a": 2, "b": 2}))
        .await
        .unwrap();
    assert_eq!(r.output, Some(json!("4")));
    host.close().await;
}
