//! The `text` format.

use serde_json::Value;

use super::{
    ChunkParseContext, Format, FormatConfig, FormatError, FormatHandler, IncrementalParser,
    StreamParsing,
};
use crate::types::Message;

/// `text`: plain text, no instructions. A chunk parses to its own text.
#[derive(Debug, Clone, Copy, Default)]
pub struct TextFormat;

impl Format for TextFormat {
    fn name(&self) -> &str {
        "text"
    }

    fn config(&self) -> FormatConfig {
        FormatConfig {
            content_type: Some("text/plain".into()),
            ..FormatConfig::default()
        }
    }

    fn handler(&self, _schema: Option<&Value>) -> Result<Box<dyn FormatHandler>, FormatError> {
        Ok(Box::new(TextHandler))
    }
}

struct TextHandler;

impl FormatHandler for TextHandler {
    fn instructions(&self) -> Option<String> {
        None
    }

    fn parse_message(&self, message: &Message) -> Result<Value, FormatError> {
        Ok(Value::String(message.text()))
    }

    fn parse_chunk(&self, context: &ChunkParseContext<'_>) -> Result<Option<Value>, FormatError> {
        Ok(Some(Value::String(context.text())))
    }

    fn stream_parsing(&self) -> StreamParsing {
        StreamParsing::Incremental(Box::<ChunkText>::default())
    }
}

/// Each chunk's own text, from the message text so far.
#[derive(Debug, Default)]
struct ChunkText {
    seen: usize,
}

impl IncrementalParser for ChunkText {
    fn push(&mut self, text: &str) -> Option<Value> {
        let new = text.get(self.seen..).unwrap_or_default();
        self.seen = text.len();
        Some(Value::String(new.to_owned()))
    }
}
