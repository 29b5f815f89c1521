//! Wire pieces several provider APIs share: function tools as OpenAI's
//! API (and those modelled on it, such as Ollama's) declare them, their
//! parameter schemas, and tool results as text.

use crate::plugin::{EmbedderSpec, embed_texts};
use genkit_core::Result;
use genkit_model::types::{
    ConstrainedSupport, EmbedRequest, FinishReason, GenerateResponse, GenerationUsage, Media,
    Message, ModelSupports, OutputConfig, Part, ToolDefinition, ToolResponse,
};
use serde::Serialize;
use serde_json::{Map, Value, json};

/// A tool offered to the model: `{"type": "function", "function": {...}}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FunctionTool {
    /// Always `function`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The function.
    pub function: FunctionDef,
}

/// A function definition: name, description, JSON schema of the arguments.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FunctionDef {
    /// The function's name.
    pub name: String,
    /// What it does (left out when empty).
    pub description: Option<String>,
    /// The JSON schema of its arguments.
    pub parameters: Value,
}

impl FunctionTool {
    /// The function tool declaring Genkit tool `def`.
    pub fn new(def: &ToolDefinition) -> Self {
        let parameters = def
            .input_schema
            .as_ref()
            .map_or_else(empty_object_schema, parameters_schema);
        FunctionTool {
            kind: "function",
            function: FunctionDef {
                name: def.name.clone(),
                description: (!def.description.is_empty()).then(|| def.description.clone()),
                parameters,
            },
        }
    }
}

fn empty_object_schema() -> Value {
    json!({"type": "object", "properties": {}})
}

/// A JSON schema as these APIs take it: without `$schema`, and an empty
/// schema as an empty object schema.
pub fn parameters_schema(schema: &Value) -> Value {
    match schema {
        Value::Object(m) => {
            let mut m = m.clone();
            m.remove("$schema");
            if m.is_empty() {
                empty_object_schema()
            } else {
                Value::Object(m)
            }
        }
        other => other.clone(),
    }
}

/// A tool's result as the text of a tool message: its output (a string as
/// it is, other JSON serialized), else the text of its content parts.
pub fn tool_output_text(response: &ToolResponse) -> String {
    match &response.output {
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => response
            .content
            .iter()
            .flatten()
            .filter_map(Part::as_text)
            .collect(),
    }
}

/// Whether Genkit's output options ask for JSON (`format: json`, or no
/// format and `contentType: application/json`).
pub fn wants_json(output: &OutputConfig) -> bool {
    match output.format.as_deref() {
        Some(format) => format == "json",
        None => output.content_type.as_deref() == Some("application/json"),
    }
}

/// The start of a text embedding request as OpenAI's and Ollama's APIs
/// take it: `{"model": <version or the embedder's name>, "input": [texts],
/// "dimensions": <when given>}`.
pub fn text_embed_body(
    spec: &EmbedderSpec,
    request: &EmbedRequest,
    version: Option<String>,
    dimensions: Option<u32>,
) -> Result<Map<String, Value>> {
    let model = version.unwrap_or_else(|| spec.name.clone());
    let mut body = Map::new();
    body.insert("model".into(), model.into());
    body.insert("input".into(), embed_texts(request, &spec.name)?.into());
    put_some(&mut body, "dimensions", dimensions);
    Ok(body)
}

/// A model's answer as Genkit's response: the message, why it finished
/// (and, when the API says, how in words), its usage, and the API's own
/// answer as `raw` and, as Genkit JS keeps it, as `custom`.
pub fn model_response(
    message: Message,
    finish_reason: FinishReason,
    finish_message: Option<String>,
    usage: GenerationUsage,
    raw: Option<Value>,
) -> GenerateResponse {
    GenerateResponse {
        message: Some(message),
        finish_reason: Some(finish_reason),
        finish_message,
        usage: Some(Box::new(usage)),
        custom: raw.clone(),
        raw,
        ..GenerateResponse::default()
    }
}

