//! The Genkit registry the MCP conformance suite's server scenarios expect
//! (npm `@modelcontextprotocol/conformance`), served by genkit-mcp's
//! server over Streamable HTTP: Genkit tools, prompts and resources named
//! as the scenarios ask. Scenarios needing what the server does not do
//! (logging, completion, sampling, elicitation, subscriptions, a prompt
//! embedding a resource chosen by argument) have nothing here and fail;
//! `docs/mcp.md` records the counts.
//!
//! ```sh
//! cargo run -p genkit-mcp --example conformance_server -- 3001
//! npx @modelcontextprotocol/conformance server --url http://localhost:3001/mcp
//! ```

use genkit_core::{Action, ActionDesc, ActionKind, Registry};
use genkit_mcp::{McpServer, McpServerOptions};
use genkit_model::resource::{ResourceOptions, ResourceOutput, define_resource};
use genkit_model::tool::{Tool, define_multipart_tool, define_tool};
use genkit_model::types::{MultipartToolResponse, Part};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::time::Duration;

/// A 1x1 red PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A WAV header with no samples.
const WAV: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEARKwAAIhYAQACABAAZGF0YQAAAAA=";

#[derive(Serialize, Deserialize, JsonSchema)]
struct NoInput {}

fn media(mime: &str, data: &str) -> Part {
    Part::media(format!("data:{mime};base64,{data}"), Some(mime))
}

/// A text part as a resource's content: marked with the resource it came
/// from, as `define_resource` marks its parts, so it is embedded.
fn read_from(text: &str, uri: &str, mime: &str) -> Part {
    Part::text(text).with_metadata("resource", json!({"uri": uri, "mimeType": mime}))
}

fn multipart(output: &str, content: Vec<Part>) -> MultipartToolResponse {
    MultipartToolResponse {
        output: Some(json!(output)),
        content: Some(content),
        metadata: None,
    }
}

fn registry() -> genkit_core::Result<Registry> {
    let registry = Registry::new();
    define_tool(
        &registry,
        "test_simple_text",
        "Returns simple text.",
        |_: NoInput, _ctx| async { Ok("This is a simple text response for testing.".to_owned()) },
    )?;
    define_multipart_tool(
        &registry,
        "test_image_content",
        "Returns an image.",
        |_: NoInput, _ctx| async { Ok(multipart("An image.", vec![media("image/png", PNG)])) },
    )?;
    define_multipart_tool(
        &registry,
        "test_audio_content",
        "Returns audio.",
        |_: NoInput, _ctx| async { Ok(multipart("Audio.", vec![media("audio/wav", WAV)])) },
    )?;
    define_multipart_tool(
        &registry,
        "test_multiple_content_types",
        "Returns text, an image and a resource.",
        |_: NoInput, _ctx| async {
            Ok(multipart(
                "Multiple content types test:",
                vec![
                    media("image/png", PNG),
                    read_from(
                        r#"{"test":"data","value":123}"#,
                        "test://mixed-content-resource",
                        "application/json",
                    ),
                ],
            ))
        },
    )?;
    define_multipart_tool(
        &registry,
        "test_embedded_resource",
        "Returns an embedded resource.",
        |_: NoInput, _ctx| async {
            Ok(multipart(
                "An embedded resource.",
                vec![read_from(
                    "This is an embedded resource content.",
                    "test://embedded-resource",
                    "text/plain",
                )],
            ))
        },
    )?;
    define_tool(
        &registry,
        "test_error_handling",
        "Always fails.",
        |_: NoInput, _ctx| async {
            Err::<String, _>(genkit_core::Error::internal(
                "This tool intentionally returns an error for testing",
            ))
        },
    )?;
    // Streamed chunks become progress notifications.
    let mut desc = ActionDesc::new(ActionKind::Tool, "test_tool_with_progress")
        .with_description("Reports progress.");
    desc.input_schema = Some(json!({"type": "object"}));
    let progress = Action::<Value, String, Value>::from_desc(desc, |_, ctx| async move {
        for p in [0, 50, 100] {
            ctx.send_chunk(json!({"progress": p, "total": 100}));
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok("Progress test completed.".to_owned())
    })?;
    registry.register(progress)?;
    let schema_2020 = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {"address": {"type": "object", "properties": {
            "street": {"type": "string"}, "city": {"type": "string"}
        }}},
        "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
        "additionalProperties": false
    });
    let tool = Tool::from_json_schema(
        "json_schema_2020_12_tool",
        "Tool with JSON Schema 2020-12 features",
        Some(schema_2020),
        None,
        |input, _ctx| async move { Ok(json!({"received": input})) },
    )?;
    registry.register(tool.to_dyn())?;

    for (name, source) in [
        (
            "test_simple_prompt",
            "---\ndescription: A simple prompt.\n---\nThis is a simple prompt for testing.",
        ),
        (
            "test_prompt_with_arguments",
            "---\ndescription: A prompt with arguments.\ninput:\n  schema:\n    arg1: string, First test argument\n    arg2: string, Second test argument\n---\nPrompt with arguments: arg1='{{arg1}}', arg2='{{arg2}}'",
        ),
    ] {
        genkit_prompt::load_prompt_source(&registry, name, source, None)?;
    }
    genkit_prompt::load_prompt_source(
        &registry,
        "test_prompt_with_image",
        &format!(
            "---\ndescription: A prompt with an image.\n---\n{{{{media url=\"data:image/png;base64,{PNG}\"}}}}Please analyze the image above."
        ),
        None,
    )?;

    define_resource(
        &registry,
        ResourceOptions::uri("static-text", "test://static-text")
            .description("A static text resource.")
            .metadata("mimeType", json!("text/plain")),
        |_, _ctx| async {
            Ok(ResourceOutput::new(vec![Part::text(
                "This is the content of the static text resource.",
            )]))
        },
    )?;
    define_resource(
        &registry,
        ResourceOptions::uri("static-binary", "test://static-binary")
            .description("A static binary resource."),
        |_, _ctx| async { Ok(ResourceOutput::new(vec![media("image/png", PNG)])) },
    )?;
    define_resource(
        &registry,
        ResourceOptions::template("template", "test://template/{id}/data")
            .description("A templated resource.")
            .metadata("mimeType", json!("application/json")),
        |input, _ctx| async move {
            let id = input
                .uri
                .trim_start_matches("test://template/")
                .trim_end_matches("/data");
            let body =
                json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
            Ok(ResourceOutput::new(vec![Part::text(body.to_string())]))
        },
    )?;
    Ok(registry)
}

#[tokio::main]
async fn main() -> genkit_core::Result<()> {
    let port: u16 = std::env::args()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(3001);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .map_err(|e| genkit_core::Error::internal(format!("binding port {port}: {e}")))?;
    let addr = listener
        .local_addr()
        .map_err(|e| genkit_core::Error::internal(e.to_string()))?;
    println!("http://{addr}/mcp");
    let server = McpServer::new(&registry()?, McpServerOptions::new("genkit-rs-conformance"));
    // Serves until killed.
    server.serve_http(listener, std::future::pending()).await
}
