//! The server's `list_changed` notifications, received by the official
//! TypeScript SDK client (`tests-support/mcp/list-changed-client.mjs`):
//! a tool, a prompt and a resource registered after the client connected
//! are announced, and the client's next listing has them.

use genkit_core::{Action, ActionDesc, ActionKind, Registry};
use genkit_mcp::{McpServer, McpServerOptions};
use genkit_model::resource::{ResourceOptions, ResourceOutput, define_resource};
use genkit_model::tool::define_tool;
use genkit_model::types::Part;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Serialize, Deserialize, JsonSchema)]
struct NoInput {}

/// A registry whose tool `grow` registers a tool, a prompt and a resource.
fn registry() -> Registry {
    let registry = Registry::new();
    let weak = registry.downgrade();
    define_tool(
        &registry,
        "grow",
        "Registers more actions.",
        move |_: NoInput, _ctx| {
            let registry = weak.upgrade();
            async move {
                let registry = registry.ok_or_else(|| genkit_core::Error::internal("gone"))?;
                define_tool(
                    &registry,
                    "late",
                    "Added later.",
                    |_: NoInput, _ctx| async { Ok("late".to_owned()) },
                )?;
                let prompt = ActionDesc::new(ActionKind::Prompt, "late_prompt");
                let prompt = Action::<Value, Value>::from_desc(prompt, |_input, _ctx| async {
                    Ok(json!({"messages": [{"role": "user", "content": [{"text": "hi"}]}]}))
                })?;
                registry.register(prompt.to_dyn())?;
                define_resource(
                    &registry,
                    ResourceOptions::uri("late_resource", "test://late"),
                    |_input, _ctx| async { Ok(ResourceOutput::new(vec![Part::text("late")])) },
                )?;
                Ok("grown".to_owned())
            }
        },
    )
    .unwrap();
    registry
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn actions_registered_later_are_announced_to_connected_clients() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests-support/mcp");
    if !dir
        .join("node_modules/@modelcontextprotocol/sdk/package.json")
        .exists()
    {
        eprintln!("skipped: run `npm ci` in tests-support/mcp for the TypeScript SDK client");
        return;
    }
    let registry = registry();
    let server = McpServer::new(&registry, McpServerOptions::new("growing"));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(server.serve_http(listener, async {
        let _ = stopped.await;
    }));

    let mut cmd = tokio::process::Command::new("node");
    cmd.arg(dir.join("list-changed-client.mjs"))
        .arg(&url)
        .kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .expect("the client finishes")
        .expect("running node");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .expect("JSON");
    let seen: Value = serde_json::from_str(line).unwrap();

    for kind in ["tools", "prompts", "resources"] {
        assert_eq!(seen["capabilities"][kind]["listChanged"], true, "{seen}");
    }
    assert_eq!(seen["before"], json!(["grow"]), "{seen}");
    assert_eq!(
        seen["notified"],
        json!(["prompts", "resources", "tools"]),
        "{seen}"
    );
    assert_eq!(seen["tools"], json!(["grow", "late"]), "{seen}");
    assert_eq!(seen["prompts"], json!(["late_prompt"]), "{seen}");
    assert_eq!(seen["resources"], json!(["test://late"]), "{seen}");

    let _ = stop.send(());
    tokio::time::timeout(Duration::from_secs(20), serving)
        .await
        .expect("the server stops")
        .expect("the server task")
        .expect("serving HTTP");
}
