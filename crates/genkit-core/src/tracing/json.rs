//! The JSON text a span keeps for `genkit:input` and `genkit:output`:
//! shared (one serialization can back several spans) and capped in size, so
//! a huge input costs neither unbounded time on the request path nor
//! unbounded memory while its span waits for export.
//!
//! Values longer than the cap ([`max_attribute_bytes`], 128,000 bytes by
//! default, the limit Genkit JS's Google Cloud exporter cuts inputs and
//! outputs to) keep their first bytes only, and the span is marked
//! `truncated` in its wire form.

use parking_lot::Mutex;
use serde::Serialize;
use serde::Serializer;
use serde_json::Value;
use serde_json::ser::{CharEscape, CompactFormatter, Formatter};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// The default cap on one recorded input or output, in bytes.
pub const DEFAULT_MAX_ATTRIBUTE_BYTES: usize = 128_000;

static MAX_ATTRIBUTE_BYTES: AtomicUsize = AtomicUsize::new(DEFAULT_MAX_ATTRIBUTE_BYTES);

/// The cap on one recorded input or output (JSON text), in bytes.
pub fn max_attribute_bytes() -> usize {
    MAX_ATTRIBUTE_BYTES.load(Ordering::Relaxed)
}

/// Sets the cap on one recorded input or output for every span recorded
/// from now on (at least 64 bytes).
pub fn set_max_attribute_bytes(bytes: usize) {
    MAX_ATTRIBUTE_BYTES.store(bytes.max(64), Ordering::Relaxed);
}

/// JSON text recorded on a span, possibly cut at the size cap. Cheap to
/// clone (shared).
///
/// It is either text already, or a value kept as it is ([`defer`](Self::defer),
/// [`defer_value`](Self::defer_value)) and encoded the first time its text
/// is asked for: by an exporter, on its background worker, so the request
/// that recorded it pays no JSON encoding. Either way the text is the same:
/// the value's JSON, cut at the cap in force when it was recorded.
#[derive(Clone)]
pub struct SpanJson(Repr);

#[derive(Clone)]
enum Repr {
    Text(Arc<Encoded>),
    Deferred(Arc<dyn Deferred>),
}

/// Encoded text and whether it was cut.
#[derive(Debug)]
struct Encoded {
    text: Box<str>,
    truncated: bool,
}

/// A value waiting to be encoded.
trait Deferred: Send + Sync {
    /// The text, encoding the value on first use (`None` if it cannot be
    /// encoded).
    fn encoded(&self) -> Option<&Encoded>;
    /// Bytes the record holds now (the value before encoding, the text after).
    fn approx_bytes(&self) -> usize;
    /// Whether the value is still waiting.
    fn is_pending(&self) -> bool;
    /// Appends the attribute value (the value's JSON as a JSON string, cut
    /// at the cap in force when it was recorded) to `buf`, [shared
    /// pieces](SharedPiece) copied in their escaped form. Alone (`shared`
    /// false), the value is written through and its text not kept; shared
    /// by several spans, it is written once and that escaped form is
    /// copied for every span. `Text` (with `buf` unchanged) when the text
    /// must be used instead: it exists already, or `check` says the escaped
    /// text needs the transform.
    fn write_escaped(&self, buf: &mut Vec<u8>, shared: bool, check: &Check<'_>) -> Through;
}

/// How writing a value went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Written {
    /// All of it.
    Whole,
    /// Cut at the cap (the writer is full).
    Cut,
    /// It cannot be encoded (e.g. a map with non-string keys).
    Failed,
}

/// How writing an attribute value straight from a waiting value went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Through {
    /// Written; whether it was cut at the cap.
    Wrote(bool),
    /// It cannot be encoded: nothing written.
    Failed,
    /// Nothing written: the text is to be written instead.
    Text,
}

