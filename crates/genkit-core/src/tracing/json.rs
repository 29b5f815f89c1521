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
use serde_json::Value;
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
}

struct Pending<T> {
    /// Dropped once encoded, so a queued span keeps only the text.
    value: Mutex<Option<T>>,
    encode: fn(&T, usize) -> Option<Encoded>,
    /// The cap when the value was recorded.
    limit: usize,
    approx: usize,
    done: OnceLock<Option<Encoded>>,
}

impl<T: Send> Deferred for Pending<T> {
    fn encoded(&self) -> Option<&Encoded> {
        self.done
            .get_or_init(|| match self.value.lock().take() {
                Some(v) => (self.encode)(&v, self.limit),
                // Taken by an encoding that panicked: record nothing.
                None => None,
            })
            .as_ref()
    }

    fn approx_bytes(&self) -> usize {
        match self.done.get() {
            Some(e) => e.as_ref().map_or(0, |e| e.text.len()),
            None => self.approx,
        }
    }

    fn is_pending(&self) -> bool {
        self.done.get().is_none()
    }
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
        Self::pending(value, approx_bytes, |v, limit| encode_serde(v, limit))
    }

    /// A JSON value recorded as [`defer`](Self::defer) does when it is small
    /// (at most the cap, roughly), and encoded now otherwise: a large value
    /// costs the cap on the request path (strings past the cap are not
    /// scanned) instead of being kept whole while its span waits.
    pub fn defer_value(value: Value) -> SpanJson {
        let limit = max_attribute_bytes();
        let approx = approx_value_bytes(&value, limit);
        if approx > limit {
            return Self::encoded(encode_value(&value, limit));
        }
        Self::pending(value, approx, |v, limit| Some(encode_value(v, limit)))
    }

    /// A JSON value the caller keeps using: a copy is kept for later when
    /// it is small (cheaper than encoding it), and it is encoded now, up to
    /// the cap, when it is large.
    pub fn defer_cloned(value: &Value) -> SpanJson {
        let limit = max_attribute_bytes();
        let approx = approx_value_bytes(value, limit);
        if approx > limit {
            return Self::encoded(encode_value(value, limit));
        }
        Self::pending(value.clone(), approx, |v, limit| {
            Some(encode_value(v, limit))
        })
    }

    fn pending<T: Send + 'static>(
        value: T,
        approx: usize,
        encode: fn(&T, usize) -> Option<Encoded>,
    ) -> SpanJson {
        SpanJson(Repr::Deferred(Arc::new(Pending {
            value: Mutex::new(Some(value)),
            encode,
            limit: max_attribute_bytes(),
            approx: approx.saturating_add(std::mem::size_of::<Pending<T>>()),
            done: OnceLock::new(),
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
    let mut w = CappedWriter::new(limit);
    match serde_json::to_writer(&mut w, value) {
        Ok(()) => w.finish(false),
        Err(_) if w.full => w.finish(true),
        Err(_) => None,
    }
}

/// A JSON value as serde_json writes it (compact, map order kept), cut at
/// `limit` bytes; each string is cut before escaping to a little more than
/// the room left, so the bytes kept are the same and a 10 MiB string costs
/// what fits.
fn encode_value(value: &Value, limit: usize) -> Encoded {
    let mut w = CappedWriter::new(limit);
    let full = write_value(value, &mut w).is_err() && w.full;
    // Writing a `Value` fails only at the cap (keys are strings).
    w.finish(full).unwrap_or(Encoded {
        text: Box::default(),
        truncated: true,
    })
}

fn write_value(value: &Value, w: &mut CappedWriter) -> std::io::Result<()> {
    use std::io::Write;
    match value {
        Value::String(s) => write_str(s, w),
        Value::Array(items) => {
            w.write_all(b"[")?;
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    w.write_all(b",")?;
                }
                write_value(item, w)?;
            }
            w.write_all(b"]")
        }
        Value::Object(map) => {
            w.write_all(b"{")?;
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    w.write_all(b",")?;
                }
                write_str(k, w)?;
                w.write_all(b":")?;
                write_value(v, w)?;
            }
            w.write_all(b"}")
        }
        scalar => serde_json::to_writer(&mut *w, scalar).map_err(std::io::Error::other),
    }
}

/// Writes `s` as a JSON string. A string longer than the room left is cut
/// to at least that many bytes first: its escaped form is at least as long,
/// so the writer still fills up, with the same bytes as the whole string.
fn write_str(s: &str, w: &mut CappedWriter) -> std::io::Result<()> {
    let room = w.limit.saturating_sub(w.buf.len());
    let mut end = s.len().min(room);
    while !s.is_char_boundary(end) {
        end += 1;
    }
    serde_json::to_writer(&mut *w, &s[..end]).map_err(std::io::Error::other)?;
    if end < s.len() {
        // The cut string ended with a quote that fitted: impossible, as its
        // escaped form alone fills the room; kept as a guard.
        w.full = true;
        return Err(std::io::Error::other("span attribute size cap reached"));
    }
    Ok(())
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

/// Collects serializer output until `limit` bytes, then fails the
/// serialization (which stops it) and says it was full.
struct CappedWriter {
    buf: Vec<u8>,
    limit: usize,
    full: bool,
}

impl CappedWriter {
    fn new(limit: usize) -> Self {
        Self {
            buf: Vec::new(),
            limit,
            full: false,
        }
    }

    /// The text written, cut to the last whole character when `cut`.
    fn finish(self, cut: bool) -> Option<Encoded> {
        let mut buf = self.buf;
        if cut {
            let valid = match std::str::from_utf8(&buf) {
                Ok(_) => buf.len(),
                Err(e) => e.valid_up_to(),
            };
            buf.truncate(valid);
        }
        String::from_utf8(buf).ok().map(|s| Encoded {
            text: s.into(),
            truncated: cut,
        })
    }
}

impl std::io::Write for CappedWriter {
    #[inline]
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        let room = self.limit - self.buf.len();
        if data.len() <= room {
            self.buf.extend_from_slice(data);
            return Ok(data.len());
        }
        self.buf.extend_from_slice(&data[..room]);
        self.full = true;
        Err(std::io::Error::other("span attribute size cap reached"))
    }

    #[inline]
    fn write_all(&mut self, data: &[u8]) -> std::io::Result<()> {
        self.write(data).map(|_| ())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
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
    fn the_value_encoder_cuts_exactly_where_serde_does() {
        let long = format!("{}\"é{}", "x".repeat(90), "ü".repeat(80));
        let v = serde_json::json!({"k\u{1}": [long.clone(), {"n": 1e300, "s": long}], "z": -3});
        let full = serde_json::to_string(&v).unwrap();
        for limit in (0..full.len() + 3)
            .step_by(7)
            .chain([full.len(), full.len() + 1])
        {
            let a = encode_value(&v, limit);
            let b = encode_serde(&v, limit).unwrap();
            assert_eq!(a.text, b.text, "limit {limit}");
            assert_eq!(a.truncated, b.truncated, "limit {limit}");
            assert_eq!(a.truncated, full.len() > limit, "limit {limit}");
        }
        // A huge value is encoded at once (not kept), at the cap.
        let big = SpanJson::defer_value(Value::from("y".repeat(max_attribute_bytes() * 4)));
        assert!(!big.is_deferred());
        assert!(big.is_truncated());
        assert!(big.len() <= max_attribute_bytes());
    }
}
