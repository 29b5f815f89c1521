//! Genkit's `@genkit-ai/middleware` middleware that work on agent sessions:
//! [`agents`] (`delegate_to_<agent>` tools running other agents as
//! sub-agents) and [`artifacts`] (`read_artifact` / `write_artifact` over
//! the session's artifacts). They live here, above the agent runtime, as
//! they run agents and reach the [`AgentSession`] of the running turn.
//!
//! [`define_agent_middleware`] (or [`register_agent_middleware`]) registers
//! both by name (`agents`, `artifacts`) with Genkit JS's config schemas so
//! requests can name them (`{"use": [{"name": "agents", "config":
//! {"agents": ["researcher"]}}]}`); [`middleware_plugin`] registers them with
//! the rest of `@genkit-ai/middleware` as a plugin for the Genkit builder.

pub mod agents;
pub mod artifacts;

pub use agents::{AgentRef, AgentsMiddleware, AgentsOptions, ArtifactStrategy};
pub use artifacts::{ArtifactsMiddleware, ArtifactsOptions};

use std::sync::Arc;

use genkit_core::{Error, Registry, Result};
use genkit_middleware::MiddlewarePlugin;
use genkit_model::middleware::{MiddlewareDesc, define_middleware_desc};
use genkit_model::types::{Message, Part, Role};
use serde_json::Value;

use crate::session::AgentSession;

/// Genkit JS's config schemas of `agents` and `artifacts`, as its
/// `toJson()` lists them (recorded by `tests-support/middleware-agents-js`).
mod schemas {
    use serde_json::Value;
    use std::sync::LazyLock;

    fn parse(s: &str) -> Value {
        serde_json::from_str(s).unwrap_or_else(|e| panic!("bundled schema parses: {e}"))
    }

    pub static AGENTS: LazyLock<Value> =
        LazyLock::new(|| parse(include_str!("schemas/agents.json")));
    pub static ARTIFACTS: LazyLock<Value> =
        LazyLock::new(|| parse(include_str!("schemas/artifacts.json")));
}

/// The listing of `agents` (name, description, config schema).
pub fn agents_desc() -> MiddlewareDesc {
    MiddlewareDesc::new(agents::NAME, agents::DESCRIPTION)
        .with_config_schema(schemas::AGENTS.clone())
}

/// The listing of `artifacts`.
pub fn artifacts_desc() -> MiddlewareDesc {
    MiddlewareDesc::new(artifacts::NAME, artifacts::DESCRIPTION)
        .with_config_schema(schemas::ARTIFACTS.clone())
}

/// Registers the `agents` and `artifacts` middleware by name, with Genkit
/// JS's descriptions and config schemas: a request's config is checked
/// against the schema first, and the error names the middleware and field.
pub fn define_agent_middleware(registry: &Registry) -> Result<()> {
    let reg = registry.clone();
    define_middleware_desc(registry, agents_desc(), move |config| {
        let options: AgentsOptions = parse_config(config)?;
        Ok(Arc::new(AgentsMiddleware::new(&reg, options)?))
    })?;
    define_middleware_desc(registry, artifacts_desc(), |config| {
        let options: ArtifactsOptions = parse_config(config)?;
        Ok(Arc::new(ArtifactsMiddleware::new(options)))
    })
}

/// Registers the `agents` and `artifacts` middleware by name, as Genkit
/// JS's `@genkit-ai/middleware` names them ([`define_agent_middleware`],
/// for callers that do not handle its error).
pub fn register_agent_middleware(registry: &Registry) {
    // Only a bundled schema that does not compile fails, which the crate's
    // tests rule out.
    define_agent_middleware(registry).expect("the bundled agents/artifacts schemas compile");
}

/// Every middleware of `@genkit-ai/middleware` as one plugin for the
/// Genkit builder: `retry`, `fallback`, `filesystem`, `skills` and
/// `toolApproval` (genkit-middleware's
/// [`MiddlewarePlugin`](genkit_middleware::MiddlewarePlugin)) plus `agents`
/// and `artifacts`, registered by name when the plugin is added, so the
/// Reflection API lists them and requests and prompt files can name them.
pub fn middleware_plugin() -> MiddlewarePlugin {
    MiddlewarePlugin::new().with(define_agent_middleware)
}

fn parse_config<T: serde::de::DeserializeOwned + Default>(config: Option<&Value>) -> Result<T> {
    match config {
        None | Some(Value::Null) => Ok(T::default()),
        Some(v) => serde_json::from_value(v.clone())
            .map_err(|e| Error::invalid_argument(format!("middleware config: {e}"))),
    }
}

/// The session of the agent turn the running call belongs to.
pub(crate) fn current_session() -> Option<AgentSession> {
    AgentSession::current()
}

/// The text of `parts`, non-empty texts joined by newlines (as JS joins
/// artifact and reply texts).
pub(crate) fn joined_text(parts: &[Part]) -> String {
    parts
        .iter()
        .filter_map(Part::as_text)
        .filter(|t| !t.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Appends a text part marked with `marker` to the first system message,
/// or adds a system message first.
pub(crate) fn append_to_system(messages: &mut Vec<Message>, text: String, marker: &str) {
    let part = Part::text(text).with_metadata(marker, Value::Bool(true));
    match messages.iter_mut().find(|m| m.role == Role::System) {
        Some(system) => system.content.push(part),
        None => messages.insert(
            0,
            Message {
                role: Role::System,
                content: vec![part],
                metadata: None,
            },
        ),
    }
}

/// Whether `part` carries the marker `marker: true`.
pub(crate) fn is_marked(part: &Part, marker: &str) -> bool {
    part.metadata
        .as_ref()
        .and_then(|m| m.get(marker))
        .is_some_and(|v| v == &Value::Bool(true))
}