/// How a waiting value is written: into a buffer, within a cap.
type WriteFn<T> = fn(&T, &mut Vec<u8>, &Cap<'_>) -> Written;

/// The attribute value of a waiting value several spans share, written
/// once for all of them.
enum SharedForm {
    /// The JSON escaped as string contents (no quotes), and whether it was
    /// cut.
    Escaped { bytes: Box<[u8]>, cut: bool },
    /// It cannot be encoded.
    Failed,
    /// The text is to be used (the escaped form needs the transform).
    Text,
}

struct Pending<T> {
    /// Dropped once encoded, so a queued span keeps only the text (or the
    /// shared escaped form).
    value: Mutex<Option<T>>,
    /// Writes the value as JSON, stopping where the cap is reached.
    write: WriteFn<T>,
    /// The cap when the value was recorded.
    limit: usize,
    approx: usize,
    done: OnceLock<Option<Encoded>>,
    shared: OnceLock<SharedForm>,
}

impl<T: Send> Pending<T> {
    /// Writes `v` escaped, pieces copied, at the end of `out`; on anything
    /// but `Wrote`, `out` is left as it was.
    fn escape_value(&self, v: &T, out: &mut Vec<u8>, check: &Check<'_>) -> Through {
        let start = out.len();
        let cap = Cap::escaping(self.limit, start, check);
        let (written, poisoned) = with_pieces(|| (self.write)(v, out, &cap));
        let cut = match written {
            // A piece went to a serializer that is not this one: the bytes
            // cannot be trusted; the text path does not use pieces.
            _ if poisoned => {
                out.truncate(start);
                return Through::Text;
            }
            Written::Failed => {
                out.truncate(start);
                return Through::Failed;
            }
            Written::Whole => false,
            Written::Cut => true,
        };
        if cut {
            trim_partial_char(out, start);
        }
        if cap.needs_transform(out) {
            out.truncate(start);
            return Through::Text;
        }
        Through::Wrote(cut)
    }
}

impl<T: Send> Deferred for Pending<T> {
    fn encoded(&self) -> Option<&Encoded> {
        self.done
            .get_or_init(|| match self.value.lock().take() {
                Some(v) => {
                    let mut buf = Vec::new();
                    // Pieces write their values: the text holds no pieces.
                    let _plain = PieceMode::leave();
                    let written = (self.write)(&v, &mut buf, &Cap::new(self.limit, false));
                    finish(buf, written)
                }
                // Dropped once the shared escaped form was written: the
                // text is that form unescaped.
                None => match self.shared.get() {
                    Some(SharedForm::Escaped { bytes, cut }) => {
                        unescape(bytes).map(|text| Encoded {
                            text,
                            truncated: *cut,
                        })
                    }
                    // Taken by an encoding that panicked: record nothing.
                    _ => None,
                },
            })
            .as_ref()
    }

    fn write_escaped(&self, buf: &mut Vec<u8>, shared: bool, check: &Check<'_>) -> Through {
        if self.done.get().is_some() {
            return Through::Text;
        }
        if !shared && self.shared.get().is_none() {
            let value = self.value.lock();
            // `None`: taken by an encoding under way or one that panicked.
            let Some(v) = value.as_ref() else {
                return Through::Text;
            };
            buf.push(b'"');
            let through = self.escape_value(v, buf, check);
            match through {
                Through::Wrote(_) => buf.push(b'"'),
                _ => {
                    buf.pop();
                }
            }
            return through;
        }
        let mut first = false;
        let form = self.shared.get_or_init(|| {
            first = true;
            let value = self.value.lock();
            let Some(v) = value.as_ref() else {
                return SharedForm::Text;
            };
            let mut out = Vec::new();
            match self.escape_value(v, &mut out, check) {
                Through::Wrote(cut) => SharedForm::Escaped {
                    bytes: out.into(),
                    cut,
                },
                Through::Failed => SharedForm::Failed,
                Through::Text => SharedForm::Text,
            }
        });
        if first && !matches!(form, SharedForm::Text) {
            // Kept as the escaped form from now on (its text, if asked for,
            // is that form unescaped).
            drop(self.value.lock().take());
        }
        match form {
            SharedForm::Escaped { bytes, cut } => {
                buf.reserve(bytes.len() + 2);
                buf.push(b'"');
                buf.extend_from_slice(bytes);
                buf.push(b'"');
                Through::Wrote(*cut)
            }
            SharedForm::Failed => Through::Failed,
            SharedForm::Text => Through::Text,
        }
    }

    fn approx_bytes(&self) -> usize {
        match (self.done.get(), self.shared.get()) {
            (Some(e), _) => e.as_ref().map_or(0, |e| e.text.len()),
            (None, Some(SharedForm::Escaped { bytes, .. })) => bytes.len(),
            (None, Some(SharedForm::Failed)) => 0,
            _ => self.approx,
        }
    }

    fn is_pending(&self) -> bool {
        self.done.get().is_none() && matches!(self.shared.get(), None | Some(SharedForm::Text))
    }
}

/// The text an escaped form stands for (the contents of a JSON string).
fn unescape(escaped: &[u8]) -> Option<Box<str>> {
    let mut quoted = Vec::with_capacity(escaped.len() + 2);
    quoted.push(b'"');
    quoted.extend_from_slice(escaped);
    quoted.push(b'"');
    serde_json::from_slice::<String>(&quoted)
        .ok()
        .map(String::into_boxed_str)
}

impl SpanJson {
    /// Serializes `value`, stopping at the size cap: a huge value costs the
    /// cap, not its size. `None` if it cannot be serialized.
    pub fn serialize<T: Serialize + ?Sized>(value: &T) -> Option<SpanJson> {
        encode_serde(value, max_attribute_bytes()).map(Self::encoded)
    }

    /// Encodes a JSON value now, stopping at the size cap; long strings are
    /// not even scanned past it.
    pub fn from_value(value: &Value) -> SpanJson {
        Self::encoded(encode_value(value, max_attribute_bytes()))
    }

    /// Keeps `value` and encodes it only when the text is first asked for
    /// (off the request path, by an exporter's worker). `approx_bytes` is
    /// the memory `value` holds, which a byte-bounded export queue counts
    /// until the value is encoded. The cap in force now applies.
    pub fn defer<T: Serialize + Send + 'static>(value: T, approx_bytes: usize) -> SpanJson {
        Self::pending(value, approx_bytes, write_serde::<T>)
    }

    /// A JSON value recorded as [`defer`](Self::defer) does when it is small
    /// (at most the cap, roughly), and encoded now otherwise: a large value
    /// costs the cap on the request path (strings past the cap are not
    /// scanned) instead of being kept whole while its span waits.
    pub fn defer_value(value: Value) -> SpanJson {
        match Self::size_within_cap(&value) {
            Ok(approx) => Self::defer_measured(value, approx),
            Err(encoded) => encoded,
        }
    }

    /// [`defer_value`](Self::defer_value) of a value
    /// [`size_within_cap`](Self::size_within_cap) found within the cap.
    pub(crate) fn defer_measured(value: Value, approx: usize) -> SpanJson {
        Self::pending(value, approx, write_value_capped)
    }

    /// A JSON value the caller keeps using: a copy is kept for later when
    /// it is small (cheaper than encoding it), and it is encoded now, up to
    /// the cap, when it is large.
    pub fn defer_cloned(value: &Value) -> SpanJson {
        match Self::size_within_cap(value) {
            Ok(approx) => Self::pending(value.clone(), approx, write_value_capped),
            Err(encoded) => encoded,
        }
    }

    /// `value`, whose JSON is `json`, recorded without a copy: kept and
    /// encoded later when `json` is small (as [`defer_cloned`](Self::defer_cloned)
    /// would copy it), `json` encoded now, up to the cap, when it is large.
    /// For a caller that hands `json` on and has no more use for `value`.
    pub fn defer_as<T: Serialize + Send + 'static>(value: T, json: &Value) -> SpanJson {
        match Self::size_within_cap(json) {
            Ok(approx) => Self::pending(value, approx, write_serde::<T>),
            Err(encoded) => encoded,
        }
    }

    /// The size estimate of `json` when it is within the cap, or `json`
    /// encoded now, up to the cap, when it is larger (the choice every
    /// `defer_*` of a JSON value makes).
    pub(crate) fn size_within_cap(json: &Value) -> std::result::Result<usize, SpanJson> {
        let limit = max_attribute_bytes();
        let approx = approx_value_bytes(json, limit);
        if approx > limit {
            return Err(Self::encoded(encode_value(json, limit)));
        }
        Ok(approx)
    }

    fn pending<T: Send + 'static>(value: T, approx: usize, write: WriteFn<T>) -> SpanJson {
        Self::pending_within(value, approx, write, max_attribute_bytes())
    }

    fn pending_within<T: Send + 'static>(
        value: T,
        approx: usize,
        write: WriteFn<T>,
        limit: usize,
    ) -> SpanJson {
        SpanJson(Repr::Deferred(Arc::new(Pending {
            value: Mutex::new(Some(value)),
            write,
            limit,
            approx: approx.saturating_add(std::mem::size_of::<Pending<T>>()),
            done: OnceLock::new(),
            shared: OnceLock::new(),
        })))
    }

    fn encoded(e: Encoded) -> SpanJson {
        SpanJson(Repr::Text(Arc::new(e)))
    }

    /// Text that is already JSON, cut at the size cap if longer.
    pub fn from_text(mut text: String) -> SpanJson {
        let limit = max_attribute_bytes();
        if text.len() <= limit {
            return Self::encoded(Encoded {
                text: text.into(),
                truncated: false,
            });
        }
        let mut end = limit;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        // `Box<str>` from a `String` shrinks to fit, so the cut-off capacity
        // is released here.
        Self::encoded(Encoded {
            text: text.into(),
            truncated: true,
        })
    }

    /// The text, encoding a deferred value first; `None` if the value could
    /// not be encoded (its span then records no attribute for it).
    pub fn text(&self) -> Option<&str> {
        self.get().map(|e| &*e.text)
    }

    /// Writes the attribute value this records, the JSON text as a JSON
    /// string, to `buf`, with `transform` applied to the text first (the
    /// exporter's redaction). A waiting value held by this record alone is
    /// encoded straight into `buf`, escaped as it goes, and not kept: no
    /// text is built for it; one shared by several records is written so
    /// once, and each record copies that. [Shared pieces](SharedPiece) in
    /// the value are copied in their escaped form (each encoded once).
    /// If `needs_transform` says such escaped text needs `transform` (it
    /// mentions a secret, say), that text is taken back and the value is
    /// encoded as text, which is `transform`ed like any other. It is asked
    /// about the bytes between copied pieces (which start and end with a
    /// bracket) and about each piece once, when the piece is encoded: it
    /// must be a search for words without brackets, as a secret key's
    /// check is, and the same for every write. Returns
    /// whether the text was cut at the cap, or `None` with `buf` unchanged
    /// when there is no text.
    pub(crate) fn write_json_string(
        &self,
        buf: &mut Vec<u8>,
        needs_transform: impl Fn(&[u8]) -> bool,
        transform: impl Fn(&str) -> std::borrow::Cow<'_, str>,
    ) -> Option<bool> {
        if let Repr::Deferred(d) = &self.0 {
            // A value shared by several spans (the final response every turn
            // of a tool loop records) is written once, escaped, and that is
            // copied for each of them.
            let shared = Arc::strong_count(d) > 1;
            match d.write_escaped(buf, shared, &needs_transform) {
                Through::Wrote(cut) => return Some(cut),
                Through::Failed => return None,
                Through::Text => {}
            }
        }
        let e = self.get()?;
        write_escaped_str(buf, &transform(&e.text));
        Some(e.truncated)
    }

    fn get(&self) -> Option<&Encoded> {
        match &self.0 {
            Repr::Text(e) => Some(e),
            Repr::Deferred(d) => d.encoded(),
        }
    }

    /// The JSON text (a prefix of it when [truncated](Self::is_truncated));
    /// empty if the value could not be encoded.
    pub fn as_str(&self) -> &str {
        self.text().unwrap_or_default()
    }

    /// Whether the text was cut at the size cap.
    pub fn is_truncated(&self) -> bool {
        self.get().is_some_and(|e| e.truncated)
    }

    /// Whether the value is still waiting to be encoded.
    pub fn is_deferred(&self) -> bool {
        match &self.0 {
            Repr::Text(_) => false,
            Repr::Deferred(d) => d.is_pending(),
        }
    }

    /// Roughly the memory held, in bytes, without encoding anything: the
    /// text's length, or a deferred value's estimate until it is encoded.
    pub fn approx_bytes(&self) -> usize {
        match &self.0 {
            Repr::Text(e) => e.text.len(),
            Repr::Deferred(d) => d.approx_bytes(),
        }
    }

    /// Bytes of text (encoding a deferred value first).
    pub fn len(&self) -> usize {
        self.as_str().len()
    }

    /// Whether there is no text.
    pub fn is_empty(&self) -> bool {
        self.as_str().is_empty()
    }
}

