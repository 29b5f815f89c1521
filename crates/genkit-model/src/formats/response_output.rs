//! The structured output of a response: parsed with the output format its
//! request asked for, found among the built-in formats or a registry's.

use super::{FormatHandler, FormatSource};
use crate::types::GenerateResponse;
use genkit_core::{Error, Registry, Result};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The handler that parses output of `format` for `schema`, with the
/// format found in `formats` (the registry, or the built-ins).
pub fn format_handler(
    formats: &(impl FormatSource + ?Sized),
    format: Option<&str>,
    schema: Option<&Value>,
) -> Result<Option<Box<dyn FormatHandler>>> {
    let Some(f) = formats.resolve_format(format, schema.is_some())? else {
        return Ok(None);
    };
    Ok(Some(f.handler(schema)?))
}

impl GenerateResponse {
    /// The structured output, parsed with the request's output format
    /// (`json`, `array`, `enum`, `jsonl`, `text`) and converted to `T`.
    /// For a format defined in a registry, use [`output_in`](Self::output_in).
    pub fn output<T: DeserializeOwned>(&self) -> Result<T> {
        from_output(self.output_value()?)
    }

    /// The structured output as JSON, parsed with the request's output format
    /// (without one: a data part, or JSON found in the text). Only built-in
    /// formats are known here; for a format defined in a registry, use
    /// [`output_value_in`](Self::output_value_in).
    pub fn output_value(&self) -> Result<serde_json::Value> {
        self.parse_output(crate::formats::builtin_formats())
    }

    /// [`output`](Self::output), with formats defined in `registry` too.
    pub fn output_in<T: DeserializeOwned>(&self, registry: &Registry) -> Result<T> {
        from_output(self.output_value_in(registry)?)
    }

    /// [`output_value`](Self::output_value), with formats defined in
    /// `registry` too.
    pub fn output_value_in(&self, registry: &Registry) -> Result<serde_json::Value> {
        self.parse_output(registry)
    }

    fn parse_output(
        &self,
        formats: &(impl crate::formats::FormatSource + ?Sized),
    ) -> Result<serde_json::Value> {
        let message = self
            .message()
            .ok_or_else(|| Error::failed_precondition("the response has no message"))?;
        let output = self.request.as_ref().and_then(|r| r.output.as_ref());
        let format = output.and_then(|o| o.format.as_deref());
        let schema = output.and_then(|o| o.schema.as_ref());
        match format_handler(formats, format, schema)? {
            Some(h) => Ok(h.parse_message(message)?),
            None => message
                .output()
                .ok_or_else(|| Error::invalid_argument("the model output holds no JSON")),
        }
    }
}

/// Converts parsed output to the caller's type.
fn from_output<T: DeserializeOwned>(value: serde_json::Value) -> Result<T> {
    serde_json::from_value(value).map_err(|e| {
        Error::invalid_argument(format!(
            "the model output does not fit the requested type: {e}"
        ))
        .with_source(e)
    })
}
