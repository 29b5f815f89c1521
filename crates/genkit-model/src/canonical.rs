//! Canonical JSON: one text per JSON value whatever its key order (defined
//! in genkit-core, [`genkit_core::canonical`], where the server's durable
//! streams hash with it too).

pub use genkit_core::canonical::canonical_json;
