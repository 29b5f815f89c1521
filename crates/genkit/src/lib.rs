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
//! | to… | use |
//! |---|---|
//! | call a model, with tools, structured output, streaming | [`Genkit::generate`], [`Genkit::generate_as`], [`Genkit::generate_stream`], [`generate::GenerateOptions`] |
//! | define tools, flows, prompts (`.prompt` files) | [`Genkit::define_tool`], [`Genkit::define_flow`], [`Genkit::define_prompt`], [`prompt`] |
//! | build an agent with sessions (Genkit's Agent API) | [`Genkit::define_prompt_agent`], [`Genkit::define_custom_agent`], [`agent`] (below) |
//! | keep sessions across restarts | [`agent::store`] (in memory), `sql-store` feature: `genkit::stores` / `genkit::open_store` (SQLite, PostgreSQL); crate `genkit-store-firestore` |
//! | serve flows and agents over HTTP, the Dev UI | crate `genkit-server` (`FlowServer`, the Reflection API under `genkit start`) |
//! | talk to a provider | crates `genkit-openai` (and any OpenAI-compatible server), `genkit-google-genai`, `genkit-anthropic`, `genkit-ollama`; `genkit-local-embedder` |
//! | retrieval and evaluation | [`retriever`], [`indexer`], [`local_vector_store`], [`chunk`], [`evaluator`]; crate `genkit-pgvector` |
//! | test without a model | [`testing::ProgrammableModel`] |
//!
//! Features: `sql-store` (SQLite session stores), `sql-store-postgres`
//! (plus PostgreSQL), `download-media` (the media download middleware).
//!
//! ## An agent
//!
//! An agent keeps a conversation in a session: each turn sees the history,
//! and a session with a store is continued later by its id (in another
//! process too, with a persistent store).
//!
//! ```
//! use genkit::agent::store::InMemorySessionStore;
//! use genkit::agent::types::AgentInit;
//! use genkit::prelude::*;
//! use genkit::prompt::PromptConfig;
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

mod agents;
mod ctx_ext;
mod evaluation;
mod genkit;
mod retrieval;
mod typed_stream;

pub use crate::ctx_ext::ActionCtxExt;
pub use crate::genkit::{Genkit, GenkitBuilder};
pub use crate::typed_stream::TypedGenerateStream;

pub use genkit_agent as agent;
pub use genkit_evaluator as evaluator;
pub use genkit_generate as generate;
pub use genkit_model::{embedder, extract, formats, model, testing, tool, types};
pub use genkit_prompt as prompt;
/// Retrieval: chunking, retrievers, indexers, rerankers, simple retrievers,
/// the local vector store.
pub use genkit_retrieval::{
    chunk, indexer, local_vector_store, reranker, retriever, simple_retriever,
};

/// Middleware: the mechanism (model, generate and tool hooks, named
/// middleware) and the capability shims from `genkit-model`, and the
/// policies an application chooses (retry, fallback, history policy, tool
/// approval, tool cache) from `genkit-middleware`.
pub mod middleware {
    pub use genkit_middleware::*;
    pub use genkit_model::middleware::*;
}
pub use genkit_core::{
    Action, ActionContext, ActionCtx, ActionDesc, ActionKind, ActionResult, ActionStream,
    CancellationToken, DynAction, ErasedAction, Error, Extensions, GENKIT_VERSION, Plugin,
    Registry, Result, RunOptions, StatusCode, action, context, flow, plugin, registry, schema,
    status, tracing,
};

#[cfg(feature = "sql-store")]
#[cfg_attr(docsrs, doc(cfg(feature = "sql-store")))]
pub mod stores;
#[cfg(feature = "sql-store")]
#[cfg_attr(docsrs, doc(cfg(feature = "sql-store")))]
pub use crate::stores::open_store;

/// The core crate (actions, registry, tracing), for APIs not re-exported here.
pub use genkit_core as core;

/// Everything a typical app uses.
pub mod prelude {
    pub use crate::agent::types::{AgentInput, AgentOutput, AgentResult, AgentResume};
    pub use crate::agent::{Agent, AgentChat, AgentOptions, AgentSession};
    pub use crate::generate::{GenerateChunk, GenerateOptions, GenerateStream, ToolErrorPolicy};
    pub use crate::model::{Model, ModelCtx, ModelImpl, ModelOptions, ModelRef};
    pub use crate::testing::ProgrammableModel;
    pub use crate::tool::{Tool, ToolCtx, ToolImpl, ToolInterrupt};
    pub use crate::types::{
        DocumentData, FinishReason, GenerateRequest, GenerateResponse, GenerateResponseChunk,
        Message, ModelSupports, Part, Role, ToolChoice, ToolRequest, ToolResponse,
    };
    pub use crate::{ActionCtxExt, Genkit, GenkitBuilder, TypedGenerateStream};
    pub use futures::StreamExt;
    pub use genkit_core::flow::FlowContext;
    pub use genkit_core::{ActionContext, ActionCtx, Error, Result, StatusCode};
    pub use schemars::JsonSchema;
    pub use serde::{Deserialize, Serialize};
    pub use serde_json::{Value, json};
}
