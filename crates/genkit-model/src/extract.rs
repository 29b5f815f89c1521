//! Tolerant JSON extraction from model output.
//!
//! Models wrap JSON in prose and code fences, use JSON5-isms (single quotes, unquoted
//! keys, trailing commas, comments) and, while streaming, stop mid-value. This module
//! reads all of that without ever panicking:
//!
//! - [`parse_lenient_json`]: one complete JSON/JSON5 value.
//! - [`parse_partial_json`]: a value whose text may be cut off anywhere; open strings,
//!   arrays and objects are closed, a key without a value is dropped, a truncated
//!   literal (`tr`, `nu`) or number (`1.`, `2e`) is completed.
//! - [`extract_json`] / [`try_extract_json`]: the first JSON object or array inside
//!   arbitrary text (prose, ```` ```json ```` fences), completed if truncated.
//! - [`extract_items`]: the complete elements of the first array in a text, from a
//!   cursor, for streaming arrays.
//! - [`parse_jsonl`] / [`extract_jsonl_items`]: JSON Lines, whole and streaming.
//!
//! Positions and cursors are byte offsets into the given text.
//! `NaN` and `Infinity` become `null`, as `JSON.stringify` does.

use serde_json::{Map, Value};

/// Deepest nesting of arrays/objects the parser follows.
pub const MAX_DEPTH: usize = 256;

/// Why text could not be read as JSON.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExtractError {
    /// The text is not JSON (nor JSON5) at `position`.
    #[error("malformed JSON at byte {position}: {message}")]
    Malformed {
        /// Byte offset of the problem.
        position: usize,
        /// What was wrong.
        message: String,
    },
    /// The text ends before the value does.
    #[error("incomplete JSON: text ends at byte {position} inside a value")]
    Incomplete {
        /// Length of the text.
        position: usize,
    },
}

/// Internal failure: ran out of input, or found something that is not JSON.
enum Fail {
    Eof,
    Bad(usize, String),
}

struct Parser<'a> {
    src: &'a str,
    bytes: &'a [u8],
    pos: usize,
    partial: bool,
    depth: usize,
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

fn is_atom_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.' | b'_')
}

