//! Genkit for Rust, model layer: what every model, tool and embedder is
//! built from, and what a provider plugin needs.
//!
//! - [`types`]: Genkit's generation wire types (parts, messages, requests,
//!   responses, chunks, model metadata) with exactly Genkit's JSON shape.
//! - [`formats`]: output formats (`json`, `array`, `enum`, `jsonl`, `text`): format
//!   instructions, where they go in a request, and parsing of complete and streamed output.
//! - [`extract`]: tolerant JSON extraction from model text, including completion of
//!   truncated (streaming) JSON.
//! - [`model`], [`tool`], [`embedder`]: the model, tool and embedder actions
//!   (`define_model`, `define_tool`, `define_embedder`) and how they are called.
//! - [`resource`]: resources, content addressed by a URI or a URI template
//!   (`define_resource`), and finding the resource that serves a URI.
//! - [`middleware`]: the middleware mechanism (model, generate and tool
//!   hooks, named middleware) and the capability shims models get by default;
//!   the policies an application picks are in `genkit-middleware`.
//! - [`span_record`]: what model and generate spans record, shared with the
//!   generate engine (`genkit-generate`).
//! - [`testing`]: test models and a one-layer middleware runner.
//!
//! The layers above: `genkit-generate` (the tool loop), `genkit-prompt`
//! (prompt files), `genkit-middleware` (built-in policies), `genkit-agent`
//! (the Agent API), `genkit-retrieval`, `genkit-evaluator`; `genkit-rs`
//! re-exports them all.
//!
//! ```
//! use genkit_model::formats::{ChunkParseContext, Formats, apply_format};
//! use genkit_model::types::*;
//! use serde_json::json;
//!
//! // Ask for an array; the format's instructions go into the last user message.
//! let mut options = GenerateActionOptions::new(vec![Message::user("Name two colors.")])
//!     .with_output(GenerateActionOutputConfig::schema(json!({"type": "array"})).with_format("array"));
//! let format = apply_format(&mut options, &Formats::default())?.expect("a format");
//! assert_eq!(options.messages[0].content.len(), 2);
//!
//! // Parse the model's streamed output: each chunk yields the items it completed.
//! let handler = format.handler(options.output.as_ref().and_then(|o| o.json_schema.as_ref()))?;
//! let first = GenerateResponseChunk::new(vec![Part::text("[\"red\", \"gr")]);
//! let second = GenerateResponseChunk::new(vec![Part::text("een\"]")]);
//! let previous = [first.clone()];
//! assert_eq!(handler.parse_chunk(&ChunkParseContext::new(&first, &[]))?, Some(json!(["red"])));
//! assert_eq!(handler.parse_chunk(&ChunkParseContext::new(&second, &previous))?, Some(json!(["green"])));
//!
//! // And the complete message.
//! let response = GenerateResponse::new(Message::model("[\"red\", \"green\"]"), FinishReason::Stop);
//! assert_eq!(response.output_with(handler.as_ref())?, Some(json!(["red", "green"])));
//! # Ok::<(), genkit_model::formats::FormatError>(())
//! ```

pub mod action_support;
pub mod canonical;
pub mod embedder;
pub mod extract;
pub mod formats;
pub mod middleware;
pub mod model;
pub mod resource;
pub mod span_record;
pub mod testing;
pub mod tool;
pub mod types;
