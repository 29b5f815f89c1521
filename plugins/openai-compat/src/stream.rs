//! Streamed responses: Server-Sent Events → chunks as they arrive, and the
//! final response assembled from them (text, reasoning, and tool calls whose
//! fragments are joined by `index`).

use crate::convert::response::{assemble, push_text_parts, tool_request_part};
use crate::error::ProviderError;
use crate::wire::{ChatCompletionChunk, ToolCallDelta, Usage};
use genkit_model::extract::parse_partial_json;
use genkit_model::types::{GenerateResponse, GenerateResponseChunk, Part, ToolRequest};
use genkit_provider::error::excerpt;
use genkit_provider::{ApiError, Emit, Frame, StreamFold};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// One tool call being assembled.
#[derive(Debug, Default, Clone, PartialEq)]
struct ToolCallAcc {
    id: Option<String>,
    name: String,
    arguments: String,
    /// How long `arguments` was when last parsed for a partial request.
    parsed_len: usize,
}

/// Arguments up to this long are parsed again at every fragment; past it, a
/// partial request is shown only once they doubled since the last one, so
/// parsing a call's arguments costs time linear in their length rather than
/// quadratic (each partial request is a parse, and a copy, of all so far).
const PARTIAL_ARGS_EVERY_FRAGMENT: usize = 1024;

/// What the events received so far add up to.
#[derive(Debug)]
pub struct StreamState {
    reasoning: String,
    text: String,
    refusal: String,
    tool_calls: BTreeMap<u32, ToolCallAcc>,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    id: Option<String>,
    model: Option<String>,
    created: Option<i64>,
    done: bool,
}

impl StreamState {
    /// An empty state.
    pub(crate) fn new() -> Self {
        Self {
            reasoning: String::new(),
            text: String::new(),
            refusal: String::new(),
            tool_calls: BTreeMap::new(),
            finish_reason: None,
            usage: None,
            id: None,
            model: None,
            created: None,
            done: false,
        }
    }

    fn malformed(&self, detail: String) -> ProviderError {
        ProviderError::Malformed(detail)
    }

