//! Bounded, incremental decoders of streamed bodies: [`SseDecoder`]
//! (Server-Sent Events) and [`NdjsonDecoder`] (newline-delimited JSON).
//!
//! Both take bytes as they arrive ([`push`](SseDecoder::push)) and hand out
//! complete [`Frame`]s. They are our own rather than `eventsource-stream`
//! because that crate buffers an unfinished line without any limit (a server
//! sending one endless `data:` line would grow memory until the process
//! dies); here an unfinished line, or an event's data, longer than the
//! configured cap is an error, and only bytes that arrived since the last
//! search are scanned for a line end, so a long line in small pieces costs
//! linear time. Memory stays below the cap plus one network chunk.
//!
//! The decoders know nothing of HTTP, so they can be driven (and fuzzed)
//! with any byte slices.

/// The default cap on one SSE event's data or one NDJSON line: 8 MiB, room
/// for a large inline image while still refusing a runaway stream early.
pub const DEFAULT_MAX_FRAME: usize = 8 * 1024 * 1024;

/// One frame of a stream: an SSE event, or one NDJSON line (with an empty
/// `event`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The SSE event type (`event:`; `message` when not given), or empty
    /// for NDJSON.
    pub event: String,
    /// The SSE data (`data:` lines joined with `\n`), or the line.
    pub data: String,
}

/// Why a stream could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// A line grew past the cap before it ended.
    #[error("a stream line is longer than {limit} bytes")]
    LineTooLong {
        /// The cap, in bytes.
        limit: usize,
    },
    /// An SSE event's data grew past the cap.
    #[error("a stream event's data is longer than {limit} bytes")]
    EventTooLong {
        /// The cap, in bytes.
        limit: usize,
    },
    /// A line is not valid UTF-8.
    #[error("a stream line is not UTF-8")]
    NotUtf8,
}

/// Splits bytes into lines, holding at most about `max_line` bytes of an
/// unfinished line.
#[derive(Debug)]
struct LineSplitter {
    buf: Vec<u8>,
    /// Where the unconsumed bytes start.
    start: usize,
    /// Bytes `start..scanned` are known to hold no line end.
    scanned: usize,
    max_line: usize,
    /// SSE: a lone `\r` also ends a line (and a `\n` right after it belongs
    /// to the same line end). NDJSON: only `\n` does.
    cr_ends_line: bool,
    skip_lf: bool,
    /// Set once a line was too long: the stream is not read further.
    failed: bool,
}

