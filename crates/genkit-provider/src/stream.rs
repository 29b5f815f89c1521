//! Streamed bodies: Server-Sent Events or newline-delimited JSON read frame
//! by frame ([`FrameReader`]) under a [`Deadline`], and [`fold_stream`],
//! which feeds the frames to a provider's parser ([`StreamFold`]) and passes
//! on the chunks it makes.
//!
//! A frame that does not arrive within a [`Deadline::PerWait`] limit is
//! [`HttpError::Timeout`]; a broken connection is [`HttpError::Transport`];
//! an over-long line or event, or a line that is not UTF-8, is
//! [`HttpError::Frame`]. A body that simply ends is not an error here:
//! the parser's [`StreamFold::finish`] decides whether what arrived is
//! complete, so a stream cut off mid-way fails instead of passing as a
//! shorter answer.

use crate::error::HttpError;
pub use crate::frames::{DEFAULT_MAX_FRAME, Frame, FrameError, NdjsonDecoder, SseDecoder};
use crate::http::Deadline;
use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use genkit_model::types::GenerateResponseChunk;

/// Reads a streamed response frame by frame, holding at most one frame's
/// cap (plus one network chunk) of unfinished data.
pub struct FrameReader {
    body: BoxStream<'static, reqwest::Result<Bytes>>,
    decoder: Decoder,
    ended: bool,
    deadline: Deadline,
    url: String,
}

enum Decoder {
    Sse(SseDecoder),
    Ndjson(NdjsonDecoder),
}

impl std::fmt::Debug for FrameReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.decoder {
            Decoder::Sse(_) => "sse",
            Decoder::Ndjson(_) => "ndjson",
        };
        f.debug_struct("FrameReader")
            .field("kind", &kind)
            .field("deadline", &self.deadline)
            .field("url", &self.url)
            .finish()
    }
}

impl FrameReader {
    /// Reads `response` as Server-Sent Events, each event's data (and each
    /// line) at most [`DEFAULT_MAX_FRAME`] bytes.
    pub fn sse(response: reqwest::Response, deadline: Deadline) -> Self {
        Self::sse_limited(response, deadline, DEFAULT_MAX_FRAME)
    }

    /// Reads `response` as Server-Sent Events, each event's data (and each
    /// line) at most `max_event` bytes.
    pub fn sse_limited(response: reqwest::Response, deadline: Deadline, max_event: usize) -> Self {
        Self::new(response, deadline, Decoder::Sse(SseDecoder::new(max_event)))
    }

    /// Reads `response` as newline-delimited JSON, one frame per non-blank
    /// line (`\n` or `\r\n`), each at most `max_line` bytes.
    pub fn ndjson(response: reqwest::Response, deadline: Deadline, max_line: usize) -> Self {
        Self::new(
            response,
            deadline,
            Decoder::Ndjson(NdjsonDecoder::new(max_line)),
        )
    }

    fn new(response: reqwest::Response, deadline: Deadline, decoder: Decoder) -> Self {
        Self {
            url: response.url().to_string(),
            body: response.bytes_stream().boxed(),
            decoder,
            ended: false,
            deadline,
        }
    }

    /// The next frame; `None` once the body ended.
    pub async fn next(&mut self) -> Option<Result<Frame, HttpError>> {
        let what = match self.decoder {
            Decoder::Sse(_) => "waiting for the next stream event",
            Decoder::Ndjson(_) => "waiting for the next stream line",
        };
        let deadline = self.deadline;
        match deadline.wait(what, self.next_frame()).await {
            Ok(frame) => frame,
            Err(timeout) => Some(Err(timeout)),
        }
    }

    async fn next_frame(&mut self) -> Option<Result<Frame, HttpError>> {
        loop {
            let decoded = match &mut self.decoder {
                Decoder::Sse(d) => d.next_frame(),
                Decoder::Ndjson(d) => d.next_frame(),
            };
            let decoded = match decoded {
                Some(frame) => Some(frame),
                None if self.ended => match &mut self.decoder {
                    Decoder::Sse(_) => None,
                    Decoder::Ndjson(d) => d.finish(),
                },
                None => None,
            };
            if let Some(frame) = decoded {
                // A decoder stops after an error; so does the body.
                if frame.is_err() {
                    self.ended = true;
                }
                return Some(frame.map_err(HttpError::Frame));
            }
            if self.ended {
                return None;
            }
            match self.body.next().await {
                None => self.ended = true,
                Some(Ok(bytes)) => match &mut self.decoder {
                    Decoder::Sse(d) => d.push(&bytes),
                    Decoder::Ndjson(d) => d.push(&bytes),
                },
                Some(Err(source)) => {
                    self.ended = true;
                    return Some(Err(self.deadline.transport_error(&self.url, source)));
                }
            }
        }
    }
}

/// Where a [`StreamFold`] passes its chunks.
pub type Emit<'a> = dyn FnMut(GenerateResponseChunk) + 'a;

/// Passes `parts` on as one chunk of the model's message, unless empty.
pub fn emit_model_parts(emit: &mut Emit<'_>, parts: Vec<genkit_model::types::Part>) {
    if !parts.is_empty() {
        let mut chunk = GenerateResponseChunk::new(parts);
        chunk.role = Some(genkit_model::types::Role::Model);
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
