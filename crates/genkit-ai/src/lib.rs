//! Genkit for Rust, AI layer.
//!
//! - [`types`]: Genkit's generation wire types (parts, messages, requests,
//!   responses, chunks, model metadata) with exactly Genkit's JSON shape.
//! - [`formats`]: output formats (`json`, `array`, `enum`, `jsonl`, `text`): format
//!   instructions, where they go in a request, and parsing of complete and streamed output.
//! - [`extract`]: tolerant JSON extraction from model text, including completion of
//!   truncated (streaming) JSON.

pub mod extract;
pub mod formats;
pub mod types;