impl LineSplitter {
    fn new(max_line: usize, cr_ends_line: bool) -> Self {
        Self {
            buf: Vec::new(),
            start: 0,
            scanned: 0,
            max_line,
            cr_ends_line,
            skip_lf: false,
            failed: false,
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        if self.failed {
            return;
        }
        // Drop consumed bytes once they are the larger part, so the buffer
        // is moved O(1) times per byte.
        if self.start > 0 && self.start >= self.buf.len() / 2 {
            self.buf.drain(..self.start);
            self.scanned -= self.start;
            self.start = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// The next complete line (without its line end), or `None` until more
    /// bytes arrive.
    fn next_line(&mut self) -> Option<Result<Vec<u8>, FrameError>> {
        if self.failed {
            return None;
        }
        if self.skip_lf && self.start < self.buf.len() {
            self.skip_lf = false;
            if self.buf[self.start] == b'\n' {
                self.start += 1;
                self.scanned = self.scanned.max(self.start);
            }
        }
        let cr = self.cr_ends_line;
        let found = self.buf[self.scanned..]
            .iter()
            .position(|&b| b == b'\n' || (cr && b == b'\r'));
        match found {
            Some(offset) => {
                let end = self.scanned + offset;
                let mut line = self.buf[self.start..end].to_vec();
                if self.buf[end] == b'\r' {
                    self.skip_lf = true;
                } else if !cr && line.last() == Some(&b'\r') {
                    line.pop();
                }
                self.start = end + 1;
                self.scanned = self.start;
                if line.len() > self.max_line {
                    return Some(Err(self.fail()));
                }
                Some(Ok(line))
            }
            None => {
                self.scanned = self.buf.len();
                // Without lone-`\r` line ends, a trailing `\r` may be the
                // first half of a `\r\n` that is not part of the line.
                let pending_cr = !cr && self.buf.last() == Some(&b'\r');
                let limit = self.max_line.saturating_add(usize::from(pending_cr));
                (self.buf.len() - self.start > limit).then(|| Err(self.fail()))
            }
        }
    }

    /// What is left once the body ended: an unterminated last line.
    fn rest(&mut self) -> Option<Vec<u8>> {
        if self.failed || self.start >= self.buf.len() {
            return None;
        }
        let rest = self.buf[self.start..].to_vec();
        self.start = self.buf.len();
        self.scanned = self.start;
        Some(rest)
    }

    fn fail(&mut self) -> FrameError {
        self.failed = true;
        self.buf = Vec::new();
        self.start = 0;
        self.scanned = 0;
        FrameError::LineTooLong {
            limit: self.max_line,
        }
    }
}

/// Decodes Server-Sent Events (the WHATWG `text/event-stream` format:
/// `event:` and `data:` fields, `:` comments, lines ending in `\n`, `\r\n`
/// or `\r`, an event dispatched at a blank line). Events whose data is
/// blank are not frames; an event left unfinished when the body ends is dropped, as
/// the format says.
#[derive(Debug)]
pub struct SseDecoder {
    lines: LineSplitter,
    max_event: usize,
    event: String,
    data: String,
    started: bool,
}

impl SseDecoder {
    /// A decoder refusing lines and event data longer than `max_event` bytes.
    pub fn new(max_event: usize) -> Self {
        Self {
            lines: LineSplitter::new(max_event, true),
            max_event,
            event: String::new(),
            data: String::new(),
            started: false,
        }
    }

    /// Adds bytes of the body.
    pub fn push(&mut self, bytes: &[u8]) {
        let bytes = if self.started {
            bytes
        } else if bytes.is_empty() {
            return;
        } else {
            self.started = true;
            // A byte-order mark may open the stream (split across pushes it
            // is simply not recognised, which only costs the first line).
            bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes)
        };
        self.lines.push(bytes);
    }

    /// The next complete event, or `None` until more bytes arrive. After an
    /// error the decoder yields nothing more.
    pub fn next_frame(&mut self) -> Option<Result<Frame, FrameError>> {
        loop {
            let line = match self.lines.next_line()? {
                Ok(line) => line,
                Err(e) => return Some(Err(e)),
            };
            let Ok(line) = String::from_utf8(line) else {
                self.lines.failed = true;
                return Some(Err(FrameError::NotUtf8));
            };
            if line.is_empty() {
                if let Some(frame) = self.dispatch() {
                    return Some(Ok(frame));
                }
                continue;
            }
            if line.starts_with(':') {
                continue;
            }
            let (field, value) = match line.split_once(':') {
                Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
                None => (line.as_str(), ""),
            };
            match field {
                "event" => value.clone_into(&mut self.event),
                "data" => {
                    if self.data.len() + value.len() + 1 > self.max_event {
                        self.lines.failed = true;
                        self.data = String::new();
                        return Some(Err(FrameError::EventTooLong {
                            limit: self.max_event,
                        }));
                    }
                    self.data.push_str(value);
                    self.data.push('\n');
                }
                // `id` and `retry` matter only to reconnecting clients.
                _ => {}
            }
        }
    }

    fn dispatch(&mut self) -> Option<Frame> {
        let mut event = std::mem::take(&mut self.event);
        let mut data = std::mem::take(&mut self.data);
        data.pop();
        // Blank data carries nothing for any provider (keep-alives).
        if data.trim().is_empty() {
            return None;
        }
        if event.is_empty() {
            event.push_str("message");
        }
        Some(Frame { event, data })
    }
}

/// Decodes newline-delimited JSON: one frame per non-blank line (`\n` or
/// `\r\n`); an unterminated last line counts once the body ended
/// ([`finish`](Self::finish)).
#[derive(Debug)]
pub struct NdjsonDecoder {
    lines: LineSplitter,
}

impl NdjsonDecoder {
    /// A decoder refusing lines longer than `max_line` bytes.
    pub fn new(max_line: usize) -> Self {
        Self {
            lines: LineSplitter::new(max_line, false),
        }
    }

    /// Adds bytes of the body.
    pub fn push(&mut self, bytes: &[u8]) {
        self.lines.push(bytes);
    }

    /// The next complete line, or `None` until more bytes arrive. After an
    /// error the decoder yields nothing more.
    pub fn next_frame(&mut self) -> Option<Result<Frame, FrameError>> {
        loop {
            match self.lines.next_line()? {
                Ok(line) => match self.frame(line) {
                    Some(frame) => return Some(frame),
                    None => continue,
                },
                Err(e) => return Some(Err(e)),
            }
        }
    }

    /// The unterminated last line, once the body ended.
    pub fn finish(&mut self) -> Option<Result<Frame, FrameError>> {
        let mut line = self.lines.rest()?;
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        self.frame(line)
    }

    fn frame(&mut self, line: Vec<u8>) -> Option<Result<Frame, FrameError>> {
        let Ok(text) = String::from_utf8(line) else {
            self.lines.failed = true;
            return Some(Err(FrameError::NotUtf8));
        };
        if text.trim().is_empty() {
            return None;
        }
        Some(Ok(Frame {
            event: String::new(),
            data: text,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sse(pieces: &[&[u8]], max: usize) -> Vec<Result<Frame, FrameError>> {
        let mut d = SseDecoder::new(max);
        let mut out = Vec::new();
        for piece in pieces {
            d.push(piece);
            while let Some(f) = d.next_frame() {
                out.push(f);
            }
        }
        out
    }

    fn frame(event: &str, data: &str) -> Result<Frame, FrameError> {
        Ok(Frame {
            event: event.into(),
            data: data.into(),
        })
    }

    #[test]
    fn sse_fields_comments_and_line_ends() {
        let got = sse(
            &[
                b"\xEF\xBB\xBF: comment\ndata: a\r\ndata:b\r\rev",
                b"ent: delta\ndata: {\"x\": 1}\n\n",
                b"event: empty\n\ndata\n\ndata: cut",
            ],
            1024,
        );
        assert_eq!(
            got,
            vec![frame("message", "a\nb"), frame("delta", "{\"x\": 1}"),]
        );
    }

    #[test]
    fn sse_cr_then_lf_in_the_next_piece_is_one_line_end() {
        let got = sse(&[b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n"], 64);
        assert_eq!(got, vec![frame("message", "a\nb")]);
    }

    #[test]
    fn sse_caps_a_line_and_an_event() {
        let long = [b'x'; 100];
        let mut pieces: Vec<&[u8]> = vec![b"data: "];
        pieces.extend(std::iter::repeat_n(&long[..], 5));
        let got = sse(&pieces, 256);
        assert_eq!(got, vec![Err(FrameError::LineTooLong { limit: 256 })]);
        let got = sse(&[b"data: 0123456789\n", b"data: 0123456789\n\n"], 20);
        assert_eq!(got, vec![Err(FrameError::EventTooLong { limit: 20 })]);
        assert_eq!(
            sse(&[b"data: \xFF\n\n"], 20),
            vec![Err(FrameError::NotUtf8)]
        );
    }

    #[test]
    fn ndjson_lines_blank_lines_and_the_last_line() {
        let mut d = NdjsonDecoder::new(64);
        d.push(b"{\"a\":1}\r\n\n  \n{\"b\"");
        assert_eq!(d.next_frame(), Some(frame("", "{\"a\":1}")));
        assert_eq!(d.next_frame(), None);
        d.push(b":2}\r");
        assert_eq!(d.next_frame(), None);
        assert_eq!(d.finish(), Some(frame("", "{\"b\":2}")));
        assert_eq!(d.finish(), None);
    }

    #[test]
    fn ndjson_caps_a_line_and_stops() {
        let mut d = NdjsonDecoder::new(8);
        d.push(b"0123456789");
        assert_eq!(
            d.next_frame(),
            Some(Err(FrameError::LineTooLong { limit: 8 }))
        );
        d.push(b"\n{}\n");
        assert_eq!(d.next_frame(), None);
        let mut d = NdjsonDecoder::new(8);
        d.push(b"012345678\n");
        assert_eq!(
            d.next_frame(),
            Some(Err(FrameError::LineTooLong { limit: 8 }))
        );
    }

    /// All an NDJSON decoder with cap `max` yields for `pieces` and at the
    /// end of the body.
    fn ndjson(pieces: &[&[u8]], max: usize) -> Vec<Result<Frame, FrameError>> {
        let mut d = NdjsonDecoder::new(max);
        let mut got = Vec::new();
        for piece in pieces {
            d.push(piece);
            got.extend(std::iter::from_fn(|| d.next_frame()));
        }
        got.extend(d.finish());
        got
    }

    /// A line of exactly the cap whose `\r\n` was split between two pieces
    /// was refused, while the same line in one piece was not (a `\r`
    /// waiting for its `\n` was counted as part of the line).
    #[test]
    fn ndjson_a_line_at_the_cap_does_not_depend_on_where_crlf_is_cut() {
        let fits: [&[&[u8]]; 3] = [&[b"abc\r\n"], &[b"abc\r", b"\n"], &[b"ab", b"c\r"]];
        for pieces in fits {
            assert_eq!(ndjson(pieces, 3), vec![frame("", "abc")], "{pieces:?}");
        }
        // One byte more is still refused, ended or not.
        let over: [&[&[u8]]; 4] = [
            &[b"abcd\r\n"],
            &[b"abcd"],
            &[b"abcd\r", b"\n"],
            &[b"abc\r\r"],
        ];
        for pieces in over {
            let refused = vec![Err(FrameError::LineTooLong { limit: 3 })];
            assert_eq!(ndjson(pieces, 3), refused, "{pieces:?}");
        }
    }

    #[test]
    fn a_long_line_in_small_pieces_is_scanned_once() {
        let mut d = NdjsonDecoder::new(1 << 20);
        let piece = [b'x'; 1024];
        for _ in 0..512 {
            d.push(&piece);
            assert_eq!(d.next_frame(), None);
        }
        // Every byte was scanned exactly once so far.
        assert_eq!(d.lines.scanned, 512 * 1024);
        d.push(b"\n");
        assert_eq!(
            d.next_frame().map(|f| f.map(|f| f.data.len())),
            Some(Ok(512 * 1024))
        );
    }
}