impl PartialEq for SpanJson {
    fn eq(&self, other: &Self) -> bool {
        self.text() == other.text() && self.is_truncated() == other.is_truncated()
    }
}

impl Eq for SpanJson {}

impl std::fmt::Debug for SpanJson {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpanJson")
            .field("text", &self.text())
            .field("truncated", &self.is_truncated())
            .finish()
    }
}

impl From<String> for SpanJson {
    fn from(text: String) -> Self {
        Self::from_text(text)
    }
}

impl From<&str> for SpanJson {
    fn from(text: &str) -> Self {
        Self::from_text(text.to_owned())
    }
}

impl std::ops::Deref for SpanJson {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

/// `value` as JSON through serde, cut at `limit` bytes.
fn encode_serde<T: Serialize + ?Sized>(value: &T, limit: usize) -> Option<Encoded> {
    let mut buf = Vec::new();
    let written = write_serde(value, &mut buf, &Cap::new(limit, false));
    finish(buf, written)
}

/// `value` as serde_json writes it, within `cap`.
fn write_serde<T: Serialize + ?Sized>(value: &T, buf: &mut Vec<u8>, cap: &Cap<'_>) -> Written {
    let mut ser =
        serde_json::Serializer::with_formatter(std::io::sink(), CapFormatter { cap, out: buf });
    match value.serialize(&mut ser) {
        Ok(()) => Written::Whole,
        Err(_) if cap.full.get() => Written::Cut,
        Err(_) => Written::Failed,
    }
}

/// A JSON value as serde_json writes it (compact, map order kept), cut at
/// `limit` bytes; each string is cut before escaping to a little more than
/// the room left, so the bytes kept are the same and a 10 MiB string costs
/// what fits.
fn encode_value(value: &Value, limit: usize) -> Encoded {
    let mut buf = Vec::new();
    let written = write_value_capped(value, &mut buf, &Cap::new(limit, false));
    // Writing a `Value` fails only at the cap (keys are strings).
    finish(buf, written).unwrap_or(Encoded {
        text: Box::default(),
        truncated: true,
    })
}

/// A JSON value within `cap`, long strings cut before they are scanned.
fn write_value_capped(value: &Value, buf: &mut Vec<u8>, cap: &Cap<'_>) -> Written {
    write_serde(&CutValue { value, cap }, buf, cap)
}

/// The text written, cut to the last whole character when it was cut.
fn finish(mut buf: Vec<u8>, written: Written) -> Option<Encoded> {
    let cut = match written {
        Written::Whole => false,
        Written::Cut => true,
        Written::Failed => return None,
    };
    if cut {
        trim_partial_char(&mut buf, 0);
    }
    String::from_utf8(buf).ok().map(|s| Encoded {
        text: s.into(),
        truncated: cut,
    })
}

/// Drops a character cut in two at the end of `buf[start..]`: the serializer
/// writes whole UTF-8 characters, so only the last one can be incomplete
/// after a cut at a byte count. Escapes are ASCII, so this holds for
/// escaped output too.
fn trim_partial_char(buf: &mut Vec<u8>, start: usize) {
    let tail = &buf[start..];
    // The last byte that starts a character, at most 3 bytes back.
    let Some(back) = (0..tail.len().min(4)).find(|&i| {
        let b = tail[tail.len() - 1 - i];
        !(0x80..0xC0).contains(&b)
    }) else {
        return;
    };
    let lead = tail[tail.len() - 1 - back];
    let width = match lead {
        0x00..=0x7F => 1,
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        _ => 4,
    };
    if back + 1 < width {
        let keep = buf.len() - 1 - back;
        buf.truncate(keep);
    }
}

/// A JSON value written as serde_json writes `Value`s, except that each
/// string is first cut to a little more than the room left under the cap:
/// its escaped form is at least as long, so the cap is still reached, at the
/// same byte, and a 10 MiB string costs what fits.
struct CutValue<'a> {
    value: &'a Value,
    cap: &'a Cap<'a>,
}

impl Serialize for CutValue<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        let cap = self.cap;
        match self.value {
            Value::String(text) => CutStr(text, cap).serialize(s),
            Value::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for value in items {
                    seq.serialize_element(&CutValue { value, cap })?;
                }
                seq.end()
            }
            Value::Object(map) => {
                let mut m = s.serialize_map(Some(map.len()))?;
                for (k, value) in map {
                    m.serialize_entry(&CutStr(k, cap), &CutValue { value, cap })?;
                }
                m.end()
            }
            scalar => scalar.serialize(s),
        }
    }
}

