//! Genkit's Agent API: agents on bidirectional actions, sessions and their
//! snapshots.
//!
//! - [`json_patch`]: JSON Patch (RFC 6902) as agents stream their custom
//!   state (`customPatch` chunks), computed exactly as Genkit JS does.

pub mod json_patch;
