//! The HTTP response pieces the servers share: an error's public body with
//! its status, the trace headers, and joining stream frames into one write.
//!
//! The bottom module of the crate: it uses nothing else of it, so every
//! other module (the flow server, the request guard, the serving layers,
//! the Reflection API) may use it without reaching back up.

use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode as HttpStatus};
use axum::response::{IntoResponse, Response};
use genkit_core::Error;
use genkit_core::tracing::TraceInfo;

/// The header naming the trace of the run that answered.
pub(crate) const TRACE_ID: HeaderName = HeaderName::from_static("x-genkit-trace-id");
/// The header naming the root span of the run that answered.
pub(crate) const SPAN_ID: HeaderName = HeaderName::from_static("x-genkit-span-id");

/// The error's public form (`{"status", "message"}`,
/// [`Error::to_public_json`]) with its HTTP status: what a client may see,
/// never internal details.
pub(crate) fn error_response(e: &Error) -> Response {
    let status =
        HttpStatus::from_u16(e.public_http_status()).unwrap_or(HttpStatus::INTERNAL_SERVER_ERROR);
    (status, axum::Json(e.to_public_json())).into_response()
}

/// Sets [`TRACE_ID`] and [`SPAN_ID`] to the run's ids (lower-case hex).
pub(crate) fn insert_trace_headers(h: &mut HeaderMap, t: TraceInfo) {
    if let Ok(v) = HeaderValue::from_bytes(&t.trace_id.to_hex()) {
        h.insert(TRACE_ID, v);
    }
    if let Ok(v) = HeaderValue::from_bytes(&t.span_id.to_hex()) {
        h.insert(SPAN_ID, v);
    }
}

/// Joins frames into one buffer (no copy for a single frame), so frames
/// that are ready together go out in one write.
pub(crate) fn concat(mut frames: Vec<Bytes>) -> Bytes {
    if frames.len() == 1 {
        return frames.pop().unwrap_or_default();
    }
    let mut buf = bytes::BytesMut::with_capacity(frames.iter().map(Bytes::len).sum());
    for f in frames {
        buf.extend_from_slice(&f);
    }
    buf.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;
    use genkit_core::StatusCode;
    use genkit_core::tracing::{SpanId, TraceId};

    #[test]
    fn errors_answer_their_public_form_and_status() {
        let r = error_response(&Error::user_facing(StatusCode::NotFound, "no such flow"));
        assert_eq!(r.status(), HttpStatus::NOT_FOUND);
        let r = error_response(&Error::internal("a secret detail"));
        assert_eq!(r.status(), HttpStatus::INTERNAL_SERVER_ERROR);
    }

    #[test]
    fn trace_headers_are_the_ids_as_shown() {
        let mut h = HeaderMap::new();
        let hex = "0123456789abcdef0123456789abcdef";
        let t = TraceInfo {
            trace_id: TraceId::parse(hex).expect("32 hex digits"),
            span_id: SpanId::random(),
        };
        insert_trace_headers(&mut h, t);
        assert_eq!(h[TRACE_ID], hex);
        assert_eq!(h[SPAN_ID], t.span_id.to_string().as_str());
    }

    #[test]
    fn frames_join_in_order() {
        let frames = vec![Bytes::from_static(b"a"), Bytes::from_static(b"bc")];
        assert_eq!(concat(frames), Bytes::from_static(b"abc"));
        assert_eq!(concat(vec![Bytes::from_static(b"x")]), "x");
        assert!(concat(Vec::new()).is_empty());
    }

    /// The module stays the crate's bottom layer: its code names no other
    /// module of the crate.
    #[test]
    fn uses_nothing_else_of_the_crate() {
        let source = include_str!("response.rs");
        let code = source.split("#[cfg(test)]").next().unwrap_or_default();
        let reaching: Vec<&str> = code
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .filter(|l| l.contains("crate::") || l.contains("super::"))
            .collect();
        assert!(reaching.is_empty(), "{reaching:?}");
    }
}
