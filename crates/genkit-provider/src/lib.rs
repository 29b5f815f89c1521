//! # genkit-provider
//!
//! What Genkit for Rust's model-provider plugins (`plugins/*`) share, so each
//! plugin keeps only its wire format:
//!
//! - [`kit`]: the plugin kit. A plugin implements [`Provider`] (its
//!   [`ProviderInfo`], the wire request of a generate or embed call, the
//!   reading of a whole or streamed answer) and declares itself with
//!   [`provider_plugin!`]; [`ProviderPlugin`] does the rest: one builder
//!   idiom and one options type ([`PluginSetup`]: key, base URL, timeout,
//!   headers, HTTP client, model and embedder lists), `from_env`, config
//!   parsing, credentials, cancellation, and the registration of models and
//!   embedders.
//! - [`ProviderError`]: one error type, parameterised by how the provider
//!   writes its errors ([`ErrorFormat`]), with one reading of error answers
//!   ([`ApiError`]): status mapping, `Retry-After` (capped), messages and
//!   details shared.
//! - [`CommonConfig`]: Genkit's common generation options, which every
//!   provider's config embeds.
//! - [`wire`]: wire pieces several APIs share (function tools, JSON output,
//!   text embedding bodies, usual chat capabilities).
//! - [`ApiKey`]: a credential that never shows in `Debug`, logs or errors.
//! - [`http`]: building the `reqwest` client, and [`HttpClient`], which
//!   sends requests with the plugin's headers under a [`Deadline`], reads
//!   error answers ([`ErrorResponse`]) and bodies.
//! - [`error`]: HTTP status → Genkit [`StatusCode`](genkit_core::StatusCode),
//!   `Retry-After`, message excerpts, and the `details` of a
//!   [`genkit_core::Error`] (`httpStatus`, `retryAfterMs`, ...).
//! - [`stream`]: Server-Sent Events and newline-delimited JSON bodies read
//!   frame by frame with idle timeouts, and [`fold_stream`], which feeds
//!   them to a provider's parser until it is done or the body ends.
//! - [`until_cancelled`]: runs a call until the action is cancelled, dropping
//!   the HTTP request with it.
//! - [`plugin`]: builder validation, sensitive extra headers, model and
//!   embedder spec lists, and the checks every text embedder makes.
//! - `test_server` (feature `test-server`): a scripted HTTP server on
//!   127.0.0.1 for wire tests.

mod call;
pub mod config;
pub mod error;
mod frames;
pub mod http;
pub mod kit;
pub mod plugin;
pub mod provider_error;
mod secret;
pub mod stream;
#[cfg(feature = "test-server")]
pub mod test_server;
pub mod wire;

pub use call::until_cancelled;
pub use config::CommonConfig;
pub use error::{BodyError, ErrorResponse, HttpError};
pub use http::{Deadline, HttpClient, HttpClientBuilder};
pub use kit::{
    Chat, Embed, KeyHeader, ModelSpec, PluginSetup, Provider, ProviderClient, ProviderInfo,
    ProviderPlugin, RequestConfig, StreamFormat, WireCall,
};
pub use plugin::EmbedderSpec;
pub use provider_error::{ApiError, ErrorFormat, ProviderError};
pub use secret::{ApiKey, InvalidKeyHeader};
/// Leaves `None` fields out when a struct is serialized (put it above the
/// `derive`), so wire and config structs need no per-field attribute.
pub use serde_with::skip_serializing_none;
pub use stream::{
    DEFAULT_MAX_FRAME, Emit, Frame, FrameError, FrameReader, NdjsonDecoder, SseDecoder, StreamFold,
    emit_model_parts, fold_stream,
};
