//! The app the real-tool tests drive: a few flows and two test models, the
//! dev tooling (active under `genkit start`, which sets `GENKIT_ENV=dev`) and,
//! when `GENKIT_TEST_FLOW_PORT` is set, a flow server on 127.0.0.1 at that port.
//!
//! Flows: `hello` (`"x"` -> `"Hello, x!"`), `streamy` (streams `{count: i}`
//! for i < n, then `"done n, streamed: k times"`), `fail` (internal error
//! `boom`), `denied` (user-facing PERMISSION_DENIED), `nested` (a flow step
//! and a call of `hello`), `whoami` (returns the action context; served with
//! the API key `test-key`), `forever` (streams one chunk, then never ends;
//! for shutdown tests), `chat` (bidirectional: streams `<init><input>` per
//! input, then `"<n> turns"`). With `GENKIT_TEST_DRAIN_MS`, the flow server's drain
//! deadline is that many milliseconds. Models: `customReflector` (echoes the request as
//! canonical JSON, with character usage) and `echoModel` (a deterministic
//! model for `genkit dev:test-model`).

use genkit_core::action::{BidiAction, BidiInputs};
use genkit_core::flow::{define_flow, define_streaming_flow};
use genkit_core::tracing::run;
use genkit_core::{Action, ActionCtx, ActionDesc, ActionKind, Error, Registry, StatusCode};
use genkit_server::context_providers::api_key;
use genkit_server::{FlowServer, ServeOptions, shutdown};
use serde_json::{Map, Value, json};
use std::time::Duration;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    if let Err(e) = run_app().await {
        eprintln!("test runtime failed: {e}");
        std::process::exit(1);
    }
}

async fn run_app() -> Result<(), Box<dyn std::error::Error>> {
    let registry = Registry::new();
    define(&registry)?;
    let dev = genkit_server::start_dev_tooling(&registry).await?;
    if let Some(d) = &dev {
        eprintln!(
            "reflection server on {} (runtime {})",
            d.url(),
            d.runtime_id()
        );
    }
    match std::env::var("GENKIT_TEST_FLOW_PORT") {
        Ok(port) => {
            let port: u16 = port.trim().parse()?;
            let mut options = ServeOptions::new();
            if let Ok(ms) = std::env::var("GENKIT_TEST_DRAIN_MS") {
                options = options.drain_timeout(Duration::from_millis(ms.trim().parse()?));
            }
            let server = FlowServer::new(&registry)
                .flows([
                    "hello", "streamy", "fail", "denied", "nested", "slow", "forever",
                ])
                .flow_with_context("whoami", api_key("test-key"))
                .serve_options(options);
            eprintln!("flow server on http://127.0.0.1:{port}");
            server.serve(("127.0.0.1", port)).await?;
        }
        Err(_) => shutdown::signal().await,
    }
    if let Some(d) = dev {
        d.shutdown().await;
    }
    Ok(())
}

