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
//! - The API key (from the builder's `api_key`, `GEMINI_API_KEY`,
//!   `GOOGLE_API_KEY` or `GOOGLE_GENAI_API_KEY`) is sent in the
//!   `x-goog-api-key` header only; it never appears in `Debug` output,
//!   errors, logs or traces.
//! - Built on the plugin kit of `genkit-provider`: the builder's shared
//!   options (`base_url`, `api_key`, `timeout`, `header`, `http_client`,
//!   `models`, `embedders`) mean the same in every provider plugin.
//!
//! ```no_run
//! use genkit::prelude::*;
//! use genkit_google_genai::GoogleAi;
//!
//! #[derive(Serialize, Deserialize, JsonSchema)]
//! struct City {
//!     /// The city's name.
//!     name: String,
//! }
//!
//! # async fn run() -> genkit::Result<()> {
//! // The key comes from GEMINI_API_KEY (or GOOGLE_API_KEY).
//! let ai = Genkit::builder().plugin(GoogleAi::from_env()?).build()?;
//! let weather = ai.define_tool("weather", "Current weather in a city", |city: City, _ctx| async move {
//!     Ok(json!({"celsius": if city.name == "Oslo" { 4.0 } else { 21.0 }}))
//! });
//! let response = ai
//!     .generate(
//!         GenerateOptions::prompt("Is it warmer in Oslo or in Rome?")
//!             .model("googleai/gemini-2.5-flash")
//!             .tool(&weather)
//!             .config(json!({"temperature": 0.2})),
//!     )
//!     .await?;
//! println!("{}", response.text());
//! # Ok(()) }
//! ```

pub mod config;
mod convert;
mod error;
pub mod models;
mod plugin;
mod stream;
mod wire;

pub use config::{EmbedConfig, FunctionCallingConfig, GeminiConfig, SafetySetting, ThinkingConfig};
pub use error::GeminiError;
pub use genkit_provider::{ApiKey, CommonConfig, EmbedderSpec, ModelSpec};
pub use plugin::{
    API_KEY_ENV_VARS, BASE_URL_ENV_VAR, DEFAULT_BASE_URL, GoogleAi, GoogleAiBuilder,
    GoogleAiProvider,
};
pub use stream::Events;

/// The default timeout (see the builder's `timeout`).
pub const DEFAULT_TIMEOUT: std::time::Duration = genkit_provider::kit::DEFAULT_TIMEOUT;
