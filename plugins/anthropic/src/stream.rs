//! Reading a streamed message (`"stream": true`): server-sent events
//! (`message_start`, `content_block_start` / `_delta` / `_stop`,
//! `message_delta`, `message_stop`, `ping`, `error`) become Genkit chunks —
//! text and thinking deltas as they arrive, a tool call once its input JSON
//! is complete — and are assembled into the final message. A stream that
//! ends before `message_stop` is an error.

use genkit_model::types::{GenerateResponse, Message, Part};
use genkit_provider::{Emit, Frame, StreamFold, emit_model_parts};
use serde_json::Value;
use std::collections::BTreeMap;

use crate::convert::response::{block_to_part, to_genkit_response};
use crate::error::{AnthropicError, stream_error};
use crate::wire::{AnyBlock, Block, Delta, MessagesResponse, StreamEvent};

/// A request's conversation, shared.
pub type Messages = std::sync::Arc<Vec<Message>>;

/// Reads the events of a streamed message into Genkit chunks, and the
/// assembled message into the response to the request whose conversation is
/// `input`.
#[derive(Debug)]
pub struct MessageStream {
    assembler: Assembler,
    pub(crate) input: Messages,
}

impl MessageStream {
    pub(crate) fn new(input: Messages) -> Self {
        Self {
            assembler: Assembler::default(),
            input,
        }
    }
}

impl StreamFold for MessageStream {
    type Output = GenerateResponse;
    type Error = AnthropicError;

    /// New content of an event goes out as one chunk.
    fn push(&mut self, frame: Frame, emit: &mut Emit<'_>) -> Result<(), AnthropicError> {
        let parsed: StreamEvent = serde_json::from_str(&frame.data).map_err(|e| {
            AnthropicError::undecodable(format!("stream event `{}`", frame.event), e)
        })?;
        emit_model_parts(emit, self.assembler.handle(parsed)?);
        Ok(())
    }

    fn is_done(&self) -> bool {
        self.assembler.is_done()
    }

    fn finish(self) -> Result<GenerateResponse, AnthropicError> {
        let message = self.assembler.finish()?;
        Ok(to_genkit_response(message, &self.input))
    }
}

/// A content block being streamed.
#[derive(Debug)]
enum Building {
    Text {
        text: String,
        citations: Vec<Value>,
    },
    ToolUse {
        id: String,
        name: String,
        json: String,
        initial: Value,
    },
    Thinking {
        thinking: String,
        signature: String,
    },
    /// Blocks that arrive whole (redacted thinking, server tool blocks...).
    Whole(AnyBlock),
}

/// Folds stream events into the final message.
#[derive(Debug, Default)]
pub(crate) struct Assembler {
    message: Option<MessagesResponse>,
    blocks: BTreeMap<usize, Building>,
    done: Vec<(usize, AnyBlock)>,
    stopped: bool,
}

impl Assembler {
    /// Applies one event; returns the parts to stream for it.
    pub fn handle(&mut self, event: StreamEvent) -> Result<Vec<Part>, AnthropicError> {
        match event {
            StreamEvent::MessageStart { message } => {
                self.message = Some(message);
                Ok(Vec::new())
            }
            StreamEvent::ContentBlockStart {
                index,
                content_block,
            } => Ok(self.start_block(index, content_block)),
            StreamEvent::ContentBlockDelta { index, delta } => self.apply_delta(index, delta),
            StreamEvent::ContentBlockStop { index } => self.stop_block(index),
            StreamEvent::MessageDelta { delta, usage } => {
                let message = self.message_mut()?;
                if delta.stop_reason.is_some() {
                    message.stop_reason = delta.stop_reason;
                }
                if delta.stop_sequence.is_some() {
                    message.stop_sequence = delta.stop_sequence;
                }
                if let Some(u) = usage {
                    message.usage.update(u);
                }
                Ok(Vec::new())
            }
            StreamEvent::MessageStop => {
                self.message_mut()?;
                self.stopped = true;
                Ok(Vec::new())
            }
            StreamEvent::Ping | StreamEvent::Unknown => Ok(Vec::new()),
            StreamEvent::Error { error } => Err(stream_error(error.kind, error.message)),
        }
    }

