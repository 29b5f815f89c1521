//! Messages API response → Genkit [`GenerateResponse`].

use genkit_model::model::basic_usage_stats;
use genkit_model::types::{FinishReason, GenerateResponse, Message, Part, ToolRequest};
use genkit_provider::wire::model_response;
use serde_json::{Map, Number, Value, json};
use std::collections::BTreeMap;

use crate::wire::{AnyBlock, Block, MessagesResponse, Usage};

/// Converts a complete (or assembled streamed) message. `input` is the
/// request's conversation, for Genkit's character and media counts.
pub(crate) fn to_genkit_response(
    response: MessagesResponse,
    input: &[Message],
) -> GenerateResponse {
    let raw = serde_json::to_value(&response).ok();
    let parts: Vec<Part> = response.content.iter().map(block_to_part).collect();
    let message = Message::model(parts);
    let mut usage = basic_usage_stats(input, &message);
    apply_usage(&mut usage, &response.usage);
    let finish_reason = finish_reason(response.stop_reason.as_deref());
    let finish_message = match response.stop_reason.as_deref() {
        Some("refusal") => Some("Claude refused to answer (stop_reason: refusal)".to_owned()),
        Some("stop_sequence") => response
            .stop_sequence
            .as_ref()
            .map(|s| format!("Stopped at the stop sequence {s:?}")),
        _ => None,
    };
    model_response(message, finish_reason, finish_message, usage, raw)
}

/// Claude's stop reasons in Genkit's terms.
pub(crate) fn finish_reason(reason: Option<&str>) -> FinishReason {
    match reason {
        Some("end_turn" | "stop_sequence" | "tool_use" | "pause_turn") => FinishReason::Stop,
        Some("max_tokens" | "model_context_window_exceeded") => FinishReason::Length,
        Some("refusal") => FinishReason::Blocked,
        None => FinishReason::Unknown,
        Some(_) => FinishReason::Other,
    }
}

/// Input and output tokens as reported; cache reads as cached content
/// tokens; the total counts cache reads and writes as input.
fn apply_usage(usage: &mut genkit_model::types::GenerationUsage, u: &Usage) {
    usage.input_tokens = u.input_tokens;
    usage.output_tokens = u.output_tokens;
    usage.cached_content_tokens = u.cache_read_input_tokens;
    let parts = [
        u.input_tokens,
        u.output_tokens,
        u.cache_creation_input_tokens,
        u.cache_read_input_tokens,
    ];
    if parts.iter().any(Option::is_some) {
        usage.total_tokens = Some(parts.iter().flatten().sum());
    }
    let mut custom = BTreeMap::new();
    if let Some(n) = u.cache_creation_input_tokens {
        custom.insert("cache_creation_input_tokens".to_owned(), Number::from(n));
    }
    if let Some(n) = u.cache_read_input_tokens {
        custom.insert("cache_read_input_tokens".to_owned(), Number::from(n));
    }
    if !custom.is_empty() {
        usage.custom = Some(custom);
    }
}

/// A content block as a Genkit part. Thinking signatures go to
/// `metadata.thoughtSignature`; blocks without a Genkit counterpart become
/// `custom` parts that are sent back unchanged.
pub(crate) fn block_to_part(block: &AnyBlock) -> Part {
    match block {
        AnyBlock::Known(Block::Text {
            text, citations, ..
        }) => {
            let part = Part::text(text.clone());
            match citations {
                Some(c) if !c.is_empty() => part.with_metadata("citations", json!(c)),
                _ => part,
            }
        }
        AnyBlock::Known(Block::ToolUse {
            id, name, input, ..
        }) => Part::tool_request(ToolRequest {
            reference: Some(id.clone()),
            name: name.clone(),
            input: Some(input.clone()),
            partial: None,
        }),
        AnyBlock::Known(Block::Thinking {
            thinking,
            signature,
        }) => {
            let part = Part::reasoning(thinking.clone());
            if signature.is_empty() {
                part
            } else {
                part.with_metadata("thoughtSignature", json!(signature))
            }
        }
        AnyBlock::Known(Block::RedactedThinking { data }) => {
            custom_part("redactedThinking", json!(data))
        }
        other => custom_part(
            "anthropicBlock",
            serde_json::to_value(other).unwrap_or(Value::Null),
        ),
    }
}

fn custom_part(key: &str, value: Value) -> Part {
    let mut custom = Map::new();
    custom.insert(key.into(), value);
    Part::custom(custom)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_reasons() {
        assert_eq!(finish_reason(Some("end_turn")), FinishReason::Stop);
        assert_eq!(finish_reason(Some("stop_sequence")), FinishReason::Stop);
        assert_eq!(finish_reason(Some("tool_use")), FinishReason::Stop);
        assert_eq!(finish_reason(Some("max_tokens")), FinishReason::Length);
        assert_eq!(finish_reason(Some("refusal")), FinishReason::Blocked);
        assert_eq!(finish_reason(Some("new_reason")), FinishReason::Other);
        assert_eq!(finish_reason(None), FinishReason::Unknown);
    }

    #[test]
    fn blocks_to_parts_and_usage() {
        let response: MessagesResponse = serde_json::from_value(json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x",
            "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                {"type": "redacted_thinking", "data": "opaque"},
                {"type": "text", "text": "Hi", "citations": null},
                {"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {"query": "x"}},
                {"type": "tool_use", "id": "toolu_1", "name": "t", "input": {"a": 1}}
            ],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 0}
        }))
        .unwrap();
        let r = to_genkit_response(response, &[]);
        let parts = &r.message.as_ref().unwrap().content;
        assert_eq!(parts[0].as_reasoning(), Some("hmm"));
        assert_eq!(
            parts[0].metadata_value("thoughtSignature"),
            Some(&json!("sig"))
        );
        assert_eq!(
            parts[1].as_custom().and_then(|c| c.get("redactedThinking")),
            Some(&json!("opaque"))
        );
        assert_eq!(parts[2].as_text(), Some("Hi"));
        assert_eq!(
            parts[3].as_custom().and_then(|c| c.get("anthropicBlock")),
            Some(
                &json!({"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {"query": "x"}})
            )
        );
        assert_eq!(
            parts[4]
                .as_tool_request()
                .and_then(|t| t.reference.as_deref()),
            Some("toolu_1")
        );
        let usage = r.usage.unwrap();
        assert_eq!(usage.input_tokens, Some(10));
        assert_eq!(usage.cached_content_tokens, Some(100));
        assert_eq!(usage.total_tokens, Some(115));
    }
}
