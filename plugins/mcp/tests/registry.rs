//! The host as a dynamic action provider: MCP tools by key and by pattern,
//! found on demand (servers connected later, tools added later), and called
//! by a scripted model in `generate`'s tool loop. The server is the real
//! TypeScript SDK one (`tests-support/mcp/server.mjs`).

mod support;

use genkit_core::{Registry, RunOptions};
use genkit_generate::{GenerateOptions, generate};
use genkit_mcp::{McpHost, McpServerConfig};
use genkit_model::testing::ProgrammableModel;
use serde_json::json;
use std::time::{Duration, Instant};
use support::{http_server, stdio_server};

const TIMEOUT: Duration = Duration::from_secs(20);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_tools_resolve_on_demand_and_run_in_the_generate_tool_loop() {
    let registry = Registry::new();
    let host = McpHost::new("mcp");
    let dap = host.register(&registry).unwrap();
    assert_eq!(dap.key(), "/dynamic-action-provider/mcp");

    // No servers yet: nothing resolves.
    let add_key = "/dynamic-action-provider/mcp:tool/local/add";
    assert!(registry.lookup_action(add_key).await.unwrap().is_none());

    // Connected after registration: found without re-registering.
    host.connect("local", stdio_server(TIMEOUT)).await.unwrap();
    let add = registry.lookup_action(add_key).await.unwrap().unwrap();
    assert_eq!(add.name(), "local/add");
    let out = add
        .run_json(json!({"a": 1, "b": 2}), RunOptions::default())
        .await
        .unwrap()
        .output;
    assert_eq!(out["output"], json!("3"));

    let peer = http_server().await;
    host.connect("remote", McpServerConfig::http(&peer.url).timeout(TIMEOUT))
        .await
        .unwrap();
    let all = registry
        .resolve_actions("/dynamic-action-provider/mcp:tool/*")
        .await
        .unwrap();
    assert_eq!(
        all.len(),
        14,
        "{:?}",
        all.iter().map(|a| a.name()).collect::<Vec<_>>()
    );
    let remote = registry
        .resolve_actions("/dynamic-action-provider/mcp:tool/remote/*")
        .await
        .unwrap();
    assert_eq!(remote.len(), 7);
    let listed = registry.list_resolvable_actions().await;
    assert!(listed.contains_key("/dynamic-action-provider/mcp:tool/remote/picture"));

    // A tool added later by the server (tools/list_changed) appears.
    let add_tool = registry
        .lookup_action("/dynamic-action-provider/mcp:tool/remote/add_tool")
        .await
        .unwrap()
        .unwrap();
    add_tool
        .run_json(json!({"name": "late"}), RunOptions::default())
        .await
        .unwrap();
    let late = "/dynamic-action-provider/mcp:tool/remote/late";
    let deadline = Instant::now() + Duration::from_secs(10);
    while registry.lookup_action(late).await.unwrap().is_none() {
        assert!(Instant::now() < deadline, "the added tool never appeared");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // A scripted model calls MCP tools in generate's tool loop, the tools
    // named as in Genkit JS: one by `<host>:tool/<server>/<tool>`, the
    // picture through a prefix pattern.
    let model = ProgrammableModel::define(&registry, "scripted")
        .respond_tool_call("add", json!({"a": 20, "b": 22}))
        .respond_tool_call("picture", json!({}))
        .respond_text("done");
    let response = generate(
        &registry,
        GenerateOptions::prompt("add, then draw")
            .model("scripted")
            .tool("mcp:tool/local/add")
            .tool("mcp:tool/remote/pic*"),
    )
    .await
    .unwrap();
    assert_eq!(response.text(), "done");
    let requests = model.requests();
    let tool_names: Vec<&str> = requests[0]
        .tools
        .iter()
        .flat_map(|t| t.iter())
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(tool_names, ["add", "picture"]);
    let added = requests[1].messages.last().unwrap().content[0]
        .as_tool_response()
        .unwrap()
        .clone();
    assert_eq!(added.output, Some(json!("42")));
    let drawn = requests[2].messages.last().unwrap().content[0]
        .as_tool_response()
        .unwrap()
        .clone();
    let media = drawn.content.as_ref().unwrap()[0].as_media().unwrap();
    assert!(
        media.url.starts_with("data:image/png;base64,"),
        "{}",
        media.url
    );

    // An MCP tool error ends the generate call with the server's name.
    ProgrammableModel::define(&registry, "failing")
        .respond_tool_call("fail", json!({"reason": "no"}));
    let err = generate(
        &registry,
        GenerateOptions::prompt("x")
            .model("failing")
            .tool("mcp:tool/local/fail"),
    )
    .await
    .unwrap_err();
    assert!(
        err.to_string().contains("`local`") && err.to_string().contains("`fail`"),
        "{err}"
    );
    host.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_prompts_and_resources_are_registry_actions() {
    use genkit_model::resource::find_matching_resource;
    use genkit_model::types::{GenerateActionOptions, GenerateRequest};

    let registry = Registry::new();
    let host = McpHost::new("mcp");
    host.register(&registry).unwrap();
    host.connect("local", stdio_server(TIMEOUT)).await.unwrap();

    // The server's prompt, under both prompt kinds, with its arguments as
    // the input schema.
    let listed = registry.list_resolvable_actions().await;
    let greet = &listed["/dynamic-action-provider/mcp:prompt/local/greet"];
    assert_eq!(
        greet.input_schema.as_ref().unwrap()["required"],
        json!(["name"])
    );
    assert!(listed.contains_key("/dynamic-action-provider/mcp:executable-prompt/local/greet"));
    assert!(listed.contains_key("/dynamic-action-provider/mcp:resource/local/readme"));
    assert!(listed.contains_key("/dynamic-action-provider/mcp:resource/local/greeting"));

    let prompt = registry
        .lookup_action("/dynamic-action-provider/mcp:prompt/local/greet")
        .await
        .unwrap()
        .unwrap();
    let out = prompt
        .run_json(json!({"name": "Ada"}), RunOptions::default())
        .await
        .unwrap()
        .output;
    let request: GenerateRequest = serde_json::from_value(out).unwrap();
    assert_eq!(request.messages[0].text(), "Say hello to Ada.");

    // `generate` takes the executable prompt's messages.
    let options = registry
        .lookup_action("/dynamic-action-provider/mcp:executable-prompt/local/greet")
        .await
        .unwrap()
        .unwrap()
        .run_json(json!({"name": "Bob"}), RunOptions::default())
        .await
        .unwrap()
        .output;
    let options: GenerateActionOptions = serde_json::from_value(options).unwrap();
    let model = ProgrammableModel::define(&registry, "echo").respond_text("hello Bob");
    let response = generate(
        &registry,
        GenerateOptions::messages(options.messages).model("echo"),
    )
    .await
    .unwrap();
    assert_eq!(response.text(), "hello Bob");
    assert_eq!(model.requests()[0].messages[0].text(), "Say hello to Bob.");

    // Resources are found by URI through the registry: a fixed one and a
    // template's.
    let readme = find_matching_resource(&registry, &[], "test://readme")
        .await
        .unwrap()
        .expect("the server's readme");
    assert_eq!(readme.name(), "local/readme");
    let content = readme.read("test://readme").await.unwrap().content;
    assert_eq!(content[0].as_text(), Some("This is the readme."));
    let greeting = find_matching_resource(&registry, &[], "test://greeting/Ada")
        .await
        .unwrap()
        .expect("the server's greeting template");
    let content = greeting.read("test://greeting/Ada").await.unwrap().content;
    assert_eq!(content[0].as_text(), Some("Hello, Ada!"));
    assert!(
        find_matching_resource(&registry, &[], "test://nothing")
            .await
            .unwrap()
            .is_none()
    );

    // A disabled server's prompts and resources vanish; calls fail saying so.
    host.disable("local").await.unwrap();
    assert!(
        registry
            .lookup_action("/dynamic-action-provider/mcp:prompt/local/greet")
            .await
            .unwrap()
            .is_none()
    );
    let err = prompt
        .run_json(json!({"name": "Ada"}), RunOptions::default())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("disabled"), "{err}");
    host.close().await;
}