    /// Takes one event (`event` is the SSE event type, `data` its payload)
    /// and returns the chunk to pass on, if it adds content.
    pub(crate) fn on_event(
        &mut self,
        event: &str,
        data: &str,
    ) -> Result<Option<GenerateResponseChunk>, ProviderError> {
        let data = data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(None);
        }
        if data.is_empty() {
            return Ok(None);
        }
        let value: Value = serde_json::from_str(data).map_err(|e| {
            self.malformed(format!(
                "a stream event is not JSON ({e}): {}",
                excerpt(data)
            ))
        })?;
        if event == "error" || value.get("error").is_some_and(|e| !e.is_null()) {
            let body = ApiError::of(&value).unwrap_or_else(|| ApiError::new(excerpt(data), None));
            return Err(ProviderError::Stream(Box::new(body)));
        }
        let chunk: ChatCompletionChunk = serde_json::from_value(value).map_err(|e| {
            self.malformed(format!(
                "a stream event is not a chat completion chunk ({e}): {}",
                excerpt(data)
            ))
        })?;
        self.id = self.id.take().or(chunk.id);
        self.model = self.model.take().or(chunk.model);
        self.created = self.created.or(chunk.created);
        if chunk.usage.is_some() {
            self.usage = chunk.usage;
        }
        let mut parts = Vec::new();
        // Genkit has one message per response: follow choice 0 only.
        for choice in chunk.choices.into_iter().filter(|c| c.index == 0) {
            let delta = choice.delta;
            let reasoning = delta.reasoning_content.unwrap_or_default();
            let text = delta.content.unwrap_or_default();
            self.reasoning.push_str(&reasoning);
            self.text.push_str(&text);
            self.refusal
                .push_str(delta.refusal.as_deref().unwrap_or(""));
            push_text_parts(&mut parts, &reasoning, &text);
            for (position, call) in delta.tool_calls.into_iter().flatten().enumerate() {
                if let Some(part) = self.merge_tool_call(position, call) {
                    parts.push(part);
                }
            }
            if let Some(reason) = choice.finish_reason {
                if self.finish_reason.is_none() {
                    self.push_complete_calls(&mut parts);
                }
                self.finish_reason = Some(reason);
            }
        }
        Ok((!parts.is_empty()).then(|| GenerateResponseChunk::new(parts)))
    }

    /// At the finish reason, the calls as they will run (not partial), so a
    /// stream ends with each complete request as Gemini's and Anthropic's
    /// do; a call whose arguments are not JSON is left to [`Self::finish`],
    /// which reports it.
    fn push_complete_calls(&self, parts: &mut Vec<Part>) {
        for acc in self.tool_calls.values().filter(|a| !a.name.is_empty()) {
            if let Ok(part) = tool_request_part(acc.id.clone(), &acc.name, &acc.arguments) {
                parts.push(part);
            }
        }
    }

    /// Adds a tool-call fragment and returns a partial tool request showing
    /// the call so far (its arguments parsed as far as they go); for long
    /// arguments, only when they doubled (see [`PARTIAL_ARGS_EVERY_FRAGMENT`]).
    fn merge_tool_call(&mut self, position: usize, delta: ToolCallDelta) -> Option<Part> {
        let index = delta
            .index
            .unwrap_or_else(|| self.index_without_index(position, &delta));
        let acc = self.tool_calls.entry(index).or_default();
        // `id` and `name` arrive once (OpenAI) or in every fragment (llama.cpp):
        // keep the first, never concatenate.
        if acc.id.is_none() {
            acc.id = delta.id.filter(|id| !id.is_empty());
        }
        if let Some(f) = delta.function {
            if acc.name.is_empty()
                && let Some(name) = f.name
            {
                acc.name = name;
            }
            acc.arguments.push_str(f.arguments.as_deref().unwrap_or(""));
        }
        if acc.name.is_empty() {
            return None;
        }
        let len = acc.arguments.len();
        if len > PARTIAL_ARGS_EVERY_FRAGMENT && len < acc.parsed_len.saturating_mul(2) {
            return None;
        }
        acc.parsed_len = len;
        let input = parse_partial_json(&acc.arguments).unwrap_or_else(|| json!({}));
        let mut request = ToolRequest::new(acc.name.clone(), input);
        request.reference = acc.id.clone();
        request.partial = Some(true);
        Some(Part::tool_request(request))
    }

    /// Servers that omit `index`: a new id starts a new call, otherwise the
    /// fragment continues the call at the same position (or the last one).
    fn index_without_index(&self, position: usize, delta: &ToolCallDelta) -> u32 {
        if let Some(id) = delta.id.as_deref().filter(|id| !id.is_empty()) {
            if let Some((i, _)) = self
                .tool_calls
                .iter()
                .find(|(_, a)| a.id.as_deref() == Some(id))
            {
                return *i;
            }
            return self.tool_calls.keys().next_back().map_or(0, |i| i + 1);
        }
        let position = u32::try_from(position).unwrap_or(u32::MAX);
        if self.tool_calls.contains_key(&position) {
            position
        } else {
            self.tool_calls.keys().next_back().copied().unwrap_or(0)
        }
    }

    /// The final response. A stream that ended with neither `[DONE]` nor a
    /// finish reason was cut off: an error, never a partial success.
    pub(crate) fn finish(self) -> Result<GenerateResponse, ProviderError> {
        if !self.done && self.finish_reason.is_none() {
            return Err(ProviderError::CutOff(
                "no finish_reason and no [DONE] before the connection closed".into(),
            ));
        }
        let mut parts = Vec::new();
        push_text_parts(&mut parts, &self.reasoning, &self.text);
        let mut raw_calls = Vec::new();
        for acc in self.tool_calls.values() {
            if acc.name.is_empty() {
                return Err(ProviderError::Malformed(
                    "a streamed tool call never named its function".into(),
                ));
            }
            parts.push(tool_request_part(
                acc.id.clone(),
                &acc.name,
                &acc.arguments,
            )?);
            raw_calls.push(json!({
                "id": acc.id, "type": "function",
                "function": {"name": acc.name, "arguments": acc.arguments}
            }));
        }
        let refusal = (!self.refusal.is_empty()).then_some(self.refusal.as_str());
        let mut response = assemble(
            parts,
            self.finish_reason.as_deref(),
            refusal,
            self.usage.as_ref(),
        );
        // What the stream added up to, in the shape of a non-streamed response.
        let mut message = json!({"role": "assistant", "content": self.text});
        if !raw_calls.is_empty() {
            message["tool_calls"] = Value::Array(raw_calls);
        }
        response.raw = Some(json!({
            "id": self.id, "object": "chat.completion", "created": self.created, "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": self.finish_reason}],
        }));
        Ok(response)
    }
}

impl StreamFold for StreamState {
    type Output = GenerateResponse;
    type Error = ProviderError;

