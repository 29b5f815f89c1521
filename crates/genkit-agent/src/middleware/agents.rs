//! The `agents` middleware: one `delegate_to_<agent>` tool per configured
//! agent, whose call runs that agent as a sub-agent on a fresh session and
//! returns its answer, and a list of the sub-agents in the system prompt;
//! as Genkit JS's `@genkit-ai/middleware` `agents`.
//!
//! A delegation runs the sub-agent's action in the tool's context, so its
//! spans (model calls, tool calls) nest under the tool call's span. Every
//! failure becomes the tool's answer, not its error, as in JS: the model
//! reads `Error calling agent '<name>': <message>` and carries on. A
//! sub-agent that interrupts is not resumed (JS does not support
//! interactive sub-agents either): the tool says so.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use genkit_core::action::RunOptions;
use genkit_core::{DynAction, Error, Registry, Result};
use genkit_model::middleware::{
    GenerateCallCtx, GenerateEnvelope, GenerateMiddleware, GenerateNext,
};
use genkit_model::tool::Tool;
use genkit_model::types::{GenerateResponse, Message, Part, Role};
use parking_lot::Mutex;
use rand::Rng;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{append_to_system, current_session, is_marked, joined_text};
use crate::runtime::{AgentAction, FailedTurnSlot, agent_metadata};
use crate::types::{AgentFinishReason, AgentInit, AgentInput, Artifact, SessionState};

/// The name the middleware is registered under.
pub const NAME: &str = "agents";

/// Its description, as Genkit JS lists it.
pub const DESCRIPTION: &str =
    "Injects per-agent delegation tools for calling registered sub-agents.";

const MARKER_KEY: &str = "agents-middleware-instructions";

/// An agent offered for delegation: its name, or its name and a
/// description replacing the one found in the registry.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum AgentRef {
    /// A registered agent's name.
    Name(String),
    /// A registered agent with a description for the model.
    Described {
        /// Name of the registered agent.
        name: String,
        /// Overrides the description found in the registry.
        #[serde(default)]
        description: Option<String>,
    },
}

impl AgentRef {
    fn name(&self) -> &str {
        match self {
            Self::Name(n) | Self::Described { name: n, .. } => n,
        }
    }

    fn description(&self) -> Option<&str> {
        match self {
            Self::Name(_) => None,
            Self::Described { description, .. } => description.as_deref(),
        }
    }
}

/// How a sub-agent's artifacts come back.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ArtifactStrategy {
    /// Their content is in the tool's result, and they are added to the
    /// parent session.
    #[default]
    Inline,
    /// They are added to the parent session; the result names them only.
    Session,
}

/// The `agents` middleware's options (JS's `AgentsOptionsSchema`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentsOptions {
    /// Agents available for delegation.
    #[serde(default)]
    pub agents: Vec<AgentRef>,
    /// Prefix of the tool names (`delegate_to` by default; empty: the bare
    /// agent names).
    #[serde(default)]
    pub tool_prefix: Option<String>,
    /// Delegations allowed per middleware instance (one instance per
    /// generate call when named in a request, as in JS).
    #[serde(default)]
    pub max_delegations: Option<u64>,
    /// Recent user/model messages (their texts) forwarded to a
    /// client-managed sub-agent as its starting history.
    #[serde(default)]
    pub history_length: Option<usize>,
    /// How sub-agent artifacts are handled.
    #[serde(default)]
    pub artifact_strategy: Option<ArtifactStrategy>,
}

/// What the delegation tools share: the count of delegations and the
/// conversation of the current turn (for `historyLength`).
#[derive(Default)]
struct SharedState {
    delegations: u64,
    conversation: Vec<Message>,
}

struct Delegation {
    registry: Registry,
    agent: String,
    max_delegations: Option<u64>,
    history_length: usize,
    strategy: ArtifactStrategy,
    shared: Arc<Mutex<SharedState>>,
}

/// Offers `delegate_to_<agent>` tools running registered agents as
/// sub-agents (see the module docs).
pub struct AgentsMiddleware {
    registry: Registry,
    refs: Vec<AgentRef>,
    prefix: String,
    tools: Vec<DynAction>,
    shared: Arc<Mutex<SharedState>>,
    descriptions: Mutex<HashMap<String, String>>,
}

fn tool_name(prefix: &str, agent: &str) -> String {
    if prefix.is_empty() {
        agent.to_owned()
    } else {
        format!("{prefix}_{agent}")
    }
}

fn invocation_id(agent: &str) -> String {
    const DIGITS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut rng = rand::rng();
    let suffix: String = (0..4)
        .map(|_| DIGITS[rng.random_range(0..DIGITS.len())] as char)
        .collect();
    format!("{agent}_{suffix}")
}

const SCHEMA: &str = "http://json-schema.org/draft-07/schema#";

fn input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"task": {
            "type": "string",
            "description": "A clear, self-contained description of the task to delegate.",
        }},
        "required": ["task"],
        "additionalProperties": true,
        "$schema": SCHEMA,
    })
}

