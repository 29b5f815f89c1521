//! The `array` format.

use serde_json::Value;

use super::incremental::ArrayItems;
use super::{
    ChunkParseContext, Format, FormatConfig, FormatError, FormatHandler, StreamParsing,
    schema_json, schema_type_is,
};
use crate::extract::extract_items;
use crate::types::Message;

/// `array`: a JSON array. Streaming yields, for each chunk, the elements completed by
/// that chunk (never a partial element, never one twice).
#[derive(Debug, Clone, Copy, Default)]
pub struct ArrayFormat;

impl Format for ArrayFormat {
    fn name(&self) -> &str {
        "array"
    }

    fn config(&self) -> FormatConfig {
        FormatConfig {
            content_type: Some("application/json".into()),
            constrained: Some(true),
            ..FormatConfig::default()
        }
    }

    fn handler(&self, schema: Option<&Value>) -> Result<Box<dyn FormatHandler>, FormatError> {
        if let Some(s) = schema
            && !schema_type_is(s, "array")
        {
            return Err(FormatError::InvalidSchema(
                "Must supply an 'array' schema type when using the 'array' parser format.".into(),
            ));
        }
        let instructions = schema.map(|s| {
            format!(
                "Output should be a JSON array conforming to the following schema:\n    \n```\n{}\n```\n    ",
                schema_json(s)
            )
        });
        Ok(Box::new(ArrayHandler { instructions }))
    }
}

struct ArrayHandler {
    instructions: Option<String>,
}

impl FormatHandler for ArrayHandler {
    fn instructions(&self) -> Option<String> {
        self.instructions.clone()
    }

    fn parse_message(&self, message: &Message) -> Result<Value, FormatError> {
        Ok(Value::Array(extract_items(&message.text(), 0).items))
    }

    fn parse_chunk(&self, context: &ChunkParseContext<'_>) -> Result<Option<Value>, FormatError> {
        let cursor = if context.has_previous() {
            extract_items(&context.previous_text(), 0).cursor
        } else {
            0
        };
        let items = extract_items(&context.accumulated_text(), cursor).items;
        Ok(Some(Value::Array(items)))
    }

    fn stream_parsing(&self) -> StreamParsing {
        StreamParsing::Incremental(Box::new(ArrayItems::default()))
    }
}
