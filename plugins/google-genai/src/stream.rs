//! Reading `streamGenerateContent?alt=sse`: each event is a partial
//! `GenerateContentResponse`. Every event's parts go out as a Genkit chunk;
//! the events are folded into one response, which must end with a finish
//! reason (or a blocked prompt) — a stream that stops short is an error.

use genkit_model::types::GenerateResponse;
use genkit_provider::{Emit, Frame, StreamFold, emit_model_parts};
use serde_json::Value;

use crate::convert::ToolNames;
use crate::convert::response::{to_genkit_parts, to_genkit_response};
use crate::error::{GeminiError, stream_error};
use crate::wire::{Candidate, Content, GenerateContentResponse, WirePart};
use genkit_model::types::Message;
use std::sync::Arc;

/// Reads an answer: whole, or the events of a streamed one into Genkit
/// chunks (each event's content) and the folded response. Tool names are
/// mapped back with the request's `names`.
#[derive(Debug)]
pub struct Events {
    aggregate: Aggregator,
    pub(crate) names: ToolNames,
    pub(crate) messages: Arc<Vec<Message>>,
}

impl Events {
    pub(crate) fn new(names: ToolNames, messages: Arc<Vec<Message>>) -> Self {
        Self {
            aggregate: Aggregator::default(),
            names,
            messages,
        }
    }
}

impl StreamFold for Events {
    type Output = GenerateResponse;
    type Error = GeminiError;

    /// Each candidate's parts go out as one chunk; an `error` object fails
    /// the stream.
    fn push(&mut self, frame: Frame, emit: &mut Emit<'_>) -> Result<(), GeminiError> {
        let value: Value = serde_json::from_str(&frame.data)
            .map_err(|e| GeminiError::undecodable("a stream event is not JSON", e))?;
        if let Some(error) = value.get("error") {
            return Err(stream_error(error));
        }
        let chunk: GenerateContentResponse = serde_json::from_value(value)
            .map_err(|e| GeminiError::undecodable("a stream event has an unexpected shape", e))?;
        for candidate in &chunk.candidates {
            if let Some(content) = &candidate.content {
                emit_model_parts(emit, to_genkit_parts(&content.parts, &self.names));
            }
        }
        self.aggregate.push(chunk);
        Ok(())
    }

    fn finish(self) -> Result<GenerateResponse, GeminiError> {
        let response = self.aggregate.finish()?;
        to_genkit_response(response, &self.messages, &self.names)
    }
}

/// Folds streamed partial responses into one: parts are appended per
/// candidate (adjacent plain text joined), metadata of later events wins,
/// usage is the last reported.
#[derive(Debug, Default)]
pub(crate) struct Aggregator {
    response: GenerateContentResponse,
    events: usize,
}

impl Aggregator {
    pub fn push(&mut self, chunk: GenerateContentResponse) {
        self.events += 1;
        for candidate in chunk.candidates {
            let index = candidate.index.unwrap_or(0);
            let position = self
                .response
                .candidates
                .iter()
                .position(|c| c.index.unwrap_or(0) == index);
            let target = match position {
                Some(i) => &mut self.response.candidates[i],
                None => {
                    self.response.candidates.push(Candidate {
                        index: candidate.index,
                        ..Candidate::default()
                    });
                    let last = self.response.candidates.len() - 1;
                    &mut self.response.candidates[last]
                }
            };
            merge_candidate(target, candidate);
        }
        if chunk.prompt_feedback.is_some() {
            self.response.prompt_feedback = chunk.prompt_feedback;
        }
        if chunk.usage_metadata.is_some() {
            self.response.usage_metadata = chunk.usage_metadata;
        }
        self.response.other.extend(chunk.other);
    }