    fn push(&mut self, frame: Frame, emit: &mut Emit<'_>) -> Result<(), ProviderError> {
        if let Some(chunk) = self.on_event(&frame.event, &frame.data)? {
            emit(chunk);
        }
        Ok(())
    }

    /// Whether `[DONE]` arrived.
    fn is_done(&self) -> bool {
        self.done
    }

    fn finish(self) -> Result<GenerateResponse, ProviderError> {
        StreamState::finish(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use genkit_model::types::FinishReason;

    fn feed(state: &mut StreamState, events: &[Value]) -> Vec<GenerateResponseChunk> {
        events
            .iter()
            .filter_map(|e| state.on_event("", &e.to_string()).unwrap())
            .collect()
    }

    fn tc(index: Option<u32>, id: Option<&str>, name: Option<&str>, args: &str) -> Value {
        let mut call = json!({"function": {"arguments": args}});
        if let Some(i) = index {
            call["index"] = json!(i);
        }
        if let Some(id) = id {
            call["id"] = json!(id);
        }
        if let Some(n) = name {
            call["function"]["name"] = json!(n);
        }
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})
    }

    #[test]
    fn text_stream() {
        let mut s = StreamState::new();
        let chunks = feed(
            &mut s,
            &[
                json!({"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {"role": "assistant"}}]}),
                json!({"choices": [{"index": 0, "delta": {"content": "Hel"}}]}),
                json!({"choices": [{"index": 0, "delta": {"content": "lo"}, "finish_reason": null}]}),
                json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]}),
                json!({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}),
            ],
        );
        assert_eq!(
            chunks.iter().map(|c| c.text()).collect::<Vec<_>>(),
            ["Hel", "lo"]
        );
        s.on_event("", "[DONE]").unwrap();
        assert!(s.is_done());
        let r = s.finish().unwrap();
        assert_eq!(r.text(), "Hello");
        assert_eq!(r.finish_reason, Some(FinishReason::Length));
        assert_eq!(r.usage.unwrap().total_tokens, Some(5));
        assert_eq!(r.raw.unwrap()["id"], json!("c1"));
    }

    #[test]
    fn a_megabyte_of_tool_arguments_in_small_fragments_is_parsed_in_linear_time() {
        let mut s = StreamState::new();
        let mut events = vec![tc(
            Some(0),
            Some("call_big"),
            Some("write"),
            "{\"text\": \"",
        )];
        let body = "0123456789".repeat(1024 * 1024 / 10);
        events.extend(body.as_bytes().chunks(10).map(|piece| {
            tc(
                Some(0),
                None,
                None,
                std::str::from_utf8(piece).expect("ascii"),
            )
        }));
        events.push(tc(Some(0), None, None, "\"}"));
        let fragments = events.len();
        let events: Vec<String> = events.iter().map(Value::to_string).collect();
        let start = std::time::Instant::now();
        let chunks: Vec<_> = events
            .iter()
            .filter_map(|e| s.on_event("", e).expect("an event"))
            .collect();
        let elapsed = start.elapsed();
        // What was parsed, and copied into partial requests, in total: the
        // measure of the work, linear in the arguments' length.
        let partial_bytes: usize = chunks
            .iter()
            .flat_map(|c| c.content.iter())
            .filter_map(Part::as_tool_request)
            .map(|r| r.input.as_ref().map_or(0, |i| i.to_string().len()))
            .sum();
        eprintln!(
            "{} bytes of arguments in {fragments} fragments: {elapsed:?}, {} partial \
             requests holding {partial_bytes} bytes",
            body.len(),
            chunks.len()
        );
        assert!(
            partial_bytes < 3 * body.len(),
            "partial requests hold {partial_bytes} bytes for {} bytes of arguments",
            body.len()
        );
        assert!(
            chunks.len() < fragments / 100,
            "{} partial requests",
            chunks.len()
        );
        // Decoding 100k events dominates (seconds in a debug build); the
        // quadratic parsing this replaced took minutes.
        assert!(
            elapsed < std::time::Duration::from_secs(30),
            "took {elapsed:?}"
        );
        let r = {
            feed(
                &mut s,
                &[json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})],
            );
            s.finish().expect("complete")
        };
        let call = r.tool_requests()[0].clone();
        assert_eq!(
            call.input.and_then(|i| i["text"].as_str().map(str::len)),
            Some(body.len())
        );
    }

    #[test]
    fn parallel_tool_calls_split_across_chunks() {
        let mut s = StreamState::new();
        let chunks = feed(
            &mut s,
            &[
                tc(Some(0), Some("call_a"), Some("weather"), ""),
                tc(Some(1), Some("call_b"), Some("time"), "{\"tz\""),
                tc(Some(0), None, None, "{\"city\":"),
                tc(Some(0), None, None, " \"Paris\"}"),
                tc(Some(1), None, None, ": \"UTC\"}"),
                json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
            ],
        );
        // Partial requests show the arguments parsed so far.
        let partial = chunks[2].content[0].as_tool_request().unwrap();
        assert_eq!(partial.partial, Some(true));
        assert_eq!(partial.input, Some(json!({})));
        // The finish reason's chunk holds the complete requests.
        let last: Vec<_> = chunks.last().unwrap().tool_requests().cloned().collect();
        assert_eq!(last.len(), 2);
        assert_eq!(last[0].partial, None);
        assert_eq!(last[0].input, Some(json!({"city": "Paris"})));
        assert_eq!(last[1].input, Some(json!({"tz": "UTC"})));
        let r = s.finish().unwrap();
        let calls: Vec<_> = r.tool_requests().into_iter().cloned().collect();
        assert_eq!(calls.len(), 2);
        assert_eq!(
            (
                calls[0].reference.as_deref(),
                calls[0].name.as_str(),
                calls[0].input.clone()
            ),
            (Some("call_a"), "weather", Some(json!({"city": "Paris"})))
        );
        assert_eq!(calls[1].input, Some(json!({"tz": "UTC"})));
        assert_eq!(calls[0].partial, None);
        assert_eq!(r.finish_reason, Some(FinishReason::Stop));
    }

    #[test]
    fn repeated_ids_and_names_are_not_concatenated() {
        // llama-cpp-python repeats index, id and name in every fragment.
        let mut s = StreamState::new();
        feed(
            &mut s,
            &[
                tc(Some(0), Some("call__0"), Some("get_weather"), "{"),
                tc(
                    Some(0),
                    Some("call__0"),
                    Some("get_weather"),
                    " \"city\": \"Paris\"",
                ),
                tc(Some(0), Some("call__0"), Some("get_weather"), " }"),
                tc(Some(0), Some("call__0"), Some("get_weather"), ""),
                json!({"choices": [{"index": 0, "delta": {"content": null, "tool_calls": null}, "finish_reason": "tool_calls"}]}),
            ],
        );
        s.on_event("", "[DONE]").unwrap();
        let r = s.finish().unwrap();
        let calls = r.tool_requests();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].name, "get_weather");
        assert_eq!(calls[0].input, Some(json!({"city": "Paris"})));
    }

    #[test]
    fn fragments_without_index() {
        let mut s = StreamState::new();
        feed(
            &mut s,
            &[
                tc(None, Some("a"), Some("f"), "{\"x\":"),
                tc(None, None, None, "1}"),
                tc(None, Some("b"), Some("g"), "{}"),
                json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
            ],
        );
        let r = s.finish().unwrap();
        let calls = r.tool_requests();
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].input, Some(json!({"x": 1})));
        assert_eq!(calls[1].name, "g");
    }

    #[test]
    fn cut_off_and_errors() {
        let mut s = StreamState::new();
        feed(
            &mut s,
            &[json!({"choices": [{"index": 0, "delta": {"content": "Hel"}}]})],
        );
        let e = s.finish().unwrap_err();
        assert!(matches!(e, ProviderError::CutOff(_)), "{e}");

        // [DONE] without a finish reason (an interrupted llama.cpp stream).
        let mut s = StreamState::new();
        feed(
            &mut s,
            &[json!({"choices": [{"index": 0, "delta": {"content": "Hel"}}]})],
        );
        s.on_event("", "[DONE]").unwrap();
        let r = s.finish().unwrap();
        assert_eq!(r.finish_reason, Some(FinishReason::Unknown));
        assert_eq!(r.text(), "Hel");

        let mut s = StreamState::new();
        assert!(matches!(
            s.on_event("", "{not json"),
            Err(ProviderError::Malformed(_))
        ));
        let e = s
            .on_event(
                "",
                r#"{"error": {"message": "overloaded", "code": "rate_limit_exceeded"}}"#,
            )
            .unwrap_err();
        assert_eq!(e.status(), genkit_core::StatusCode::ResourceExhausted);
        assert!(e.to_string().contains("overloaded"));
        assert!(s.on_event("error", r#"{"message": "bad"}"#).is_err());
    }
}
