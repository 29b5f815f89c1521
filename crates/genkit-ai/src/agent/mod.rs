//! Genkit's Agent API: wire types, session snapshots and the stores that keep
//! them.
//!
//! - [`types`]: the agent's init, inputs, stream chunks and output, session
//!   state and snapshots, with exactly Genkit JS's JSON shape.
//! - [`json_patch`]: JSON Patch (RFC 6902) as agents stream their custom
//!   state (`customPatch` chunks), computed exactly as Genkit JS does.
//! - [`store`]: the [`SessionStore`](store::SessionStore) trait (versioned,
//!   optimistic writes) and the in-memory store.
//! - [`clock`]: snapshot timestamps and heartbeat expiry.
//! - [`testing`]: the test suite every store implementation runs.

pub mod clock;
pub mod json_patch;
pub mod prompt_agent;
pub mod runtime;
pub mod session;
pub mod store;
pub mod testing;
pub mod types;

pub use prompt_agent::{define_prompt_agent, define_prompt_agent_with};
pub use runtime::{Agent, AgentAction, AgentOptions, TurnFuture, define_agent};
pub use session::AgentSession;
