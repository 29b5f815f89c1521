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
//! - [`ServeOptions`]: what both servers do against slow, greedy or buggy
//!   peers (header-read and request timeouts, a concurrency limit answering
//!   503, panics answered as Genkit's 500) and on shutdown (a drain deadline,
//!   then a flush of the trace exporters).
//! - [`start_dev_tooling`]: in dev mode (`GENKIT_ENV=dev`, as set by
//!   `genkit start -- <cmd>`), the [Reflection API](reflection), the
//!   [runtime file](runtime_file) and [trace export](telemetry).
//!
//! ```no_run
//! use genkit::prelude::*;
//! use genkit_openai::{ModelSpec, OpenAiCompatible};
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     // Internal errors are answered as `500 Internal Error`; their details
//!     // go to the log, which this prints (add `tracing-subscriber` to your
//!     // dependencies).
//!     tracing_subscriber::fmt::init();
//!
//!     let ai = Genkit::builder()
//!         .plugin(
//!             OpenAiCompatible::builder()
//!                 .name("local")
//!                 .base_url("http://127.0.0.1:8080/v1")
//!                 .models([ModelSpec::new("smollm2")])
//!                 .build()?,
//!         )
//!         .default_model("local/smollm2")
//!         .build()?;
//!     ai.define_flow("joke", {
//!         let ai = ai.clone();
//!         move |topic: String, _ctx| {
//!             let ai = ai.clone();
//!             async move {
//!                 let reply = ai
//!                     .generate(GenerateOptions::prompt(format!("A short joke about {topic}.")))
//!                     .await?;
//!                 Ok(reply.text())
//!             }
//!         }
//!     });
//!
//!     // Under `genkit start -- cargo run` (GENKIT_ENV=dev): the Reflection
//!     // API for the Dev UI, and traces sent to it. Otherwise does nothing.
//!     let _dev = genkit_server::start_dev_tooling(ai.registry()).await?;
//!     // POST http://127.0.0.1:3400/joke with {"data": "cats"}, until Ctrl-C.
//!     genkit_server::serve(ai.registry(), "127.0.0.1:3400").await?;
//!     Ok(())
//! }
//! ```

mod bidi;
pub mod context_providers;
mod dev;
pub mod durable;
mod error;
pub mod flow_server;
pub mod guard;
pub mod health;
pub mod reflection;
mod response;
mod run;
pub mod runtime_file;
pub mod serving;
pub mod shutdown;
pub mod sse;
pub mod telemetry;

pub use dev::{
    DevTooling, DevToolingOptions, is_dev_env, start_dev_tooling, start_dev_tooling_with,
};
pub use error::ServerError;
pub use flow_server::FlowServer;
pub use serving::ServeOptions;
pub use tower_http::cors;

use genkit_core::Registry;
use tokio::net::ToSocketAddrs;

/// Serves every flow of `registry` on `addr` until Ctrl-C or SIGTERM, then
/// finishes the requests in flight. Installs the trace exporters configured
/// in the environment. For options, use [`FlowServer`].
pub async fn serve(registry: &Registry, addr: impl ToSocketAddrs) -> Result<(), ServerError> {
    FlowServer::new(registry).serve(addr).await
}