impl<'a> Parser<'a> {
    fn new(src: &'a str, partial: bool) -> Self {
        Self {
            src,
            bytes: src.as_bytes(),
            pos: 0,
            partial,
            depth: 0,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn peek_char(&self) -> Option<char> {
        self.src.get(self.pos..)?.chars().next()
    }

    fn bad<T>(&self, message: &str) -> Result<T, Fail> {
        Err(Fail::Bad(self.pos, message.to_owned()))
    }

    /// Skips whitespace (ASCII and Unicode) and `//` / `/* */` comments.
    fn skip_ws(&mut self) {
        while let Some(b) = self.peek() {
            match b {
                b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c => self.pos += 1,
                b'/' => match self.bytes.get(self.pos + 1) {
                    Some(b'/') => {
                        self.pos = self.bytes[self.pos..]
                            .iter()
                            .position(|&c| c == b'\n')
                            .map_or(self.bytes.len(), |i| self.pos + i + 1);
                    }
                    Some(b'*') => {
                        let body = self.pos + 2;
                        self.pos = self
                            .src
                            .get(body..)
                            .and_then(|rest| rest.find("*/"))
                            .map_or(self.bytes.len(), |i| body + i + 2);
                    }
                    _ => return,
                },
                b if b >= 0x80 => match self.peek_char() {
                    Some(c) if c.is_whitespace() || c == '\u{feff}' => self.pos += c.len_utf8(),
                    _ => return,
                },
                _ => return,
            }
        }
    }

    fn value(&mut self) -> Result<Value, Fail> {
        self.skip_ws();
        match self.peek() {
            None => Err(Fail::Eof),
            Some(b'{') => self.nested(Self::object),
            Some(b'[') => self.nested(Self::array),
            Some(q @ (b'"' | b'\'')) => self.string(q).map(Value::String),
            Some(_) => self.atom(),
        }
    }

    fn nested(&mut self, f: fn(&mut Self) -> Result<Value, Fail>) -> Result<Value, Fail> {
        if self.depth >= MAX_DEPTH {
            return self.bad("nesting too deep");
        }
        self.depth += 1;
        let result = f(self);
        self.depth -= 1;
        result
    }

    /// Ends a container early: at end of input (or on an error in partial mode) the
    /// partial container is the result.
    fn cut<T>(&self, partial_value: T, fail: Fail) -> Result<T, Fail> {
        if self.partial {
            Ok(partial_value)
        } else {
            Err(fail)
        }
    }

    fn object(&mut self) -> Result<Value, Fail> {
        self.pos += 1; // '{'
        let mut map = Map::new();
        loop {
            self.skip_ws();
            match self.peek() {
                None => return self.cut(Value::Object(map), Fail::Eof),
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(Value::Object(map));
                }
                Some(b',') => {
                    self.pos += 1;
                    continue;
                }
                _ => {}
            }
            let key = match self.key() {
                Ok(k) => k,
                Err(e) => return self.cut(Value::Object(map), e),
            };
            self.skip_ws();
            match self.peek() {
                Some(b':') => self.pos += 1,
                None => return self.cut(Value::Object(map), Fail::Eof),
                Some(_) => {
                    let e = Fail::Bad(self.pos, "expected ':' after object key".into());
                    return self.cut(Value::Object(map), e);
                }
            }
            match self.value() {
                Ok(v) => {
                    map.insert(key, v);
                }
                Err(e) => return self.cut(Value::Object(map), e),
            }
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(Value::Object(map));
                }
                None => return self.cut(Value::Object(map), Fail::Eof),
                Some(_) => {
                    let e = Fail::Bad(self.pos, "expected ',' or '}' in object".into());
                    return self.cut(Value::Object(map), e);
                }
            }
        }
    }

    fn key(&mut self) -> Result<String, Fail> {
        match self.peek() {
            Some(q @ (b'"' | b'\'')) => {
                let key = self.string(q)?;
                if self.pos >= self.bytes.len() && self.bytes.last() != Some(&q) {
                    // A key cut off mid-way has no value to go with it.
                    return Err(Fail::Eof);
                }
                Ok(key)
            }
            _ => {
                let start = self.pos;
                while let Some(c) = self.peek_char() {
                    if !is_ident_char(c) {
                        break;
                    }
                    self.pos += c.len_utf8();
                }
                if self.pos == start {
                    return self.bad("expected an object key");
                }
                if self.pos >= self.bytes.len() {
                    return Err(Fail::Eof);
                }
                Ok(self.src.get(start..self.pos).unwrap_or_default().to_owned())
            }
        }
    }

    fn array(&mut self) -> Result<Value, Fail> {
        self.pos += 1; // '['
        let mut items = Vec::new();
        loop {
            self.skip_ws();
            match self.peek() {
                None => return self.cut(Value::Array(items), Fail::Eof),
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Value::Array(items));
                }
                Some(b',') => {
                    self.pos += 1;
                    continue;
                }
                _ => {}
            }
            match self.value() {
                Ok(v) => items.push(v),
                Err(e) => return self.cut(Value::Array(items), e),
            }
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Value::Array(items));
                }
                None => return self.cut(Value::Array(items), Fail::Eof),
                Some(_) => {
                    let e = Fail::Bad(self.pos, "expected ',' or ']' in array".into());
                    return self.cut(Value::Array(items), e);
                }
            }
        }
    }

    /// Reads `n` hex digits; `Ok(None)` when the input ends first.
    fn hex(&mut self, n: usize) -> Result<Option<u32>, Fail> {
        let Some(digits) = self.src.get(self.pos..).map(|r| r.as_bytes()) else {
            return Ok(None);
        };
        let mut v = 0u32;
        for i in 0..n {
            match digits.get(i) {
                None => return Ok(None),
                Some(d) => match (*d as char).to_digit(16) {
                    Some(x) => v = v * 16 + x,
                    None => return self.bad("invalid hex escape"),
                },
            }
        }
        self.pos += n;
        Ok(Some(v))
    }

    /// A quoted string. In partial mode an unterminated string yields what was read
    /// (minus a cut-off escape).
    fn string(&mut self, quote: u8) -> Result<String, Fail> {
        self.pos += 1;
        let mut out = String::new();
        let eof = |p: &Self, out: String| if p.partial { Ok(out) } else { Err(Fail::Eof) };
        loop {
            let Some(c) = self.peek_char() else {
                return eof(self, out);
            };
            self.pos += c.len_utf8();
            if c as u32 == quote as u32 {
                return Ok(out);
            }
            if c != '\\' {
                out.push(c);
                continue;
            }
            let Some(e) = self.peek_char() else {
                return eof(self, out);
            };
            self.pos += e.len_utf8();
            match e {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'r' => out.push('\r'),
                'b' => out.push('\u{8}'),
                'f' => out.push('\u{c}'),
                'v' => out.push('\u{b}'),
                '0' => out.push('\0'),
                '\r' => {
                    if self.peek() == Some(b'\n') {
                        self.pos += 1;
                    }
                }
                '\n' | '\u{2028}' | '\u{2029}' => {}
                'x' => match self.hex(2)? {
                    Some(v) => out.push(char::from_u32(v).unwrap_or('\u{fffd}')),
                    None => return eof(self, out),
                },
                'u' => {
                    let Some(hi) = self.hex(4)? else {
                        return eof(self, out);
                    };
                    if (0xd800..0xdc00).contains(&hi) {
                        // Expect a low surrogate right after.
                        let rest = self.src.get(self.pos..).unwrap_or_default();
                        if rest.starts_with("\\u") {
                            let save = self.pos;
                            self.pos += 2;
                            match self.hex(4)? {
                                Some(lo) if (0xdc00..0xe000).contains(&lo) => {
                                    let cp = 0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00);
                                    out.push(char::from_u32(cp).unwrap_or('\u{fffd}'));
                                }
                                Some(_) => {
                                    out.push('\u{fffd}');
                                    self.pos = save;
                                }
                                None => return eof(self, out),
                            }
                        } else if rest.is_empty() || rest == "\\" {
                            return eof(self, out);
                        } else {
                            out.push('\u{fffd}');
                        }
                    } else {
                        out.push(char::from_u32(hi).unwrap_or('\u{fffd}'));
                    }
                }
                other => out.push(other),
            }
        }
    }

    /// Numbers and literals.
    fn atom(&mut self) -> Result<Value, Fail> {
        let start = self.pos;
        while self.peek().is_some_and(is_atom_byte) {
            self.pos += 1;
        }
        let token = self.src.get(start..self.pos).unwrap_or_default();
        if token.is_empty() {
            return self.bad("unexpected character");
        }
        if let Some(v) = literal(token) {
            return Ok(v);
        }
        let at_end = self.pos >= self.bytes.len();
        if at_end && self.partial {
            return complete_atom(token).ok_or(Fail::Eof);
        }
        if at_end && complete_atom(token).is_some() {
            return Err(Fail::Eof);
        }
        Err(Fail::Bad(start, format!("invalid literal `{token}`")))
    }
}

