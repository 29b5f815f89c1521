//! Genkit [`GenerateRequest`] → Chat Completions request body.

use crate::config::{OpenAiConfig, StructuredOutputStyle, VisualDetailLevel};
use crate::models::{ModelSpec, TokenLimitField};
use crate::wire::{
    ChatMessage, ContentPart, FileData, FunctionCall, ImageUrl, InputAudio, MessageContent,
    ToolCall,
};
use genkit_core::{Error, Result};
use genkit_model::types::{
    GenerateRequest, Media, Message, OutputConfig, Part, PartKind, Role, ToolChoice,
    ToolDefinition, ToolRequest, ToolResponse,
};
use genkit_provider::wire::{
    FunctionTool, parameters_schema, put_some, tool_output_text, wants_json,
};
use serde_json::{Map, Value, json};

/// Builds the body of `POST /chat/completions` for `request` (its config
/// parsed as `config`) to `spec`.
pub(crate) fn chat_body(
    spec: &ModelSpec,
    style: StructuredOutputStyle,
    request: &GenerateRequest,
    config: OpenAiConfig,
    stream: bool,
) -> Result<Value> {
    let mut body = Map::new();
    body.insert(
        "model".into(),
        Value::from(config.common.model_name(&spec.name)),
    );
    body.insert(
        "messages".into(),
        serde_json::to_value(to_messages(&request.messages, config.visual_detail_level)?)?,
    );
    let tools = request.tools();
    if !tools.is_empty() {
        let defs: Vec<FunctionTool> = tools.iter().map(FunctionTool::new).collect();
        body.insert("tools".into(), serde_json::to_value(defs)?);
        if let Some(choice) = request.tool_choice {
            body.insert("tool_choice".into(), tool_choice(choice, tools));
        }
    }
    put_sampling(&mut body, &config, spec.token_limit);
    if let Some(format) = response_format(request.output.as_ref(), style) {
        body.insert("response_format".into(), format);
    }
    if stream {
        body.insert("stream".into(), Value::Bool(true));
        body.insert("stream_options".into(), json!({ "include_usage": true }));
    }
    // Unknown config keys go out as they are and win over mapped ones.
    for (k, v) in config.extra {
        body.insert(k, v);
    }
    Ok(Value::Object(body))
}

fn put_sampling(body: &mut Map<String, Value>, c: &OpenAiConfig, limit: TokenLimitField) {
    put_some(body, "temperature", c.common.temperature);
    put_some(body, "top_p", c.common.top_p);
    put_some(body, limit.wire_name(), c.common.max_output_tokens);
    put_some(body, "max_completion_tokens", c.max_completion_tokens);
    put_some(body, "stop", c.common.stop_sequences.clone());
    put_some(body, "seed", c.seed);
    put_some(body, "frequency_penalty", c.frequency_penalty);
    put_some(body, "presence_penalty", c.presence_penalty);
    put_some(body, "reasoning_effort", c.reasoning_effort.clone());
    put_some(body, "user", c.user.clone());
    put_some(body, "logprobs", c.log_probs);
    put_some(body, "top_logprobs", c.top_log_probs);
}

/// Genkit's tool choice on the wire. `required` with a single tool names
/// that tool: the same meaning, and the only form some servers (llama.cpp
/// Python) honour.
fn tool_choice(choice: ToolChoice, tools: &[ToolDefinition]) -> Value {
    match (choice, tools) {
        (ToolChoice::Required, [only]) => {
            json!({"type": "function", "function": {"name": only.name}})
        }
        (ToolChoice::Required, _) => Value::from("required"),
        (ToolChoice::Auto, _) => Value::from("auto"),
        (ToolChoice::None, _) => Value::from("none"),
        // A choice Genkit's schema may add later: let the model decide.
        _ => Value::from("auto"),
    }
}

