//! Streamed answers: newline-delimited JSON, one object per line, the last
//! with `"done": true`.

use crate::client::Client;
use crate::convert::response::ChatState;
use crate::error::OllamaError;
use genkit_ai::types::{GenerateResponse, GenerateResponseChunk, Message};
use genkit_provider::{Frame, FrameReader, StreamFold, fold_stream};

/// The lines read so far, and the request messages the answer follows.
struct Answer<'a> {
    state: ChatState,
    input: &'a [Message],
}

impl StreamFold for Answer<'_> {
    type Output = GenerateResponse;
    type Error = OllamaError;

    fn push(
        &mut self,
        frame: Frame,
        emit: &mut dyn FnMut(GenerateResponseChunk),
    ) -> Result<(), OllamaError> {
        if let Some(chunk) = self.state.on_line(&frame.data)? {
            emit(chunk);
        }
        Ok(())
    }

    fn is_done(&self) -> bool {
        self.state.is_done()
    }

    fn finish(self) -> Result<GenerateResponse, OllamaError> {
        self.state.finish(self.input)
    }
}

/// Reads an NDJSON answer to its final line, sending a chunk for each line
/// that adds content. Waiting longer than the client's timeout for the next
/// line is `DEADLINE_EXCEEDED`; an answer that breaks off is an error.
pub(crate) async fn read_stream(
    client: &Client,
    lines: FrameReader,
    input: &[Message],
    send: impl Fn(GenerateResponseChunk),
) -> Result<GenerateResponse, OllamaError> {
    let answer = Answer {
        state: ChatState::new(client.provider()),
        input,
    };
    fold_stream(lines, answer, |e| client.error(e), send).await
}