    /// True once `message_stop` arrived.
    pub fn is_done(&self) -> bool {
        self.stopped
    }

    /// The assembled message, or an error if the stream stopped short.
    pub fn finish(mut self) -> Result<MessagesResponse, AnthropicError> {
        if !self.stopped {
            let what = match &self.message {
                None => "no message_start was received".to_owned(),
                Some(_) => format!(
                    "no message_stop after {} complete content blocks",
                    self.done.len()
                ),
            };
            return Err(AnthropicError::CutOff(what));
        }
        if let Some((index, _)) = self.blocks.iter().next() {
            return Err(AnthropicError::CutOff(format!(
                "content block {index} was never stopped"
            )));
        }
        let mut message = self
            .message
            .take()
            .ok_or_else(|| AnthropicError::CutOff("no message_start was received".into()))?;
        self.done.sort_by_key(|(i, _)| *i);
        message.content = self.done.into_iter().map(|(_, b)| b).collect();
        Ok(message)
    }

    fn message_mut(&mut self) -> Result<&mut MessagesResponse, AnthropicError> {
        self.message.as_mut().ok_or_else(|| {
            AnthropicError::Malformed("a stream event arrived before message_start".into())
        })
    }

    fn start_block(&mut self, index: usize, block: AnyBlock) -> Vec<Part> {
        let (building, parts) = match block {
            AnyBlock::Known(Block::Text {
                text, citations, ..
            }) => {
                let parts = if text.is_empty() {
                    Vec::new()
                } else {
                    vec![Part::text(text.clone())]
                };
                let citations = citations.unwrap_or_default();
                (Building::Text { text, citations }, parts)
            }
            AnyBlock::Known(Block::ToolUse {
                id, name, input, ..
            }) => (
                Building::ToolUse {
                    id,
                    name,
                    json: String::new(),
                    initial: input,
                },
                Vec::new(),
            ),
            AnyBlock::Known(Block::Thinking {
                thinking,
                signature,
            }) => {
                let parts = if thinking.is_empty() {
                    Vec::new()
                } else {
                    vec![Part::reasoning(thinking.clone())]
                };
                (
                    Building::Thinking {
                        thinking,
                        signature,
                    },
                    parts,
                )
            }
            AnyBlock::Known(Block::RedactedThinking { .. }) => (Building::Whole(block), Vec::new()),
            other => {
                let part = block_to_part(&other);
                (Building::Whole(other), vec![part])
            }
        };
        self.blocks.insert(index, building);
        parts
    }

    fn apply_delta(&mut self, index: usize, delta: Delta) -> Result<Vec<Part>, AnthropicError> {
        let block = self.blocks.get_mut(&index).ok_or_else(|| {
            AnthropicError::Malformed(format!(
                "a delta for content block {index}, which was not started"
            ))
        })?;
        let part = match (block, delta) {
            (Building::Text { text, .. }, Delta::Text { text: more }) => {
                text.push_str(&more);
                Some(Part::text(more))
            }
            (Building::Text { citations, .. }, Delta::Citations { citation }) => {
                citations.push(citation);
                None
            }
            (Building::ToolUse { json, .. }, Delta::InputJson { partial_json }) => {
                json.push_str(&partial_json);
                None
            }
            (Building::Thinking { thinking, .. }, Delta::Thinking { thinking: more }) => {
                thinking.push_str(&more);
                Some(Part::reasoning(more))
            }
            (Building::Thinking { signature, .. }, Delta::Signature { signature: more }) => {
                signature.push_str(&more);
                None
            }
            (_, Delta::Unknown) => None,
            (_, other) => {
                return Err(AnthropicError::Malformed(format!(
                    "content block {index} got a delta of the wrong kind: {other:?}"
                )));
            }
        };
        Ok(part.into_iter().collect())
    }

