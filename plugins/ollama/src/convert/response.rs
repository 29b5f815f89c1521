//! `/api/chat` answers (one object, or NDJSON lines) → Genkit responses.

use crate::error::OllamaError;
use crate::wire::{ChatResponse, ToolCall};
use genkit_model::model::basic_usage_stats;
use genkit_model::types::{
    FinishReason, GenerateResponse, GenerateResponseChunk, Message, Part, Role, ToolRequest,
};
use genkit_provider::error::excerpt;
use genkit_provider::{ApiError, Emit, Frame, StreamFold};
use serde_json::{Value, json};
use std::sync::Arc;

/// What the answer adds up to so far. A non-streamed answer is a single
/// line with `"done": true`.
#[derive(Debug)]
pub struct ChatState {
    input: Arc<Vec<Message>>,
    thinking: String,
    text: String,
    tool_calls: Vec<ToolCall>,
    final_line: Option<Value>,
    done_reason: Option<String>,
    prompt_eval_count: Option<u64>,
    eval_count: Option<u64>,
}

impl ChatState {
    /// An empty state for the answer to a request whose messages are `input`.
    pub(crate) fn new(input: Arc<Vec<Message>>) -> Self {
        Self {
            input,
            thinking: String::new(),
            text: String::new(),
            tool_calls: Vec::new(),
            final_line: None,
            done_reason: None,
            prompt_eval_count: None,
            eval_count: None,
        }
    }

    /// Whether the final (`"done": true`) line arrived.
    pub(crate) fn is_done(&self) -> bool {
        self.final_line.is_some()
    }

    /// Takes one NDJSON line; returns the chunk to pass on, if it adds content.
    pub(crate) fn on_line(
        &mut self,
        line: &str,
    ) -> Result<Option<GenerateResponseChunk>, OllamaError> {
        let line = line.trim();
        if line.is_empty() {
            return Ok(None);
        }
        let value: Value = serde_json::from_str(line).map_err(|e| {
            OllamaError::Malformed(format!("a line is not JSON ({e}): {}", excerpt(line)))
        })?;
        self.on_value(value)
    }

    /// Takes one parsed answer object.
    pub(crate) fn on_value(
        &mut self,
        value: Value,
    ) -> Result<Option<GenerateResponseChunk>, OllamaError> {
        let parsed: ChatResponse = serde_json::from_value(value.clone()).map_err(|e| {
            OllamaError::Malformed(format!(
                "not a chat response ({e}): {}",
                excerpt(&value.to_string())
            ))
        })?;
        if let Some(err) = parsed.error.filter(|e| !e.is_null()) {
            let message = genkit_provider::provider_error::as_text(&err);
            return Err(OllamaError::Stream(Box::new(ApiError::new(message, None))));
        }
        let mut parts = Vec::new();
        if let Some(m) = parsed.message {
            let thinking = m.thinking.unwrap_or_default();
            let text = m.content.unwrap_or_default();
            if !thinking.is_empty() {
                parts.push(Part::reasoning(thinking.as_str()));
                self.thinking.push_str(&thinking);
            }
            if !text.is_empty() {
                parts.push(Part::text(text.as_str()));
                self.text.push_str(&text);
            }
            for call in m.tool_calls.into_iter().flatten() {
                parts.push(tool_request_part(&call));
                self.tool_calls.push(call);
            }
        }
        if parsed.done {
            self.done_reason = parsed.done_reason;
            self.prompt_eval_count = parsed.prompt_eval_count;
            self.eval_count = parsed.eval_count;
            self.final_line = Some(value);
        }
        Ok((!parts.is_empty()).then(|| GenerateResponseChunk::new(parts)))
    }

    /// The final response. An answer without its final line was cut off:
    /// an error.
    pub(crate) fn into_response(self) -> Result<GenerateResponse, OllamaError> {
        let Some(raw) = self.final_line else {
            return Err(OllamaError::CutOff(
                "no line with \"done\": true before the connection closed".into(),
            ));
        };
        let mut parts = Vec::new();
        if !self.thinking.is_empty() {
            parts.push(Part::reasoning(self.thinking));
        }
        if !self.text.is_empty() {
            parts.push(Part::text(self.text));
        }
        parts.extend(self.tool_calls.iter().map(tool_request_part));
        let message = Message::new(Role::Model, parts);
        let (reason, finish_message) = finish_reason_of(self.done_reason.as_deref());
        let mut usage = basic_usage_stats(&self.input, &message);
        usage.input_tokens = self.prompt_eval_count;
        usage.output_tokens = self.eval_count;
        usage.total_tokens = match (self.prompt_eval_count, self.eval_count) {
            (Some(i), Some(o)) => Some(i + o),
            _ => None,
        };
        let mut response = GenerateResponse::new(message, reason);
        response.finish_message = finish_message;
        response.usage = Some(Box::new(usage));
        response.raw = Some(raw);
        Ok(response)
    }
}