/// A string cut as [`CutValue`] cuts them.
struct CutStr<'a>(&'a str, &'a Cap<'a>);

impl Serialize for CutStr<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (text, cap) = (self.0, self.1);
        let mut end = text.len().min(cap.room.get());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        let ok = s.serialize_str(&text[..end])?;
        if end < text.len() {
            // The cut string ended with a quote that fitted: impossible, as
            // its escaped form alone fills the room; kept as a guard.
            cap.full.set(true);
            return Err(serde::ser::Error::custom(CAP_REACHED));
        }
        Ok(ok)
    }
}

/// A rough size of a JSON value in memory, in bytes; the walk stops once
/// the total is past `stop` (a value known to be large is not walked whole).
pub fn approx_value_bytes(v: &Value, stop: usize) -> usize {
    fn walk(v: &Value, total: &mut usize, stop: usize) {
        *total += 32;
        match v {
            Value::String(s) => *total += s.len(),
            Value::Array(a) => {
                for x in a {
                    if *total > stop {
                        return;
                    }
                    walk(x, total, stop);
                }
            }
            Value::Object(m) => {
                for (k, x) in m {
                    if *total > stop {
                        return;
                    }
                    *total += k.len();
                    walk(x, total, stop);
                }
            }
            _ => {}
        }
    }
    let mut total = 0;
    walk(v, &mut total, stop);
    total
}

const CAP_REACHED: &str = "span attribute size cap reached";

/// The cap on one encoding: serializer output is taken up to `room` bytes,
/// then the serialization fails (which stops it) and `full` is set. Output
/// goes to the buffer as it is, or, when `escape`, escaped as the contents
/// of a JSON string (how an exporter writes `genkit:input` into the trace
/// JSON without building the text first); the cap counts the bytes before
/// escaping either way.
///
/// An escaping cap with a `check` copies [shared pieces](SharedPiece) in
/// their escaped form and asks `check` about the bytes written between
/// them (`needs` is set if it says so for any).
pub(crate) struct Cap<'c> {
    room: Cell<usize>,
    full: Cell<bool>,
    escape: bool,
    /// Where the bytes written since the last copied piece start.
    glue_start: Cell<usize>,
    /// Whether `check` (or a copied piece's check) said yes.
    needs: Cell<bool>,
    check: Option<&'c Check<'c>>,
}

/// Whether escaped text needs the transform (see
/// [`SpanJson::write_json_string`]).
type Check<'a> = dyn Fn(&[u8]) -> bool + 'a;

impl<'c> Cap<'c> {
    fn new(limit: usize, escape: bool) -> Self {
        Self {
            room: Cell::new(limit),
            full: Cell::new(false),
            escape,
            glue_start: Cell::new(0),
            needs: Cell::new(false),
            check: None,
        }
    }

    /// An escaping cap that copies pieces, for output from `start` on.
    fn escaping(limit: usize, start: usize, check: &'c Check<'c>) -> Self {
        Self {
            glue_start: Cell::new(start),
            check: Some(check),
            ..Self::new(limit, true)
        }
    }

    /// After writing `out` through this cap: whether the check said yes for
    /// a copied piece or the bytes between pieces, or says so for those
    /// written since the last piece.
    fn needs_transform(&self, out: &[u8]) -> bool {
        self.needs.get()
            || self
                .check
                .is_some_and(|check| check(&out[self.glue_start.get().min(out.len())..]))
    }
}

/// Runs `write` with pieces asked for (see [`PieceMode`]); returns what it
/// returned and whether a piece went to another serializer meanwhile.
fn with_pieces(write: impl FnOnce() -> Written) -> (Written, bool) {
    let mode = PieceMode::enter();
    let written = write();
    (written, mode.poisoned())
}

/// A value several spans record (a message of a call's history, a set of
/// tool definitions): encoded once, the first time an exporter writes a
/// span holding it, as the escaped contents of a JSON string, which every
/// span's attribute then copies instead of encoding the value again.
///
/// It serializes as its value would, with any serializer; only an
/// exporter's escaping writer ([`SpanJson`]'s attribute writing) copies the
/// encoded form. The bytes are the same either way, cuts at the size cap
/// included (a piece that does not fit in the room left is written as its
/// value, so the cut falls where it would).
pub struct SharedPiece<T>(Arc<PieceCell<T>>);

struct PieceCell<T> {
    value: T,
    text: OnceLock<PieceText>,
}

/// A piece's encoded form.
struct PieceText {
    /// The JSON escaped as string contents.
    escaped: Box<[u8]>,
    /// Bytes of the JSON before escaping (what the cap counts).
    raw_len: usize,
    /// Whether it may be copied: encoded whole, and starting and ending
    /// with a bracket (so no word the check looks for can straddle its
    /// edges and the bytes around it).
    copyable: bool,
    /// What the check said about it.
    needs: bool,
}

impl<T> SharedPiece<T> {
    /// A piece holding `value`, not encoded yet.
    pub fn new(value: T) -> Self {
        Self(Arc::new(PieceCell {
            value,
            text: OnceLock::new(),
        }))
    }

    /// Whether the encoded form exists (it is made on first use).
    pub fn is_encoded(&self) -> bool {
        self.0.text.get().is_some()
    }
}

impl<T> Clone for SharedPiece<T> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<T> std::ops::Deref for SharedPiece<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0.value
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for SharedPiece<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.value.fmt(f)
    }
}

impl<T: Serialize + Send + Sync + 'static> Serialize for SharedPiece<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let marked = PIECES.with(|p| {
            p.active.get() && {
                p.pending.set(Some(self.0.clone() as Arc<dyn PieceSource>));
                true
            }
        });
        if !marked {
            return self.0.value.serialize(s);
        }
        // The escaping writer takes the piece from the mark when asked for
        // a unit (`null`).
        let result = s.serialize_unit();
        PIECES.with(|p| {
            if p.pending.take().is_some() {
                // Another serializer got the unit: the output is wrong, and
                // the writer that asked for pieces must not use it.
                p.poisoned.set(true);
            }
        });
        result
    }
}

