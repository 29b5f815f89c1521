//! Genkit [`GenerateRequest`] → Messages API request body.

use genkit_model::types::{
    GenerateRequest, Media, Message, Part, PartKind, Role, ToolChoice, ToolDefinition, ToolResponse,
};
use serde_json::{Map, Value, json};

use super::schema::to_output_schema;
use crate::config::AnthropicConfig;
use crate::error::AnthropicError;
use crate::wire::{AnyBlock, Block, MessagesRequest, Source, WireMessage, WireTool};
use genkit_provider::wire::inline_data;

/// Image types the Messages API accepts.
const IMAGE_TYPES: [&str; 4] = ["image/jpeg", "image/png", "image/gif", "image/webp"];

/// Plugin-level settings that shape every request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RequestDefaults {
    /// `max_tokens` when the config sets none.
    pub max_tokens: u32,
}

/// Builds the Messages API body for `req` (its `config` parsed as `config`),
/// calling `model`.
pub(crate) fn to_messages_request(
    req: &GenerateRequest,
    config: &AnthropicConfig,
    model: &str,
    defaults: RequestDefaults,
    stream: bool,
) -> Result<MessagesRequest, AnthropicError> {
    let (system, messages) = split_system(&req.messages)?;
    let messages = to_wire_messages(&messages)?;
    if messages.is_empty() {
        return Err(AnthropicError::InvalidRequest(
            "the request holds no user or model content".into(),
        ));
    }

    let thinking = config
        .thinking
        .as_ref()
        .map(|t| t.to_wire())
        .transpose()?
        .flatten();
    let budget = thinking.as_ref().and_then(|(_, b)| *b);
    // The thinking budget counts against max_tokens: when the caller set no
    // max_tokens, leave room for an answer after a large budget.
    let max_tokens = match (config.common.max_output_tokens, budget) {
        (Some(max), _) => max,
        (None, Some(b)) if b >= defaults.max_tokens => b.saturating_add(defaults.max_tokens),
        (None, _) => defaults.max_tokens,
    };

    let tools: Vec<WireTool> = req.tools().iter().map(to_wire_tool).collect();
    let tool_choice = match (&config.tool_choice, req.tool_choice) {
        (Some(raw), _) => Some(raw.clone()),
        (None, Some(choice)) if !tools.is_empty() => Some(json!({"type": choice_type(choice)})),
        _ => None,
    };

    Ok(MessagesRequest {
        model: model.to_owned(),
        max_tokens,
        messages,
        system,
        stop_sequences: config.common.stop_sequences.clone(),
        temperature: config.common.temperature,
        top_k: config.common.top_k,
        top_p: config.common.top_p,
        tools: (!tools.is_empty()).then_some(tools),
        tool_choice,
        thinking: thinking.map(|(t, _)| t),
        metadata: config.metadata.clone(),
        output_config: output_config(req, config),
        stream: stream.then_some(true),
        extra: config.extra.clone(),
    })
}

/// A leading system message becomes `system` (text only); the Messages API
/// has no system turns elsewhere.
fn split_system(
    messages: &[Message],
) -> Result<(Option<Vec<AnyBlock>>, Vec<&Message>), AnthropicError> {
    let mut rest: Vec<&Message> = messages.iter().collect();
    let system = match messages.first() {
        Some(first) if first.role == Role::System => {
            rest.remove(0);
            let mut blocks = Vec::new();
            for part in &first.content {
                match &part.kind {
                    PartKind::Text(t) if t.is_empty() => {}
                    PartKind::Text(t) => blocks.push(AnyBlock::Known(Block::Text {
                        text: t.clone(),
                        citations: None,
                        cache_control: part.metadata_value("cache_control").cloned(),
                    })),
                    _ => {
                        return Err(AnthropicError::InvalidRequest(
                            "system messages may only hold text for Claude".into(),
                        ));
                    }
                }
            }
            (!blocks.is_empty()).then_some(blocks)
        }
        _ => None,
    };
    if rest.iter().any(|m| m.role == Role::System) {
        return Err(AnthropicError::InvalidRequest(
            "Claude accepts a system message only as the first message".into(),
        ));
    }
    Ok((system, rest))
}

/// Converts the turns and merges consecutive turns of the same role, as the
/// Messages API requires user and assistant turns to alternate (tool results
/// travel in user turns).
fn to_wire_messages(messages: &[&Message]) -> Result<Vec<WireMessage>, AnthropicError> {
    let mut out: Vec<WireMessage> = Vec::with_capacity(messages.len());
    for m in messages {
        let role = match m.role {
            Role::Model => "assistant",
            _ => "user",
        };
        let mut content = Vec::with_capacity(m.content.len());
        for part in &m.content {
            if let Some(block) = to_block(part)? {
                content.push(block);
            }
        }
        if content.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.role == role => last.content.extend(content),
            _ => out.push(WireMessage { role, content }),
        }
    }
    Ok(out)
}

