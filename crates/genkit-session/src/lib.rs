//! Genkit for Rust agent sessions as data: what a session store needs, and
//! nothing of the agent runtime.
//!
//! - [`types`]: the Agent API's wire types (init, inputs, stream chunks,
//!   output, session state and snapshots), with exactly Genkit JS's JSON
//!   shape.
//! - [`store`]: the [`SessionStore`](store::SessionStore) trait (versioned,
//!   optimistic writes) and the in-memory store.
//! - [`json_patch`]: JSON Patch (RFC 6902) as agents stream their custom
//!   state (`customPatch` chunks), computed exactly as Genkit JS does.
//! - [`clock`]: snapshot timestamps and heartbeat expiry.
//! - `testing` (feature `testing`): the suite every store implementation
//!   runs.
//!
//! The runtime that runs agents over these is `genkit-agent`.

#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod clock;
pub mod json_patch;
pub mod store;
#[cfg(any(test, feature = "testing"))]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub mod testing;
pub mod types;