/// A complete literal or number token.
fn literal(token: &str) -> Option<Value> {
    match token {
        "true" => return Some(Value::Bool(true)),
        "false" => return Some(Value::Bool(false)),
        "null" => return Some(Value::Null),
        _ => {}
    }
    let (negative, body) = match token.as_bytes().first() {
        Some(b'-') => (true, &token[1..]),
        Some(b'+') => (false, &token[1..]),
        _ => (false, token),
    };
    if body == "Infinity" || body == "NaN" {
        return Some(Value::Null);
    }
    if let Some(hex) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        let v = i128::from_str_radix(hex, 16).ok()?;
        if hex.starts_with(['+', '-']) {
            return None;
        }
        let v = if negative { -v } else { v };
        return Some(
            i64::try_from(v)
                .map(Value::from)
                .or_else(|_| u64::try_from(v).map(Value::from))
                .unwrap_or_else(|_| {
                    serde_json::Number::from_f64(v as f64).map_or(Value::Null, Value::Number)
                }),
        );
    }
    decimal(negative, body)
}

/// A JSON5 decimal number (`1`, `1.5`, `.5`, `5.`, `1e3`), normalized and read by
/// serde_json so valid JSON numbers get exactly serde_json's representation.
fn decimal(negative: bool, body: &str) -> Option<Value> {
    let (mantissa, exponent) = match body.find(['e', 'E']) {
        Some(i) => (&body[..i], Some(&body[i + 1..])),
        None => (body, None),
    };
    let (int, frac) = match mantissa.find('.') {
        Some(i) => (&mantissa[..i], &mantissa[i + 1..]),
        None => (mantissa, ""),
    };
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if (int.is_empty() && frac.is_empty()) || !digits(int) || !digits(frac) {
        return None;
    }
    let mut norm = String::with_capacity(body.len() + 3);
    if negative {
        norm.push('-');
    }
    let int = int.trim_start_matches('0');
    norm.push_str(if int.is_empty() { "0" } else { int });
    if !frac.is_empty() {
        norm.push('.');
        norm.push_str(frac);
    }
    if let Some(exp) = exponent {
        let exp_digits = exp.strip_prefix(['+', '-']).unwrap_or(exp);
        if exp_digits.is_empty() || !digits(exp_digits) {
            return None;
        }
        norm.push('e');
        norm.push_str(exp);
    }
    // Out-of-range numbers (1e999) become null, like Infinity does in JSON.stringify.
    Some(serde_json::from_str::<Value>(&norm).unwrap_or(Value::Null))
}

