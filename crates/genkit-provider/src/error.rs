//! Failures of an HTTP exchange with a provider ([`HttpError`],
//! [`ErrorResponse`]), and the pieces every plugin uses to turn its own
//! error type into a [`genkit_core::Error`]: status mapping, `Retry-After`,
//! message excerpts and error details.

use genkit_core::StatusCode;
use reqwest::header::{HeaderMap, RETRY_AFTER};
use serde_json::{Map, Value};
use std::time::Duration;

/// Longest provider message or body excerpt kept in an error.
pub const MAX_MESSAGE_CHARS: usize = 2_000;

/// What went wrong in an exchange, before any provider-specific reading.
/// Plugins turn it into their own error type.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// A wait took longer than the [`Deadline`](crate::Deadline) allows.
    #[error("timed out ({what})")]
    Timeout {
        /// The limit that was exceeded, when known.
        timeout: Option<Duration>,
        /// What was awaited, e.g. `waiting for response headers`.
        what: &'static str,
    },
    /// The server could not be reached, or the connection broke.
    #[error(
        "request to {url} failed: {}",
        transport_cause(url, source, "the server")
    )]
    Transport {
        /// The request's URL (empty when the request could not be built).
        url: String,
        /// The HTTP client's error.
        #[source]
        source: reqwest::Error,
    },
    /// The server answered with a non-success status.
    #[error("HTTP {}", .0.status)]
    Status(ErrorResponse),
    /// A body or stream is not what was expected; the text says what.
    #[error("{0}")]
    Malformed(String),
    /// A stream could not be cut into frames (a line or event past its cap).
    #[error(transparent)]
    Frame(#[from] crate::frames::FrameError),
}