fn output_schema(strategy: ArtifactStrategy) -> Value {
    let name = json!({"type": "string", "description": "Name of the artifact."});
    let (item, description) = match strategy {
        ArtifactStrategy::Inline => (
            json!({"type": "object", "properties": {
                "name": name,
                "content": {"type": "string", "description": "Text content of the artifact."},
            }, "additionalProperties": true}),
            "Artifacts produced by the sub-agent, including their content.",
        ),
        ArtifactStrategy::Session => (
            json!({"type": "object", "properties": {"name": name}, "additionalProperties": true}),
            "Names of artifacts produced by the sub-agent. Use read_artifact to access content.",
        ),
    };
    json!({
        "type": "object",
        "properties": {
            "response": {"type": "string", "description": "The sub-agent's text response."},
            "artifacts": {"type": "array", "items": item, "description": description},
        },
        "required": ["response"],
        "additionalProperties": true,
        "$schema": SCHEMA,
    })
}

impl AgentsMiddleware {
    /// The middleware delegating to `options.agents`, looked up in
    /// `registry` when called. At least one agent is required (JS's error).
    pub fn new(registry: &Registry, options: AgentsOptions) -> Result<Self> {
        if options.agents.is_empty() {
            return Err(Error::invalid_argument(
                "agents middleware requires at least one agent in the \"agents\" option.",
            ));
        }
        let prefix = options.tool_prefix.unwrap_or_else(|| "delegate_to".into());
        let strategy = options.artifact_strategy.unwrap_or_default();
        let shared = Arc::new(Mutex::new(SharedState::default()));
        let tools = options
            .agents
            .iter()
            .map(|r| {
                let description = r.description().map(str::to_owned).unwrap_or_else(|| {
                    format!("Delegates a task to the \"{}\" sub-agent.", r.name())
                });
                let delegation = Arc::new(Delegation {
                    registry: registry.clone(),
                    agent: r.name().to_owned(),
                    max_delegations: options.max_delegations,
                    history_length: options.history_length.unwrap_or(0),
                    strategy,
                    shared: shared.clone(),
                });
                Tool::from_json_schema(
                    tool_name(&prefix, r.name()),
                    description,
                    Some(input_schema()),
                    Some(output_schema(strategy)),
                    move |input: Value, _ctx| {
                        let delegation = delegation.clone();
                        async move {
                            let task = input
                                .get("task")
                                .and_then(Value::as_str)
                                .unwrap_or_default()
                                .to_owned();
                            Ok(delegation.delegate(task).await)
                        }
                    },
                )
                .map(|t| t.to_dyn())
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            registry: registry.clone(),
            refs: options.agents,
            prefix,
            tools,
            shared,
            descriptions: Mutex::default(),
        })
    }

    /// The description the model sees for `agent`: the configured one, the
    /// agent's (or a prompt's of that name) in the registry, or JS's
    /// placeholder.
    async fn description_of(&self, r: &AgentRef) -> String {
        if let Some(d) = r.description() {
            return d.to_owned();
        }
        if let Some(d) = self.descriptions.lock().get(r.name()) {
            return d.clone();
        }
        for kind in ["agent", "prompt"] {
            let key = format!("/{kind}/{}", r.name());
            if let Ok(Some(action)) = self.registry.lookup_action(&key).await
                && let Some(d) = action.desc().description.clone().filter(|d| !d.is_empty())
            {
                self.descriptions
                    .lock()
                    .insert(r.name().to_owned(), d.clone());
                return d;
            }
        }
        "No description available.".to_owned()
    }
}

