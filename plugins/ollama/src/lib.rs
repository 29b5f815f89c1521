//! # genkit-ollama
//!
//! A Genkit for Rust plugin for [Ollama](https://ollama.com) over its native
//! API:
//!
//! - chat models over `/api/chat`: text, images (base64 `data:` URLs),
//!   system messages, tools and tool results, streaming (newline-delimited
//!   JSON), structured output through `format` (a JSON schema, or `"json"`),
//!   thinking as reasoning parts, `options` from the request config;
//! - embedders over `/api/embed`;
//! - models listed from the server (`/api/tags`), any name resolved on demand.
//!
//! Errors carry Genkit statuses (404 `NOT_FOUND` for a model the server does
//! not have, 400 `INVALID_ARGUMENT`, 5xx `UNAVAILABLE`, timeouts
//! `DEADLINE_EXCEEDED`); a stream cut off mid-way is an error, never a hang;
//! cancelling a call drops its HTTP request.
//!
//! Built on the plugin kit of `genkit-provider`: the builder's shared
//! options (`base_url`/`server_address`, `api_key` for a proxy, `timeout`,
//! `header`, `http_client`, `models`, `embedders`) mean the same in every
//! provider plugin.
//!
//! ```no_run
//! use genkit::prelude::*;
//! use genkit_ollama::Ollama;
//!
//! # async fn run() -> genkit::Result<()> {
//! // The server's address comes from OLLAMA_HOST (default 127.0.0.1:11434).
//! let ai = Genkit::builder().plugin(Ollama::from_env()?).build()?;
//! let response = ai
//!     .generate(
//!         GenerateOptions::prompt("Why is the sky blue?")
//!             .model("ollama/llama3.2")
//!             .config(json!({"temperature": 0.2, "numCtx": 8192})),
//!     )
//!     .await?;
//! println!("{}", response.text());
//! # Ok(()) }
//! ```
//!
//! Declaring a model's capabilities (any name resolves anyway):
//! `Ollama::builder().model(ModelSpec::new("gemma3:1b").tools(false)).build()?`.

mod config;
mod convert;
mod error;
mod models;
mod plugin;
mod wire;

pub use config::{EmbedConfig, OllamaConfig};
pub use convert::response::ChatState;
pub use error::OllamaError;
pub use genkit_provider::{CommonConfig, EmbedderSpec, ModelSpec};
pub use plugin::{
    DEFAULT_NAME, DEFAULT_SERVER_ADDRESS, Ollama, OllamaBuilder, OllamaProvider, local_models,
};

/// The default timeout (see the builder's `timeout`).
pub const DEFAULT_TIMEOUT: std::time::Duration = genkit_provider::kit::DEFAULT_TIMEOUT;
