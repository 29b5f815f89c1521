//! Per-server controls of the host against the TypeScript SDK server
//! (`tests-support/mcp/server.mjs`): enable/disable/reconnect, tool
//! filtering, resource templates and the negotiated protocol version.

mod support;

use genkit_core::{Registry, RunOptions, StatusCode};
use genkit_mcp::{McpHost, McpServerConfig};
use serde_json::json;
use std::collections::BTreeMap;
use std::time::Duration;
use support::{http_server, stdio_server};

const TIMEOUT: Duration = Duration::from_secs(20);

fn names(tools: &[genkit_core::DynAction]) -> Vec<String> {
    let mut names: Vec<String> = tools.iter().map(|t| t.name().to_owned()).collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disabled_server_stays_configured_and_enable_reconnects_it() {
    let registry = Registry::new();
    let host = McpHost::with_servers(
        "mcp",
        [
            ("a", stdio_server(TIMEOUT)),
            // Configured disabled: recorded, not started.
            ("b", stdio_server(TIMEOUT).disabled(true)),
        ],
    )
    .await
    .unwrap();
    host.register(&registry).unwrap();
    assert_eq!(host.server_names(), ["a", "b"]);
    assert!(host.is_enabled("a").unwrap());
    assert!(!host.is_enabled("b").unwrap());
    assert_eq!(host.tools().await.len(), 7);
    let err = host.server_tools("b").await.unwrap_err();
    assert_eq!(err.status(), StatusCode::FailedPrecondition, "{err}");
    assert!(err.to_string().contains("`b`") && err.to_string().contains("disabled"));

    // A tool action taken before the server was disabled says so when called.
    let add = registry
        .lookup_action("/dynamic-action-provider/mcp:tool/a/add")
        .await
        .unwrap()
        .unwrap();
    host.disable("a").await.unwrap();
    host.disable("a").await.unwrap(); // already disabled: nothing to do
    assert!(!host.is_enabled("a").unwrap());
    assert_eq!(host.server_names(), ["a", "b"]);
    assert!(host.tools().await.is_empty());
    assert!(
        registry
            .resolve_actions("/dynamic-action-provider/mcp:tool/*")
            .await
            .unwrap()
            .is_empty()
    );
    let err = add
        .run_json(json!({"a": 1, "b": 2}), RunOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.status(), StatusCode::FailedPrecondition, "{err}");
    assert!(
        err.to_string().contains("`a`") && err.to_string().contains("disabled"),
        "{err}"
    );
    let err = host.read_resource("a", "test://readme").await.unwrap_err();
    assert!(err.to_string().contains("disabled"), "{err}");

    // Enabling reconnects (a new server process) with the stored config.
    host.enable("a").await.unwrap();
    host.enable("b").await.unwrap();
    host.enable("b").await.unwrap(); // already enabled: nothing to do
    assert_eq!(host.tools().await.len(), 14);
    let out = add
        .run_json(json!({"a": 1, "b": 2}), RunOptions::default())
        .await
        .unwrap()
        .output;
    assert_eq!(out["output"], json!("3"));

    // Reconnect replaces a connection whose server died.
    let die = host.tool("b", "die").await.unwrap().unwrap();
    die.run_json(json!({}), RunOptions::default())
        .await
        .unwrap_err();
    host.reconnect("b").await.unwrap();
    let add_b = host.tool("b", "add").await.unwrap().unwrap();
    let out = add_b
        .run_json(json!({"a": 2, "b": 2}), RunOptions::default())
        .await
        .unwrap()
        .output;
    assert_eq!(out["output"], json!("4"));

    // Unknown servers are NOT_FOUND for every control.
    for err in [
        host.enable("zz").await.unwrap_err(),
        host.disable("zz").await.unwrap_err(),
        host.reconnect("zz").await.unwrap_err(),
        host.is_enabled("zz").unwrap_err(),
    ] {
        assert_eq!(err.status(), StatusCode::NotFound, "{err}");
    }

    // A server that cannot be enabled stays disabled and the error names it.
    host.connect(
        "broken",
        McpServerConfig::stdio("/nonexistent/mcp-server", Vec::<String>::new()).disabled(true),
    )
    .await
    .unwrap();
    let err = host.enable("broken").await.unwrap_err();
    assert!(err.to_string().contains("`broken`"), "{err}");
    assert!(!host.is_enabled("broken").unwrap());
    host.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_filters_hide_tools_from_listings_and_lookups() {
    let registry = Registry::new();
    let host = McpHost::with_servers(
        "mcp",
        [
            (
                "some",
                stdio_server(TIMEOUT).allowed_tools(["add", "p*", "fail"]),
            ),
            (
                "most",
                stdio_server(TIMEOUT).excluded_tools(["die", "hang"]),
            ),
            (
                "both",
                stdio_server(TIMEOUT)
                    .allowed_tools(["a*"])
                    .excluded_tools(["add_tool"]),
            ),
        ],
    )
    .await
    .unwrap();
    host.register(&registry).unwrap();
    assert_eq!(
        names(&host.server_tools("some").await.unwrap()),
        ["some/add", "some/fail", "some/picture"]
    );
    assert_eq!(
        names(&host.server_tools("most").await.unwrap()),
        [
            "most/add",
            "most/add_tool",
            "most/count",
            "most/fail",
            "most/picture"
        ]
    );
    assert_eq!(
        names(&host.server_tools("both").await.unwrap()),
        ["both/add"]
    );
    assert!(host.tool("some", "die").await.unwrap().is_none());
    assert!(
        registry
            .lookup_action("/dynamic-action-provider/mcp:tool/most/hang")
            .await
            .unwrap()
            .is_none()
    );
    let all = registry
        .resolve_actions("/dynamic-action-provider/mcp:tool/*")
        .await
        .unwrap();
    assert_eq!(all.len(), 9);

    // A tool the server adds later is filtered too.
    let add_tool = host.tool("most", "add_tool").await.unwrap().unwrap();
    add_tool
        .run_json(json!({"name": "hang_later"}), RunOptions::default())
        .await
        .unwrap();
    add_tool
        .run_json(json!({"name": "late"}), RunOptions::default())
        .await
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while host.tool("most", "late").await.unwrap().is_none() {
        assert!(
            std::time::Instant::now() < deadline,
            "`late` never appeared"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        host.tool("most", "hang_later").await.unwrap().is_some(),
        "`hang_later` is not excluded (only `hang` is)"
    );
    host.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resource_templates_and_the_negotiated_protocol_version() {
    let peer = http_server().await;
    let host = McpHost::with_servers(
        "mcp",
        [
            ("local", stdio_server(TIMEOUT)),
            ("remote", McpServerConfig::http(&peer.url).timeout(TIMEOUT)),
        ],
    )
    .await
    .unwrap();
    for server in ["local", "remote"] {
        // The TypeScript SDK 1.32 answers rmcp's `initialize` with 2025-11-25.
        assert_eq!(host.protocol_version(server).unwrap(), "2025-11-25");
        let info = host.client(server).unwrap().server_info().unwrap();
        assert_eq!(info, ("genkit-rs-test-peer".into(), "1.0.0".into()));

        let templates = host.resource_templates(server).await.unwrap();
        assert_eq!(templates.len(), 1, "{templates:?}");
        assert_eq!(templates[0].uri_template, "test://greeting/{name}");
        assert_eq!(templates[0].name, "greeting");
        assert_eq!(templates[0].mime_type.as_deref(), Some("text/plain"));

        let parts = host
            .read_resource(server, "test://greeting/Ada")
            .await
            .unwrap();
        assert_eq!(parts[0].as_text(), Some("Hello, Ada!"));
        let values = BTreeMap::from([("name".to_owned(), "Ada Lovelace".to_owned())]);
        let parts = host
            .read_template(server, "greeting", &values)
            .await
            .unwrap();
        assert_eq!(parts[0].as_text(), Some("Hello, Ada Lovelace!"));
        let err = host
            .read_template(server, "nope", &values)
            .await
            .unwrap_err();
        assert_eq!(err.status(), StatusCode::NotFound, "{err}");
        assert!(err.to_string().contains(&format!("`{server}`")), "{err}");
    }
    host.disable("remote").await.unwrap();
    let err = host.protocol_version("remote").unwrap_err();
    assert!(err.to_string().contains("disabled"), "{err}");
    host.close().await;
}
