//! Genkit [`GenerateRequest`] → `/api/chat` request body.

use crate::config::OllamaConfig;
use crate::wire::{ChatMessage, FunctionCall, ToolCall};
use genkit_core::{Error, Result};
use genkit_model::types::{
    GenerateRequest, Message, OutputConfig, Part, PartKind, Role, ToolDefinition, ToolRequest,
    ToolResponse,
};
use genkit_provider::wire::{FunctionTool, parameters_schema, tool_output_text, wants_json};
use serde_json::{Map, Value, json};

/// Builds the body of `POST /api/chat` for `request` (its config parsed
/// as `config`) to `model`.
pub(crate) fn chat_request(
    model: &str,
    request: &GenerateRequest,
    config: OllamaConfig,
    stream: bool,
) -> Result<Value> {
    let mut body = Map::new();
    body.insert("model".into(), Value::from(config.common.model_name(model)));
    body.insert(
        "messages".into(),
        serde_json::to_value(to_messages(&request.messages)?)?,
    );
    body.insert("stream".into(), Value::Bool(stream));
    let tools = request.tools();
    if !tools.is_empty() {
        let defs = tools.iter().map(to_tool).collect::<Result<Vec<_>>>()?;
        body.insert("tools".into(), serde_json::to_value(defs)?);
    }
    if let Some(format) = format(request.output.as_ref()) {
        body.insert("format".into(), format);
    }
    let options = config.options();
    if !options.is_empty() {
        body.insert("options".into(), Value::Object(options));
    }
    if let Some(k) = config.keep_alive {
        body.insert("keep_alive".into(), k);
    }
    if let Some(t) = config.think {
        body.insert("think".into(), t);
    }
    Ok(Value::Object(body))
}

/// `format` for Genkit's output options: the schema for constrained `json`
/// output, `"json"` for `json` without one, nothing otherwise.
fn format(output: Option<&OutputConfig>) -> Option<Value> {
    let o = output.filter(|o| wants_json(o))?;
    match (&o.schema, o.constrained) {
        (Some(schema), c) if c != Some(false) => Some(parameters_schema(schema)),
        _ => Some(Value::from("json")),
    }
}

/// Ollama passes tool arguments as a JSON object, so a tool must take one.
fn to_tool(def: &ToolDefinition) -> Result<FunctionTool> {
    let tool = FunctionTool::new(def);
    if let Some(t) = tool.function.parameters.get("type")
        && t != "object"
    {
        return Err(Error::invalid_argument(format!(
            "tool `{}`: Ollama only supports tools whose input is an object (got type {t})",
            def.name
        )));
    }
    Ok(tool)
}

/// Converts the conversation: text joined per message, images as base64.
pub(crate) fn to_messages(messages: &[Message]) -> Result<Vec<ChatMessage>> {
    let mut out = Vec::with_capacity(messages.len());
    for (i, m) in messages.iter().enumerate() {
        if m.role == Role::Tool {
            out.extend(m.tool_responses().map(tool_message));
            continue;
        }
        let role = match m.role {
            Role::System => "system",
            Role::User => "user",
            _ => "assistant",
        };
        let mut text = String::new();
        let mut images = Vec::new();
        let mut calls = Vec::new();
        for part in &m.content {
            match &part.kind {
                PartKind::Text(t) => text.push_str(t),
                PartKind::Data(d) => text.push_str(&d.to_string()),
                PartKind::Media(media) => images.push(image_data(&media.url, i)?),
                PartKind::ToolRequest(r) if m.role == Role::Model => calls.push(to_tool_call(r)),
                PartKind::Reasoning(_) | PartKind::Custom(_) | PartKind::Placeholder => {}
                _ => return Err(unsupported(i, m.role, part)),
            }
        }
        out.push(ChatMessage {
            role,
            content: text,
            images: (!images.is_empty()).then_some(images),
            tool_calls: (!calls.is_empty()).then_some(calls),
            tool_name: None,
            tool_call_id: None,
        });
    }
    Ok(out)
}

fn unsupported(index: usize, role: Role, part: &Part) -> Error {
    Error::invalid_argument(format!(
        "message {index} ({role}): `{}` parts are not supported in {role} messages",
        part.kind.key()
    ))
}

