//! Streaming generate: chunks as they come, each with the text accumulated
//! so far in its message and the partially parsed structured output, then
//! the final response.

use crate::formats::{ChunkParseContext, FormatHandler};
use crate::types::{GenerateResponse, GenerateResponseChunk};
use futures::Stream;
use genkit_core::{ActionStream, Error, Result};
use parking_lot::Mutex;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// The text of one message as it streams in. Only ever appended to, so a
/// chunk can keep a length and read its prefix later, instead of copying the
/// whole text so far into every chunk.
type MessageText = Arc<Mutex<String>>;

/// A streamed chunk with what has accumulated in its message so far.
#[derive(Debug, Clone)]
pub struct GenerateChunk {
    chunk: GenerateResponseChunk,
    message_text: MessageText,
    accumulated_len: usize,
    /// Boxed: a `Value` is large and chunks are moved often.
    output: Option<Box<Value>>,
}

impl GenerateChunk {
    /// The wire chunk.
    pub fn chunk(&self) -> &GenerateResponseChunk {
        &self.chunk
    }

    /// The wire chunk, owned.
    pub fn into_chunk(self) -> GenerateResponseChunk {
        self.chunk
    }

    /// This chunk's text.
    pub fn text(&self) -> String {
        self.chunk.text()
    }

    /// All text of this chunk's message up to and including this chunk.
    pub fn accumulated_text(&self) -> String {
        let text = self.message_text.lock();
        text.get(..self.accumulated_len).unwrap_or(&text).to_owned()
    }

    /// The message index (across tool-loop turns).
    pub fn index(&self) -> u32 {
        self.chunk.index.unwrap_or(0)
    }

    /// The structured output parsed so far (when an output format is set).
    pub fn output(&self) -> Option<&Value> {
        self.output.as_deref()
    }

    /// The structured output so far as `T`.
    pub fn output_as<T: DeserializeOwned>(&self) -> Result<Option<T>> {
        self.output
            .as_deref()
            .cloned()
            .map(serde_json::from_value)
            .transpose()
            .map_err(|e| {
                Error::invalid_argument(format!("partial output does not fit the type: {e}"))
            })
    }
}

impl std::ops::Deref for GenerateChunk {
    type Target = GenerateResponseChunk;
    fn deref(&self) -> &GenerateResponseChunk {
        &self.chunk
    }
}

/// The stream of a `generate_stream` call.
pub struct GenerateStream {
    inner: ActionStream<GenerateResponseChunk, GenerateResponse>,
    parser: Option<Box<dyn FormatHandler>>,
    current_index: Option<u32>,
    message_text: MessageText,
    previous: Vec<GenerateResponseChunk>,
}

impl GenerateStream {
    pub(crate) fn new(
        inner: ActionStream<GenerateResponseChunk, GenerateResponse>,
        // A bad format is reported by the run itself; here it only means no parsing.
        parser: Option<Box<dyn FormatHandler>>,
    ) -> Self {
        Self {
            inner,
            parser,
            current_index: None,
            message_text: MessageText::default(),
            previous: Vec::new(),
        }
    }

    /// Runs to completion (dropping chunks not yet read) and returns the response.
    pub async fn response(self) -> Result<GenerateResponse> {
        self.inner.output().await
    }

    fn enrich(&mut self, chunk: GenerateResponseChunk) -> GenerateChunk {
        let index = chunk.index.unwrap_or(0);
        if self.current_index != Some(index) {
            self.current_index = Some(index);
            self.message_text = MessageText::default();
            self.previous.clear();
        }
        let accumulated_len = {
            let mut text = self.message_text.lock();
            for part in &chunk.content {
                if let Some(t) = part.as_text() {
                    text.push_str(t);
                }
            }
            text.len()
        };
        let output = self.parser.as_ref().and_then(|p| {
            p.parse_chunk(&ChunkParseContext::new(&chunk, &self.previous))
                .ok()
                .flatten()
                .map(Box::new)
        });
        if self.parser.is_some() {
            self.previous.push(chunk.clone());
        }
        GenerateChunk {
            chunk,
            message_text: self.message_text.clone(),
            accumulated_len,
            output,
        }
    }
}

impl Stream for GenerateStream {
    type Item = Result<GenerateChunk>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll_next(cx) {
            Poll::Ready(Some(Ok(chunk))) => Poll::Ready(Some(Ok(this.enrich(chunk)))),
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}