/// One Genkit part as a content block; `None` for parts Claude would reject
/// and that carry nothing for it (empty text, placeholders, reasoning
/// without a signature, e.g. from another provider).
fn to_block(part: &Part) -> Result<Option<AnyBlock>, AnthropicError> {
    let cache_control = part.metadata_value("cache_control").cloned();
    let block = match &part.kind {
        PartKind::Text(t) if t.is_empty() => return Ok(None),
        PartKind::Placeholder => return Ok(None),
        PartKind::Text(t) => Block::Text {
            text: t.clone(),
            citations: None,
            cache_control,
        },
        PartKind::Media(media) => media_block(media, cache_control)?,
        PartKind::ToolRequest(request) => Block::ToolUse {
            id: request.reference.clone().ok_or_else(|| {
                AnthropicError::InvalidRequest(format!(
                    "the tool request for `{}` has no ref; Claude needs the tool_use id",
                    request.name
                ))
            })?,
            name: request.name.clone(),
            input: request.input.clone().unwrap_or_else(|| json!({})),
            cache_control,
        },
        PartKind::ToolResponse(response) => tool_result(response, cache_control)?,
        PartKind::Reasoning(thinking) => {
            match part
                .metadata_value("thoughtSignature")
                .and_then(Value::as_str)
            {
                Some(signature) => Block::Thinking {
                    thinking: thinking.clone(),
                    signature: signature.to_owned(),
                },
                None => return Ok(None),
            }
        }
        PartKind::Custom(custom) => {
            if let Some(Value::String(data)) = custom.get("redactedThinking") {
                Block::RedactedThinking { data: data.clone() }
            } else if let Some(raw) = custom.get("anthropicBlock") {
                return Ok(Some(AnyBlock::Other(raw.clone())));
            } else {
                return Err(AnthropicError::InvalidRequest(
                    "Claude does not accept this `custom` part".into(),
                ));
            }
        }
        PartKind::Data(_) => {
            return Err(AnthropicError::InvalidRequest(
                "Claude does not accept `data` parts; send the data as text".into(),
            ));
        }
        PartKind::Resource(r) => {
            return Err(AnthropicError::InvalidRequest(format!(
                "the resource `{}` was not resolved before the model call",
                r.uri
            )));
        }
        _ => {
            return Err(AnthropicError::InvalidRequest(
                "Claude does not accept this kind of part".into(),
            ));
        }
    };
    Ok(Some(AnyBlock::Known(block)))
}

/// Images (jpeg, png, gif, webp) and PDFs, inline (`data:` URLs, base64) or
/// by URL.
fn media_block(media: &Media, cache_control: Option<Value>) -> Result<Block, AnthropicError> {
    let (source, content_type) = match inline_data(media) {
        Some(inline) => {
            let (content_type, data) = inline.map_err(AnthropicError::InvalidRequest)?;
            let source = Source::Base64 {
                media_type: content_type.clone(),
                data: data.to_owned(),
            };
            (source, Some(content_type))
        }
        None => (
            Source::Url {
                url: media.url.clone(),
            },
            media.content_type.clone(),
        ),
    };
    match content_type.as_deref() {
        Some("application/pdf") => Ok(Block::Document {
            source,
            cache_control,
        }),
        Some(ct) if IMAGE_TYPES.contains(&ct) => Ok(Block::Image {
            source,
            cache_control,
        }),
        // A remote URL without a declared type is taken to be an image.
        None => Ok(Block::Image {
            source,
            cache_control,
        }),
        Some(other) => Err(AnthropicError::InvalidRequest(format!(
            "Claude does not accept media of type `{other}` (images: {}; documents: application/pdf)",
            IMAGE_TYPES.join(", ")
        ))),
    }
}

/// A tool's output goes back as text (strings as they are, anything else as
/// JSON), followed by any media or text parts of a multipart response.
fn tool_result(
    response: &ToolResponse,
    cache_control: Option<Value>,
) -> Result<Block, AnthropicError> {
    let tool_use_id = response.reference.clone().ok_or_else(|| {
        AnthropicError::InvalidRequest(format!(
            "the tool response of `{}` has no ref; Claude needs the tool_use id",
            response.name
        ))
    })?;
    let mut content = Vec::new();
    match &response.output {
        Some(Value::String(s)) if !s.is_empty() => {
            content.push(AnyBlock::Known(Block::text(s.clone())))
        }
        Some(Value::String(_)) | None => {}
        Some(other) => content.push(AnyBlock::Known(Block::text(other.to_string()))),
    }
    for part in response.content.iter().flatten() {
        match &part.kind {
            PartKind::Text(_) | PartKind::Media(_) => {
                if let Some(block) = to_block(part)? {
                    content.push(block);
                }
            }
            _ => {
                return Err(AnthropicError::InvalidRequest(
                    "tool results may only hold text and media parts for Claude".into(),
                ));
            }
        }
    }
    Ok(Block::ToolResult {
        tool_use_id,
        content,
        is_error: None,
        cache_control,
    })
}

