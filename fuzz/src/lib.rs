//! What the fuzz targets share: cutting an input into the pieces a network
//! would deliver, whole-buffer reference decoders that the incremental
//! frame decoders are checked against, the driver that runs a provider's
//! stream parser on fuzzed bytes, and a JSON round-trip check.
//!
//! Every check panics on a broken invariant, which is how libFuzzer learns
//! of a failure.

use genkit_model::types::{GenerateRequest, GenerateResponse, GenerateResponseChunk, Role};
use genkit_provider::plugin::Spec;
use genkit_provider::{
    Chat, Frame, FrameError, NdjsonDecoder, Provider, SseDecoder, StreamFold, StreamFormat,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::fmt::Debug;

/// Splits `body` into pieces whose lengths come from `seed` (1 to 64
/// bytes, sometimes the whole rest), so line ends, `\r\n` pairs and UTF-8
/// sequences fall across piece boundaries.
pub fn pieces(body: &[u8], seed: u8) -> Vec<&[u8]> {
    let mut state = u32::from(seed) | 0x100;
    let mut out = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        // xorshift: cheap, and the same seed gives the same cuts.
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        let len = match state % 16 {
            0 => rest.len(),
            n if n < 8 => 1 + (state >> 8) as usize % 4,
            _ => 1 + (state >> 8) as usize % 64,
        };
        let (piece, tail) = rest.split_at(len.min(rest.len()));
        out.push(piece);
        rest = tail;
    }
    out
}

/// All that an [`SseDecoder`] yields for `pieces`, up to and including the
/// first error.
pub fn decode_sse(pieces: &[&[u8]], max: usize) -> Vec<Result<Frame, FrameError>> {
    let mut decoder = SseDecoder::new(max);
    let mut out = Vec::new();
    for piece in pieces {
        decoder.push(piece);
        while let Some(frame) = decoder.next_frame() {
            out.push(frame);
        }
    }
    out
}

/// All that an [`NdjsonDecoder`] yields for `pieces` and at the end of the
/// body, up to and including the first error.
pub fn decode_ndjson(pieces: &[&[u8]], max: usize) -> Vec<Result<Frame, FrameError>> {
    let mut decoder = NdjsonDecoder::new(max);
    let mut out = Vec::new();
    for piece in pieces {
        decoder.push(piece);
        while let Some(frame) = decoder.next_frame() {
            out.push(frame);
        }
    }
    while let Some(frame) = decoder.finish() {
        out.push(frame);
    }
    out
}

/// The lines of `text` ended by `\n`, `\r\n` or (when `cr`) a lone `\r`,
/// and the unterminated rest.
fn split_lines(text: &[u8], cr: bool) -> (Vec<&[u8]>, &[u8]) {
    let mut lines = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < text.len() {
        let b = text[i];
        if b == b'\n' || (cr && b == b'\r') {
            lines.push(&text[start..i]);
            if b == b'\r' && text.get(i + 1) == Some(&b'\n') {
                i += 1;
            }
            start = i + 1;
        }
        i += 1;
    }
    (lines, &text[start..])
}

/// What the WHATWG event-stream format makes of the whole `body` at once,
/// with the decoders' caps: the reference the incremental decoder must
/// match whatever the pieces. `bom` says whether the decoder saw the
/// byte-order mark whole in its first piece.
pub fn reference_sse(body: &[u8], bom: bool, max: usize) -> Vec<Result<Frame, FrameError>> {
    let body = if bom {
        body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body)
    } else {
        body
    };
    let (lines, rest) = split_lines(body, true);
    let mut out = Vec::new();
    let (mut event, mut data) = (String::new(), String::new());
    for line in lines {
        if line.len() > max {
            out.push(Err(FrameError::LineTooLong { limit: max }));
            return out;
        }
        let Ok(line) = std::str::from_utf8(line) else {
            out.push(Err(FrameError::NotUtf8));
            return out;
        };
        if line.is_empty() {
            let mut data = std::mem::take(&mut data);
            let event = std::mem::take(&mut event);
            data.pop();
            if !data.trim().is_empty() {
                let event = if event.is_empty() {
                    "message".to_owned()
                } else {
                    event
                };
                out.push(Ok(Frame { event, data }));
            }
            continue;
        }
        if line.starts_with(':') {
            continue;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "event" => event = value.to_owned(),
            "data" => {
                if data.len() + value.len() + 1 > max {
                    out.push(Err(FrameError::EventTooLong { limit: max }));
                    return out;
                }
                data.push_str(value);
                data.push('\n');
            }
            _ => {}
        }
    }
    // An unfinished line longer than the cap is refused before it ends; an
    // unfinished event is dropped.
    if rest.len() > max {
        out.push(Err(FrameError::LineTooLong { limit: max }));
    }
    out
}

/// What newline-delimited JSON framing makes of the whole `body`: one frame
/// per non-blank line (a `\r` before the `\n` dropped), the unterminated
/// last line included.
pub fn reference_ndjson(body: &[u8], max: usize) -> Vec<Result<Frame, FrameError>> {
    let (mut lines, rest) = split_lines(body, false);
    if !rest.is_empty() {
        lines.push(rest);
    }
    let mut out = Vec::new();
    for line in lines {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.len() > max {
            out.push(Err(FrameError::LineTooLong { limit: max }));
            return out;
        }
        let Ok(line) = std::str::from_utf8(line) else {
            out.push(Err(FrameError::NotUtf8));
            return out;
        };
        if !line.trim().is_empty() {
            out.push(Ok(Frame {
                event: String::new(),
                data: line.to_owned(),
            }));
        }
    }
    out
}

