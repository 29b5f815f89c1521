//! Streamed answers: newline-delimited JSON, one object per line, the last
//! with `"done": true`.

use crate::client::Client;
use crate::convert::response::ChatState;
use crate::error::OllamaError;
use futures::{StreamExt, TryStreamExt};
use genkit_ai::types::{GenerateResponse, GenerateResponseChunk, Message};
use tokio_util::codec::{FramedRead, LinesCodec, LinesCodecError};
use tokio_util::io::StreamReader;

/// Longest line accepted (a line holds one token, or a whole tool call).
const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// Reads an NDJSON answer to its final line, sending a chunk for each line
/// that adds content. Waiting longer than the client's timeout for the next
/// line is `DEADLINE_EXCEEDED`; an answer that breaks off is an error.
pub(crate) async fn read_stream(
    client: &Client,
    path: &str,
    response: reqwest::Response,
    input: &[Message],
    send: impl Fn(GenerateResponseChunk),
) -> Result<GenerateResponse, OllamaError> {
    let body = response.bytes_stream().map_err(std::io::Error::other);
    let mut lines = FramedRead::new(
        StreamReader::new(body),
        LinesCodec::new_with_max_length(MAX_LINE_BYTES),
    );
    let mut state = ChatState::new(client.provider());
    while !state.is_done() {
        let next = tokio::time::timeout(client.timeout(), lines.next())
            .await
            .map_err(|_| client.timed_out("waiting for the next stream line"))?;
        match next {
            None => break,
            Some(Ok(line)) => {
                if let Some(chunk) = state.on_line(&line)? {
                    send(chunk);
                }
            }
            Some(Err(LinesCodecError::Io(e))) => return Err(client.transport(path, e)),
            Some(Err(LinesCodecError::MaxLineLengthExceeded)) => {
                return Err(OllamaError::Malformed {
                    provider: client.provider().to_owned(),
                    detail: format!("a stream line is longer than {MAX_LINE_BYTES} bytes"),
                });
            }
        }
    }
    state.finish(input)
}
