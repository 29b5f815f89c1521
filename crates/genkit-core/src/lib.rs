//! # genkit-core
//!
//! The foundation of Genkit for Rust: everything callable is an
//! [`Action`] — a named, self-describing async function with JSON schemas for
//! its input, output and stream chunks, that validates what passes through
//! it, records a trace span, can stream and can be cancelled — kept in a
//! [`Registry`] under a key `/kind/name`.
//!
//! ```
//! use genkit_core::{Registry, flow::define_flow, Result};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<()> {
//! let registry = Registry::new();
//! let shout = define_flow(&registry, "shout", |s: String, _ctx| async move {
//!     Ok(s.to_uppercase())
//! })?;
//! assert_eq!(shout.run("hi".into()).await?, "HI");
//!
//! // The same flow, found by key and run on JSON.
//! let erased = registry.require_action("/flow/shout").await?;
//! let out = erased.run_json(serde_json::json!("hey"), Default::default()).await?;
//! assert_eq!(out.output, "HEY");
//! # Ok(()) }
//! ```

pub mod action;
pub mod canonical;
pub mod context;
pub mod dynamic;
pub mod error;
pub mod flow;
pub mod id;
pub mod plugin;
pub mod registry;
pub mod schema;
pub mod status;
pub mod streaming;
pub mod tracing;

pub use action::{
    Action, ActionCtx, ActionDesc, ActionKey, ActionKind, ActionResult, ActionStream, Cancellation,
    ChunkSender, DynAction, ErasedAction, IntoDynAction, Payload, RunOptions,
};
pub use context::{ActionContext, Extensions, RunLease};
pub use dynamic::{DynamicActionProvider, DynamicKey};
pub use error::{Error, Result};
pub use id::random_uuid;
pub use plugin::Plugin;
pub use registry::{Registry, WeakRegistry};
pub use status::StatusCode;
pub use tokio_util::sync::CancellationToken;

/// The version string reported to Genkit's tools (`rust/<version>`).
pub const GENKIT_VERSION: &str = concat!("rust/", env!("CARGO_PKG_VERSION"));