/// The base64 payload of a `data:` URL. Ollama takes images only inline.
fn image_data(url: &str, index: usize) -> Result<String> {
    match url.strip_prefix("data:").and_then(|r| r.split_once(',')) {
        Some((_, data)) => Ok(data.to_owned()),
        None => Err(Error::invalid_argument(format!(
            "message {index}: Ollama takes images as base64 `data:` URLs, not `{}` \
             (download remote media first, e.g. with the download-media middleware)",
            url.chars().take(60).collect::<String>()
        ))),
    }
}

fn to_tool_call(r: &ToolRequest) -> ToolCall {
    ToolCall {
        id: r.reference.clone(),
        function: FunctionCall {
            name: r.name.clone(),
            arguments: r.input.clone().unwrap_or_else(|| json!({})),
        },
    }
}

fn tool_message(r: &ToolResponse) -> ChatMessage {
    let content = tool_output_text(r);
    ChatMessage {
        role: "tool",
        content,
        images: None,
        tool_calls: None,
        tool_name: Some(r.name.clone()),
        tool_call_id: r.reference.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use genkit_model::types::ToolChoice;
    use genkit_provider::RequestConfig;

    #[test]
    fn conversation_with_images_and_tools() {
        let req = GenerateRequest::new(vec![
            Message::system("Be brief."),
            Message::user(vec![
                Part::text("What is this? "),
                Part::media("data:image/png;base64,iVBORw0K", None),
            ]),
            Message::model(vec![Part::tool_request(
                ToolRequest::new("look", json!({"q": "cat"})).with_ref("call_1"),
            )]),
            Message::tool(vec![Part::tool_response(
                ToolResponse::new("look", json!({"animal": "cat"})).with_ref("call_1"),
            )]),
        ])
        .with_tools(vec![
            ToolDefinition::new("look", "Looks").with_input_schema(json!({
                "$schema": "http://json-schema.org/draft-07/schema#",
                "type": "object", "properties": {"q": {"type": "string"}}
            })),
        ])
        .with_tool_choice(ToolChoice::Auto)
        .with_config(json!({"temperature": 0, "keepAlive": "5m"}));
        assert_eq!(
            chat_request(
                "llava",
                &req,
                OllamaConfig::from_value(req.config.as_ref()).unwrap(),
                false
            )
            .unwrap(),
            json!({
                "model": "llava", "stream": false,
                "messages": [
                    {"role": "system", "content": "Be brief."},
                    {"role": "user", "content": "What is this? ", "images": ["iVBORw0K"]},
                    {"role": "assistant", "content": "", "tool_calls": [
                        {"id": "call_1", "function": {"name": "look", "arguments": {"q": "cat"}}}
                    ]},
                    {"role": "tool", "content": "{\"animal\":\"cat\"}", "tool_name": "look", "tool_call_id": "call_1"}
                ],
                "tools": [{"type": "function", "function": {"name": "look", "description": "Looks",
                    "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}}],
                "options": {"temperature": 0.0},
                "keep_alive": "5m"
            })
        );
    }

    #[test]
    fn rejects_what_ollama_cannot_take() {
        let remote = GenerateRequest::new(vec![Message::user(vec![Part::media(
            "https://example.com/cat.png",
            None,
        )])]);
        assert!(chat_request("m", &remote, OllamaConfig::default(), false).is_err());
        let scalar_tool = GenerateRequest::new(vec![Message::user("hi")]).with_tools(vec![
            ToolDefinition::new("t", "").with_input_schema(json!({"type": "string"})),
        ]);
        assert!(chat_request("m", &scalar_tool, OllamaConfig::default(), false).is_err());
    }

    #[test]
    fn formats() {
        let schema = json!({"$schema": "x", "type": "object"});
        let o = OutputConfig {
            format: Some("json".into()),
            schema: Some(schema),
            constrained: Some(true),
            content_type: None,
        };
        assert_eq!(format(Some(&o)), Some(json!({"type": "object"})));
        let loose = OutputConfig {
            constrained: Some(false),
            ..o.clone()
        };
        assert_eq!(format(Some(&loose)), Some(json!("json")));
        let text = OutputConfig {
            format: Some("text".into()),
            ..o
        };
        assert_eq!(format(Some(&text)), None);
        assert_eq!(format(None), None);
    }
}
