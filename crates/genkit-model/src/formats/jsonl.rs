//! The `jsonl` format.

use serde_json::Value;

use super::incremental::JsonlItems;
use super::{
    ChunkParseContext, Format, FormatConfig, FormatError, FormatHandler, StreamParsing,
    schema_json, schema_type_is,
};
use crate::extract::{extract_jsonl_items, parse_jsonl};
use crate::types::Message;

/// `jsonl`: JSON objects, one per line. Streaming yields, for each chunk, the objects
/// whose lines it completed.
#[derive(Debug, Clone, Copy, Default)]
pub struct JsonlFormat;

impl Format for JsonlFormat {
    fn name(&self) -> &str {
        "jsonl"
    }

    fn config(&self) -> FormatConfig {
        FormatConfig {
            content_type: Some("application/jsonl".into()),
            ..FormatConfig::default()
        }
    }

    /// Requires (if a schema is given) an array schema whose items are objects.
    fn handler(&self, schema: Option<&Value>) -> Result<Box<dyn FormatHandler>, FormatError> {
        if let Some(s) = schema {
            let items_are_objects = s.get("items").is_some_and(|i| schema_type_is(i, "object"));
            if !schema_type_is(s, "array") || !items_are_objects {
                return Err(FormatError::InvalidSchema(
                    "Must supply an 'array' schema type containing 'object' items when using the 'jsonl' parser format."
                        .into(),
                ));
            }
        }
        let instructions = schema.and_then(|s| s.get("items")).map(|items| {
            format!(
                "Output should be JSONL format, a sequence of JSON objects (one per line) separated by a newline `\\n` character. Each line should be a JSON object conforming to the following schema:\n\n```\n{}\n```\n    ",
                schema_json(items)
            )
        });
        Ok(Box::new(JsonlHandler { instructions }))
    }
}

struct JsonlHandler {
    instructions: Option<String>,
}

impl FormatHandler for JsonlHandler {
    fn instructions(&self) -> Option<String> {
        self.instructions.clone()
    }

    fn parse_message(&self, message: &Message) -> Result<Value, FormatError> {
        Ok(Value::Array(parse_jsonl(&message.text())))
    }

    fn parse_chunk(&self, context: &ChunkParseContext<'_>) -> Result<Option<Value>, FormatError> {
        let cursor = if context.has_previous() {
            extract_jsonl_items(&context.previous_text(), 0).cursor
        } else {
            0
        };
        let items = extract_jsonl_items(&context.accumulated_text(), cursor).items;
        Ok(Some(Value::Array(items)))
    }

    fn stream_parsing(&self) -> StreamParsing {
        StreamParsing::Incremental(Box::new(JsonlItems::default()))
    }
}
