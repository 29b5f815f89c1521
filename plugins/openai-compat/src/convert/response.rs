//! Chat Completions response → Genkit [`GenerateResponse`].

use crate::error::ProviderError;
use crate::wire::{ChatCompletion, Usage};
use genkit_model::types::{
    FinishReason, GenerateResponse, GenerationUsage, Message, Part, Role, ToolRequest,
};
use genkit_provider::error::excerpt;
use serde_json::{Value, json};

/// Converts a non-streamed response (kept whole as `raw`).
pub(crate) fn from_completion(raw: Value) -> Result<GenerateResponse, ProviderError> {
    let completion: ChatCompletion = serde_json::from_value(raw.clone()).map_err(|e| {
        ProviderError::Malformed(format!(
            "not a chat completion ({e}): {}",
            excerpt(&raw.to_string())
        ))
    })?;
    let Some(choice) = completion
        .choices
        .iter()
        .find(|c| c.index == 0)
        .or(completion.choices.first())
    else {
        return Err(ProviderError::Malformed(format!(
            "the response has no choices: {}",
            excerpt(&raw.to_string())
        )));
    };
    let m = &choice.message;
    let mut parts = Vec::new();
    push_text_parts(
        &mut parts,
        m.reasoning_content.as_deref().unwrap_or(""),
        m.content.as_deref().unwrap_or(""),
    );
    for call in m.tool_calls.iter().flatten() {
        parts.push(tool_request_part(
            call.id.clone(),
            &call.function.name,
            &call.function.arguments,
        )?);
    }
    let mut response = assemble(
        parts,
        choice.finish_reason.as_deref(),
        m.refusal.as_deref(),
        completion.usage.as_ref(),
    );
    response.raw = Some(raw);
    Ok(response)
}

/// Pushes a reasoning part and a text part, each when non-empty.
pub(crate) fn push_text_parts(parts: &mut Vec<Part>, reasoning: &str, text: &str) {
    if !reasoning.is_empty() {
        parts.push(Part::reasoning(reasoning));
    }
    if !text.is_empty() {
        parts.push(Part::text(text));
    }
}

/// A complete tool request: `arguments` must be JSON (empty means `{}`).
pub(crate) fn tool_request_part(
    id: Option<String>,
    name: &str,
    arguments: &str,
) -> Result<Part, ProviderError> {
    let input = if arguments.trim().is_empty() {
        json!({})
    } else {
        serde_json::from_str(arguments).map_err(|e| {
            ProviderError::Malformed(format!(
                "the arguments of the call to tool `{name}` are not JSON ({e}): {}",
                excerpt(arguments)
            ))
        })?
    };
    let mut request = ToolRequest::new(name, input);
    request.reference = id;
    Ok(Part::tool_request(request))
}

/// The response for a finished message.
pub(crate) fn assemble(
    parts: Vec<Part>,
    finish_reason: Option<&str>,
    refusal: Option<&str>,
    usage: Option<&Usage>,
) -> GenerateResponse {
    let refusal = refusal.filter(|r| !r.is_empty());
    let (reason, mut finish_message) = match finish_reason {
        Some(r) => finish_reason_of(r),
        None => (
            FinishReason::Unknown,
            Some("the response ended without a finish reason".to_owned()),
        ),
    };
    let reason = if let Some(r) = refusal {
        finish_message = Some(r.to_owned());
        FinishReason::Blocked
    } else {
        reason
    };
    let mut response = GenerateResponse::new(Message::new(Role::Model, parts), reason);
    response.finish_message = finish_message;
    response.usage = usage.map(|u| Box::new(to_usage(u)));
    response
}

/// OpenAI's finish reasons in Genkit's terms. `tool_calls` is a normal stop:
/// the generate loop sees the tool requests in the message.
pub(crate) fn finish_reason_of(reason: &str) -> (FinishReason, Option<String>) {
    match reason {
        "stop" | "tool_calls" | "function_call" => (FinishReason::Stop, None),
        "length" => (FinishReason::Length, None),
        "content_filter" => (
            FinishReason::Blocked,
            Some("the provider's content filter stopped the response".to_owned()),
        ),
        other => (FinishReason::Other, Some(other.to_owned())),
    }
}

/// Token counts in Genkit's terms.
pub(crate) fn to_usage(u: &Usage) -> GenerationUsage {
    GenerationUsage {
        input_tokens: u.prompt_tokens,
        output_tokens: u.completion_tokens,
        total_tokens: u.total_tokens,
        thoughts_tokens: u
            .completion_tokens_details
            .as_ref()
            .and_then(|d| d.reasoning_tokens),
        cached_content_tokens: u
            .prompt_tokens_details
            .as_ref()
            .and_then(|d| d.cached_tokens),
        ..GenerationUsage::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_response_with_usage() {
        let raw = json!({
            "id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "Paris."}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12,
                      "prompt_tokens_details": {"cached_tokens": 4},
                      "completion_tokens_details": {"reasoning_tokens": 1}}
        });
        let r = from_completion(raw.clone()).unwrap();
        assert_eq!(r.text(), "Paris.");
        assert_eq!(r.finish_reason, Some(FinishReason::Stop));
        let u = r.usage.unwrap();
        assert_eq!(
            (
                u.input_tokens,
                u.output_tokens,
                u.total_tokens,
                u.cached_content_tokens,
                u.thoughts_tokens
            ),
            (Some(10), Some(2), Some(12), Some(4), Some(1))
        );
        assert_eq!(r.raw, Some(raw));
    }

    #[test]
    fn tool_calls_and_reasons() {
        let raw = json!({"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "content": null, "reasoning_content": "thinking",
        "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "weather", "arguments": "{ \"city\": \"Paris\" }"}},
            {"id": "call_b", "type": "function", "function": {"name": "time", "arguments": ""}}
        ]}}]});
        let r = from_completion(raw).unwrap();
        let m = r.message.unwrap();
        assert_eq!(m.content[0].as_reasoning(), Some("thinking"));
        let calls: Vec<_> = m.tool_requests().collect();
        assert_eq!(calls[0].reference.as_deref(), Some("call_a"));
        assert_eq!(calls[0].input, Some(json!({"city": "Paris"})));
        assert_eq!(calls[1].input, Some(json!({})));
        assert_eq!(r.finish_reason, Some(FinishReason::Stop));

        assert_eq!(finish_reason_of("length").0, FinishReason::Length);
        assert_eq!(finish_reason_of("content_filter").0, FinishReason::Blocked);
        assert_eq!(
            finish_reason_of("weird"),
            (FinishReason::Other, Some("weird".into()))
        );
    }

    #[test]
    fn refusals_and_malformed() {
        let raw = json!({"choices": [{"message": {"content": null, "refusal": "I can't help."}, "finish_reason": "stop"}]});
        let r = from_completion(raw).unwrap();
        assert_eq!(r.finish_reason, Some(FinishReason::Blocked));
        assert_eq!(r.finish_message.as_deref(), Some("I can't help."));

        let bad_args = json!({"choices": [{"message": {"tool_calls": [
            {"id": "c", "function": {"name": "f", "arguments": "{not json"}}]}, "finish_reason": "tool_calls"}]});
        let e = from_completion(bad_args).unwrap_err();
        assert!(e.to_string().contains("not JSON"), "{e}");
        assert!(from_completion(json!({"choices": []})).is_err());
        assert!(from_completion(json!({"choices": "nope"})).is_err());
    }
}
