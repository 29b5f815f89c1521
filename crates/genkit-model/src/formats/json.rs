//! The `json` format.

use serde_json::Value;

use std::sync::Arc;

use super::{
    ChunkParseContext, Format, FormatConfig, FormatError, FormatHandler, StreamParsing, schema_json,
};
use crate::extract::{extract_json, try_extract_json};
use crate::types::Message;

/// `json`: one JSON value. Streaming yields the partial value parsed so far.
///
/// Its instructions are injected only on request (`default_instructions: false`): by
/// default a schema reaches the model through constrained generation, native or
/// simulated.
#[derive(Debug, Clone, Copy, Default)]
pub struct JsonFormat;

impl Format for JsonFormat {
    fn name(&self) -> &str {
        "json"
    }

    fn config(&self) -> FormatConfig {
        FormatConfig {
            format: Some("json".into()),
            content_type: Some("application/json".into()),
            constrained: Some(true),
            default_instructions: Some(false),
        }
    }

    fn handler(&self, schema: Option<&Value>) -> Result<Box<dyn FormatHandler>, FormatError> {
        let instructions = schema.map(|s| {
            format!(
                "Output should be in JSON format and conform to the following schema:\n\n```\n{}\n```\n",
                schema_json(s)
            )
        });
        Ok(Box::new(JsonHandler { instructions }))
    }
}

struct JsonHandler {
    instructions: Option<String>,
}

impl FormatHandler for JsonHandler {
    fn instructions(&self) -> Option<String> {
        self.instructions.clone()
    }

    /// The first JSON value in the text; `null` when there is none.
    fn parse_message(&self, message: &Message) -> Result<Value, FormatError> {
        try_extract_json(&message.text())
            .map(Option::unwrap_or_default)
            .map_err(|source| FormatError::InvalidOutput {
                format: "json".into(),
                source,
            })
    }

    fn parse_chunk(&self, context: &ChunkParseContext<'_>) -> Result<Option<Value>, FormatError> {
        Ok(extract_json(&context.accumulated_text()))
    }

    fn stream_parsing(&self) -> StreamParsing {
        StreamParsing::Text(Arc::new(extract_json))
    }
}