/// Checks that decoded frames honour the cap and that nothing follows an
/// error.
pub fn check_frames(got: &[Result<Frame, FrameError>], max: usize) {
    for (i, frame) in got.iter().enumerate() {
        match frame {
            Ok(frame) => assert!(frame.data.len() <= max, "a frame over the cap"),
            Err(_) => assert_eq!(i + 1, got.len(), "a frame after an error"),
        }
    }
}

/// Serializes `value`, reads it back and serializes again: the value read
/// back must equal `value`, and the second text the first.
pub fn assert_round_trip<T>(value: &T)
where
    T: Serialize + DeserializeOwned + PartialEq + Debug,
{
    let text = serde_json::to_string(value).expect("a value read from JSON serializes");
    let again: T = match serde_json::from_str(&text) {
        Ok(again) => again,
        Err(e) => panic!("its own JSON does not read back ({e}): {text}"),
    };
    assert_eq!(&again, value, "round trip changed the value: {text}");
    let text2 = serde_json::to_string(&again).expect("serializes again");
    assert_eq!(text, text2, "serialization is not stable");
}

/// The request the stream targets answer: one user message and one
/// namespaced tool (so Gemini's tool-name mapping is exercised).
pub fn request() -> GenerateRequest {
    serde_json::from_value(serde_json::json!({
        "messages": [{"role": "user", "content": [{"text": "hi"}]}],
        "tools": [{
            "name": "ns/tool",
            "description": "a tool",
            "inputSchema": {"type": "object"}
        }]
    }))
    .expect("a valid request")
}

/// The cap on one frame in the stream targets: small enough that the
/// fuzzer reaches it, large enough for every seed.
const STREAM_FRAME_CAP: usize = 64 * 1024;

/// How many serialized bytes of chunks a stream may produce per byte read,
/// plus a constant: a parser that re-emits all it has so far on every
/// event (quadratic output) breaks this for inputs of a few KiB.
const OUTPUT_PER_INPUT_BYTE: usize = 64;
const OUTPUT_SLACK: usize = 64 * 1024;

/// Runs provider `P`'s answer reader on fuzzed bytes: as a streamed body,
/// cut into pieces chosen by `data[0]` and framed as `P` frames it (SSE or
/// NDJSON), exactly as `fold_stream` reads it, and as a whole
/// (non-streamed) body. Checks that nothing panics, that chunks are the
/// model's, that output stays linear in the input, and that every chunk
/// and response survives Genkit's JSON wire format.
pub fn run_provider<P: Provider>(data: &[u8]) {
    let Some((&seed, body)) = data.split_first() else {
        return;
    };
    let provider = P::default();
    let request = request();
    let model = <P::Model as Spec>::unlisted("fuzz-model");
    let answer = |streaming| {
        let chat = Chat {
            model: &model,
            request: &request,
            config: P::Config::default(),
            streaming,
        };
        provider
            .chat_request(chat)
            .expect("the fixed request builds")
            .state
    };

    let mut fold = answer(true);
    let mut chunks: Vec<GenerateResponseChunk> = Vec::new();
    let mut emit = |chunk| chunks.push(chunk);
    let mut sse = SseDecoder::new(STREAM_FRAME_CAP);
    let mut ndjson = NdjsonDecoder::new(STREAM_FRAME_CAP);
    let is_sse = P::INFO.stream == StreamFormat::Sse;
    let mut failed = false;
    'read: for piece in pieces(body, seed) {
        if is_sse {
            sse.push(piece);
        } else {
            ndjson.push(piece);
        }
        loop {
            let next = if is_sse {
                sse.next_frame()
            } else {
                ndjson.next_frame()
            };
            let Some(frame) = next else { break };
            // A framing error or a parser error ends the call, as in
            // `fold_stream`.
            let Ok(frame) = frame else {
                failed = true;
                break 'read;
            };
            if fold.push(frame, &mut emit).is_err() {
                failed = true;
                break 'read;
            }
            if fold.is_done() {
                break 'read;
            }
        }
    }
    if !failed && !fold.is_done() && !is_sse {
        while let Some(frame) = ndjson.finish() {
            match frame {
                Ok(frame) if !fold.is_done() => {
                    if fold.push(frame, &mut emit).is_err() {
                        failed = true;
                    }
                }
                Ok(_) => {}
                Err(_) => failed = true,
            }
        }
    }
    let streamed = if failed { None } else { fold.finish().ok() };

    let mut emitted = 0;
    for chunk in &chunks {
        assert!(
            matches!(chunk.role, None | Some(Role::Model)),
            "a chunk of a model's answer with role {:?}",
            chunk.role
        );
        assert_round_trip(chunk);
        emitted += serde_json::to_vec(chunk).map_or(0, |v| v.len());
    }
    assert!(
        emitted <= OUTPUT_PER_INPUT_BYTE * body.len() + OUTPUT_SLACK,
        "{emitted} bytes of chunks from {} bytes of stream",
        body.len()
    );
    if let Some(response) = streamed {
        check_response(&response);
    }

    if let Ok(response) = provider.chat_response(answer(false), body) {
        check_response(&response);
    }
}

fn check_response(response: &GenerateResponse) {
    if let Some(message) = &response.message {
        assert_eq!(
            message.role,
            Role::Model,
            "a model's answer in another role"
        );
    }
    assert_round_trip(response);
}
