//! # genkit-google-genai
//!
//! The Google AI plugin for Genkit for Rust: Gemini models and embedders
//! through the Gemini API (`generativelanguage.googleapis.com`).
//!
//! - Models `googleai/<model>`: `generateContent`, and
//!   `streamGenerateContent` when the caller streams. Text, media (inline
//!   `data:` URLs and file URIs), system instructions, function calling with
//!   call ids, tool choice, structured output (`responseJsonSchema`),
//!   thinking (thought summaries become `reasoning` parts; thought signatures
//!   are kept in part metadata and sent back on the next turn), safety
//!   settings, Google Search / code execution / URL context, usage counts.
//! - Embedders `googleai/<model>`: `embedContent` for one document,
//!   `batchEmbedContents` for several.
//! - Errors carry Genkit statuses: `401` → `UNAUTHENTICATED`, `403` →
//!   `PERMISSION_DENIED`, `429` → `RESOURCE_EXHAUSTED`, `5xx` →
//!   `UNAVAILABLE`, `400` → `INVALID_ARGUMENT`, timeouts →
//!   `DEADLINE_EXCEEDED`; a stream that stops before the model finished is
//!   an `UNAVAILABLE` error. Cancelling the call aborts the HTTP request.
//! - The API key (from [`GoogleAiOptions::api_key`], `GEMINI_API_KEY`,
//!   `GOOGLE_API_KEY` or `GOOGLE_GENAI_API_KEY`) is sent in the
//!   `x-goog-api-key` header only; it never appears in `Debug` output,
//!   errors, logs or traces.
//!
//! ```no_run
//! use std::sync::Arc;
//! use genkit_ai::generate::{GenerateOptions, generate};
//! use genkit_ai::tool::Tool;
//! use genkit_core::Registry;
//! use genkit_google_genai::{GoogleAi, GoogleAiOptions};
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Serialize, Deserialize, JsonSchema)]
//! struct City {
//!     /// The city's name.
//!     name: String,
//! }
//!
//! #[derive(Serialize, Deserialize, JsonSchema)]
//! struct Weather {
//!     celsius: f64,
//! }
//!
//! # async fn run() -> genkit_core::Result<()> {
//! let registry = Registry::new();
//! // The key comes from GEMINI_API_KEY unless given here.
//! registry.register_plugin(Arc::new(GoogleAi::with_options(GoogleAiOptions::new())?))?;
//!
//! let weather = Tool::new("weather", "Current weather in a city", |city: City, _ctx| async move {
//!     Ok(Weather { celsius: if city.name == "Oslo" { 4.0 } else { 21.0 } })
//! });
//! let response = generate(
//!     &registry,
//!     GenerateOptions::prompt("Is it warmer in Oslo or in Rome?")
//!         .model("googleai/gemini-2.5-flash")
//!         .tool(&weather)
//!         .config(serde_json::json!({"temperature": 0.2})),
//! )
//! .await?;
//! println!("{}", response.text());
//! # Ok(()) }
//! ```

#![deny(missing_docs)]

mod client;
pub mod config;
mod convert;
mod embedder;
mod error;
mod model;
pub mod models;
mod plugin;
mod stream;
mod wire;

pub use client::DEFAULT_BASE_URL;
pub use config::{EmbedConfig, FunctionCallingConfig, GeminiConfig, SafetySetting, ThinkingConfig};
pub use error::GeminiError;
pub use genkit_provider::ApiKey;
pub use plugin::{API_KEY_ENV_VARS, DEFAULT_TIMEOUT, GoogleAi, GoogleAiOptions};
