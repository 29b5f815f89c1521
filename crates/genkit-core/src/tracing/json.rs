//! The JSON text a span keeps for `genkit:input` and `genkit:output`:
//! shared (one serialization can back several spans) and capped in size, so
//! a huge input costs neither unbounded time on the request path nor
//! unbounded memory while its span waits for export.
//!
//! Values longer than the cap ([`max_attribute_bytes`], 128,000 bytes by
//! default, the limit Genkit JS's Google Cloud exporter cuts inputs and
//! outputs to) keep their first bytes only, and the span is marked
//! `truncated` in its wire form.

use serde::Serialize;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpanJson {
    text: Arc<str>,
    truncated: bool,
}

impl SpanJson {
    /// Serializes `value`, stopping at the size cap: a huge value costs the
    /// cap, not its size. `None` if it cannot be serialized.
    pub fn serialize<T: Serialize + ?Sized>(value: &T) -> Option<SpanJson> {
        let limit = max_attribute_bytes();
        let mut w = CappedWriter {
            buf: Vec::new(),
            limit,
            full: false,
        };
        match serde_json::to_writer(&mut w, value) {
            Ok(()) => String::from_utf8(w.buf).ok().map(|s| SpanJson {
                text: s.into(),
                truncated: false,
            }),
            Err(_) if w.full => Some(Self::cut(w.buf)),
            Err(_) => None,
        }
    }

    /// Text that is already JSON, cut at the size cap if longer.
    pub fn from_text(mut text: String) -> SpanJson {
        let limit = max_attribute_bytes();
        if text.len() <= limit {
            return SpanJson {
                text: text.into(),
                truncated: false,
            };
        }
        let mut end = limit;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        SpanJson {
            // `Arc<str>` from a `String` copies into a right-sized buffer,
            // so the cut-off capacity is released here.
            text: text.into(),
            truncated: true,
        }
    }

    /// The bytes serialized before the cap, up to the last whole character.
    fn cut(mut buf: Vec<u8>) -> SpanJson {
        let valid = match std::str::from_utf8(&buf) {
            Ok(_) => buf.len(),
            Err(e) => e.valid_up_to(),
        };
        buf.truncate(valid);
        SpanJson {
            text: String::from_utf8(buf).unwrap_or_default().into(),
            truncated: true,
        }
    }

    /// The JSON text (a prefix of it when [truncated](Self::is_truncated)).
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether the text was cut at the size cap.
    pub fn is_truncated(&self) -> bool {
        self.truncated
    }

    /// Bytes kept.
    pub fn len(&self) -> usize {
        self.text.len()
    }

    /// Whether no text is kept.
    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
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
        &self.text
    }
}

/// Collects serializer output until `limit` bytes, then fails the
/// serialization (which stops it) and says it was full.
struct CappedWriter {
    buf: Vec<u8>,
    limit: usize,
    full: bool,
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
}