    fn stop_block(&mut self, index: usize) -> Result<Vec<Part>, AnthropicError> {
        let building = self.blocks.remove(&index).ok_or_else(|| {
            AnthropicError::Malformed(format!("content block {index} stopped but was not started"))
        })?;
        let (block, parts) = match building {
            Building::Text { text, citations } => (
                Block::Text {
                    text,
                    citations: (!citations.is_empty()).then_some(citations),
                    cache_control: None,
                },
                Vec::new(),
            ),
            Building::ToolUse {
                id,
                name,
                json,
                initial,
            } => {
                let input = if json.trim().is_empty() {
                    initial
                } else {
                    serde_json::from_str(&json).map_err(|e| {
                        AnthropicError::Malformed(format!(
                            "the input of tool call `{id}` is not valid JSON: {e}"
                        ))
                    })?
                };
                let block = Block::ToolUse {
                    id,
                    name,
                    input,
                    cache_control: None,
                };
                let part = block_to_part(&AnyBlock::Known(block.clone()));
                (block, vec![part])
            }
            Building::Thinking {
                thinking,
                signature,
            } => (
                Block::Thinking {
                    thinking,
                    signature,
                },
                Vec::new(),
            ),
            Building::Whole(block) => {
                self.done.push((index, block));
                return Ok(Vec::new());
            }
        };
        self.done.push((index, AnyBlock::Known(block)));
        Ok(parts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn feed(events: &[Value]) -> (Vec<Part>, Result<MessagesResponse, AnthropicError>) {
        let mut a = Assembler::default();
        let mut parts = Vec::new();
        for e in events {
            match a.handle(serde_json::from_value(e.clone()).unwrap()) {
                Ok(p) => parts.extend(p),
                Err(err) => return (parts, Err(err)),
            }
        }
        (parts, a.finish())
    }

    fn start() -> Value {
        json!({"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant",
            "content": [], "model": "claude-x", "stop_reason": null, "usage": {"input_tokens": 9, "output_tokens": 1}}})
    }

    #[test]
    fn assembles_thinking_text_and_tool_use() {
        let (parts, message) = feed(&[
            start(),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Let me "}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "see."}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "EqQB"}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "ping"}),
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Checking"}}),
            json!({"type": "content_block_stop", "index": 1}),
            json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "t", "input": {}}}),
            json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "{\"ci"}}),
            json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "ty\": \"Paris\"}"}}),
            json!({"type": "content_block_stop", "index": 2}),
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 42}}),
            json!({"type": "some_future_event", "x": 1}),
            json!({"type": "message_stop"}),
        ]);
        let message = message.unwrap();
        assert_eq!(parts.len(), 4);
        assert_eq!(parts[0].as_reasoning(), Some("Let me "));
        assert_eq!(parts[2].as_text(), Some("Checking"));
        assert_eq!(
            parts[3].as_tool_request().and_then(|t| t.input.clone()),
            Some(json!({"city": "Paris"}))
        );
        assert_eq!(message.stop_reason.as_deref(), Some("tool_use"));
        assert_eq!(message.usage.input_tokens, Some(9));
        assert_eq!(message.usage.output_tokens, Some(42));
        assert_eq!(
            serde_json::to_value(&message.content).unwrap(),
            json!([
                {"type": "thinking", "thinking": "Let me see.", "signature": "EqQB"},
                {"type": "text", "text": "Checking"},
                {"type": "tool_use", "id": "toolu_1", "name": "t", "input": {"city": "Paris"}}
            ])
        );
    }

    #[test]
    fn errors_and_truncation() {
        let (_, r) = feed(&[
            start(),
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ]);
        assert!(matches!(
            r,
            Err(AnthropicError::Api {
                http_status: 529,
                ..
            })
        ));
        let (_, r) = feed(&[
            start(),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": "Hi"}}),
        ]);
        assert!(matches!(r, Err(AnthropicError::CutOff(_))));
        let (_, r) = feed(&[]);
        assert!(matches!(r, Err(AnthropicError::CutOff(_))));
        let (_, r) = feed(&[
            start(),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "x", "name": "t", "input": {}}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"a\": "}}),
            json!({"type": "content_block_stop", "index": 0}),
        ]);
        assert!(matches!(r, Err(AnthropicError::Malformed(_))));
    }
}
