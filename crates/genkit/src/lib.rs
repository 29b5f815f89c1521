//! # Genkit for Rust
//!
//! Build AI applications from models, tools, prompts and flows. Each is an
//! **Action** — a named, self-describing, schema-validated, traced,
//! streamable async function — kept in a registry under a key like
//! `/model/openai/gpt-4o`, so the same engine runs them locally, serves them
//! over HTTP, and shows them in Genkit's Dev UI.
//!
//! ```
//! use genkit::prelude::*;
//! use genkit::testing::ProgrammableModel;
//!
//! #[derive(Deserialize, Serialize, JsonSchema)]
//! struct WeatherInput {
//!     /// City name, e.g. "Beijing".
//!     city: String,
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> genkit::Result<()> {
//! let ai = Genkit::builder().default_model("scripted").build()?;
//!
//! // A scripted model stands in for a real one (no API key needed).
//! ProgrammableModel::define(ai.registry(), "scripted")
//!     .respond_tool_call("getWeather", json!({"city": "Beijing"}))
//!     .respond_text("Yes: it is sunny in Beijing.");
//!
//! let weather = ai.define_tool(
//!     "getWeather",
//!     "Current weather for a city.",
//!     |input: WeatherInput, _ctx| async move { Ok(format!("{}: sunny, 26°C", input.city)) },
//! );
//!
//! let reply = ai
//!     .generate(GenerateOptions::prompt("Is Beijing good for a walk today?").tool(&weather))
//!     .await?;
//! assert_eq!(reply.text(), "Yes: it is sunny in Beijing.");
//!
//! let shout = ai.define_flow("shout", |s: String, _ctx| async move { Ok(s.to_uppercase()) });
//! assert_eq!(shout.run("hi".into()).await?, "HI");
//! # Ok(()) }
//! ```
//!
//! ## Where things are
//!
//! Every item has one path; `use genkit::prelude::*` adds the few that
//! nearly every app names ([`Genkit`], [`GenerateOptions`](generate::GenerateOptions),
//! [`Message`](types::Message), [`Part`](types::Part), [`ActionCtxExt`],
//! [`Error`], [`Result`], `StreamExt`, `JsonSchema`, `Serialize`,
//! `Deserialize`, `Value`, `json!`).
//!
//! | to… | use |
//! |---|---|
//! | call a model, with tools, structured output, streaming | [`Genkit::generate`], [`Genkit::generate_as`], [`Genkit::generate_stream`], [`generate::GenerateOptions`] |
//! | define tools, flows, prompts (`.prompt` files) | [`Genkit::define_tool`], [`Genkit::define_flow`], [`Genkit::define_prompt`], [`tool`], [`flow`], [`prompt`] |
//! | build an agent with sessions (Genkit's Agent API) | [`Genkit::define_prompt_agent`], [`Genkit::define_custom_agent`], [`agent`] (below) |
//! | keep sessions across restarts | [`agent::store`] (in memory), `sql-store` feature: `genkit::stores` (`genkit::stores::open_store`; SQLite, PostgreSQL); crate `genkit-store-firestore` |
//! | serve flows and agents over HTTP, the Dev UI | crate `genkit-server` (`FlowServer`, the Reflection API under `genkit start`) |
//! | talk to a provider | crates `genkit-openai` (and any OpenAI-compatible server), `genkit-google-genai`, `genkit-anthropic`, `genkit-ollama`; `genkit-local-embedder` |
//! | use the tools, prompts and resources of MCP servers | `mcp` feature: `genkit::mcp` (`McpHost`; crate `genkit-mcp`) |
//! | retrieval and evaluation | [`retrieval::retriever`], [`retrieval::indexer`], [`retrieval::local_vector_store`], [`retrieval::chunk`], [`evaluator`]; crate `genkit-pgvector` |
//! | handle a registration error instead of panicking | the registry-level `define_*` functions the `define_*` methods name under "Panics" (e.g. [`flow::define_flow`], [`tool::define_tool`]) |
//! | test without a model | [`testing::ProgrammableModel`] |
//!
//! ## Modules
//!
//! - [`action`] — [`Action`](action::Action), its context
//!   [`ActionCtx`](action::ActionCtx), [`DynAction`](action::DynAction),
//!   [`RunOptions`](action::RunOptions), [`ActionKind`](action::ActionKind),
//!   streams, bidirectional actions, [`CancellationToken`](action::CancellationToken).
//! - [`context`] — the request context ([`ActionContext`](context::ActionContext))
//!   and typed [`Extensions`](context::Extensions).
//! - [`flow`] — flows and their [`FlowContext`](flow::FlowContext); `define_flow` over a registry.
//! - [`registry`] — the [`Registry`](registry::Registry) of actions, values and plugins.
//! - [`plugin`] — the [`Plugin`](plugin::Plugin) trait providers implement.
//! - [`status`] — [`StatusCode`](status::StatusCode), the canonical error codes.
//! - [`schema`] — JSON Schema from Rust types, and validation.
//! - [`tracing`] — spans, the trace store and exporters.
//! - [`generate`] — [`GenerateOptions`](generate::GenerateOptions), streams and
//!   chunks, tool error policy, the `generate` functions over a registry.
//! - [`model`] — [`Model`](model::Model), [`ModelOptions`](model::ModelOptions),
//!   [`ModelImpl`](model::ModelImpl), background models.
//! - [`tool`] — [`Tool`](tool::Tool), [`ToolCtx`](tool::ToolCtx),
//!   [`ToolImpl`](tool::ToolImpl), interrupts.
//! - [`types`] — the wire types: [`Message`](types::Message), [`Part`](types::Part),
//!   [`Role`](types::Role), requests and responses, documents.
//! - [`embedder`] — embedder actions and their options, `embed`.
//! - [`resource`] — resources: content at a URI or URI template
//!   ([`Genkit::define_resource`]), which MCP servers publish (crate `genkit-mcp`).
//! - [`formats`] — output formats (json, array, enum, jsonl, text, custom ones).
//! - [`extract`] — JSON out of model text, partial JSON while streaming.
//! - [`middleware`] — model, generate and tool hooks; retry, fallback,
//!   history policy, tool approval, tool cache.
//! - [`prompt`] — [`PromptConfig`](prompt::PromptConfig),
//!   [`ExecutablePrompt`](prompt::ExecutablePrompt), `.prompt` files.
//! - [`agent`] — [`Agent`](agent::Agent), [`AgentChat`](agent::AgentChat),
//!   [`AgentOptions`](agent::AgentOptions), [`AgentSession`](agent::AgentSession);
//!   the wire types in [`agent::types`], stores in [`agent::store`],
//!   exactly-once effects in [`agent::effect`], patches in [`agent::json_patch`].
//! - [`retrieval`] — [`chunk`](retrieval::chunk), [`retriever`](retrieval::retriever),
//!   [`simple_retriever`](retrieval::simple_retriever), [`indexer`](retrieval::indexer),
//!   [`reranker`](retrieval::reranker), [`local_vector_store`](retrieval::local_vector_store).
//! - [`evaluator`] — evaluators and the built-in metrics.
//! - [`testing`] — test doubles, [`ProgrammableModel`](testing::ProgrammableModel).
//! - `stores` (feature `sql-store`) — SQLite and PostgreSQL session stores, `open_store`.
//! - `mcp` (feature `mcp`) — MCP servers' tools, prompts and resources, `McpHost`.
//! - [`prelude`] — the few items listed above.
//!
//! Features: `sql-store` (SQLite session stores), `sql-store-postgres`
//! (plus PostgreSQL), `download-media` (the media download middleware),
//! `mcp` (MCP servers' tools, prompts and resources).
//!
//! ## An agent
//!
//! An agent keeps a conversation in a session: each turn sees the history,
//! and a session with a store is continued later by its id (in another
//! process too, with a persistent store).
//!
//! ```
//! use genkit::agent::AgentOptions;
//! use genkit::agent::store::InMemorySessionStore;
//! use genkit::agent::types::AgentInit;
//! use genkit::prelude::*;
//! use genkit::prompt::PromptConfig;
//! use genkit::testing::ProgrammableModel;
//! use std::sync::Arc;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> genkit::Result<()> {
//! let ai = Genkit::builder().default_model("scripted").build()?;
//! ProgrammableModel::define(ai.registry(), "scripted")
//!     .respond_text("Hello, Ada.")
//!     .respond_text("Your name is Ada.");
//! let prompt = ai.define_prompt::<Value, Value>(PromptConfig::new("assistant"));
//! let store = Arc::new(InMemorySessionStore::new());
//! let agent = ai.define_prompt_agent("assistant", &prompt, AgentOptions::new().store(store));
//!
//! let chat = agent.chat();
//! chat.send(Message::user("I am Ada.")).await?;
//! let session = chat.session_id().expect("the server minted a session id");
//!
//! // Later: continue the session by its id. A failed turn is an `Err`.
//! let later = agent.chat_from(AgentInit {
//!     session_id: Some(session),
//!     ..AgentInit::default()
//! });
//! let out = later.send(Message::user("What is my name?")).await?;
//! assert_eq!(out.message.map(|m| m.text()).as_deref(), Some("Your name is Ada."));
//! # Ok(()) }
//! ```
//!
//! ## Long conversations and risky tools
//!
//! [`middleware`] has what an agent that talks for long and acts on the
//! world needs: [`history_policy`](middleware::history_policy) trims what the
//! model sees (last turns, a token budget, important messages and the
//! system prompt kept, tool calls never split from their results, an
//! optional cached summary), [`tool_approval`](middleware::tool_approval)
//! interrupts before tools marked [`needs_approval`](tool::Tool::needs_approval)
//! run, and [`tool_cache`](middleware::tool_cache) reuses tool results for a
//! time to live (never for tools marked
//! [`side_effecting`](tool::Tool::side_effecting)).
//!
//! ```
//! use genkit::middleware::{approve, history_policy, tool_approval, tool_cache};
//! use genkit::prelude::*;
//! use genkit::testing::ProgrammableModel;
//! use genkit::tool::Tool;
//! use std::time::Duration;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> genkit::Result<()> {
//! let ai = Genkit::builder().default_model("scripted").build()?;
//! ProgrammableModel::define(ai.registry(), "scripted")
//!     .respond_tool_call("restartService", json!("api"))
//!     .respond_text("The api service was restarted.");
//!
//! // Marked before it is registered, so every use of it is marked.
//! let restart = Tool::new("restartService", "Restarts a service.", |service: String, _ctx| async move {
//!     Ok(format!("{service} restarted"))
//! })
//! .needs_approval()
//! .side_effecting()
//! .register(ai.registry())?;
//!
//! let options = |messages: Vec<Message>| {
//!     GenerateOptions::messages(messages)
//!         .tool(&restart)
//!         .use_middleware(history_policy().last_turns(20).max_tokens(8_000))
//!         .use_middleware(tool_approval())
//!         .use_middleware(tool_cache().ttl("getServiceStatus", Duration::from_secs(30)))
//! };
//! let first = ai.generate(options(vec![Message::user("Restart the api service.")])).await?;
//! let interrupt = first.interrupts()[0].clone(); // ask the user about this request
//! let history = first.messages().unwrap_or_default();
//! let done = ai.generate(options(history).resume_restart([approve(&interrupt)?])).await?;
//! assert_eq!(done.text(), "The api service was restarted.");
//! # Ok(()) }
//! ```

#![cfg_attr(docsrs, feature(doc_cfg))]

mod agent_methods;
mod ctx_ext;
mod define_methods;
mod evaluation_methods;
mod generate_methods;
mod genkit;
mod prompt_methods;
mod retrieval_methods;
mod typed_stream;

pub use crate::ctx_ext::ActionCtxExt;
pub use crate::genkit::{Genkit, GenkitBuilder};
pub use genkit_core::{Error, GENKIT_VERSION, Result};

/// Actions: [`Action`](action::Action), its context
/// [`ActionCtx`](action::ActionCtx), the type-erased
/// [`DynAction`](action::DynAction), run options, streams, bidirectional
/// actions, and the [`CancellationToken`](action::CancellationToken) a
/// caller cancels a run with.
pub mod action {
    pub use genkit_core::CancellationToken;
    pub use genkit_core::action::*;
}
pub use genkit_core::{context, flow, plugin, registry, schema, status, tracing};

/// Generation: [`GenerateOptions`](generate::GenerateOptions), the
/// `generate` functions over a registry, streams and their chunks, and the
/// typed stream of [`Genkit::generate_stream_as`].
pub mod generate {
    pub use crate::typed_stream::TypedGenerateStream;
    pub use genkit_generate::*;
}

/// Evaluation: [`Evaluator`](evaluator::Evaluator) actions over datasets,
/// `evaluate`, the built-in metrics ([`builtin`](evaluator::builtin)) and
/// the model-judged ones (answer relevancy, faithfulness).
pub mod evaluator {
    pub use genkit_evaluator::answer_relevancy::{
        AnswerRelevancyOptions, answer_relevancy_name, define_answer_relevancy,
    };
    pub use genkit_evaluator::faithfulness::{
        FaithfulnessOptions, define_faithfulness, faithfulness_name,
    };
    pub use genkit_evaluator::{
        EVALUATOR_METADATA_KEY_DEFINITION, EVALUATOR_METADATA_KEY_DISPLAY_NAME,
        EVALUATOR_METADATA_KEY_IS_BILLED, EvaluateOptions, Evaluator, EvaluatorAction,
        EvaluatorOptions, StatusOverride, builtin, define_evaluator, evaluate, evaluator,
    };
}
pub use genkit_model::{embedder, extract, formats, model, resource, testing, tool, types};
pub use genkit_prompt as prompt;

/// Retrieval: chunking, retrievers, indexers, rerankers, simple retrievers,
/// the local vector store.
pub mod retrieval {
    pub use genkit_retrieval::{
        chunk, indexer, local_vector_store, reranker, retriever, simple_retriever,
    };
}

/// Middleware: the mechanism (model, generate and tool hooks, named
/// middleware) and the capability shims from `genkit-model`, and the
/// policies an application chooses (retry, fallback, history policy, tool
/// approval, tool cache, filesystem, skills) from `genkit-middleware`.
///
/// [`middleware_plugin`](middleware::middleware_plugin) installs every
/// middleware of Genkit JS's `@genkit-ai/middleware` by name (`retry`,
/// `fallback`, `filesystem`, `skills`, `toolApproval`, `agents`,
/// `artifacts`): `Genkit::builder().plugin(genkit::middleware::middleware_plugin())`.
pub mod middleware {
    /// Every middleware of `@genkit-ai/middleware`, `agents` and `artifacts`
    /// included, as one plugin (this replaces genkit-middleware's
    /// `middleware_plugin`, which has all but those two).
    pub use genkit_agent::middleware::middleware_plugin;
    pub use genkit_middleware::*;
    pub use genkit_model::middleware::*;
}

/// Genkit's Agent API: [`Agent`](agent::Agent) and its chats and sessions,
/// [`AgentOptions`](agent::AgentOptions), the registry-level `define_*`
/// functions (the fallible way to define an agent), and the wire types
/// ([`types`](agent::types)), session stores ([`store`](agent::store)) and
/// exactly-once effects ([`effect`](agent::effect)).
pub mod agent {
    /// The `agents` (sub-agent delegation) and `artifacts` middleware of
    /// Genkit's `@genkit-ai/middleware`.
    pub use genkit_agent::middleware;
    pub use genkit_agent::runtime::{
        DEFAULT_DETACHED_TIMEOUT, DEFAULT_HEARTBEAT_INTERVAL, DEFAULT_LEASE_TIME,
        DEFAULT_MAX_DETACHED, agent_metadata, process_replica_id,
    };
    pub use genkit_agent::{
        Agent, AgentAction, AgentChat, AgentOptions, AgentSession, AgentTurnStream,
        ClientTransform, STATE_SIGNATURE_KEY, TurnFuture, define_agent, define_prompt_agent,
        define_prompt_agent_with,
    };
    pub use genkit_agent::{clock, effect, json_patch, limits, ownership, store, types};

    /// Checks on what a client sends to an agent: refused keys in messages
    /// and parts, and the resumes that must answer pending interrupts (their
    /// id key is [`effect::INTERRUPT_ID_KEY`]).
    pub mod input_check {
        pub use genkit_agent::input_check::{
            REFUSED_MESSAGE_KEYS, REFUSED_PART_KEYS, STRIPPED_PART_KEYS, check_message,
            check_resume,
        };
    }
}

#[cfg(feature = "sql-store")]
#[cfg_attr(docsrs, doc(cfg(feature = "sql-store")))]
pub mod stores;

/// MCP (Model Context Protocol): connect to MCP servers over stdio or
/// Streamable HTTP and use their tools, prompts and resources; an
/// [`McpHost`](mcp::McpHost) registered in the registry makes their tools
/// `<host>:tool/<server>/<tool>` (and `<host>:tool/*`) to `generate` and
/// prompts. The crate `genkit-mcp`, re-exported.
#[cfg(feature = "mcp")]
#[cfg_attr(docsrs, doc(cfg(feature = "mcp")))]
pub mod mcp {
    pub use genkit_mcp::*;
}

/// The few items nearly every app uses; everything else is imported from
/// its module (`genkit::tool::Tool`, `genkit::agent::AgentOptions`,
/// `genkit::testing::ProgrammableModel`, ...).
pub mod prelude {
    pub use crate::generate::GenerateOptions;
    pub use crate::types::{Message, Part};
    pub use crate::{ActionCtxExt, Error, Genkit, Result};
    pub use futures::StreamExt;
    pub use schemars::JsonSchema;
    pub use serde::{Deserialize, Serialize};
    pub use serde_json::{Value, json};
}