/// Completes a literal or number cut off by the end of input.
fn complete_atom(token: &str) -> Option<Value> {
    for (word, value) in [
        ("true", Value::Bool(true)),
        ("false", Value::Bool(false)),
        ("null", Value::Null),
        ("Infinity", Value::Null),
        ("-Infinity", Value::Null),
        ("+Infinity", Value::Null),
        ("NaN", Value::Null),
    ] {
        if word.starts_with(token) && token != "-" && token != "+" {
            return Some(value);
        }
    }
    // Drop a dangling exponent, sign or decimal point: `1.5e+` -> `1.5`, `2.` -> `2`.
    let mut t = token;
    if let Some(i) = t.find(['e', 'E']).filter(|_| !t.contains(['x', 'X'])) {
        t = &t[..i];
    }
    let t = t.trim_end_matches(['.', '+', '-']);
    literal(t)
}

fn to_error(fail: Fail, len: usize) -> ExtractError {
    match fail {
        Fail::Eof => ExtractError::Incomplete { position: len },
        Fail::Bad(position, message) => ExtractError::Malformed { position, message },
    }
}

/// Parses one complete JSON value, accepting JSON5 syntax (comments, single quotes,
/// unquoted keys, trailing commas, hex numbers, `+1`, `.5`, `Infinity`, `NaN`).
/// Surrounding whitespace is allowed; anything else after the value is an error.
pub fn parse_lenient_json(text: &str) -> Result<Value, ExtractError> {
    let mut p = Parser::new(text, false);
    let value = p.value().map_err(|f| to_error(f, text.len()))?;
    p.skip_ws();
    if p.pos < text.len() {
        return Err(ExtractError::Malformed {
            position: p.pos,
            message: "unexpected content after the JSON value".into(),
        });
    }
    Ok(value)
}

/// Parses JSON that may be cut off anywhere, completing it: open strings, arrays and
/// objects are closed; a key whose value has not started is dropped; a truncated
/// literal or number is finished. Content after a complete value is ignored. Inside
/// containers, malformed content ends the container (the members read so far are kept).
///
/// Returns `None` when no value can be recovered (empty text, a lone `-`, garbage).
pub fn parse_partial_json(text: &str) -> Option<Value> {
    Parser::new(text, true).value().ok()
}

