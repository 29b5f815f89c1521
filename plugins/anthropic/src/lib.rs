//! # genkit-anthropic
//!
//! The Anthropic plugin for Genkit for Rust: Claude models through the
//! Messages API (`POST /v1/messages`, `anthropic-version: 2023-06-01`).
//!
//! - Models `anthropic/<model>`: a leading system message becomes `system`;
//!   text, images (base64 `data:` URLs and remote URLs) and PDFs; tools
//!   (`input_schema`), `tool_use` / `tool_result` blocks paired by id, and
//!   tool choice; consecutive turns of one role merged as the API requires;
//!   `max_tokens` from `maxOutputTokens` or the plugin's default
//!   ([`AnthropicBuilder::default_max_tokens`], 4096).
//! - Streaming: text and thinking deltas stream as they arrive; a tool call
//!   streams once its `input_json_delta`s form its complete input.
//! - Extended thinking (`config.thinking`): thinking blocks become Genkit
//!   `reasoning` parts with their signature in `metadata.thoughtSignature`,
//!   and go back as thinking blocks on the next turn; redacted thinking is
//!   kept as a `custom` part and sent back too.
//! - Structured output on models that support it (`output_config.format`
//!   with a JSON schema); other models get Genkit's prompt instructions.
//! - Stop reasons: `end_turn`, `stop_sequence`, `tool_use` → `stop`;
//!   `max_tokens` → `length`; `refusal` → `blocked`. Usage includes cache
//!   reads (`cachedContentTokens`) and writes (`custom`).
//! - Errors carry Genkit statuses: `401` → `UNAUTHENTICATED`, `403` →
//!   `PERMISSION_DENIED`, `429` → `RESOURCE_EXHAUSTED`, `5xx` and `529
//!   overloaded` → `UNAVAILABLE`, `400` → `INVALID_ARGUMENT`, timeouts →
//!   `DEADLINE_EXCEEDED`; stream `error` events map the same way, and a
//!   stream that ends before `message_stop` is an `UNAVAILABLE` error.
//!   Cancelling the call aborts the HTTP request.
//! - The API key (from the builder's `api_key` or `ANTHROPIC_API_KEY`) is
//!   sent in the `x-api-key` header only; it never appears in `Debug`
//!   output, errors, logs or traces.
//! - Built on the plugin kit of `genkit-provider`: the builder's shared
//!   options (`base_url`, `api_key`, `timeout`, `header`, `http_client`,
//!   `models`) mean the same in every provider plugin.
//!
//! ```no_run
//! use genkit::prelude::*;
//! use genkit_anthropic::Anthropic;
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Verdict {
//!     answer: String,
//!     confidence: f64,
//! }
//!
//! # async fn run() -> genkit::Result<()> {
//! // The key comes from ANTHROPIC_API_KEY.
//! let ai = Genkit::builder().plugin(Anthropic::from_env()?).build()?;
//! let response = ai
//!     .generate(
//!         GenerateOptions::prompt("Is 2^31 - 1 prime?")
//!             .model("anthropic/claude-sonnet-4-5")
//!             .config(json!({"thinking": {"enabled": true, "budgetTokens": 2048}}))
//!             .output::<Verdict>(),
//!     )
//!     .await?;
//! let verdict: Verdict = response.output()?;
//! println!("{} ({:.0}%)", verdict.answer, verdict.confidence * 100.0);
//! # Ok(()) }
//! ```
//!
//! Settings go on the builder:
//! `Anthropic::builder().api_key(key).default_max_tokens(2048).build()?`.

pub mod config;
mod convert;
mod error;
pub mod models;
mod plugin;
mod stream;
mod wire;

pub use config::{AnthropicConfig, ThinkingConfig};
pub use error::AnthropicError;
pub use genkit_provider::{ApiKey, CommonConfig, ModelSpec};
pub use plugin::{
    API_KEY_ENV_VAR, API_VERSION, Anthropic, AnthropicBuilder, AnthropicProvider, BASE_URL_ENV_VAR,
    DEFAULT_BASE_URL, DEFAULT_MAX_TOKENS,
};
pub use stream::MessageStream;

/// The default timeout (see the builder's `timeout`).
pub const DEFAULT_TIMEOUT: std::time::Duration = genkit_provider::kit::DEFAULT_TIMEOUT;
