//! Streaming generate: chunks as they come, each with the text accumulated
//! so far in its message and the partially parsed structured output, then
//! the final response.

use futures::Stream;
use genkit_core::{ActionStream, Error, Result};
use genkit_model::formats::{ChunkParseContext, FormatHandler, StreamParsing, TextParser};
use genkit_model::types::{GenerateResponse, GenerateResponseChunk};
use parking_lot::Mutex;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

/// One message as it streams in: its text, only ever appended to (so a
/// chunk can keep a length and read its prefix later, instead of copying the
/// whole text so far into every chunk), and, for formats whose output is a
/// function of the text so far ([`StreamParsing::Text`]), the parser its
/// chunks' outputs are computed with when read.
#[derive(Default)]
struct MessageText {
    text: Mutex<String>,
    parse: Option<TextParser>,
}

/// A streamed chunk with what has accumulated in its message so far.
#[derive(Clone)]
pub struct GenerateChunk {
    chunk: GenerateResponseChunk,
    message: Arc<MessageText>,
    accumulated_len: usize,
    output: ChunkOutput,
}

/// A chunk's structured output: parsed when the chunk arrived, or (for
/// formats whose output is a function of the text so far) parsed with the
/// message's text parser the first time it is read. Boxed, and the parser
/// kept by the message rather than by every chunk: chunks are moved often,
/// so they stay small.
#[derive(Clone)]
enum ChunkOutput {
    Ready(Option<Box<Value>>),
    Lazy(OnceLock<Option<Box<Value>>>),
}

impl std::fmt::Debug for GenerateChunk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GenerateChunk")
            .field("chunk", &self.chunk)
            .field("accumulated_len", &self.accumulated_len)
            .field("output", &self.output())
            .finish()
    }
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
        let text = self.message.text.lock();
        text.get(..self.accumulated_len).unwrap_or(&text).to_owned()
    }

    /// The message index (across tool-loop turns).
    pub fn index(&self) -> u32 {
        self.chunk.index.unwrap_or(0)
    }

    /// The structured output parsed so far (when an output format is set).
    pub fn output(&self) -> Option<&Value> {
        match &self.output {
            ChunkOutput::Ready(value) => value.as_deref(),
            ChunkOutput::Lazy(value) => value
                .get_or_init(|| {
                    let parse = self.message.parse.as_ref()?;
                    let text = self.message.text.lock();
                    parse(text.get(..self.accumulated_len).unwrap_or(&text)).map(Box::new)
                })
                .as_deref(),
        }
    }

    /// The structured output so far as `T`.
    pub fn output_as<T: DeserializeOwned>(&self) -> Result<Option<T>> {
        self.output()
            .cloned()
            .map(serde_json::from_value)
            .transpose()
            .map_err(|e| {
                Error::invalid_argument(format!("partial output does not fit the type: {e}"))
                    .with_source(e)
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
    message: Arc<MessageText>,
    /// How the current message is parsed (`None` without a format).
    parsing: Option<StreamParsing>,
    /// The message's earlier chunks, kept only for [`StreamParsing::Chunks`].
    previous: Vec<GenerateResponseChunk>,
}

impl GenerateStream {
    /// A stream over a generate run (`inner`), parsing partial output with
    /// `parser` (see [`stream_parser`](crate::stream_parser)).
    pub fn new(
        inner: ActionStream<GenerateResponseChunk, GenerateResponse>,
        // A bad format is reported by the run itself; here it only means no parsing.
        parser: Option<Box<dyn FormatHandler>>,
    ) -> Self {
        Self {
            inner,
            parser,
            current_index: None,
            message: Arc::default(),
            parsing: None,
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
            self.previous.clear();
            self.parsing = self.parser.as_ref().map(|p| p.stream_parsing());
            let parse = match &self.parsing {
                Some(StreamParsing::Text(parse)) => Some(parse.clone()),
                _ => None,
            };
            self.message = Arc::new(MessageText {
                text: Mutex::default(),
                parse,
            });
        }
        let mut text = self.message.text.lock();
        for part in &chunk.content {
            if let Some(t) = part.as_text() {
                text.push_str(t);
            }
        }
        let accumulated_len = text.len();
        let output = match (&mut self.parsing, &self.parser) {
            (Some(StreamParsing::Incremental(parser)), _) => {
                ChunkOutput::Ready(parser.push(&text).map(Box::new))
            }
            // Parsed when read, with the message's parser.
            (Some(StreamParsing::Text(_)), _) => ChunkOutput::Lazy(OnceLock::new()),
            (Some(StreamParsing::Chunks), Some(parser)) => {
                let output = parser
                    .parse_chunk(&ChunkParseContext::new(&chunk, &self.previous))
                    .ok()
                    .flatten()
                    .map(Box::new);
                self.previous.push(chunk.clone());
                ChunkOutput::Ready(output)
            }
            _ => ChunkOutput::Ready(None),
        };
        drop(text);
        GenerateChunk {
            chunk,
            message: self.message.clone(),
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