/// A place in a text where a JSON object or array starts.
enum Candidate {
    /// Balanced: `start..end`.
    Complete(usize, usize),
    /// Opened at `start`, still open at the end of the text.
    Open(usize),
}

/// Finds the first `{` or `[` outside a double-quoted string at or after `from`,
/// and where it closes (counting only the same bracket kind, as Genkit does).
fn find_candidate(text: &str, from: usize) -> Option<Candidate> {
    let bytes = text.as_bytes();
    let mut opening = 0u8;
    let mut closing = 0u8;
    let mut start = 0;
    let mut nesting = 0usize;
    let mut in_string = false;
    let mut escape = false;
    for (i, &b) in bytes.iter().enumerate().skip(from) {
        if escape {
            escape = false;
            continue;
        }
        match b {
            b'\\' => escape = true,
            b'"' => in_string = !in_string,
            _ if in_string => {}
            b'{' | b'[' if opening == 0 => {
                opening = b;
                closing = if b == b'{' { b'}' } else { b']' };
                start = i;
                nesting = 1;
            }
            _ if opening != 0 && b == opening => nesting += 1,
            _ if opening != 0 && b == closing => {
                nesting -= 1;
                if nesting == 0 {
                    return Some(Candidate::Complete(start, i + 1));
                }
            }
            _ => {}
        }
    }
    (opening != 0).then_some(Candidate::Open(start))
}

/// The body of the first ```` ```json ```` fenced block (to its closing fence or the end
/// of the text).
fn json_fence_body(text: &str) -> Option<&str> {
    let mut search = 0;
    while let Some(i) = text.get(search..)?.find("```") {
        let info_start = search + i + 3;
        let rest = text.get(info_start..)?;
        let line_end = rest.find('\n')?;
        let info = rest[..line_end].trim();
        if info
            .get(..4)
            .is_some_and(|s| s.eq_ignore_ascii_case("json"))
        {
            let body = &rest[line_end + 1..];
            return Some(body.find("```").map_or(body, |end| &body[..end]));
        }
        search = info_start;
    }
    None
}

/// At most this many malformed candidates are skipped before giving up.
const MAX_CANDIDATES: usize = 32;

fn scan(text: &str) -> Result<Option<Value>, ExtractError> {
    let mut first_error = None;
    let mut from = 0;
    for _ in 0..MAX_CANDIDATES {
        match find_candidate(text, from) {
            None => break,
            Some(Candidate::Complete(start, end)) => match parse_lenient_json(&text[start..end]) {
                Ok(v) => return Ok(Some(v)),
                Err(e) => {
                    first_error.get_or_insert(e);
                    from = start + 1;
                }
            },
            Some(Candidate::Open(start)) => {
                return match parse_partial_json(&text[start..]) {
                    Some(v) => Ok(Some(v)),
                    None => Err(first_error.unwrap_or(ExtractError::Incomplete {
                        position: text.len(),
                    })),
                };
            }
        }
    }
    first_error.map_or(Ok(None), Err)
}

/// Finds the first JSON object or array in `text` (prose around it and code fences
/// are fine; a ```` ```json ```` block is preferred) and parses it leniently, completing
/// it if the text ends inside it.
///
/// `Ok(None)`: the text holds no `{` or `[`. `Err`: something bracketed was found but
/// none of it reads as JSON.
pub fn try_extract_json(text: &str) -> Result<Option<Value>, ExtractError> {
    if let Some(body) = json_fence_body(text)
        && let Ok(Some(v)) = scan(body)
    {
        return Ok(Some(v));
    }
    scan(text)
}

/// Like [`try_extract_json`], with "nothing usable" as `None`. Never panics.
pub fn extract_json(text: &str) -> Option<Value> {
    try_extract_json(text).ok().flatten()
}