/// A piece as the escaping writer uses it.
trait PieceSource: Send + Sync {
    /// The encoded form, made on first use (`check` asked about it then).
    fn text(&self, check: &Check<'_>) -> &PieceText;
    /// Writes the value through `cap`, as if it were not a piece.
    fn write_value(&self, out: &mut Vec<u8>, cap: &Cap<'_>) -> Written;
}

impl<T: Serialize + Send + Sync> PieceSource for PieceCell<T> {
    fn text(&self, check: &Check<'_>) -> &PieceText {
        self.text.get_or_init(|| {
            let mut out = Vec::new();
            let cap = Cap::escaping(usize::MAX, 0, check);
            let (written, poisoned) = with_pieces(|| write_serde(&self.value, &mut out, &cap));
            let raw_len = usize::MAX - cap.room.get();
            let bracketed =
                matches!(out.first(), Some(b'{' | b'[')) && matches!(out.last(), Some(b'}' | b']'));
            let needs = cap.needs_transform(&out);
            PieceText {
                escaped: out.into(),
                raw_len,
                copyable: written == Written::Whole && bracketed && !poisoned,
                needs,
            }
        })
    }

    fn write_value(&self, out: &mut Vec<u8>, cap: &Cap<'_>) -> Written {
        write_serde(&self.value, out, cap)
    }
}

/// The piece a [`SharedPiece`] hands to the writer, and whether pieces are
/// being asked for, on this thread.
struct PieceState {
    active: Cell<bool>,
    pending: Cell<Option<Arc<dyn PieceSource>>>,
    poisoned: Cell<bool>,
}

thread_local! {
    static PIECES: PieceState = const {
        PieceState {
            active: Cell::new(false),
            pending: Cell::new(None),
            poisoned: Cell::new(false),
        }
    };
}

/// Pieces asked for (or not) until dropped, when the state before returns.
struct PieceMode {
    was_active: bool,
    was_poisoned: bool,
}

impl PieceMode {
    /// Pieces are copied by escaping writers from now on.
    fn enter() -> Self {
        Self::set(true)
    }

    /// Pieces serialize as their values from now on.
    fn leave() -> Self {
        Self::set(false)
    }

    fn set(active: bool) -> Self {
        PIECES.with(|p| Self {
            was_active: p.active.replace(active),
            was_poisoned: p.poisoned.replace(false),
        })
    }

    /// Whether a piece went to another serializer since `enter`.
    fn poisoned(&self) -> bool {
        PIECES.with(|p| p.poisoned.get())
    }
}

impl Drop for PieceMode {
    fn drop(&mut self) {
        PIECES.with(|p| {
            p.active.set(self.was_active);
            p.poisoned.set(self.was_poisoned);
            drop(p.pending.take());
        });
    }
}

/// serde_json's compact format, within a [`Cap`], into `out` (the writer
/// serde_json hands over is not used). Escaping is decided per
/// piece rather than per byte: string fragments, numbers and punctuation
/// never need it (serde_json splits strings at the characters it escapes),
/// so only quotes, escape sequences and raw fragments are escaped, and the
/// bytes of the text are copied once.
struct CapFormatter<'a, 'c> {
    cap: &'a Cap<'c>,
    out: &'a mut Vec<u8>,
}

impl CapFormatter<'_, '_> {
    /// Takes `raw` (what the compact format writes), up to the room left.
    #[inline]
    fn put(&mut self, raw: &[u8], clean: bool) -> std::io::Result<()> {
        let cap = self.cap;
        let room = cap.room.get();
        if raw.len() > room {
            return self.put_cut(raw, clean);
        }
        cap.room.set(room - raw.len());
        if clean || !cap.escape {
            self.out.extend_from_slice(raw);
        } else {
            escape_into(self.out, raw);
        }
        Ok(())
    }

    /// Takes what fits of `raw`, which does not fit: the cap is reached.
    #[cold]
    fn put_cut(&mut self, raw: &[u8], clean: bool) -> std::io::Result<()> {
        let cap = self.cap;
        let taken = &raw[..cap.room.get()];
        cap.room.set(0);
        if clean || !cap.escape {
            self.out.extend_from_slice(taken);
        } else {
            escape_into(self.out, taken);
        }
        cap.full.set(true);
        Err(std::io::Error::other(CAP_REACHED))
    }

    /// Takes one byte of punctuation (never escaped).
    #[inline]
    fn put_byte(&mut self, b: u8) -> std::io::Result<()> {
        let cap = self.cap;
        let room = cap.room.get();
        if room == 0 {
            return self.put_cut(&[b], true);
        }
        cap.room.set(room - 1);
        self.out.push(b);
        Ok(())
    }

    /// Takes a string's quote (`\"` when escaping).
    #[inline]
    fn put_quote(&mut self) -> std::io::Result<()> {
        let cap = self.cap;
        let room = cap.room.get();
        if room == 0 {
            return self.put_cut(b"\"", false);
        }
        cap.room.set(room - 1);
        if cap.escape {
            self.out.extend_from_slice(b"\\\"");
        } else {
            self.out.push(b'"');
        }
        Ok(())
    }

    /// Takes what `f` makes the compact format write (a number, an escape).
    #[inline]
    fn put_with(
        &mut self,
        clean: bool,
        f: impl FnOnce(&mut CompactFormatter, &mut &mut [u8]) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let mut scratch = [0u8; 64];
        let mut rest: &mut [u8] = &mut scratch;
        f(&mut CompactFormatter, &mut rest)?;
        let n = 64 - rest.len();
        self.put(&scratch[..n], clean)
    }

    /// Writes a piece: its escaped form copied when the cap escapes, has a
    /// check and has room for all of it; else its value, as if it were no
    /// piece.
    fn piece(&mut self, piece: &dyn PieceSource) -> std::io::Result<()> {
        let cap = self.cap;
        if cap.escape
            && let Some(check) = cap.check
        {
            let text = piece.text(check);
            let room = cap.room.get();
            if text.copyable && text.raw_len <= room {
                let glue = &self.out[cap.glue_start.get().min(self.out.len())..];
                if text.needs || check(glue) {
                    cap.needs.set(true);
                }
                self.out.extend_from_slice(&text.escaped);
                cap.room.set(room - text.raw_len);
                cap.glue_start.set(self.out.len());
                return Ok(());
            }
        }
        match piece.write_value(self.out, cap) {
            Written::Whole => Ok(()),
            Written::Cut => Err(std::io::Error::other(CAP_REACHED)),
            Written::Failed => Err(std::io::Error::other("a shared piece cannot be encoded")),
        }
    }
}

macro_rules! put_numbers {
    ($($name:ident($t:ty);)*) => {
        $(
            #[inline]
            fn $name<W: ?Sized + std::io::Write>(&mut self, _w: &mut W, v: $t) -> std::io::Result<()> {
                self.put_with(true, |f, out| f.$name(out, v))
            }
        )*
    };
}

impl Formatter for CapFormatter<'_, '_> {
    put_numbers! {
        write_i8(i8);
        write_i16(i16);
        write_i32(i32);
        write_i64(i64);
        write_i128(i128);
        write_u8(u8);
        write_u16(u16);
        write_u32(u32);
        write_u64(u64);
        write_u128(u128);
        write_f32(f32);
        write_f64(f64);
    }

    fn write_null<W: ?Sized + std::io::Write>(&mut self, _w: &mut W) -> std::io::Result<()> {
        // A shared piece marks itself and asks for a unit.
        if let Some(piece) = PIECES.with(|p| p.pending.take()) {
            return self.piece(&*piece);
        }
        self.put(b"null", true)
    }

    fn write_bool<W: ?Sized + std::io::Write>(
        &mut self,
        _w: &mut W,
        v: bool,
    ) -> std::io::Result<()> {
        self.put(if v { b"true" } else { b"false" }, true)
    }

    fn write_number_str<W: ?Sized + std::io::Write>(
        &mut self,
        _w: &mut W,
        v: &str,
    ) -> std::io::Result<()> {
        self.put(v.as_bytes(), true)
    }

    fn begin_string<W: ?Sized + std::io::Write>(&mut self, _w: &mut W) -> std::io::Result<()> {
        self.put_quote()
    }

    fn end_string<W: ?Sized + std::io::Write>(&mut self, _w: &mut W) -> std::io::Result<()> {
        self.put_quote()
    }

    fn write_string_fragment<W: ?Sized + std::io::Write>(
        &mut self,
        _w: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        self.put(fragment.as_bytes(), true)
    }

    fn write_char_escape<W: ?Sized + std::io::Write>(
        &mut self,
        _w: &mut W,
        escape: CharEscape,
    ) -> std::io::Result<()> {
        self.put_with(false, |f, out| f.write_char_escape(out, escape))
    }

    fn write_raw_fragment<W: ?Sized + std::io::Write>(
        &mut self,
        _w: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        self.put(fragment.as_bytes(), false)
    }

    fn begin_array<W: ?Sized + std::io::Write>(&mut self, _w: &mut W) -> std::io::Result<()> {
        self.put_byte(b'[')
    }

    fn end_array<W: ?Sized + std::io::Write>(&mut self, _w: &mut W) -> std::io::Result<()> {
        self.put_byte(b']')
    }

    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        _w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if first { Ok(()) } else { self.put_byte(b',') }
    }

    fn begin_object<W: ?Sized + std::io::Write>(&mut self, _w: &mut W) -> std::io::Result<()> {
        self.put_byte(b'{')
    }

    fn end_object<W: ?Sized + std::io::Write>(&mut self, _w: &mut W) -> std::io::Result<()> {
        self.put_byte(b'}')
    }

    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        _w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if first { Ok(()) } else { self.put_byte(b',') }
    }