/// `response_format` for Genkit's output options: a schema for constrained
/// `json` output, `json_object` for `json` without one, nothing otherwise.
fn response_format(output: Option<&OutputConfig>, style: StructuredOutputStyle) -> Option<Value> {
    let o = output.filter(|o| wants_json(o))?;
    match (&o.schema, o.constrained) {
        (Some(schema), constrained) if constrained != Some(false) => {
            let schema = parameters_schema(schema);
            Some(match style {
                StructuredOutputStyle::JsonSchema => json!({
                    "type": "json_schema",
                    "json_schema": {"name": "output", "schema": schema}
                }),
                StructuredOutputStyle::JsonObjectWithSchema => {
                    json!({"type": "json_object", "schema": schema})
                }
            })
        }
        _ => Some(json!({"type": "json_object"})),
    }
}

/// The call id of a tool request or response: its `ref`, else the tool name
/// (both sides of a call use the same fallback, so they still pair up).
fn call_id(reference: Option<&String>, name: &str) -> String {
    reference.cloned().unwrap_or_else(|| name.to_owned())
}

/// Converts the conversation. Text is sent as plain strings (joined per
/// message); user messages with media become arrays of parts.
pub(crate) fn to_messages(
    messages: &[Message],
    detail: Option<VisualDetailLevel>,
) -> Result<Vec<ChatMessage>> {
    let mut out = Vec::with_capacity(messages.len());
    for (i, m) in messages.iter().enumerate() {
        match m.role {
            Role::System => out.push(text_message("system", system_text(m, i)?)),
            Role::User => out.push(user_message(m, i, detail)?),
            Role::Model => out.push(assistant_message(m)),
            Role::Tool => out.extend(m.tool_responses().map(tool_message)),
            other => {
                return Err(Error::invalid_argument(format!(
                    "message {i}: role `{}` is not supported",
                    other.as_str()
                )));
            }
        }
    }
    Ok(out)
}

fn text_message(role: &'static str, text: String) -> ChatMessage {
    ChatMessage {
        role,
        content: MessageContent::Text(text),
        tool_calls: None,
        tool_call_id: None,
    }
}

fn unsupported(index: usize, role: Role, part: &Part) -> Error {
    Error::invalid_argument(format!(
        "message {index} ({role}): `{}` parts are not supported in {role} messages",
        part.kind.key()
    ))
}

fn system_text(m: &Message, index: usize) -> Result<String> {
    let mut text = String::new();
    for part in &m.content {
        match &part.kind {
            PartKind::Text(t) => text.push_str(t),
            PartKind::Data(d) => text.push_str(&d.to_string()),
            PartKind::Reasoning(_) | PartKind::Custom(_) | PartKind::Placeholder => {}
            _ => return Err(unsupported(index, m.role, part)),
        }
    }
    Ok(text)
}

fn user_message(
    m: &Message,
    index: usize,
    detail: Option<VisualDetailLevel>,
) -> Result<ChatMessage> {
    let mut parts = Vec::with_capacity(m.content.len());
    for part in &m.content {
        match &part.kind {
            PartKind::Text(t) => parts.push(ContentPart::Text { text: t.clone() }),
            PartKind::Data(d) => parts.push(ContentPart::Text {
                text: d.to_string(),
            }),
            PartKind::Media(media) => parts.push(media_part(media, index, detail)?),
            PartKind::Reasoning(_) | PartKind::Custom(_) | PartKind::Placeholder => {}
            _ => return Err(unsupported(index, m.role, part)),
        }
    }
    let all_text = parts.iter().all(|p| matches!(p, ContentPart::Text { .. }));
    let content = if all_text {
        MessageContent::Text(
            parts
                .into_iter()
                .filter_map(|p| match p {
                    ContentPart::Text { text } => Some(text),
                    _ => None,
                })
                .collect(),
        )
    } else {
        MessageContent::Parts(parts)
    };
    Ok(ChatMessage {
        role: "user",
        content,
        tool_calls: None,
        tool_call_id: None,
    })
}

/// `(content type, base64 payload)` of a `data:…;base64,…` URL.
fn split_data_url(url: &str) -> Option<(&str, &str)> {
    let rest = url.strip_prefix("data:")?;
    let (meta, data) = rest.split_once(',')?;
    let content_type = meta.strip_suffix(";base64")?;
    Some((content_type, data))
}