/// Complete items read from a streamed text, and where to continue.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExtractedItems {
    /// The complete items found.
    pub items: Vec<Value>,
    /// Byte offset to pass as `cursor` next time. For [`extract_items`], `0` means the
    /// array has not started yet.
    pub cursor: usize,
}

fn clamp_to_boundary(text: &str, cursor: usize) -> usize {
    let mut c = cursor.min(text.len());
    while !text.is_char_boundary(c) {
        c += 1;
    }
    c
}

/// End of the array element starting at `start`, if it is complete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ElementEnd {
    Complete(usize),
    Incomplete,
    /// Not an element: skip `len` bytes.
    Garbage(usize),
}

/// Where the end of the array element at `start` is searched, resumable as
/// the text grows: the state after `scanned` bytes depends only on
/// `text[start..scanned]`, so a streamed element is scanned once, not again
/// at every chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ElementScan {
    /// Where the element starts.
    pub(crate) start: usize,
    scanned: usize,
    depth: usize,
    quote: u8,
    escape: bool,
}

impl ElementScan {
    pub(crate) fn new(start: usize) -> Self {
        Self {
            start,
            scanned: start,
            depth: 0,
            quote: 0,
            escape: false,
        }
    }

    /// Scans the bytes of `text` (a longer version of the text scanned so
    /// far) not scanned yet.
    pub(crate) fn resume(&mut self, text: &str) -> ElementEnd {
        let bytes = text.as_bytes();
        let start = self.start;
        match bytes.get(start) {
            None => ElementEnd::Incomplete,
            Some(b'{' | b'[') => {
                for (i, &b) in bytes.iter().enumerate().skip(self.scanned) {
                    self.scanned = i + 1;
                    if self.quote != 0 {
                        if self.escape {
                            self.escape = false;
                        } else if b == b'\\' {
                            self.escape = true;
                        } else if b == self.quote {
                            self.quote = 0;
                        }
                        continue;
                    }
                    match b {
                        b'"' | b'\'' => self.quote = b,
                        b'{' | b'[' => self.depth += 1,
                        b'}' | b']' => {
                            self.depth = self.depth.saturating_sub(1);
                            if self.depth == 0 {
                                return ElementEnd::Complete(i + 1);
                            }
                        }
                        _ => {}
                    }
                }
                ElementEnd::Incomplete
            }
            Some(&q @ (b'"' | b'\'')) => {
                for (i, &b) in bytes.iter().enumerate().skip(self.scanned.max(start + 1)) {
                    self.scanned = i + 1;
                    if self.escape {
                        self.escape = false;
                    } else if b == b'\\' {
                        self.escape = true;
                    } else if b == q {
                        return ElementEnd::Complete(i + 1);
                    }
                }
                ElementEnd::Incomplete
            }
            Some(_) => {
                let from = self.scanned;
                let end = bytes[from..]
                    .iter()
                    .position(|&b| {
                        matches!(b, b',' | b']' | b'}' | b'/') || b.is_ascii_whitespace()
                    })
                    .map(|i| from + i);
                match end {
                    None => {
                        self.scanned = bytes.len();
                        ElementEnd::Incomplete
                    }
                    Some(end) if end == start => {
                        ElementEnd::Garbage(text[start..].chars().next().map_or(1, char::len_utf8))
                    }
                    Some(end) => ElementEnd::Complete(end),
                }
            }
        }
    }
}

fn element_end(text: &str, start: usize) -> ElementEnd {
    ElementScan::new(start).resume(text)
}

/// Skips whitespace, comments and commas between array elements.
pub(crate) fn skip_separators(text: &str, pos: usize) -> usize {
    let mut p = Parser::new(text, false);
    p.pos = pos;
    p.skip_ws();
    while p.peek() == Some(b',') {
        p.pos += 1;
        p.skip_ws();
    }
    p.pos
}

