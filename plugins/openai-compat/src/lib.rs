//! # genkit-openai
//!
//! A Genkit for Rust plugin for OpenAI and every server that speaks its
//! **Chat Completions** and **Embeddings** API (llama.cpp, vLLM, LM Studio,
//! Ollama's `/v1`, OpenRouter, ...).
//!
//! - Chat models: text, images (`https:` and `data:` URLs), audio and file
//!   inputs, system messages, tools with parallel calls and tool results,
//!   `toolChoice`, streaming (tool calls assembled from their fragments),
//!   structured output through `response_format`, usage and finish reasons.
//! - Embedders over `/embeddings`.
//! - Errors carry Genkit statuses: 400 `INVALID_ARGUMENT`, 401
//!   `UNAUTHENTICATED`, 403 `PERMISSION_DENIED`, 429 `RESOURCE_EXHAUSTED`
//!   (retried by the retry middleware), 5xx `UNAVAILABLE`, timeouts
//!   `DEADLINE_EXCEEDED`; a stream cut off mid-way is an error, never a hang.
//!   Cancelling a call drops its HTTP request.
//! - API keys never appear in `Debug` output, logs or errors.
//!
//! ```no_run
//! use genkit_ai::generate::{GenerateOptions, generate};
//! use genkit_core::Registry;
//! use genkit_openai::{ModelSpec, OpenAiCompatible, StructuredOutputStyle};
//! use std::sync::Arc;
//!
//! # async fn run() -> genkit_core::Result<()> {
//! let registry = Registry::new();
//! // OpenAI itself, keyed by OPENAI_API_KEY:
//! registry.register_plugin(Arc::new(OpenAiCompatible::openai()?))?;
//! // A local llama.cpp server under the name `local`:
//! let local = OpenAiCompatible::builder()
//!     .name("local")
//!     .base_url("http://127.0.0.1:8080/v1")
//!     .models([ModelSpec::new("smollm2").label("SmolLM2 135M")])
//!     .structured_output(StructuredOutputStyle::JsonObjectWithSchema)
//!     .build()?;
//! registry.register_plugin(Arc::new(local))?;
//!
//! let response = generate(
//!     &registry,
//!     GenerateOptions::prompt("Tell me a joke.")
//!         .model("openai/gpt-4o-mini")
//!         .config(serde_json::json!({"temperature": 0.7, "maxOutputTokens": 200})),
//! )
//! .await?;
//! println!("{}", response.text());
//! # Ok(()) }
//! ```
//!
//! Request `config` is [`OpenAiConfig`]: Genkit's common fields plus
//! OpenAI's; any other key goes to the API as it is — for instance a named
//! tool choice, `{"tool_choice": {"type": "function", "function": {"name":
//! "weather"}}}`. Genkit's `toolChoice: required` with a single tool is sent
//! in that named form.

#![warn(missing_docs)]

mod client;
mod config;
mod convert;
mod embedder;
mod error;
mod model;
mod models;
mod plugin;
mod stream;
mod wire;

pub use config::{OpenAiConfig, StructuredOutputStyle, VisualDetailLevel};
pub use embedder::EmbedConfig;
pub use error::ProviderError;
pub use genkit_provider::ApiKey;
pub use models::{EmbedderSpec, ModelSpec, TokenLimitField, openai_embedders, openai_models};
pub use plugin::{
    API_KEY_ENV, DEFAULT_BASE_URL, DEFAULT_NAME, DEFAULT_TIMEOUT, OpenAiCompatible,
    OpenAiCompatibleBuilder,
};
