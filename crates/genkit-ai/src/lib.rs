//! Genkit for Rust, AI layer.
//!
//! - [`agent`]: Genkit's Agent API (so far: JSON Patch for streamed custom state).
//! - [`types`]: Genkit's generation wire types (parts, messages, requests,
//!   responses, chunks, model metadata) with exactly Genkit's JSON shape.
//! - [`formats`]: output formats (`json`, `array`, `enum`, `jsonl`, `text`): format
//!   instructions, where they go in a request, and parsing of complete and streamed output.
//! - [`extract`]: tolerant JSON extraction from model text, including completion of
//!   truncated (streaming) JSON.
//!
//! ```
//! use genkit_ai::formats::{ChunkParseContext, Formats, apply_format};
//! use genkit_ai::types::*;
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
//! # Ok::<(), genkit_ai::formats::FormatError>(())
//! ```

mod action_support;
pub mod agent;
pub mod chunk;
pub mod embedder;
pub mod evaluator;
pub mod extract;
pub mod formats;
pub mod generate;
pub mod indexer;
pub mod local_vector_store;
pub mod middleware;
pub mod model;
pub mod prompt;
pub mod reranker;
pub mod retriever;
pub mod simple_retriever;
pub mod testing;
pub mod tool;
pub mod types;