/// Anthropic needs `input_schema.type`; a schema without one (a tool taking
/// anything) becomes an open object.
fn to_wire_tool(tool: &ToolDefinition) -> WireTool {
    let input_schema = match &tool.input_schema {
        Some(Value::Object(m)) if m.get("type").and_then(Value::as_str) == Some("object") => {
            Value::Object(m.clone())
        }
        Some(Value::Object(m)) if !m.contains_key("type") => {
            let mut m = m.clone();
            m.insert("type".into(), json!("object"));
            Value::Object(m)
        }
        _ => json!({"type": "object"}),
    };
    WireTool {
        name: tool.name.clone(),
        description: tool.description.clone(),
        input_schema,
    }
}

fn choice_type(choice: ToolChoice) -> &'static str {
    match choice {
        ToolChoice::Auto => "auto",
        ToolChoice::Required => "any",
        ToolChoice::None => "none",
        // A choice Genkit's schema may add later: let the model decide.
        _ => "auto",
    }
}

/// The config's `output_config`, plus `format` when the request asks for
/// natively constrained JSON.
fn output_config(req: &GenerateRequest, config: &AnthropicConfig) -> Option<Map<String, Value>> {
    let mut out = config.output_config.clone().unwrap_or_default();
    if let Some(output) = &req.output
        && output.constrained == Some(true)
        && output.format.as_deref() == Some("json")
        && let Some(schema) = &output.schema
    {
        out.insert(
            "format".into(),
            json!({"type": "json_schema", "schema": to_output_schema(schema)}),
        );
    }
    (!out.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use genkit_model::types::ToolRequest;

    fn body(req: &GenerateRequest) -> Value {
        let config =
            genkit_provider::plugin::parse_options::<AnthropicConfig>(req.config.as_ref()).unwrap();
        let r = to_messages_request(
            req,
            &config,
            "claude-x",
            RequestDefaults { max_tokens: 4096 },
            false,
        )
        .unwrap();
        serde_json::to_value(r).unwrap()
    }

    #[test]
    fn merges_turns_and_orders_tool_results_first() {
        let call = ToolRequest::new("lookup", json!({"q": 1})).with_ref("toolu_1");
        let req = GenerateRequest::new(vec![
            Message::system("Be brief."),
            Message::user("a"),
            Message::user(vec![Part::text(""), Part::text("b")]),
            Message::model(vec![
                Part::reasoning("unsigned"),
                Part::tool_request(call.clone()),
            ]),
            Message::tool(Part::tool_response(ToolResponse::for_request(
                &call,
                json!("found"),
            ))),
            Message::user("thanks"),
        ]);
        assert_eq!(
            body(&req),
            json!({
                "model": "claude-x",
                "max_tokens": 4096,
                "system": [{"type": "text", "text": "Be brief."}],
                "messages": [
                    {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
                    {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"q": 1}}]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "found"}]},
                        {"type": "text", "text": "thanks"}
                    ]}
                ]
            })
        );
    }

    #[test]
    fn placeholders_are_not_sent() {
        let section = Part::new(PartKind::Placeholder).with_metadata("purpose", json!("after"));
        let req = GenerateRequest::new(vec![Message::user(vec![Part::text("Hi"), section])]);
        assert_eq!(
            body(&req)["messages"][0]["content"],
            json!([{"type": "text", "text": "Hi"}])
        );
    }

    #[test]
    fn media_kinds() {
        let req = GenerateRequest::new(vec![Message::user(vec![
            Part::media("data:image/png;base64,iVBO", None),
            Part::media("https://example.com/x.jpg", Some("image/jpeg")),
            Part::media("data:application/pdf;base64,JVBE", None),
        ])]);
        assert_eq!(
            body(&req)["messages"][0]["content"],
            json!([
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}},
                {"type": "image", "source": {"type": "url", "url": "https://example.com/x.jpg"}},
                {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBE"}}
            ])
        );
        let bad = GenerateRequest::new(vec![Message::user(Part::media(
            "data:text/plain;base64,aGk=",
            None,
        ))]);
        let config = AnthropicConfig::default();
        assert!(
            to_messages_request(&bad, &config, "m", RequestDefaults { max_tokens: 1 }, false)
                .is_err()
        );
    }

    #[test]
    fn thinking_budget_raises_the_default_max_tokens() {
        let req = GenerateRequest::new(vec![Message::user("hi")])
            .with_config(json!({"thinking": {"enabled": true, "budgetTokens": 8000}}));
        let b = body(&req);
        assert_eq!(b["max_tokens"], json!(12096));
        assert_eq!(
            b["thinking"],
            json!({"type": "enabled", "budget_tokens": 8000})
        );
    }

    #[test]
    fn tool_requests_need_refs() {
        let req = GenerateRequest::new(vec![
            Message::user("hi"),
            Message::model(Part::tool_request(ToolRequest::new("t", json!({})))),
        ]);
        let config = AnthropicConfig::default();
        assert!(
            to_messages_request(&req, &config, "m", RequestDefaults { max_tokens: 1 }, false)
                .is_err()
        );
    }
}
