//! The `enum` format.

use serde_json::Value;

use super::{
    ChunkParseContext, Format, FormatConfig, FormatError, FormatHandler, StreamParsing,
    schema_type_is,
};
use crate::types::Message;

/// `enum`: one value out of a list. Output is the text with quotes removed and
/// whitespace trimmed.
#[derive(Debug, Clone, Copy, Default)]
pub struct EnumFormat;

impl Format for EnumFormat {
    fn name(&self) -> &str {
        "enum"
    }

    fn config(&self) -> FormatConfig {
        FormatConfig {
            content_type: Some("text/enum".into()),
            constrained: Some(true),
            ..FormatConfig::default()
        }
    }

    /// Accepts a schema of type `string` (or `enum`), or one with an `enum` list and no type.
    fn handler(&self, schema: Option<&Value>) -> Result<Box<dyn FormatHandler>, FormatError> {
        if let Some(s) = schema {
            let typeless_enum = s.get("type").is_none() && s.get("enum").is_some();
            if !(schema_type_is(s, "string") || schema_type_is(s, "enum") || typeless_enum) {
                return Err(FormatError::InvalidSchema(
                    "Must supply a 'string' or 'enum' schema type when using the enum parser format."
                        .into(),
                ));
            }
        }
        let instructions = schema
            .and_then(|s| s.get("enum"))
            .and_then(Value::as_array)
            .map(|values| {
                let list: Vec<String> = values
                    .iter()
                    .map(|v| match v {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    })
                    .collect();
                format!(
                    "Output should be ONLY one of the following enum values. Do not output any additional information or add quotes.\n\n{}",
                    list.join("\n")
                )
            });
        Ok(Box::new(EnumHandler { instructions }))
    }
}

struct EnumHandler {
    instructions: Option<String>,
}

fn clean(text: &str) -> String {
    text.chars()
        .filter(|c| *c != '"' && *c != '\'')
        .collect::<String>()
        .trim()
        .to_owned()
}

impl FormatHandler for EnumHandler {
    fn instructions(&self) -> Option<String> {
        self.instructions.clone()
    }

    fn parse_message(&self, message: &Message) -> Result<Value, FormatError> {
        Ok(Value::String(clean(&message.text())))
    }

    /// The cleaned text so far (Genkit JS has no chunk parser for `enum`).
    fn parse_chunk(&self, context: &ChunkParseContext<'_>) -> Result<Option<Value>, FormatError> {
        Ok(parse_text(&context.accumulated_text()))
    }

    fn stream_parsing(&self) -> StreamParsing {
        StreamParsing::Text(std::sync::Arc::new(parse_text))
    }
}

/// The streamed output for the text so far: the cleaned text, if any.
fn parse_text(text: &str) -> Option<Value> {
    let text = clean(text);
    (!text.is_empty()).then_some(Value::String(text))
}