/// What a transport failure comes down to, in one line: the innermost cause
/// of the HTTP client's error (`Connection refused (os error 111)`, where
/// the client itself only says `error sending request for url (...)`), and
/// for a refused connection a hint naming the server that is not there
/// (`is <server> at http://127.0.0.1:11434 running?`).
pub fn transport_cause(url: &str, error: &reqwest::Error, server_name: &str) -> String {
    let mut root: &(dyn std::error::Error + 'static) = error;
    while let Some(inner) = root.source() {
        root = inner;
    }
    let cause = root.to_string();
    if !error.is_connect() {
        return cause;
    }
    let refused = matches!(
        root.downcast_ref::<std::io::Error>()
            .map(std::io::Error::kind),
        Some(std::io::ErrorKind::ConnectionRefused)
    ) || cause.to_ascii_lowercase().contains("connection refused");
    match (refused, server_of(url)) {
        (true, Some(address)) => {
            format!("cannot connect ({cause}): is {server_name} at {address} running?")
        }
        _ => format!("cannot connect ({cause})"),
    }
}

/// `scheme://host:port` of a URL, when it parses.
fn server_of(url: &str) -> Option<String> {
    let url = reqwest::Url::parse(url).ok()?;
    let host = url.host_str()?;
    Some(match url.port_or_known_default() {
        Some(port) => format!("{}://{host}:{port}", url.scheme()),
        None => format!("{}://{host}", url.scheme()),
    })
}

/// A non-success answer: its status, headers and (at most
/// [`MAX_ERROR_BODY`](crate::http::MAX_ERROR_BODY) bytes of) its body.
#[derive(Debug)]
pub struct ErrorResponse {
    /// The HTTP status.
    pub status: u16,
    /// The response headers.
    pub headers: HeaderMap,
    /// The body, or why it could not be read.
    pub body: Result<Vec<u8>, BodyError>,
}

/// Why an error body could not be read.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    /// It did not arrive within the deadline.
    #[error("the error body was not received in time")]
    Timeout,
    /// The connection broke while reading it.
    #[error("the error body could not be read: {0}")]
    Transport(#[source] reqwest::Error),
}

impl ErrorResponse {
    /// The `Retry-After` delay, when the header gives one in seconds.
    pub fn retry_after(&self) -> Option<Duration> {
        retry_after(&self.headers)
    }

    /// A header's value as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The body as JSON, when it was read and parses.
    pub fn json(&self) -> Option<Value> {
        self.body
            .as_ref()
            .ok()
            .and_then(|b| serde_json::from_slice(b).ok())
    }

    /// The body as text; when it could not be read, a note saying why.
    pub fn text(&self) -> String {
        match &self.body {
            Ok(bytes) => String::from_utf8_lossy(bytes).into_owned(),
            Err(BodyError::Timeout) => "(error body not received in time)".to_owned(),
            Err(BodyError::Transport(e)) => format!("(error body unreadable: {e})"),
        }
    }
}

/// Shortens `text` (trimmed) to at most [`MAX_MESSAGE_CHARS`] characters,
/// marking a cut with `…`.
pub fn excerpt(text: &str) -> String {
    let text = text.trim();
    match text.char_indices().nth(MAX_MESSAGE_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// The longest retry delay a provider's hint can ask for; longer hints are
/// cut to it (a server asking for more is not asking for a retry at all).
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(3600);

/// A `Retry-After` value given in (possibly fractional) seconds, at most
/// [`MAX_RETRY_AFTER`]; `None` for a negative, non-finite or unreadable value.
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    retry_after_secs(value.trim().parse::<f64>().ok()?)
}

/// A delay of `secs` seconds, at most [`MAX_RETRY_AFTER`]; `None` when
/// `secs` is negative or not finite. Never panics.
pub fn retry_after_secs(secs: f64) -> Option<Duration> {
    if !secs.is_finite() || secs < 0.0 {
        return None;
    }
    Some(Duration::try_from_secs_f64(secs).map_or(MAX_RETRY_AFTER, |d| d.min(MAX_RETRY_AFTER)))
}

/// The `Retry-After` header of `headers`, in seconds.
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    parse_retry_after(headers.get(RETRY_AFTER)?.to_str().ok()?)
}

/// Genkit's status for an HTTP error of a hosted API, where every `5xx`
/// (`501` and `504` included) is a transient `UNAVAILABLE` the retry
/// middleware retries: 400 `INVALID_ARGUMENT`, 401 `UNAUTHENTICATED`, 403
/// `PERMISSION_DENIED`, 404 `NOT_FOUND`, 408 `DEADLINE_EXCEEDED`, 429
/// `RESOURCE_EXHAUSTED`, 499 `CANCELLED`; 413 (a request too large: the
/// caller's to fix) `INVALID_ARGUMENT`; a redirect (never followed: the
/// base URL needs fixing) `FAILED_PRECONDITION`; anything else as
/// [`StatusCode::from_http_status`].
pub fn status_for_http(http_status: u16) -> StatusCode {
    match http_status {
        300..=399 => StatusCode::FailedPrecondition,
        413 => StatusCode::InvalidArgument,
        500..=599 => StatusCode::Unavailable,
        other => StatusCode::from_http_status(other),
    }
}

/// The `details` of a provider error: `{"httpStatus": …}` when it had one,
/// then each field given (in order, `None`s left out), then `retryAfterMs`
/// when known; `None` when that leaves nothing.
pub fn http_error_details<'a>(
    http_status: Option<u16>,
    fields: impl IntoIterator<Item = (&'a str, Option<Value>)>,
    retry_after: Option<Duration>,
) -> Option<Value> {
    let mut details = Map::new();
    if let Some(status) = http_status {
        details.insert("httpStatus".into(), Value::from(status));
    }
    for (name, value) in fields {
        if let Some(value) = value {
            details.insert(name.to_owned(), value);
        }
    }
    if let Some(after) = retry_after {
        details.insert(
            "retryAfterMs".into(),
            Value::from(u64::try_from(after.as_millis()).unwrap_or(u64::MAX)),
        );
    }
    (!details.is_empty()).then_some(Value::Object(details))
}

/// A [`genkit_core::Error`] with `status`, `error`'s message, `error` as its
/// source and the given details.
pub fn to_genkit_error(
    status: StatusCode,
    error: impl std::error::Error + Send + Sync + 'static,
    details: Option<Value>,
) -> genkit_core::Error {
    let err = genkit_core::Error::from_source(status, error);
    match details {
        Some(d) => err.with_details(d),
        None => err,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;
    use serde_json::json;

    #[test]
    fn excerpts_are_trimmed_and_bounded() {
        assert_eq!(excerpt("  short \n"), "short");
        let long = excerpt(&"é".repeat(5000));
        assert_eq!(long.chars().count(), MAX_MESSAGE_CHARS + 1);
        assert!(long.ends_with('…'));
    }

    #[test]
    fn retry_after_in_seconds() {
        assert_eq!(parse_retry_after("2"), Some(Duration::from_secs(2)));
        assert_eq!(
            parse_retry_after(" 1.5 "),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(parse_retry_after("soon"), None);
        assert_eq!(parse_retry_after("-1"), None);
        assert_eq!(parse_retry_after("inf"), None);
        assert_eq!(parse_retry_after("NaN"), None);
        assert_eq!(parse_retry_after("-0.5"), None);
        assert_eq!(parse_retry_after("1e300"), Some(MAX_RETRY_AFTER));
        assert_eq!(parse_retry_after("1e20"), Some(MAX_RETRY_AFTER));
        assert_eq!(parse_retry_after("7200"), Some(MAX_RETRY_AFTER));
        assert_eq!(retry_after_secs(f64::MAX), Some(MAX_RETRY_AFTER));
        let mut headers = HeaderMap::new();
        assert_eq!(retry_after(&headers), None);
        headers.insert(RETRY_AFTER, HeaderValue::from_static("7"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(7)));
    }

    #[test]
    fn hosted_api_statuses() {
        let cases = [
            (301, StatusCode::FailedPrecondition),
            (307, StatusCode::FailedPrecondition),
            (400, StatusCode::InvalidArgument),
            (401, StatusCode::Unauthenticated),
            (403, StatusCode::PermissionDenied),
            (404, StatusCode::NotFound),
            (408, StatusCode::DeadlineExceeded),
            (429, StatusCode::ResourceExhausted),
            (499, StatusCode::Cancelled),
            (500, StatusCode::Unavailable),
            (501, StatusCode::Unavailable),
            (504, StatusCode::Unavailable),
            (529, StatusCode::Unavailable),
        ];
        for (http, status) in cases {
            assert_eq!(status_for_http(http), status, "HTTP {http}");
        }
    }

    #[test]
    fn details_keep_their_order() {
        let d = http_error_details(
            Some(429),
            [("code", Some(json!("rate"))), ("type", None)],
            Some(Duration::from_secs(3)),
        );
        assert_eq!(
            serde_json::to_string(&d).unwrap(),
            r#"{"httpStatus":429,"code":"rate","retryAfterMs":3000}"#
        );
        assert_eq!(
            http_error_details(Some(404), [], None),
            Some(json!({"httpStatus": 404}))
        );
        assert_eq!(http_error_details(None, [("code", None)], None), None);
    }

    #[test]
    fn error_responses() {
        let mut headers = HeaderMap::new();
        headers.insert("request-id", HeaderValue::from_static("req_1"));
        headers.insert(RETRY_AFTER, HeaderValue::from_static("2"));
        let r = ErrorResponse {
            status: 429,
            headers,
            body: Ok(br#"{"error": "slow down"}"#.to_vec()),
        };
        assert_eq!(r.header("request-id"), Some("req_1"));
        assert_eq!(r.retry_after(), Some(Duration::from_secs(2)));
        assert_eq!(r.json(), Some(json!({"error": "slow down"})));
        assert_eq!(r.text(), r#"{"error": "slow down"}"#);
        let late = ErrorResponse {
            status: 500,
            headers: HeaderMap::new(),
            body: Err(BodyError::Timeout),
        };
        assert_eq!(late.text(), "(error body not received in time)");
        assert_eq!(late.json(), None);
    }

    /// A refused connection says so, and names the server to start; the
    /// error's stack does not repeat a sentence.
    #[tokio::test]
    async fn a_refused_connection_ends_with_its_cause_and_a_hint() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap();
        // Nothing listens there now.
        let url = format!("http://127.0.0.1:{port}/v1/chat/completions");
        let source = reqwest::Client::new()
            .post(&url)
            .send()
            .await
            .expect_err("nothing listens");
        let cause = transport_cause(&url, &source, "the server");
        assert!(
            cause.starts_with("cannot connect (")
                && cause.to_ascii_lowercase().contains("connection refused")
                && cause.ends_with(&format!(
                    "is the server at http://127.0.0.1:{port} running?"
                )),
            "{cause}"
        );
        let err = to_genkit_error(
            StatusCode::Unavailable,
            HttpError::Transport {
                url: url.clone(),
                source,
            },
            None,
        );
        assert!(err.message().contains(&cause), "{}", err.message());
        let stack = err.stack();
        let lines: Vec<&str> = stack.lines().collect();
        for (i, line) in lines.iter().enumerate().skip(1) {
            let text = line.trim_start().trim_start_matches("caused by: ");
            assert!(
                !lines[..i].iter().any(|earlier| earlier.contains(text)),
                "repeated: {text}\n{stack}"
            );
        }
    }

    #[test]
    fn genkit_errors_keep_source_and_details() {
        let err = to_genkit_error(
            StatusCode::Unavailable,
            HttpError::Malformed("boom".into()),
            Some(json!({"httpStatus": 503})),
        );
        assert_eq!(err.status(), StatusCode::Unavailable);
        assert_eq!(err.message(), "boom");
        assert_eq!(err.details(), Some(&json!({"httpStatus": 503})));
        assert!(std::error::Error::source(&err).is_some());
    }
}
