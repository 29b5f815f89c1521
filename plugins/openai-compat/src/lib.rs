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
//! - With the `tiktoken` feature, [`tokenizer::TiktokenEstimator`] counts
//!   tokens as OpenAI's models do, for history policies' token budgets.
//! - `from_env` reads `OPENAI_API_KEY` and, as OpenAI's SDKs do,
//!   `OPENAI_BASE_URL` (a proxy or another server; the key is sent there).
//! - API keys never appear in `Debug` output, logs or errors.
//!
//! - Built on the plugin kit of `genkit-provider`: the builder's shared
//!   options (`base_url`, `api_key`, `timeout`, `header`, `http_client`,
//!   `models`, `embedders`) mean the same in every provider plugin.
//!
//! ```no_run
//! use genkit::prelude::*;
//! use genkit_openai::{ModelSpec, OpenAiCompatible, StructuredOutputStyle};
//!
//! # async fn run() -> genkit::Result<()> {
//! // OpenAI itself, keyed by OPENAI_API_KEY, and a local llama.cpp server
//! // under the name `local`:
//! let local = OpenAiCompatible::builder()
//!     .name("local")
//!     .base_url("http://127.0.0.1:8080/v1")
//!     .models([ModelSpec::new("smollm2").label("SmolLM2 135M")])
//!     .structured_output(StructuredOutputStyle::JsonObjectWithSchema)
//!     .build()?;
//! let ai = Genkit::builder()
//!     .plugin(OpenAiCompatible::from_env()?)
//!     .plugin(local)
//!     .build()?;
//!
//! let response = ai
//!     .generate(
//!         GenerateOptions::prompt("Tell me a joke.")
//!             .model("openai/gpt-4o-mini")
//!             .config(json!({"temperature": 0.7, "maxOutputTokens": 200})),
//!     )
//!     .await?;
//! println!("{}", response.text());
//! # Ok(()) }
//! ```
//!
//! Request `config` is [`OpenAiConfig`]: Genkit's common fields plus
//! OpenAI's; any other key goes to the API as it is — for instance a named
//! tool choice, `{"tool_choice": {"type": "function", "function": {"name":
//! "weather"}}}`. Genkit's `toolChoice: required` with a single tool is sent
//! in that named form.

mod config;
mod convert;
mod error;
mod models;
mod plugin;
mod stream;
#[cfg(feature = "tiktoken")]
pub mod tokenizer;
mod wire;

pub use config::{EmbedConfig, OpenAiConfig, StructuredOutputStyle, VisualDetailLevel};
pub use error::ProviderError;
pub use genkit_provider::{ApiKey, CommonConfig};
pub use models::{EmbedderSpec, ModelSpec, TokenLimitField, openai_embedders, openai_models};
pub use plugin::{
    API_KEY_ENV, BASE_URL_ENV, DEFAULT_BASE_URL, DEFAULT_NAME, OpenAiCompatible,
    OpenAiCompatibleBuilder, OpenAiProvider,
};
pub use stream::StreamState;

/// The default timeout (see the builder's `timeout`).
pub const DEFAULT_TIMEOUT: std::time::Duration = genkit_provider::kit::DEFAULT_TIMEOUT;