fn media_part(
    media: &Media,
    index: usize,
    detail: Option<VisualDetailLevel>,
) -> Result<ContentPart> {
    let content_type = media.effective_content_type().unwrap_or("");
    // Without a content type, treat the media as an image (signed URLs etc.).
    if content_type.is_empty() || content_type.starts_with("image/") {
        return Ok(ContentPart::ImageUrl {
            image_url: ImageUrl {
                url: media.url.clone(),
                detail,
            },
        });
    }
    let Some((_, data)) = split_data_url(&media.url) else {
        return Err(Error::invalid_argument(format!(
            "message {index}: media of type `{content_type}` must be a base64 `data:` URL \
             (only images may be given by remote URL)"
        )));
    };
    let audio = match content_type {
        "audio/wav" | "audio/x-wav" | "audio/wave" => Some("wav"),
        "audio/mpeg" | "audio/mp3" => Some("mp3"),
        _ => None,
    };
    Ok(match audio {
        Some(format) => ContentPart::InputAudio {
            input_audio: InputAudio {
                data: data.to_owned(),
                format,
            },
        },
        None => ContentPart::File {
            file: FileData {
                filename: file_name(content_type),
                file_data: media.url.clone(),
            },
        },
    })
}

fn file_name(content_type: &str) -> String {
    let ext = match content_type {
        "application/pdf" => "pdf",
        "text/plain" => "txt",
        "text/csv" => "csv",
        "text/markdown" => "md",
        "application/json" => "json",
        "application/msword" => "doc",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document" => "docx",
        _ => return "file".to_owned(),
    };
    format!("file.{ext}")
}

fn assistant_message(m: &Message) -> ChatMessage {
    let text: String = m.content.iter().filter_map(Part::as_text).collect();
    let calls: Vec<ToolCall> = m.tool_requests().map(to_tool_call).collect();
    ChatMessage {
        role: "assistant",
        // Always a string: `""` when the message only holds tool calls
        // (valid for OpenAI; `null` is rejected by llama.cpp servers).
        content: MessageContent::Text(text),
        tool_calls: (!calls.is_empty()).then_some(calls),
        tool_call_id: None,
    }
}

fn to_tool_call(r: &ToolRequest) -> ToolCall {
    let arguments = match &r.input {
        None => "{}".to_owned(),
        Some(v) => v.to_string(),
    };
    ToolCall {
        id: Some(call_id(r.reference.as_ref(), &r.name)),
        kind: "function".into(),
        function: FunctionCall {
            name: r.name.clone(),
            arguments,
        },
    }
}

