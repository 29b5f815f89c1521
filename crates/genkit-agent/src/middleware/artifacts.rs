//! The `artifacts` middleware: `read_artifact` and `write_artifact` tools
//! over the running agent session's artifacts, and a listing of them in
//! the system prompt each turn, as Genkit JS's `@genkit-ai/middleware`
//! `artifacts`.

use async_trait::async_trait;
use genkit_core::{DynAction, Result};
use genkit_model::middleware::{
    GenerateCallCtx, GenerateEnvelope, GenerateMiddleware, GenerateNext,
};
use genkit_model::tool::Tool;
use genkit_model::types::{GenerateResponse, Part};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{append_to_system, current_session, is_marked, joined_text};
use crate::types::Artifact;

/// The name the middleware is registered under.
pub const NAME: &str = "artifacts";

/// Its description, as Genkit JS lists it.
pub const DESCRIPTION: &str = "Provides read_artifact and write_artifact tools for interacting with session artifacts, and injects an artifact listing into the system prompt.";

const MARKER_KEY: &str = "artifacts-middleware-listing";
const NO_SESSION: &str = "Error: no active session.";

/// The `artifacts` middleware's options (JS's `ArtifactsOptionsSchema`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactsOptions {
    /// Only `read_artifact` is offered: the model cannot create or update
    /// artifacts.
    #[serde(default)]
    pub readonly: Option<bool>,
}

/// Offers `read_artifact` (and, unless read-only, `write_artifact`) on the
/// artifacts of the agent session the call runs in, and lists them in the
/// system prompt of each turn. Outside an agent turn the tools answer
/// `Error: no active session.` as Genkit JS's do.
pub struct ArtifactsMiddleware {
    tools: Vec<DynAction>,
}

impl ArtifactsMiddleware {
    /// The middleware with `options`.
    pub fn new(options: ArtifactsOptions) -> Self {
        let mut tools = vec![read_artifact_tool()];
        if !options.readonly.unwrap_or(false) {
            tools.push(write_artifact_tool());
        }
        Self { tools }
    }
}

fn string_prop(description: &str) -> Value {
    json!({"type": "string", "description": description})
}

fn object_schema(properties: Value, required: &[&str]) -> Value {
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": true,
        "$schema": "http://json-schema.org/draft-07/schema#",
    })
}

#[derive(Deserialize)]
struct ReadInput {
    name: String,
}

#[derive(Deserialize)]
struct WriteInput {
    name: String,
    content: String,
}

fn read_artifact_tool() -> DynAction {
    let input = object_schema(
        json!({"name": string_prop("The name of the artifact to read.")}),
        &["name"],
    );
    let output = object_schema(
        json!({
            "name": string_prop("The artifact name."),
            "content": string_prop("The text content of the artifact."),
            "found": {"type": "boolean", "description": "Whether the artifact was found in the session."},
        }),
        &["name", "content", "found"],
    );
    Tool::from_json_schema(
        "read_artifact",
        "Reads the content of a named artifact from the session. Use this to inspect artifacts produced by sub-agents or previously created artifacts.",
        Some(input),
        Some(output),
        |input: Value, _ctx| async move {
            let ReadInput { name } = serde_json::from_value(input)?;
            let Some(session) = current_session() else {
                return Ok(json!({"name": name, "content": NO_SESSION, "found": false}));
            };
            let found = session
                .artifacts()
                .into_iter()
                .find(|a| a.name.as_deref() == Some(name.as_str()));
            Ok(match found {
                Some(a) => json!({"name": name, "content": joined_text(&a.parts), "found": true}),
                None => json!({
                    "name": name,
                    "content": format!("Artifact \"{name}\" not found."),
                    "found": false,
                }),
            })
        },
    )
    .map(|t| t.to_dyn())
    .unwrap_or_else(|e| panic!("read_artifact schemas compile: {e}"))
}

fn write_artifact_tool() -> DynAction {
    let input = object_schema(
        json!({
            "name": string_prop("A unique name for the artifact (e.g. a filename like \"report.md\")."),
            "content": string_prop("The full text content of the artifact."),
        }),
        &["name", "content"],
    );
    let output = object_schema(
        json!({"status": string_prop("Confirmation that the artifact was created or updated.")}),
        &["status"],
    );
    Tool::from_json_schema(
        "write_artifact",
        "Creates or updates a named artifact in the session. If an artifact with the same name already exists, it will be replaced. Use this to produce files, reports, code, or other deliverables.",
        Some(input),
        Some(output),
        |input: Value, _ctx| async move {
            let WriteInput { name, content } = serde_json::from_value(input)?;
            let Some(session) = current_session() else {
                return Ok(json!({"status": NO_SESSION}));
            };
            // The runtime's own artifact update: replaces by name, streams
            // an `artifact` chunk, and is stored with the turn's snapshot.
            session.add_artifact(Artifact::new(name.clone(), vec![Part::text(content)]));
            Ok(json!({"status": format!("Artifact \"{name}\" saved successfully.")}))
        },
    )
    .map(|t| t.to_dyn())
    .unwrap_or_else(|e| panic!("write_artifact schemas compile: {e}"))
}

/// The system prompt's listing of `artifacts`, worded as Genkit JS's.
fn artifact_listing(artifacts: &[Artifact]) -> String {
    if artifacts.is_empty() {
        return "<artifacts>\nNo artifacts are currently available in the session.\n</artifacts>"
            .to_owned();
    }
    let listing = artifacts
        .iter()
        .map(|a| {
            let text = joined_text(&a.parts);
            // JS counts UTF-16 code units.
            let len = text.encode_utf16().count();
            let size = if len > 0 {
                format!(" ({len} chars)")
            } else {
                String::new()
            };
            let source = match a.metadata.as_ref().and_then(|m| m.get("source")) {
                Some(Value::String(s)) if !s.is_empty() => format!(" [from: {s}]"),
                Some(v) if !v.is_null() && v != &Value::Bool(false) && !v.is_string() => {
                    format!(" [from: {v}]")
                }
                _ => String::new(),
            };
            let name = a
                .name
                .as_deref()
                .filter(|n| !n.is_empty())
                .unwrap_or("(unnamed)");
            format!("  - {name}{size}{source}")
        })
        .collect::<Vec<_>>()
        .join("\n");
    format!(
        "<artifacts>\nThe following artifacts are available in the session. Use the read_artifact tool to view their content.\n{listing}\n</artifacts>"
    )
}

#[async_trait]
impl GenerateMiddleware for ArtifactsMiddleware {
    fn name(&self) -> &str {
        NAME
    }

    async fn generate(
        &self,
        mut env: GenerateEnvelope,
        ctx: GenerateCallCtx,
        next: GenerateNext,
    ) -> Result<GenerateResponse> {
        let current = current_session().map(|s| s.artifacts()).unwrap_or_default();
        let listing = artifact_listing(&current);
        let messages = &mut env.request.messages;
        // Each turn replaces the listing, so it is current after writes.
        for message in messages.iter_mut() {
            message.content.retain(|p| !is_marked(p, MARKER_KEY));
        }
        append_to_system(messages, listing, MARKER_KEY);
        next.run(env, ctx).await
    }

    fn tools(&self) -> Vec<DynAction> {
        self.tools.clone()
    }
}