impl Delegation {
    /// Runs one delegation; every outcome is the tool's answer.
    async fn delegate(&self, task: String) -> Value {
        let name = &self.agent;
        let history = {
            let mut shared = self.shared.lock();
            if let Some(max) = self.max_delegations
                && shared.delegations >= max
            {
                return json!({"response": format!(
                    "Delegation limit reached ({max}). Complete the task using information already gathered."
                )});
            }
            shared.delegations += 1;
            self.history(&shared.conversation)
        };
        let action = match self.registry.lookup_action(&format!("/agent/{name}")).await {
            Ok(Some(a)) => AgentAction::downcast(&a),
            _ => None,
        };
        let Some(action) = action else {
            return json!({"response": format!("Error: Agent '{name}' not found in registry.")});
        };
        let server_managed = agent_metadata(&action)
            .and_then(|m| m.get("stateManagement").cloned())
            .is_some_and(|s| s == "server");
        let init = if !history.is_empty() && !server_managed {
            AgentInit {
                state: Some(SessionState {
                    messages: Some(Arc::new(history)),
                    ..SessionState::default()
                }),
                ..AgentInit::default()
            }
        } else {
            AgentInit::default()
        };
        let parent = current_session();
        let message = Message {
            role: Role::User,
            content: vec![Part::text(task)],
            metadata: None,
        };
        // The sub-agent runs in process: a failed turn's full error (not
        // the masked one a remote client would see) is the tool's answer,
        // as in Genkit JS.
        let failed_turn = FailedTurnSlot::default();
        let options = RunOptions::default().extension(failed_turn.clone());
        let mut run = action.start_with(init, options);
        let sent = run.send(AgentInput::message(message));
        run.close();
        let output = match sent {
            Ok(()) => run.output().await,
            Err(e) => Err(e),
        };
        let output = match output {
            Ok(output) => output,
            Err(e) => {
                return json!({"response": format!("Error calling agent '{name}': {}", e.message())});
            }
        };
        match output.finish_reason {
            Some(AgentFinishReason::Interrupted) => {
                return json!({"response": format!(
                    "Sub-agent '{name}' interrupted for additional input and could not complete the task. Interactive sub-agent interrupts are not currently supported; try delegating a more self-contained task."
                )});
            }
            Some(AgentFinishReason::Failed) => {
                let message = match &output.error {
                    Some(error) => failed_turn
                        .explain(error)
                        .map(|full| full.message().to_owned())
                        .unwrap_or_else(|| error.message.clone()),
                    None => "Unknown sub-agent failure.".into(),
                };
                return json!({"response": format!("Error calling agent '{name}': {message}")});
            }
            _ => {}
        }
        let text = output
            .message
            .as_ref()
            .map(|m| joined_text(&m.content))
            .unwrap_or_default();
        let produced: Vec<Artifact> = output
            .artifacts
            .unwrap_or_default()
            .into_iter()
            .filter(|a| a.name.as_deref().is_some_and(|n| !n.is_empty()))
            .collect();
        let mut result = Map::new();
        result.insert(
            "response".into(),
            Value::String(if text.is_empty() {
                "(no response)".into()
            } else {
                text
            }),
        );
        if !produced.is_empty() {
            let invocation = invocation_id(name);
            let namespaced =
                |a: &Artifact| format!("{invocation}/{}", a.name.as_deref().unwrap_or_default());
            if let Some(parent) = &parent {
                for a in &produced {
                    let mut metadata = a.metadata.clone().unwrap_or_default();
                    metadata.insert("source".into(), Value::String(name.clone()));
                    metadata.insert("invocationId".into(), Value::String(invocation.clone()));
                    parent.add_artifact(Artifact {
                        name: Some(namespaced(a)),
                        parts: a.parts.clone(),
                        metadata: Some(metadata),
                    });
                }
            }
            let listed = produced
                .iter()
                .map(|a| match self.strategy {
                    ArtifactStrategy::Inline => {
                        json!({"name": namespaced(a), "content": joined_text(&a.parts)})
                    }
                    ArtifactStrategy::Session => json!({"name": namespaced(a)}),
                })
                .collect();
            result.insert("artifacts".into(), Value::Array(listed));
        }
        Value::Object(result)
    }

    /// The last `history_length` user/model messages, their texts only.
    fn history(&self, conversation: &[Message]) -> Vec<Message> {
        if self.history_length == 0 {
            return Vec::new();
        }
        let relevant: Vec<&Message> = conversation
            .iter()
            .filter(|m| matches!(m.role, Role::User | Role::Model))
            .collect();
        let start = relevant.len().saturating_sub(self.history_length);
        relevant[start..]
            .iter()
            .map(|m| Message {
                role: m.role,
                content: m
                    .content
                    .iter()
                    .filter(|p| p.as_text().is_some_and(|t| !t.is_empty()))
                    .cloned()
                    .collect(),
                metadata: None,
            })
            .filter(|m| !m.content.is_empty())
            .collect()
    }
}

#[async_trait]
impl GenerateMiddleware for AgentsMiddleware {
    fn name(&self) -> &str {
        NAME
    }

    async fn generate(
        &self,
        mut env: GenerateEnvelope,
        ctx: GenerateCallCtx,
        next: GenerateNext,
    ) -> Result<GenerateResponse> {
        self.shared.lock().conversation = env.request.messages.clone();
        let mut lines = Vec::with_capacity(self.refs.len());
        for r in &self.refs {
            let description = self.description_of(r).await;
            lines.push(format!(
                "  - {}: {description}",
                tool_name(&self.prefix, r.name())
            ));
        }
        let instructions = format!(
            "<sub-agents>\nYou can delegate tasks to specialized sub-agents using their delegation tools:\n{}\n\nWhen a task is better handled by a specialized agent, delegate it using the appropriate tool. Provide a clear, self-contained task description.\n</sub-agents>",
            lines.join("\n")
        );
        let messages = &mut env.request.messages;
        let injected = messages.iter().any(|m| {
            m.content
                .iter()
                .any(|p| p.as_text().is_some() && is_marked(p, MARKER_KEY))
        });
        if !injected {
            append_to_system(messages, instructions, MARKER_KEY);
        }
        next.run(env, ctx).await
    }

    fn tools(&self) -> Vec<DynAction> {
        self.tools.clone()
    }
}
