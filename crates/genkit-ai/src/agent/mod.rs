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
pub mod store;
pub mod testing;
pub mod types;