    fn begin_object_value<W: ?Sized + std::io::Write>(
        &mut self,
        _w: &mut W,
    ) -> std::io::Result<()> {
        self.put_byte(b':')
    }
}

/// Writes `bytes` escaped as JSON string contents (usually a few bytes: a
/// quote, an escape sequence).
#[inline]
fn write_escaped_bytes<W: ?Sized + std::io::Write>(w: &mut W, bytes: &[u8]) -> std::io::Result<()> {
    if bytes == b"\"" {
        return w.write_all(b"\\\"");
    }
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut run = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let e = ESCAPE[b as usize];
        if e == 0 {
            continue;
        }
        w.write_all(&bytes[run..i])?;
        run = i + 1;
        if e == b'u' {
            w.write_all(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[(b >> 4) as usize],
                HEX[(b & 0xF) as usize],
            ])?;
        } else {
            w.write_all(&[b'\\', e])?;
        }
    }
    w.write_all(&bytes[run..])
}

/// What serde_json writes for each byte inside a string: 0 for the byte
/// itself, `u` for `\u00XX`, else the letter after the backslash.
static ESCAPE: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = b'u';
        i += 1;
    }
    t[0x08] = b'b';
    t[0x09] = b't';
    t[0x0A] = b'n';
    t[0x0C] = b'f';
    t[0x0D] = b'r';
    t[b'"' as usize] = b'"';
    t[b'\\' as usize] = b'\\';
    t
};

/// Appends `bytes` escaped as serde_json escapes string contents (quote,
/// backslash and control characters; everything else as it is).
pub(crate) fn escape_into(buf: &mut Vec<u8>, bytes: &[u8]) {
    // Most strings (names, paths, keys) need no escape: one check over all
    // the bytes (without branching per byte), then one copy.
    let clean = !bytes.iter().fold(false, |any, &b| {
        any | (b < 0x20) | (b == b'"') | (b == b'\\')
    });
    if clean {
        buf.extend_from_slice(bytes);
        return;
    }
    // Writing to a `Vec` does not fail.
    let _ = write_escaped_bytes(buf, bytes);
}

