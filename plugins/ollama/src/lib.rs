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
//! ```no_run
//! use genkit_ai::generate::{GenerateOptions, generate};
//! use genkit_core::Registry;
//! use genkit_ollama::{ModelSpec, Ollama};
//! use std::sync::Arc;
//!
//! # async fn run() -> genkit_core::Result<()> {
//! let registry = Registry::new();
//! let ollama = Ollama::builder()
//!     .server_address("http://127.0.0.1:11434")
//!     // Optional: declare capabilities of a model (any name resolves anyway).
//!     .model(ModelSpec::new("gemma3:1b").tools(false))
//!     .build()?;
//! registry.register_plugin(Arc::new(ollama))?;
//!
//! let response = generate(
//!     &registry,
//!     GenerateOptions::prompt("Why is the sky blue?")
//!         .model("ollama/llama3.2")
//!         .config(serde_json::json!({"temperature": 0.2, "numCtx": 8192})),
//! )
//! .await?;
//! println!("{}", response.text());
//! # Ok(()) }
//! ```

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

pub use config::OllamaConfig;
pub use embedder::EmbedConfig;
pub use error::OllamaError;
pub use models::{EmbedderSpec, ModelSpec};
pub use plugin::{DEFAULT_NAME, DEFAULT_SERVER_ADDRESS, DEFAULT_TIMEOUT, Ollama, OllamaBuilder};