fn tool_message(r: &ToolResponse) -> ChatMessage {
    let content = tool_output_text(r);
    ChatMessage {
        role: "tool",
        content: MessageContent::Text(content),
        tool_calls: None,
        tool_call_id: Some(call_id(r.reference.as_ref(), &r.name)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use genkit_provider::ApiKey;
    use genkit_provider::RequestConfig;

    /// A request body, and the key to send it with.
    #[derive(Debug)]
    struct ChatRequest {
        body: Value,
        api_key: Option<ApiKey>,
    }

    /// The body and request key for `request`, its config parsed as the
    /// plugin does.
    fn chat_request(
        spec: &ModelSpec,
        style: StructuredOutputStyle,
        request: &GenerateRequest,
        stream: bool,
    ) -> Result<ChatRequest> {
        let config = OpenAiConfig::from_value(request.config.as_ref())
            .map_err(|e| Error::invalid_argument(e.to_string()))?;
        let api_key = config.common.api_key.clone();
        let body = chat_body(spec, style, request, config, stream)?;
        Ok(ChatRequest { body, api_key })
    }
    use genkit_model::types::ConstrainedSupport;

    fn spec() -> ModelSpec {
        ModelSpec::new("gpt-4o").constrained(ConstrainedSupport::All)
    }

    fn body(req: &GenerateRequest) -> Value {
        chat_request(&spec(), StructuredOutputStyle::JsonSchema, req, false)
            .unwrap()
            .body
    }

    #[test]
    fn text_conversation() {
        let req = GenerateRequest::new(vec![
            Message::system("Be brief."),
            Message::user(vec![Part::text("Hello, "), Part::text("world")]),
            Message::model("Hi."),
        ]);
        assert_eq!(
            body(&req),
            json!({"model": "gpt-4o", "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Hello, world"},
                {"role": "assistant", "content": "Hi."}
            ]})
        );
    }

    #[test]
    fn placeholders_are_not_sent() {
        let section = Part::new(PartKind::Placeholder).with_metadata("purpose", json!("after"));
        let req = GenerateRequest::new(vec![
            Message::system(vec![Part::text("Be brief."), section.clone()]),
            Message::user(vec![Part::text("Hi"), section]),
        ]);
        assert_eq!(
            body(&req)["messages"],
            json!([
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Hi"}
            ])
        );
    }

    #[test]
    fn media_parts() {
        let req = GenerateRequest::new(vec![Message::user(vec![
            Part::text("What is this?"),
            Part::media("https://example.com/cat.jpg", None),
            Part::media("data:image/png;base64,AAAA", None),
            Part::media("data:audio/wav;base64,UklG", None),
            Part::media("data:application/pdf;base64,JVBE", None),
        ])])
        .with_config(json!({"visualDetailLevel": "low"}));
        assert_eq!(
            body(&req)["messages"][0]["content"],
            json!([
                {"type": "text", "text": "What is this?"},
                {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg", "detail": "low"}},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA", "detail": "low"}},
                {"type": "input_audio", "input_audio": {"data": "UklG", "format": "wav"}},
                {"type": "file", "file": {"filename": "file.pdf", "file_data": "data:application/pdf;base64,JVBE"}}
            ])
        );
        let remote_pdf = GenerateRequest::new(vec![Message::user(vec![Part::media(
            "https://example.com/a.pdf",
            Some("application/pdf"),
        )])]);
        let err = chat_request(
            &spec(),
            StructuredOutputStyle::JsonSchema,
            &remote_pdf,
            false,
        )
        .unwrap_err();
        assert_eq!(err.status(), genkit_core::StatusCode::InvalidArgument);
    }

    #[test]
    fn tool_history() {
        let req = GenerateRequest::new(vec![
            Message::user("Weather?"),
            Message::model(vec![
                Part::tool_request(
                    ToolRequest::new("weather", json!({"city": "Paris"})).with_ref("call_1"),
                ),
                Part::tool_request(ToolRequest::new("time", json!({}))),
            ]),
            Message::tool(vec![
                Part::tool_response(
                    ToolResponse::new("weather", json!({"c": 18})).with_ref("call_1"),
                ),
                Part::tool_response(ToolResponse::new("time", json!("noon"))),
            ]),
        ]);
        assert_eq!(
            body(&req)["messages"],
            json!([
                {"role": "user", "content": "Weather?"},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"}},
                    {"id": "time", "type": "function", "function": {"name": "time", "arguments": "{}"}}
                ]},
                {"role": "tool", "tool_call_id": "call_1", "content": "{\"c\":18}"},
                {"role": "tool", "tool_call_id": "time", "content": "noon"}
            ])
        );
    }

    #[test]
    fn tools_and_tool_choice() {
        let weather = ToolDefinition::new("weather", "Get the weather").with_input_schema(json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]
        }));
        let anything = ToolDefinition::new("noop", "")
            .with_input_schema(json!({"$schema": "http://json-schema.org/draft-07/schema#"}));
        let req = GenerateRequest::new(vec![Message::user("hi")])
            .with_tools(vec![weather.clone(), anything])
            .with_tool_choice(ToolChoice::Required);
        let b = body(&req);
        assert_eq!(
            b["tools"],
            json!([
                {"type": "function", "function": {"name": "weather", "description": "Get the weather",
                  "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
                {"type": "function", "function": {"name": "noop", "parameters": {"type": "object", "properties": {}}}}
            ])
        );
        assert_eq!(b["tool_choice"], json!("required"));
        let one = GenerateRequest::new(vec![Message::user("hi")])
            .with_tools(vec![weather])
            .with_tool_choice(ToolChoice::Required);
        assert_eq!(
            body(&one)["tool_choice"],
            json!({"type": "function", "function": {"name": "weather"}})
        );
        let none =
            GenerateRequest::new(vec![Message::user("hi")]).with_tool_choice(ToolChoice::Auto);
        assert!(
            body(&none).get("tool_choice").is_none(),
            "no tools, no tool_choice"
        );
    }

    #[test]
    fn config_mapping_and_pass_through() {
        let req = GenerateRequest::new(vec![Message::user("hi")]).with_config(json!({
            "temperature": 0.2, "topP": 0.9, "maxOutputTokens": 50, "stopSequences": ["\n"],
            "seed": 7, "frequencyPenalty": 0.1, "presencePenalty": -0.1, "reasoningEffort": "low",
            "user": "u1", "logProbs": true, "topLogProbs": 2, "topK": 5, "version": "gpt-4o-2024-08-06",
            "apiKey": "sk-request", "parallel_tool_calls": false, "temperature_x": 1
        }));
        let built = chat_request(&spec(), StructuredOutputStyle::JsonSchema, &req, true).unwrap();
        assert_eq!(
            built.body,
            json!({
                "model": "gpt-4o-2024-08-06",
                "messages": [{"role": "user", "content": "hi"}],
                "temperature": 0.2, "top_p": 0.9, "max_tokens": 50, "stop": ["\n"], "seed": 7,
                "frequency_penalty": 0.1, "presence_penalty": -0.1, "reasoning_effort": "low",
                "user": "u1", "logprobs": true, "top_logprobs": 2,
                "stream": true, "stream_options": {"include_usage": true},
                "parallel_tool_calls": false, "temperature_x": 1
            })
        );
        assert_eq!(
            built.api_key.map(|k| k.expose().to_owned()),
            Some("sk-request".into())
        );
        // Reasoning models take max_completion_tokens; raw keys win.
        let o3 = ModelSpec::new("o3-mini");
        let req = GenerateRequest::new(vec![Message::user("hi")])
            .with_config(json!({"maxOutputTokens": 9, "temperature": 1, "temperature_": 0, "max_completion_tokens": 12}));
        let b = chat_request(&o3, StructuredOutputStyle::JsonSchema, &req, false)
            .unwrap()
            .body;
        assert_eq!(b["max_completion_tokens"], json!(12));
        assert!(b.get("max_tokens").is_none());
        let bad = GenerateRequest::new(vec![Message::user("hi")]).with_config(json!({"seed": "x"}));
        assert!(chat_request(&o3, StructuredOutputStyle::JsonSchema, &bad, false).is_err());
    }

    #[test]
    fn structured_output_styles() {
        let schema =
            json!({"$schema": "x", "type": "object", "properties": {"a": {"type": "integer"}}});
        let out = OutputConfig {
            format: Some("json".into()),
            schema: Some(schema),
            constrained: Some(true),
            content_type: Some("application/json".into()),
        };
        let clean = json!({"type": "object", "properties": {"a": {"type": "integer"}}});
        assert_eq!(
            response_format(Some(&out), StructuredOutputStyle::JsonSchema),
            Some(
                json!({"type": "json_schema", "json_schema": {"name": "output", "schema": clean}})
            )
        );
        assert_eq!(
            response_format(Some(&out), StructuredOutputStyle::JsonObjectWithSchema),
            Some(json!({"type": "json_object", "schema": clean}))
        );
        let unconstrained = OutputConfig {
            constrained: Some(false),
            ..out.clone()
        };
        assert_eq!(
            response_format(Some(&unconstrained), StructuredOutputStyle::JsonSchema),
            Some(json!({"type": "json_object"}))
        );
        let simulated = OutputConfig {
            constrained: Some(false),
            ..OutputConfig::default()
        };
        assert_eq!(
            response_format(Some(&simulated), StructuredOutputStyle::JsonSchema),
            None
        );
        let text = OutputConfig {
            format: Some("text".into()),
            ..OutputConfig::default()
        };
        assert_eq!(
            response_format(Some(&text), StructuredOutputStyle::JsonSchema),
            None
        );
        let array = OutputConfig {
            format: Some("array".into()),
            ..out
        };
        assert_eq!(
            response_format(Some(&array), StructuredOutputStyle::JsonSchema),
            None
        );
    }
}
