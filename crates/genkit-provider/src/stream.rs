//! Streamed bodies: Server-Sent Events or newline-delimited JSON read frame
//! by frame ([`FrameReader`]) under a [`Deadline`], and [`fold_stream`],
//! which feeds the frames to a provider's parser ([`StreamFold`]) and passes
//! on the chunks it makes.
//!
//! A frame that does not arrive within a [`Deadline::PerWait`] limit is
//! [`HttpError::Timeout`]; a broken connection is [`HttpError::Transport`];
//! an event stream that does not parse, or an over-long line, is
//! [`HttpError::Malformed`]. A body that simply ends is not an error here:
//! the parser's [`StreamFold::finish`] decides whether what arrived is
//! complete, so a stream cut off mid-way fails instead of passing as a
//! shorter answer.

use crate::error::HttpError;
use crate::http::Deadline;
use bytes::Bytes;
use eventsource_stream::{EventStreamError, Eventsource};
use futures::StreamExt;
use futures::stream::BoxStream;
use genkit_ai::types::GenerateResponseChunk;

/// One frame of a stream: an SSE event, or one NDJSON line (with an empty
/// `event`). Frames whose data is blank are skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The SSE event type (`event:`), empty when not given.
    pub event: String,
    /// The SSE data (`data:` lines joined), or the line.
    pub data: String,
}

/// Reads a streamed response frame by frame.
pub struct FrameReader {
    kind: Kind,
    deadline: Deadline,
    url: String,
}

enum Kind {
    Sse(BoxStream<'static, Result<eventsource_stream::Event, EventStreamError<reqwest::Error>>>),
    Ndjson {
        body: BoxStream<'static, reqwest::Result<Bytes>>,
        buffer: Vec<u8>,
        max_line: usize,
        ended: bool,
    },
}

impl std::fmt::Debug for FrameReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.kind {
            Kind::Sse(_) => "sse",
            Kind::Ndjson { .. } => "ndjson",
        };
        f.debug_struct("FrameReader")
            .field("kind", &kind)
            .field("deadline", &self.deadline)
            .field("url", &self.url)
            .finish()
    }
}

impl FrameReader {
    /// Reads `response` as Server-Sent Events.
    pub fn sse(response: reqwest::Response, deadline: Deadline) -> Self {
        let url = response.url().to_string();
        Self {
            kind: Kind::Sse(response.bytes_stream().eventsource().boxed()),
            deadline,
            url,
        }
    }

    /// Reads `response` as newline-delimited JSON, one frame per non-blank
    /// line (`\n` or `\r\n`), each at most `max_line` bytes.
    pub fn ndjson(response: reqwest::Response, deadline: Deadline, max_line: usize) -> Self {
        let url = response.url().to_string();
        Self {
            kind: Kind::Ndjson {
                body: response.bytes_stream().boxed(),
                buffer: Vec::new(),
                max_line,
                ended: false,
            },
            deadline,
            url,
        }
    }

    /// The next frame; `None` once the body ended.
    pub async fn next(&mut self) -> Option<Result<Frame, HttpError>> {
        let what = match self.kind {
            Kind::Sse(_) => "waiting for the next stream event",
            Kind::Ndjson { .. } => "waiting for the next stream line",
        };
        let deadline = self.deadline;
        match deadline.wait(what, self.next_frame()).await {
            Ok(frame) => frame,
            Err(timeout) => Some(Err(timeout)),
        }
    }

    async fn next_frame(&mut self) -> Option<Result<Frame, HttpError>> {
        let deadline = self.deadline;
        let url = &self.url;
        match &mut self.kind {
            Kind::Sse(events) => loop {
                return match events.next().await? {
                    Ok(e) if e.data.trim().is_empty() => continue,
                    Ok(e) => Some(Ok(Frame {
                        event: e.event,
                        data: e.data,
                    })),
                    Err(EventStreamError::Transport(source)) => {
                        Some(Err(deadline.transport_error(url, source)))
                    }
                    Err(e) => Some(Err(HttpError::Malformed(format!(
                        "the event stream does not parse: {e}"
                    )))),
                };
            },
            Kind::Ndjson {
                body,
                buffer,
                max_line,
                ended,
            } => loop {
                let line = match buffer.iter().position(|b| *b == b'\n') {
                    Some(end) => {
                        let mut line: Vec<u8> = buffer.drain(..=end).collect();
                        line.pop();
                        line
                    }
                    None if *ended && buffer.is_empty() => return None,
                    None if *ended => std::mem::take(buffer),
                    None => {
                        if buffer.len() > *max_line {
                            return Some(Err(too_long(*max_line)));
                        }
                        match body.next().await {
                            None => *ended = true,
                            Some(Ok(bytes)) => buffer.extend_from_slice(&bytes),
                            Some(Err(source)) => {
                                return Some(Err(deadline.transport_error(url, source)));
                            }
                        }
                        continue;
                    }
                };
                if line.len() > *max_line {
                    return Some(Err(too_long(*max_line)));
                }
                let Ok(text) = String::from_utf8(line) else {
                    return Some(Err(HttpError::Malformed(
                        "a stream line is not UTF-8".into(),
                    )));
                };
                let text = text.strip_suffix('\r').unwrap_or(&text);
                if text.trim().is_empty() {
                    continue;
                }
                return Some(Ok(Frame {
                    event: String::new(),
                    data: text.to_owned(),
                }));
            },
        }
    }
}

fn too_long(max_line: usize) -> HttpError {
    HttpError::Malformed(format!("a stream line is longer than {max_line} bytes"))
}

/// Where a [`StreamFold`] passes its chunks.
pub type Emit<'a> = dyn FnMut(GenerateResponseChunk) + 'a;

/// Passes `parts` on as one chunk of the model's message, unless empty.
pub fn emit_model_parts(emit: &mut Emit<'_>, parts: Vec<genkit_ai::types::Part>) {
    if !parts.is_empty() {
        let mut chunk = GenerateResponseChunk::new(parts);
        chunk.role = Some(genkit_ai::types::Role::Model);
        emit(chunk);
    }
}

/// A provider's parser of a streamed answer: it takes frames, emits chunks,
/// and at the end says whether the answer is complete.
pub trait StreamFold {
    /// The assembled answer.
    type Output;
    /// The provider's error type.
    type Error;

    /// Takes one frame, calling `emit` for each chunk to pass on.
    fn push(
        &mut self,
        frame: Frame,
        emit: &mut dyn FnMut(GenerateResponseChunk),
    ) -> Result<(), Self::Error>;

    /// Whether the answer is complete, so reading stops (e.g. `[DONE]`).
    fn is_done(&self) -> bool {
        false
    }

    /// The answer once the frames stopped: an error when the stream ended
    /// before the provider's end marker.
    fn finish(self) -> Result<Self::Output, Self::Error>;
}

/// Reads `frames` into `fold` until it is done or the body ends, passing
/// each chunk to `send`, then returns [`StreamFold::finish`]. Read failures
/// become the provider's error through `map_err`.
pub async fn fold_stream<F: StreamFold>(
    mut frames: FrameReader,
    mut fold: F,
    map_err: impl Fn(HttpError) -> F::Error,
    mut send: impl FnMut(GenerateResponseChunk),
) -> Result<F::Output, F::Error> {
    while !fold.is_done() {
        let Some(frame) = frames.next().await else {
            break;
        };
        fold.push(frame.map_err(&map_err)?, &mut send)?;
    }
    fold.finish()
}
