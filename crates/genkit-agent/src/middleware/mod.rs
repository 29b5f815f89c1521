//! Genkit's `@genkit-ai/middleware` middleware that work on agent sessions:
//! [`agents`] (`delegate_to_<agent>` tools running other agents as
//! sub-agents) and [`artifacts`] (`read_artifact` / `write_artifact` over
//! the session's artifacts). They live here, above the agent runtime, as
//! they run agents and reach the [`AgentSession`] of the running turn.
//!
//! [`register_agent_middleware`] registers both by name (`agents`,
//! `artifacts`) so requests can name them (`{"use": [{"name": "agents",
//! "config": {"agents": ["researcher"]}}]}`).

pub mod agents;
pub mod artifacts;

pub use agents::{AgentRef, AgentsMiddleware, AgentsOptions, ArtifactStrategy};
pub use artifacts::{ArtifactsMiddleware, ArtifactsOptions};

use std::sync::Arc;

use genkit_core::{Error, Registry, Result};
use genkit_model::middleware::define_middleware;
use genkit_model::types::{Message, Part, Role};
use serde_json::Value;

use crate::session::AgentSession;

/// Registers the `agents` and `artifacts` middleware by name, as Genkit
/// JS's `@genkit-ai/middleware` names them.
pub fn register_agent_middleware(registry: &Registry) {
    let reg = registry.clone();
    define_middleware(registry, agents::NAME, agents::DESCRIPTION, move |config| {
        let options: AgentsOptions = parse_config(config)?;
        Ok(Arc::new(AgentsMiddleware::new(&reg, options)?))
    });
    define_middleware(
        registry,
        artifacts::NAME,
        artifacts::DESCRIPTION,
        |config| {
            let options: ArtifactsOptions = parse_config(config)?;
            Ok(Arc::new(ArtifactsMiddleware::new(options)))
        },
    );
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