/// A streamed answer: one NDJSON line per frame, the last with `"done": true`.
impl StreamFold for ChatState {
    type Output = GenerateResponse;
    type Error = OllamaError;

    fn push(&mut self, frame: Frame, emit: &mut Emit<'_>) -> Result<(), OllamaError> {
        if let Some(chunk) = self.on_line(&frame.data)? {
            emit(chunk);
        }
        Ok(())
    }

    fn is_done(&self) -> bool {
        ChatState::is_done(self)
    }

    fn finish(self) -> Result<GenerateResponse, OllamaError> {
        self.into_response()
    }
}

fn tool_request_part(call: &ToolCall) -> Part {
    let input = match &call.function.arguments {
        Value::Null => json!({}),
        v => v.clone(),
    };
    let mut request = ToolRequest::new(call.function.name.clone(), input);
    request.reference = call.id.clone().filter(|id| !id.is_empty());
    Part::tool_request(request)
}

/// Ollama's `done_reason` in Genkit's terms.
fn finish_reason_of(reason: Option<&str>) -> (FinishReason, Option<String>) {
    match reason {
        None | Some("stop") => (FinishReason::Stop, None),
        Some("length") => (FinishReason::Length, None),
        Some(other) => (FinishReason::Other, Some(other.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_answer() {
        let input = Arc::new(vec![Message::user("Capital of France?")]);
        let mut s = ChatState::new(input);
        let chunk = s
            .on_value(json!({
                "model": "llama3.2", "created_at": "2025-01-01T00:00:00Z",
                "message": {"role": "assistant", "content": "Paris.", "thinking": "Capital..."},
                "done": true, "done_reason": "stop", "prompt_eval_count": 26, "eval_count": 3
            }))
            .unwrap()
            .unwrap();
        assert_eq!(chunk.text(), "Paris.");
        let r = s.into_response().unwrap();
        let m = r.message.as_ref().unwrap();
        assert_eq!(m.content[0].as_reasoning(), Some("Capital..."));
        assert_eq!(r.text(), "Paris.");
        let u = r.usage.unwrap();
        assert_eq!(
            (u.input_tokens, u.output_tokens, u.total_tokens),
            (Some(26), Some(3), Some(29))
        );
        assert_eq!(u.input_characters, Some(18));
        assert_eq!(u.output_characters, Some(6));
        assert_eq!(r.finish_reason, Some(FinishReason::Stop));
    }

    #[test]
    fn streamed_lines_with_tool_calls() {
        let mut s = ChatState::new(Arc::default());
        assert!(
            s.on_line(r#"{"message":{"role":"assistant","content":""},"done":false}"#)
                .unwrap()
                .is_none()
        );
        let c = s
            .on_line(r#"{"message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"weather","arguments":{"city":"Paris"}}},{"id":"c2","function":{"index":1,"name":"time","arguments":{}}}]},"done":false}"#)
            .unwrap()
            .unwrap();
        assert_eq!(c.tool_requests().count(), 2);
        s.on_line(
            r#"{"message":{"role":"assistant","content":""},"done":true,"done_reason":"length"}"#,
        )
        .unwrap();
        let r = s.into_response().unwrap();
        let calls = r.tool_requests();
        assert_eq!(calls[0].input, Some(json!({"city": "Paris"})));
        assert_eq!(calls[0].reference, None);
        assert_eq!(calls[1].reference.as_deref(), Some("c2"));
        assert_eq!(r.finish_reason, Some(FinishReason::Length));
    }

    #[test]
    fn errors_and_cut_offs() {
        let mut s = ChatState::new(Arc::default());
        s.on_line(r#"{"message":{"content":"Hel"},"done":false}"#)
            .unwrap();
        assert!(matches!(s.into_response(), Err(OllamaError::CutOff(_))));
        let mut s = ChatState::new(Arc::default());
        assert!(matches!(s.on_line("{oops"), Err(OllamaError::Malformed(_))));
        let e = s
            .on_line(r#"{"error":"model runner crashed"}"#)
            .unwrap_err();
        assert!(e.to_string().contains("model runner crashed"));
        assert!(matches!(
            s.on_line(r#"{"done": "yes"}"#),
            Err(OllamaError::Malformed(_))
        ));
    }
}
