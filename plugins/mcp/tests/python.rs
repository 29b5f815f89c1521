//! The host against a real MCP server written with the official Python SDK
//! (PyPI `mcp` 2.3: `tests-support/mcp/server.py`), over stdio and
//! Streamable HTTP. Skipped, loudly, when `GENKIT_TEST_MCP_PYTHON` is unset
//! (`test.sh` installs the SDK and sets it).

mod support;

use genkit_core::{RunOptions, StatusCode};
use genkit_mcp::{McpHandshake, McpHost, McpServerConfig};
use genkit_model::types::{MultipartToolResponse, Role};
use parking_lot::Mutex;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::{python_http_server, python_peer, python_stdio_server};

const TIMEOUT: Duration = Duration::from_secs(30);

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

/// Everything the Python server offers, through the host.
async fn exercise(host: &McpHost, server: &str) {
    // The Python SDK 2.3 answers rmcp's `initialize` with 2025-11-25 too.
    assert_eq!(host.protocol_version(server).unwrap(), "2025-11-25");
    assert_eq!(
        host.client(server).unwrap().server_info().unwrap().0,
        "genkit-rs-python-peer"
    );

    let tools = host.server_tools(server).await.unwrap();
    let mut names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    names.sort();
    let expected: Vec<String> = ["add", "count", "fail", "hang", "picture"]
        .iter()
        .map(|t| format!("{server}/{t}"))
        .collect();
    assert_eq!(names, expected);
    let add = tools
        .iter()
        .find(|t| t.name() == format!("{server}/add"))
        .unwrap();
    assert_eq!(add.desc().description.as_deref(), Some("Adds two numbers."));
    assert_eq!(
        add.desc().input_schema.as_ref().unwrap()["required"],
        json!(["a", "b"])
    );

    let r = call(host, server, "add", json!({"a": 2, "b": 3}))
        .await
        .unwrap();
    assert_eq!(r.output, Some(json!("5")));
    let bad = call(host, server, "add", json!({"a": "two"}))
        .await
        .unwrap_err();
    assert_eq!(bad.status(), StatusCode::InvalidArgument, "{bad}");

    // The SDK turns the tool's exception into an isError result.
    let err = call(host, server, "fail", json!({"reason": "testing"}))
        .await
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains(&format!("`{server}`")) && msg.contains("`fail`"),
        "{msg}"
    );
    assert!(msg.contains("refused: testing"), "{msg}");

    // Progress reports stream as chunks, in increasing order.
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
    let media = r.content.as_ref().unwrap()[0].as_media().unwrap().clone();
    assert!(
        media.url.starts_with("data:image/png;base64,iVBOR"),
        "{}",
        media.url
    );

    // A prompt, a resource and a templated resource.
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
    let client = host.client(server).unwrap();
    assert_eq!(
        client.list_resources().await.unwrap(),
        vec![("test://readme".to_owned(), "readme".to_owned())]
    );
    let parts = host.read_resource(server, "test://readme").await.unwrap();
    assert_eq!(parts[0].as_text(), Some("This is the readme."));
    let templates = host.resource_templates(server).await.unwrap();
    assert_eq!(templates.len(), 1, "{templates:?}");
    assert_eq!(templates[0].uri_template, "test://greeting/{name}");
    let parts = host
        .read_template(
            server,
            "greeting",
            &BTreeMap::from([("name".to_owned(), "Ada".to_owned())]),
        )
        .await
        .unwrap();
    assert_eq!(parts[0].as_text(), Some("Hello, Ada!"));
    let missing = host.read_resource(server, "test://nope").await.unwrap_err();
    assert!(
        missing.to_string().contains(&format!("`{server}`")),
        "{missing}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drives_the_python_sdk_server_over_stdio_and_http() {
    let Some((python, script)) = python_peer() else {
        return;
    };
    let peer = python_http_server(&python, &script).await;
    let host = McpHost::with_servers(
        "host",
        [
            ("local", python_stdio_server(&python, &script, TIMEOUT)),
            ("remote", McpServerConfig::http(&peer.url).timeout(TIMEOUT)),
        ],
    )
    .await
    .unwrap();
    exercise(&host, "local").await;
    exercise(&host, "remote").await;
    assert_eq!(host.tools().await.len(), 10);
    host.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_tool_that_never_answers_times_out_naming_the_server() {
    let Some((python, script)) = python_peer() else {
        return;
    };
    let peer = python_http_server(&python, &script).await;
    // Long enough for a Python interpreter to start on a loaded machine.
    let short = Duration::from_secs(5);
    let host = McpHost::with_servers(
        "host",
        [
            ("local", python_stdio_server(&python, &script, short)),
            ("remote", McpServerConfig::http(&peer.url).timeout(short)),
        ],
    )
    .await
    .unwrap();
    for server in ["local", "remote"] {
        let started = Instant::now();
        let err = call(&host, server, "hang", json!({})).await.unwrap_err();
        assert_eq!(err.status(), StatusCode::DeadlineExceeded, "{err}");
        assert!(
            err.to_string().contains(&format!("`{server}`")) && err.to_string().contains("`hang`"),
            "{err}"
        );
        assert!(started.elapsed() < Duration::from_secs(15));
        // The server still answers the next call.
        let r = call(&host, server, "add", json!({"a": 1, "b": 1}))
            .await
            .unwrap();
        assert_eq!(r.output, Some(json!("2")));
    }
    host.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stateless_2026_07_28_revision_through_server_discover() {
    let Some((python, script)) = python_peer() else {
        return;
    };
    let peer = python_http_server(&python, &script).await;
    let ts_peer = support::http_server().await;
    let host = McpHost::with_servers(
        "host",
        [
            (
                "local",
                python_stdio_server(&python, &script, TIMEOUT).handshake(McpHandshake::Discover),
            ),
            (
                "remote",
                McpServerConfig::http(&peer.url)
                    .timeout(TIMEOUT)
                    .handshake(McpHandshake::Auto),
            ),
            // The TypeScript SDK 1.32 does not know `server/discover`: Auto
            // falls back to `initialize`.
            (
                "ts",
                McpServerConfig::http(&ts_peer.url)
                    .timeout(TIMEOUT)
                    .handshake(McpHandshake::Auto),
            ),
        ],
    )
    .await
    .unwrap();
    assert_eq!(host.protocol_version("ts").unwrap(), "2025-11-25");
    for server in ["local", "remote"] {
        assert_eq!(host.protocol_version(server).unwrap(), "2026-07-28");
        assert!(!host.client(server).unwrap().notifies_list_changes());
        assert_eq!(host.server_tools(server).await.unwrap().len(), 5);
        let r = call(&host, server, "add", json!({"a": 40, "b": 2}))
            .await
            .unwrap();
        assert_eq!(r.output, Some(json!("42")));
        let err = call(&host, server, "fail", json!({"reason": "stateless"}))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("refused: stateless"), "{err}");
        // Progress reports ride the request's own response stream.
        let chunks = Arc::new(Mutex::new(Vec::new()));
        let sink = chunks.clone();
        let count = host.tool(server, "count").await.unwrap().unwrap();
        count
            .run_json(
                json!({"to": 2}),
                RunOptions::default().on_chunk(move |c: Value| sink.lock().push(c)),
            )
            .await
            .unwrap();
        assert_eq!(
            chunks.lock().last(),
            Some(&json!({"progress": 2.0, "total": 2.0, "message": "step 2"})),
            "{server}"
        );
        let parts = host.read_resource(server, "test://readme").await.unwrap();
        assert_eq!(parts[0].as_text(), Some("This is the readme."));
        let messages = host
            .get_prompt(
                server,
                "greet",
                BTreeMap::from([("name".into(), "Ada".into())]),
            )
            .await
            .unwrap();
        assert_eq!(messages[0].text(), "Say hello to Ada.");
    }
    // A server that only speaks `initialize` cannot be reached with Discover.
    let err = host
        .connect(
            "ts-discover",
            McpServerConfig::http(&ts_peer.url)
                .timeout(TIMEOUT)
                .handshake(McpHandshake::Discover),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("`ts-discover`"), "{err}");
    host.close().await;
}
