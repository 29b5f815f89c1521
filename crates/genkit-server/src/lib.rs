//! # genkit-server
//!
//! Serving and developer tooling for Genkit for Rust, wire-compatible with
//! Genkit's official tools (the `genkit` CLI and Dev UI, the
//! `genkit/beta/client` JS client):
//!
//! - [`FlowServer`]: flows as `POST /<flow>` endpoints (JSON and streaming),
//!   with [context providers](context_providers) for auth, CORS, a body limit
//!   and graceful shutdown; an axum [`Router`](axum::Router) you can serve or
//!   merge into your app.
//! - [`start_dev_tooling`]: in dev mode (`GENKIT_ENV=dev`, as set by
//!   `genkit start -- <cmd>`), the [Reflection API](reflection), the
//!   [runtime file](runtime_file) and [trace export](telemetry).
//!
//! ```no_run
//! use genkit_core::{Registry, flow::define_flow};
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let registry = Registry::new();
//!     define_flow(&registry, "shout", |s: String, _| async move { Ok(s.to_uppercase()) })?;
//!     let _dev = genkit_server::start_dev_tooling(&registry).await?; // no-op unless GENKIT_ENV=dev
//!     genkit_server::serve(&registry, "127.0.0.1:3400").await?;
//!     Ok(())
//! }
//! ```

#![warn(missing_docs)]

mod bidi;
pub mod context_providers;
mod dev;
mod error;
pub mod flow_server;
pub mod reflection;
mod run;
pub mod runtime_file;
pub mod shutdown;
pub mod sse;
pub mod telemetry;

pub use dev::{
    DevTooling, DevToolingOptions, is_dev_env, start_dev_tooling, start_dev_tooling_with,
};
pub use error::ServerError;
pub use flow_server::FlowServer;
pub use tower_http::cors;

use genkit_core::Registry;
use tokio::net::ToSocketAddrs;

/// Serves every flow of `registry` on `addr` until Ctrl-C or SIGTERM, then
/// finishes the requests in flight. Installs the trace exporters configured
/// in the environment. For options, use [`FlowServer`].
pub async fn serve(registry: &Registry, addr: impl ToSocketAddrs) -> Result<(), ServerError> {
    FlowServer::new(registry).serve(addr).await
}