/// Reads the complete elements of the first JSON array in `text`, starting at `cursor`
/// (a value returned by an earlier call on a prefix of `text`, or `0` to start).
///
/// An element counts once it is certainly complete: an object, array or string at its
/// closing character, a number or literal once a delimiter follows it. Elements that
/// are complete but malformed are skipped. Feeding the returned cursor back with a
/// longer text yields only elements not returned before.
///
/// Genkit JS returns only object elements; this returns elements of any type.
pub fn extract_items(text: &str, cursor: usize) -> ExtractedItems {
    let mut pos = if cursor == 0 {
        match text.find('[') {
            Some(i) => i + 1,
            None => return ExtractedItems::default(),
        }
    } else {
        clamp_to_boundary(text, cursor)
    };
    let mut out = ExtractedItems {
        items: Vec::new(),
        cursor: pos,
    };
    loop {
        pos = skip_separators(text, pos);
        match text.as_bytes().get(pos) {
            None | Some(b']') => break,
            _ => {}
        }
        match element_end(text, pos) {
            ElementEnd::Incomplete => break,
            ElementEnd::Garbage(len) => pos += len,
            ElementEnd::Complete(end) => {
                if let Ok(v) = parse_lenient_json(&text[pos..end]) {
                    out.items.push(v);
                }
                pos = end;
                out.cursor = end;
            }
        }
    }
    out
}

/// Parses JSON Lines leniently: every line that starts with `{` (after trimming) is read
/// with [`extract_json`] (so a truncated last line is completed); unreadable lines are
/// skipped.
pub fn parse_jsonl(text: &str) -> Vec<Value> {
    text.split('\n')
        .map(str::trim)
        .filter(|line| line.starts_with('{'))
        .filter_map(extract_json)
        .collect()
}