/// Appends `s` as a JSON string, exactly as serde_json writes it.
pub(crate) fn write_escaped_str(buf: &mut Vec<u8>, s: &str) {
    buf.push(b'"');
    escape_into(buf, s.as_bytes());
    buf.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_values_are_kept_whole() {
        let j = SpanJson::serialize(&serde_json::json!({"a": [1, "é"]})).unwrap();
        assert_eq!(j.as_str(), r#"{"a":[1,"é"]}"#);
        assert!(!j.is_truncated());
        assert_eq!(SpanJson::from("\"x\"").as_str(), "\"x\"");
    }

    #[test]
    fn large_values_stop_at_the_cap_on_a_char_boundary() {
        let limit = max_attribute_bytes();
        let big = "é".repeat(limit);
        let j = SpanJson::serialize(&big).unwrap();
        assert!(j.is_truncated());
        assert!(j.len() <= limit && j.len() >= limit - 1);
        assert!(j.as_str().starts_with("\"éé"));
        let t = SpanJson::from_text(format!("\"{big}\""));
        assert!(t.is_truncated());
        assert!(t.len() <= limit && t.len() >= limit - 1);
        assert_eq!(t.as_str(), j.as_str());
    }

    #[test]
    fn deferred_values_encode_on_first_use_exactly_as_serialize_does() {
        let v = serde_json::json!({"a": [1, 2.5, "é\"\n"], "b": {"c": null, "d": true}});
        let now = SpanJson::serialize(&v).unwrap();
        let later = SpanJson::defer(v.clone(), 100);
        assert!(later.is_deferred());
        assert!(later.approx_bytes() >= 100);
        assert_eq!(later, now);
        assert!(!later.is_deferred());
        assert_eq!(later.approx_bytes(), now.len());
        let value = SpanJson::defer_value(v.clone());
        assert!(value.is_deferred());
        assert_eq!(value.as_str(), now.as_str());
        assert!(!value.is_truncated());
        // Unencodable (a map with non-string keys): no text, like serialize.
        let bad: std::collections::HashMap<(u8, u8), u8> = [((1, 2), 3)].into();
        assert!(SpanJson::serialize(&bad).is_none());
        assert_eq!(SpanJson::defer(bad, 0).text(), None);
    }

    #[test]
    fn strings_are_escaped_as_serde_json_escapes_them() {
        let mut all: String = (0u8..0x80).map(char::from).collect();
        all.push_str("é€😀\u{2028}\u{fffd}");
        for s in [all.as_str(), "", "plain", "\"", "\\\\"] {
            let mut buf = b"x".to_vec();
            write_escaped_str(&mut buf, s);
            assert_eq!(&buf[1..], serde_json::to_string(s).unwrap().as_bytes());
        }
    }

    fn unchanged(text: &str) -> std::borrow::Cow<'_, str> {
        std::borrow::Cow::Borrowed(text)
    }

    /// What a span writes for `j` (a JSON string holding its text) and
    /// whether it was cut.
    fn written(j: &SpanJson) -> Option<(String, bool)> {
        let mut buf = Vec::new();
        let cut = j.write_json_string(&mut buf, |_| false, unchanged)?;
        Some((String::from_utf8(buf).unwrap(), cut))
    }

    #[test]
    fn escaped_writing_cuts_where_the_text_is_cut_and_escapes_as_serde_json() {
        let long = format!("{}\"é\\\n\u{1}{}", "x".repeat(20), "😀".repeat(9));
        let v = serde_json::json!({"k\"\u{2}": [long.clone(), {"n": -1.5e-7, "b": [true, null]}], "s": long});
        let full = serde_json::to_string(&v).unwrap();
        for limit in 0..full.len() + 3 {
            let mut end = limit.min(full.len());
            while !full.is_char_boundary(end) {
                end -= 1;
            }
            let mut expected = b"[".to_vec();
            escape_into(&mut expected, &full.as_bytes()[..end]);
            for write in [write_serde::<Value>, write_value_capped] {
                let mut buf = b"[".to_vec();
                let written = write(&v, &mut buf, &Cap::new(limit, true));
                if written == Written::Cut {
                    trim_partial_char(&mut buf, 1);
                }
                assert_eq!(
                    String::from_utf8_lossy(&buf),
                    String::from_utf8_lossy(&expected),
                    "limit {limit}"
                );
                let whole = if limit >= full.len() {
                    Written::Whole
                } else {
                    Written::Cut
                };
                assert_eq!(written, whole, "limit {limit}");
            }
        }
    }

    #[test]
    fn a_value_recorded_for_its_json_encodes_as_that_json() {
        #[derive(Serialize)]
        struct Out {
            name: String,
            n: f64,
            tags: Vec<&'static str>,
        }
        let out = Out {
            name: "é\"x\n".into(),
            n: 1.5,
            tags: vec!["a", "b"],
        };
        let json = serde_json::to_value(&out).unwrap();
        let kept = SpanJson::defer_as(out, &json);
        assert!(kept.is_deferred());
        assert_eq!(kept.as_str(), serde_json::to_string(&json).unwrap());
        // A large one: its JSON is encoded at once, up to the cap.
        let big = "z".repeat(max_attribute_bytes() * 2);
        let json = Value::from(big.clone());
        let now = SpanJson::defer_as(big, &json);
        assert!(!now.is_deferred() && now.is_truncated());
        assert!(now.len() <= max_attribute_bytes());
        assert!(
            serde_json::to_string(&json)
                .unwrap()
                .starts_with(now.as_str())
        );
    }

    #[test]
    fn deferred_values_write_through_as_their_text_would() {
        let limit = max_attribute_bytes();
        let v = serde_json::json!({"a": ["é\"\\\n\u{1}", 1.5, null], "b": {"c": true}});
        let cases: Vec<fn(&Value) -> SpanJson> = vec![
            |v| SpanJson::defer(v.clone(), 1),
            |v| SpanJson::defer_value(v.clone()),
            SpanJson::defer_cloned,
            |v| SpanJson::defer(Value::from(format!("{}{v}", "ü".repeat(64_000))), 1),
            |v| SpanJson::defer(Value::from(format!("{}{v}", "€".repeat(43_000))), 1),
            |v| SpanJson::defer_value(Value::from(format!("{v}{}", "\u{7}".repeat(25_000)))),
        ];
        for (i, make) in cases.iter().enumerate() {
            let through = make(&v);
            assert!(through.is_deferred());
            let (json, cut) = written(&through).unwrap();
            // Written through, not kept.
            assert!(through.is_deferred(), "case {i}");
            let text = make(&v);
            let expected = serde_json::to_string(text.as_str()).unwrap();
            assert_eq!(json, expected, "case {i}");
            assert_eq!(cut, text.is_truncated(), "case {i}");
            assert!(text.len() <= limit);
            // Encoded text writes the same.
            assert_eq!(written(&text), Some((expected, cut)), "case {i}");
        }
        // Shared by several spans: encoded once and kept for the others.
        let shared = SpanJson::defer(v.clone(), 1);
        let other = shared.clone();
        let (json, cut) = written(&shared).unwrap();
        assert!(!other.is_deferred() && !cut);
        assert_eq!(json, serde_json::to_string(other.as_str()).unwrap());
        // Unencodable: nothing written.
        let bad: std::collections::HashMap<(u8, u8), u8> = [((1, 2), 3)].into();
        let mut buf = b"keep".to_vec();
        let j = SpanJson::defer(bad, 0);
        assert_eq!(j.write_json_string(&mut buf, |_| false, unchanged), None);
        assert_eq!(buf, b"keep");
        // A transform asked for: applied to the text, as for text.
        let j = SpanJson::defer(v.clone(), 1);
        let mut buf = Vec::new();
        let cut = j.write_json_string(&mut buf, |_| true, |_| "\"T\"".into());
        assert_eq!((buf.as_slice(), cut), (&b"\"\\\"T\\\"\""[..], Some(false)));
    }

    #[test]
    fn the_value_encoder_cuts_exactly_where_serde_does() {
        let long = format!("{}\"é{}", "x".repeat(90), "ü".repeat(80));
        let v = serde_json::json!({"k\u{1}": [long.clone(), {"n": 1e300, "s": long}], "z": -3});
        let full = serde_json::to_string(&v).unwrap();
        for limit in (0..full.len() + 3).chain([full.len(), full.len() + 1]) {
            let a = encode_value(&v, limit);
            let b = encode_serde(&v, limit).unwrap();
            assert_eq!(a.text, b.text, "limit {limit}");
            // serde_json's own text, cut at the cap on a char boundary.
            let mut end = limit.min(full.len());
            while !full.is_char_boundary(end) {
                end -= 1;
            }
            assert_eq!(&*a.text, &full[..end], "limit {limit}");
            assert_eq!(a.truncated, b.truncated, "limit {limit}");
            assert_eq!(a.truncated, full.len() > limit, "limit {limit}");
        }
        // A huge value is encoded at once (not kept), at the cap.
        let big = SpanJson::defer_value(Value::from("y".repeat(max_attribute_bytes() * 4)));
        assert!(!big.is_deferred());
        assert!(big.is_truncated());
        assert!(big.len() <= max_attribute_bytes());
    }

    /// The secret check the exporter uses, as a test stand-in: the escaped
    /// form of `"apiKey"`.
    fn mentions_key(escaped: &[u8]) -> bool {
        escaped.windows(10).any(|w| w == br#"\"apiKey\""#)
    }

    fn marked(text: &str) -> std::borrow::Cow<'_, str> {
        std::borrow::Cow::Owned(format!("[{text}]"))
    }

    /// What a span writes for `j` with the secret check and a marking
    /// transform, and whether it was cut.
    fn written_checked(j: &SpanJson) -> Option<(String, bool)> {
        let mut buf = b"prefix".to_vec();
        let cut = j.write_json_string(&mut buf, mentions_key, marked)?;
        Some((String::from_utf8(buf[6..].to_vec()).unwrap(), cut))
    }

    /// A record made of shared pieces and plain values: brackets, escapes,
    /// multi-byte characters, a piece that is a string (never copied).
    type Record = (
        Vec<SharedPiece<Value>>,
        String,
        SharedPiece<Value>,
        SharedPiece<Value>,
    );

    fn pieces() -> (
        Vec<SharedPiece<Value>>,
        SharedPiece<Value>,
        SharedPiece<Value>,
    ) {
        let list = vec![
            SharedPiece::new(
                serde_json::json!({"role": "user", "content": [{"text": "go \"é\"\n"}]}),
            ),
            SharedPiece::new(serde_json::json!([1, 2.5, null, {"k\u{1}": "😀€"}])),
            SharedPiece::new(serde_json::json!({})),
        ];
        let string = SharedPiece::new(Value::from("a string piece \\ \u{7f}"));
        let tools =
            SharedPiece::new(serde_json::json!([{"name": "t", "schema": {"type": "object"}}]));
        (list, string, tools)
    }

    fn write_record(r: &Record, buf: &mut Vec<u8>, cap: &Cap<'_>) -> Written {
        write_serde(r, buf, cap)
    }

    #[test]
    fn copied_pieces_write_what_serde_writes_at_every_cut() {
        let (list, string, tools) = pieces();
        let record: Record = (
            list.clone(),
            "glue ü\"".into(),
            string.clone(),
            tools.clone(),
        );
        // The plain serde form: pieces serialize as their values.
        let full = serde_json::to_string(&record).unwrap();
        assert!(!list[0].is_encoded());
        for limit in 0..full.len() + 3 {
            let mut end = limit.min(full.len());
            while !full.is_char_boundary(end) {
                end -= 1;
            }
            let mut expected = b"\"".to_vec();
            escape_into(&mut expected, &full.as_bytes()[..end]);
            expected.push(b'"');
            // The same pieces every time: once encoded (by the first write
            // with room for them), they are copied, or, when the cut falls
            // inside one, written as values up to the cut.
            let r: Record = (
                list.clone(),
                "glue ü\"".into(),
                string.clone(),
                tools.clone(),
            );
            let j = SpanJson::pending_within(r, 1, write_record, limit);
            let (json, cut) = written_checked(&j).unwrap();
            assert_eq!(json.as_bytes(), &expected[..], "limit {limit}");
            assert_eq!(cut, limit < full.len(), "limit {limit}");
            // Written through, not kept.
            assert!(j.is_deferred());
            // Its text is the serde text, cut at the same place.
            assert_eq!(j.as_str(), &full[..end], "limit {limit}");
        }
        assert!(list.iter().all(SharedPiece::is_encoded));
        assert!(tools.is_encoded());
    }

    #[test]
    fn a_secret_in_a_shared_piece_takes_the_text_path_for_every_span_holding_it() {
        let (mut list, string, tools) = pieces();
        list.insert(
            1,
            SharedPiece::new(serde_json::json!({"config": {"apiKey": "sk"}})),
        );
        let make = || -> Record { (list.clone(), "glue".into(), string.clone(), tools.clone()) };
        let text = serde_json::to_string(&make()).unwrap();
        let expected = serde_json::to_string(&format!("[{text}]")).unwrap();
        for _ in 0..2 {
            // The first write encodes the piece (and checks it), the second
            // copies what the check said.
            let j = SpanJson::defer(make(), 1);
            assert_eq!(written_checked(&j), Some((expected.clone(), false)));
        }
        // The key in the bytes between pieces, or in a piece that is a
        // string (written as a value): found as well.
        let (list, _, tools) = pieces();
        for (glue, string) in [
            ("apiKey".to_owned(), SharedPiece::new(Value::from("s"))),
            ("x".to_owned(), SharedPiece::new(Value::from("apiKey"))),
        ] {
            let r: Record = (list.clone(), glue, string, tools.clone());
            let text = serde_json::to_string(&r).unwrap();
            let j = SpanJson::defer(r, 1);
            let expected = serde_json::to_string(&format!("[{text}]")).unwrap();
            assert_eq!(written_checked(&j), Some((expected, false)));
        }
        // No secret: written through, not transformed.
        let r: Record = (
            list.clone(),
            "g".into(),
            SharedPiece::new(Value::from("s")),
            tools,
        );
        let text = serde_json::to_string(&r).unwrap();
        let j = SpanJson::defer(r, 1);
        assert_eq!(
            written_checked(&j),
            Some((serde_json::to_string(&text).unwrap(), false))
        );
    }

    #[test]
    fn a_shared_value_is_written_once_and_copied() {
        let (list, string, tools) = pieces();
        let limit = max_attribute_bytes();
        for cap in [limit, 40] {
            let r: Record = (list.clone(), "g\u{2}".into(), string.clone(), tools.clone());
            let full = serde_json::to_string(&r).unwrap();
            let mut end = cap.min(full.len());
            while !full.is_char_boundary(end) {
                end -= 1;
            }
            let expected = serde_json::to_string(&full[..end]).unwrap();
            let j = SpanJson::pending_within(r, 1, write_record, cap);
            let others = [j.clone(), j.clone()];
            for k in others.iter().chain([&j]) {
                assert_eq!(
                    written_checked(k),
                    Some((expected.clone(), end < full.len()))
                );
            }
            // Kept as the escaped form: no longer waiting, its text that
            // form unescaped.
            assert!(!j.is_deferred());
            assert_eq!(j.approx_bytes(), expected.len() - 2);
            assert_eq!(j.as_str(), &full[..end]);
            assert_eq!(j.is_truncated(), end < full.len());
        }
        // Shared and mentioning a secret: the text path, for each of them.
        let r: Record = (list.clone(), "apiKey".into(), string.clone(), tools.clone());
        let text = serde_json::to_string(&r).unwrap();
        let j = SpanJson::defer(r, 1);
        let other = j.clone();
        let expected = serde_json::to_string(&format!("[{text}]")).unwrap();
        assert_eq!(written_checked(&j), Some((expected.clone(), false)));
        assert_eq!(written_checked(&other), Some((expected, false)));
        // Shared and unencodable: nothing, for each of them.
        let bad: std::collections::HashMap<(u8, u8), SharedPiece<Value>> =
            [((1, 2), list[0].clone())].into();
        let j = SpanJson::defer(bad, 0);
        let other = j.clone();
        assert_eq!(written_checked(&j), None);
        assert_eq!(written_checked(&other), None);
        assert_eq!(j.text(), None);
    }

    /// Serializes its value through `serde_json::Value` first: a piece
    /// inside goes to another serializer.
    struct ViaValue<T>(T);

    impl<T: Serialize> Serialize for ViaValue<T> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            serde_json::to_value(&self.0)
                .map_err(serde::ser::Error::custom)?
                .serialize(s)
        }
    }

    #[test]
    fn a_piece_serialized_elsewhere_makes_the_writer_use_the_text() {
        let (list, string, tools) = pieces();
        let r = (
            ViaValue((list.clone(), string.clone())),
            tools.clone(),
            list[0].clone(),
        );
        let text = serde_json::to_string(&r).unwrap();
        let plain: Vec<Value> = list.iter().map(|p| Value::clone(p)).collect();
        let expected = serde_json::to_string(&(
            (plain, Value::clone(&string)),
            Value::clone(&tools),
            Value::clone(&list[0]),
        ))
        .unwrap();
        assert_eq!(text, expected);
        // The text path: the text, transformed.
        let j = SpanJson::defer(r, 1);
        assert_eq!(
            written_checked(&j),
            Some((serde_json::to_string(&format!("[{text}]")).unwrap(), false))
        );
        // The pieces are right afterwards for writers that do copy them.
        let r: Record = (list, "g".into(), string, tools);
        let text = serde_json::to_string(&r).unwrap();
        let j = SpanJson::defer(r, 1);
        assert_eq!(
            written_checked(&j),
            Some((serde_json::to_string(&text).unwrap(), false))
        );
    }
}