    /// The folded response, or an error if the stream never said it was done.
    pub fn finish(self) -> Result<GenerateContentResponse, GeminiError> {
        if self.events == 0 {
            return Err(GeminiError::CutOff("no events were received".into()));
        }
        let finished = self
            .response
            .candidates
            .iter()
            .any(|c| c.finish_reason.is_some());
        let blocked = self
            .response
            .prompt_feedback
            .as_ref()
            .is_some_and(|f| f.block_reason.is_some());
        if !finished && !blocked {
            return Err(GeminiError::CutOff(format!(
                "{} events were received, none with a finish reason",
                self.events
            )));
        }
        Ok(self.response)
    }
}

fn merge_candidate(target: &mut Candidate, candidate: Candidate) {
    if candidate.finish_reason.is_some() {
        target.finish_reason = candidate.finish_reason;
    }
    if candidate.finish_message.is_some() {
        target.finish_message = candidate.finish_message;
    }
    if let Some(ratings) = candidate.safety_ratings {
        target.safety_ratings = Some(ratings);
    }
    if let Some(citations) = candidate.citation_metadata {
        merge_citations(&mut target.citation_metadata, citations);
    }
    target.other.extend(candidate.other);
    let Some(content) = candidate.content else {
        return;
    };
    let dst = target.content.get_or_insert_with(|| Content {
        role: content.role.clone(),
        parts: Vec::new(),
    });
    for part in content.parts.into_iter().filter(|p| !p.is_empty()) {
        append_part(&mut dst.parts, part);
    }
}

/// Appends `part`, joining it to the previous part when both are plain text
/// of the same kind (text or thought). Parts carrying a signature are never
/// joined, so each signature stays on the part it came with.
fn append_part(parts: &mut Vec<WirePart>, part: WirePart) {
    if let Some(last) = parts.last_mut()
        && last.is_plain_text()
        && part.is_plain_text()
        && last.thought == part.thought
        && let (Some(text), Some(more)) = (last.text.as_mut(), part.text.as_deref())
    {
        text.push_str(more);
        return;
    }
    parts.push(part);
}

/// Citation lists accumulate across events.
fn merge_citations(target: &mut Option<Value>, more: Value) {
    let (Some(Value::Object(dst)), Value::Object(src)) = (target.as_mut(), &more) else {
        *target = Some(more);
        return;
    };
    for (key, value) in src {
        match (dst.get_mut(key), value) {
            (Some(Value::Array(a)), Value::Array(b)) => a.extend(b.iter().cloned()),
            _ => {
                dst.insert(key.clone(), value.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(v: Value) -> GenerateContentResponse {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn folds_text_and_keeps_signed_parts_apart() {
        let mut agg = Aggregator::default();
        agg.push(event(
            json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Hel"}]}}]}),
        ));
        agg.push(event(
            json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "lo"}]},
            "citationMetadata": {"citationSources": [{"uri": "a"}]}}]}),
        ));
        agg.push(event(json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "", "thoughtSignature": "sig"}]},
            "finishReason": "STOP", "citationMetadata": {"citationSources": [{"uri": "b"}]}}],
            "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 2, "totalTokenCount": 5}})));
        let out = agg.finish().unwrap();
        assert_eq!(
            serde_json::to_value(&out).unwrap(),
            json!({
                "candidates": [{
                    "content": {"role": "model", "parts": [{"text": "Hello"}, {"text": "", "thoughtSignature": "sig"}]},
                    "finishReason": "STOP",
                    "citationMetadata": {"citationSources": [{"uri": "a"}, {"uri": "b"}]}
                }],
                "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 2, "totalTokenCount": 5}
            })
        );
    }

    #[test]
    fn a_stream_without_finish_reason_is_truncated() {
        let agg = Aggregator::default();
        assert!(matches!(agg.finish(), Err(GeminiError::CutOff(_))));
        let mut agg = Aggregator::default();
        agg.push(event(
            json!({"candidates": [{"content": {"parts": [{"text": "partial"}]}}]}),
        ));
        assert!(matches!(agg.finish(), Err(GeminiError::CutOff(_))));
        let mut agg = Aggregator::default();
        agg.push(event(json!({"promptFeedback": {"blockReason": "OTHER"}})));
        assert!(agg.finish().is_ok());
    }
}