/// Streaming JSON Lines: the objects on complete lines after `cursor`, plus the last,
/// unterminated line if it already parses as a whole object. Lines that do not start
/// with `{` or do not parse are skipped. Feed the returned cursor back with a longer
/// text to get only new objects.
pub fn extract_jsonl_items(text: &str, cursor: usize) -> ExtractedItems {
    let mut pos = clamp_to_boundary(text, cursor);
    let mut items = Vec::new();
    loop {
        let rest = &text[pos..];
        match rest.find('\n') {
            Some(nl) => {
                let line = rest[..nl].trim();
                if line.starts_with('{')
                    && let Ok(v) = parse_lenient_json(line)
                {
                    items.push(v);
                }
                pos += nl + 1;
            }
            None => {
                let line = rest.trim();
                if line.starts_with('{')
                    && let Ok(v) = parse_lenient_json(line)
                {
                    items.push(v);
                    pos = text.len();
                }
                break;
            }
        }
    }
    ExtractedItems { items, cursor: pos }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lenient_matches_serde_on_plain_json() {
        for s in [
            r#"{"a":1,"b":[true,false,null],"c":"x\ny\u00e9\ud83d\ude00","d":-1.5e3}"#,
            "0",
            "-0.25",
            "12345678901234567890",
            r#""\"quoted\"""#,
            "[]",
            "{}",
        ] {
            let ours = parse_lenient_json(s).ok();
            let theirs: Option<Value> = serde_json::from_str(s).ok();
            assert_eq!(ours, theirs, "{s}");
        }
    }

    #[test]
    fn lenient_accepts_json5() {
        let v = parse_lenient_json(
            "{a: 'x', // c\n b: [1, 2,], /* c */ 'c': .5, d: +1, e: 0x10, f: Infinity,}",
        )
        .ok();
        assert_eq!(
            v,
            Some(json!({"a": "x", "b": [1, 2], "c": 0.5, "d": 1, "e": 16, "f": null}))
        );
        assert!(parse_lenient_json("{a: 1} x").is_err());
        assert!(parse_lenient_json("{a: ").is_err());
    }

    #[test]
    fn partial_completion() {
        let cases = [
            (r#"{"a": 1, "b": "hel"#, json!({"a": 1, "b": "hel"})),
            (r#"{"a": 1, "b""#, json!({"a": 1})),
            (r#"{"a": 1, "b": "#, json!({"a": 1})),
            (r#"{"a": 1, "b"#, json!({"a": 1})),
            (r#"{"a": [1, 2, "#, json!({"a": [1, 2]})),
            (r#"{"a": [1, 2"#, json!({"a": [1, 2]})),
            (r#"{"a": tr"#, json!({"a": true})),
            (r#"{"a": nu"#, json!({"a": null})),
            (r#"{"a": fal"#, json!({"a": false})),
            (r#"{"a": 1.5e"#, json!({"a": 1.5})),
            (r#"{"a": 2."#, json!({"a": 2})),
            (r#"{"a": -"#, json!({})),
            (r#"{"a": "x\"#, json!({"a": "x"})),
            (r#"{"a": "x\u00"#, json!({"a": "x"})),
            (r#"[{"a": 1}, {"b": "#, json!([{"a": 1}, {}])),
            (
                r#"{"a": {"b": {"c": [1, {"d": "e"#,
                json!({"a": {"b": {"c": [1, {"d": "e"}]}}}),
            ),
            ("[", json!([])),
            (r#"""#, json!("")),
            (r#"{"a": 1} trailing"#, json!({"a": 1})),
        ];
        for (text, want) in cases {
            assert_eq!(parse_partial_json(text), Some(want), "{text}");
        }
        assert_eq!(parse_partial_json(""), None);
        assert_eq!(parse_partial_json("-"), None);
        assert_eq!(parse_partial_json("   "), None);
    }

    #[test]
    fn extract_from_prose_and_fences() {
        assert_eq!(
            extract_json("Here you go: {\"a\": 1} hope it helps"),
            Some(json!({"a": 1}))
        );
        assert_eq!(
            extract_json("```json\n[1, 2, 3]\n```"),
            Some(json!([1, 2, 3]))
        );
        assert_eq!(
            extract_json("Use [brackets] wisely.\n```json\n{\"x\": true}\n```"),
            Some(json!({"x": true}))
        );
        assert_eq!(
            extract_json("text {\"a\": {\"b\": \"}\"}, \"c\": [1"),
            Some(json!({"a": {"b": "}"}, "c": [1]}))
        );
        assert_eq!(extract_json("no json here"), None);
        assert_eq!(try_extract_json("no json here"), Ok(None));
        assert!(try_extract_json("{not json}").is_err());
        assert_eq!(
            extract_json("{bad json} then {\"ok\": 1}"),
            Some(json!({"ok": 1}))
        );
    }

    #[test]
    fn items_streaming() {
        let text = r#"Sure: [{"a": 1}, "two", 3, [4], {"b": "}"#;
        let r = extract_items(text, 0);
        assert_eq!(
            r.items,
            vec![json!({"a": 1}), json!("two"), json!(3), json!([4])]
        );
        let more = format!("{text}\"}}, 5]");
        let r2 = extract_items(&more, r.cursor);
        assert_eq!(r2.items, vec![json!({"b": "}"}), json!(5)]);
        assert_eq!(extract_items("no array", 0), ExtractedItems::default());
        // A number is not complete until a delimiter follows it.
        assert_eq!(extract_items("[1, 2", 0).items, vec![json!(1)]);
    }

    #[test]
    fn jsonl() {
        let text = "{\"a\": 1}\nnot json\n{\"b\": 2}\n{\"c\": ";
        // The truncated last line is completed; its key without a value is dropped.
        assert_eq!(
            parse_jsonl(text),
            vec![json!({"a": 1}), json!({"b": 2}), json!({})]
        );
        let r = extract_jsonl_items(text, 0);
        assert_eq!(r.items, vec![json!({"a": 1}), json!({"b": 2})]);
        let r2 = extract_jsonl_items("{\"a\": 1}", 0);
        assert_eq!(r2.cursor, 8);
        let r3 = extract_jsonl_items("{\"a\": 1}\n{\"b\": 2}", r2.cursor);
        assert_eq!(r3.items, vec![json!({"b": 2})]);
    }
}