fn define(registry: &Registry) -> Result<(), Error> {
    define_flow(registry, "hello", |name: String, _| async move {
        Ok(format!("Hello, {name}!"))
    })?;
    define_streaming_flow(registry, "streamy", |count: u32, ctx| async move {
        let mut sent = 0;
        if ctx.is_streaming() {
            for i in 0..count {
                ctx.send_chunk(json!({ "count": i }));
                sent += 1;
            }
        }
        Ok(format!("done {count}, streamed: {sent} times"))
    })?;
    define_flow(registry, "fail", |_: Value, _| async move {
        Err::<Value, _>(Error::internal("boom"))
    })?;
    define_flow(registry, "denied", |_: Value, _| async move {
        Err::<Value, _>(Error::user_facing(
            StatusCode::PermissionDenied,
            "not for you",
        ))
    })?;
    define_flow(registry, "whoami", |_: Value, ctx| async move {
        Ok(ctx.context.to_value())
    })?;
    define_streaming_flow(registry, "slow", |ms: u64, ctx| async move {
        for i in 0..(ms / 50).max(1) {
            ctx.send_chunk(i);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(ms)
    })?;
    define_streaming_flow(registry, "forever", |_: Value, ctx| async move {
        ctx.send_chunk(json!("started"));
        std::future::pending::<()>().await;
        Ok(json!("unreachable"))
    })?;
    let hello_key = "/flow/hello";
    let reg = registry.clone();
    define_flow(registry, "nested", move |name: String, _| {
        let reg = reg.clone();
        async move {
            let upper = run("shout", async move { Ok(name.to_uppercase()) }).await?;
            let hello = reg.require_action(hello_key).await?;
            let out = hello
                .run_json(Value::from(upper), Default::default())
                .await?;
            Ok(out.output)
        }
    })?;
    registry.register(custom_reflector()?)?;
    registry.register(echo_model()?)?;
    // A bidirectional flow: streams `<init><input>` for each input, then
    // answers with the number of turns.
    BidiAction::<String, String, String, String>::define(
        registry,
        ActionKind::Flow,
        "chat",
        |prefix: String, mut inputs: BidiInputs<String>, ctx: ActionCtx<String>| async move {
            let mut turns = 0;
            while let Some(input) = inputs.recv().await {
                ctx.send_chunk(format!("{prefix}{}", input?));
                turns += 1;
            }
            Ok(format!("{turns} turns"))
        },
    )?;
    Ok(())
}

/// Go's test app model: the request as JSON text (keys sorted), with
/// character counts as usage.
fn custom_reflector() -> Result<Action<Value, Value, Value>, Error> {
    let desc = ActionDesc::new(ActionKind::Model, "customReflector").with_metadata(
        "model",
        json!({"label": "customReflector", "supports": {"multiturn": true}}),
    );
    Action::from_desc(desc, |req: Value, _| async move {
        let text = serde_json::to_string(&sorted(&req))?;
        let response = json!({
            "finishReason": "stop",
            "message": {"role": "model", "content": [{"text": text}]},
            "usage": {
                "inputCharacters": text_chars(&req),
                "outputCharacters": text.chars().count(),
            },
        });
        Ok(response)
    })
}

/// A deterministic model: a tool request for the first tool when tools are
/// offered and none answered yet; a JSON value built from the output schema
/// when JSON output is asked for; otherwise the conversation's text, prefixed
/// with `RESPONSE: ` when there is a system message. Streams its content in
/// small text chunks.
fn echo_model() -> Result<Action<Value, Value, Value>, Error> {
    let desc = ActionDesc::new(ActionKind::Model, "echoModel").with_metadata(
        "model",
        json!({
            "label": "Echo test model",
            "supports": {
                "multiturn": true, "tools": true, "systemRole": true,
                "media": false, "output": ["text", "json"], "constrained": "all"
            }
        }),
    );
    Action::from_desc(desc, |req: Value, ctx| async move {
        let messages = req
            .get("messages")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let answered_tools = messages
            .iter()
            .any(|m| m.get("role") == Some(&json!("tool")));
        let first_tool = req
            .get("tools")
            .and_then(Value::as_array)
            .and_then(|t| t.first())
            .cloned();
        let content = match (first_tool, answered_tools) {
            (Some(tool), false) => {
                let input = sample(tool.get("inputSchema").unwrap_or(&Value::Null));
                vec![
                    json!({"toolRequest": {"name": tool.get("name").cloned().unwrap_or(Value::Null), "ref": "0", "input": input}}),
                ]
            }
            _ => {
                let output = req.get("output");
                let text = if output.and_then(|o| o.get("format")) == Some(&json!("json")) {
                    serde_json::to_string(&sample(
                        output.and_then(|o| o.get("schema")).unwrap_or(&Value::Null),
                    ))?
                } else {
                    let system = messages
                        .iter()
                        .any(|m| m.get("role") == Some(&json!("system")));
                    let said: Vec<String> = messages
                        .iter()
                        .filter(|m| m.get("role") != Some(&json!("system")))
                        .flat_map(texts)
                        .collect();
                    format!(
                        "{}{}",
                        if system { "RESPONSE: " } else { "" },
                        said.join("\n")
                    )
                };
                vec![json!({ "text": text })]
            }
        };
        if ctx.is_streaming() {
            for part in &content {
                match part.get("text").and_then(Value::as_str) {
                    Some(text) => {
                        let chars: Vec<char> = text.chars().collect();
                        for piece in chars.chunks(8) {
                            let piece: String = piece.iter().collect();
                            ctx.send_chunk(
                                json!({"index": 0, "role": "model", "content": [{"text": piece}]}),
                            );
                        }
                    }
                    None => ctx.send_chunk(json!({"index": 0, "role": "model", "content": [part]})),
                }
            }
        }
        Ok(json!({
            "finishReason": "stop",
            "message": {"role": "model", "content": content},
            "usage": {"inputCharacters": text_chars(&req)},
        }))
    })
}

/// The texts of a message's parts.
fn texts(message: &Value) -> Vec<String> {
    message
        .get("content")
        .and_then(Value::as_array)
        .map(|parts| {
            parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str).map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Characters in the text parts of a request's messages.
fn text_chars(req: &Value) -> usize {
    req.get("messages")
        .and_then(Value::as_array)
        .map(|ms| ms.iter().flat_map(texts).map(|t| t.chars().count()).sum())
        .unwrap_or(0)
}

/// The value with object keys sorted, as Go's `encoding/json` writes maps.
fn sorted(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let mut out = Map::new();
            for k in keys {
                out.insert(k.clone(), sorted(&m[k]));
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// A value matching a (simple) JSON schema.
fn sample(schema: &Value) -> Value {
    match schema.get("type").and_then(Value::as_str) {
        Some("object") => {
            let mut out = Map::new();
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (k, s) in props {
                    out.insert(k.clone(), sample(s));
                }
            }
            Value::Object(out)
        }
        Some("array") => Value::Array(vec![sample(schema.get("items").unwrap_or(&Value::Null))]),
        Some("string") => Value::from("test"),
        Some("number") => Value::from(4.5),
        Some("integer") => Value::from(42),
        Some("boolean") => Value::Bool(true),
        _ => Value::Null,
    }
}