/// The content type (the media's own, else the URL's) and base64 payload of
/// media given inline as a `data:` URL; `None` for any other URL. A `data:`
/// URL without `,`, not base64-encoded, or naming no type is an error,
/// whose text says which.
pub fn inline_data(media: &Media) -> Option<std::result::Result<(String, &str), String>> {
    let rest = media.url.strip_prefix("data:")?;
    let Some((header, data)) = rest.split_once(',') else {
        return Some(Err("a media `data:` URL has no `,` before its data".into()));
    };
    let Some(mime) = header.strip_suffix(";base64") else {
        return Some(Err(
            "media `data:` URLs must be base64-encoded (`data:<type>;base64,...`)".into(),
        ));
    };
    let content_type = media
        .content_type
        .clone()
        .or_else(|| (!mime.is_empty()).then(|| mime.to_owned()));
    Some(match content_type {
        Some(content_type) => Ok((content_type, data)),
        None => Err("inline media needs a content type".into()),
    })
}

/// Puts `key: value` in a request body when `value` is given.
pub fn put_some(body: &mut Map<String, Value>, key: &str, value: Option<impl Into<Value>>) {
    if let Some(value) = value {
        body.insert(key.to_owned(), value.into());
    }
}

/// What chat models can usually do: multi-turn, media, tools, tool
/// choice, system messages, text and JSON output. Providers adjust it.
pub fn chat_supports() -> ModelSupports {
    ModelSupports {
        multiturn: Some(true),
        media: Some(true),
        tools: Some(true),
        tool_choice: Some(true),
        system_role: Some(true),
        output: Some(vec!["text".into(), "json".into()]),
        ..ModelSupports::default()
    }
}

/// [`chat_supports`] with native constrained (schema-enforced) output.
pub fn constrained_chat_supports() -> ModelSupports {
    ModelSupports {
        constrained: Some(ConstrainedSupport::All),
        ..chat_supports()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_and_schemas() {
        let def = ToolDefinition::new("look", "Looks").with_input_schema(json!({
            "$schema": "http://json-schema.org/draft-07/schema#", "type": "string"
        }));
        assert_eq!(
            serde_json::to_value(FunctionTool::new(&def)).unwrap(),
            json!({"type": "function", "function": {"name": "look", "description": "Looks",
                "parameters": {"type": "string"}}})
        );
        let bare = FunctionTool::new(&ToolDefinition::new("t", ""));
        assert_eq!(bare.function.description, None);
        assert_eq!(bare.function.parameters, empty_object_schema());
        assert_eq!(parameters_schema(&json!({})), empty_object_schema());
    }

    #[test]
    fn inline_media() {
        let m = |url: &str, ct: Option<&str>| Media {
            url: url.into(),
            content_type: ct.map(str::to_owned),
        };
        let png = m("data:image/png;base64,iVBO", None);
        assert_eq!(
            inline_data(&png),
            Some(Ok(("image/png".to_owned(), "iVBO")))
        );
        let typed = m("data:;base64,AAAA", Some("application/pdf"));
        assert_eq!(
            inline_data(&typed),
            Some(Ok(("application/pdf".to_owned(), "AAAA")))
        );
        assert!(inline_data(&m("https://x/cat.jpg", None)).is_none());
        for bad in ["data:image/png,raw", "data:nocomma", "data:;base64,AAAA"] {
            assert!(matches!(inline_data(&m(bad, None)), Some(Err(_))), "{bad}");
        }
    }

    #[test]
    fn tool_results_as_text() {
        let r = |output: Option<Value>| ToolResponse {
            output,
            ..ToolResponse::new("t", Value::Null)
        };
        assert_eq!(tool_output_text(&r(Some(json!("hi")))), "hi");
        assert_eq!(tool_output_text(&r(Some(json!({"a": 1})))), r#"{"a":1}"#);
    }
}
