//! Provider failures and how they map to Genkit statuses.

use genkit_core::{Error, StatusCode};
use genkit_provider::HttpError;
pub(crate) use genkit_provider::error::excerpt;
use genkit_provider::error::{http_error_details, to_genkit_error};
use serde_json::{Value, json};
use std::time::Duration;

/// Something that went wrong talking to an OpenAI-compatible server.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    /// The server answered with a non-success HTTP status.
    #[error("{provider} API error (HTTP {status}): {message}")]
    Api {
        /// The plugin name.
        provider: String,
        /// The HTTP status.
        status: u16,
        /// The provider's message (`error.message`), or an excerpt of the body.
        message: String,
        /// The provider's error code or type, when given.
        code: Option<String>,
        /// The `Retry-After` delay, when given.
        retry_after: Option<Duration>,
    },
    /// An error object arrived inside a stream (after HTTP 200).
    #[error("{provider} stream error: {message}")]
    StreamError {
        /// The plugin name.
        provider: String,
        /// The provider's message.
        message: String,
        /// The provider's error code or type, when given.
        code: Option<String>,
    },
    /// No answer (or no next stream event) within the request timeout.
    #[error("{provider} request timed out after {timeout:?} ({what})")]
    Timeout {
        /// The plugin name.
        provider: String,
        /// The configured timeout.
        timeout: Duration,
        /// What was awaited.
        what: &'static str,
    },
    /// The server could not be reached or the connection broke.
    #[error("{provider} request to {url} failed: {source}")]
    Transport {
        /// The plugin name.
        provider: String,
        /// The URL (never holds credentials).
        url: String,
        /// The underlying HTTP client error.
        #[source]
        source: reqwest::Error,
    },
    /// The response body is not what the API documents.
    #[error("malformed response from {provider}: {detail}")]
    Malformed {
        /// The plugin name.
        provider: String,
        /// What is wrong, with an excerpt of the offending data.
        detail: String,
    },
    /// The stream ended before the response was complete.
    #[error("the stream from {provider} ended before the response was complete ({detail})")]
    CutOff {
        /// The plugin name.
        provider: String,
        /// What was missing.
        detail: String,
    },
}

impl ProviderError {
    /// The Genkit status for this failure: 400 → `INVALID_ARGUMENT`,
    /// 401 → `UNAUTHENTICATED`, 403 → `PERMISSION_DENIED`, 404 → `NOT_FOUND`,
    /// 429 → `RESOURCE_EXHAUSTED`, 5xx → `UNAVAILABLE` (504 →
    /// `DEADLINE_EXCEEDED`, 501 → `UNIMPLEMENTED`), a redirect (not
    /// followed) → `FAILED_PRECONDITION`; timeouts →
    /// `DEADLINE_EXCEEDED`; transport failures and cut-off streams →
    /// `UNAVAILABLE`; malformed data → `INTERNAL`.
    pub fn status(&self) -> StatusCode {
        match self {
            ProviderError::Api {
                status: 300..=399, ..
            } => StatusCode::FailedPrecondition,
            ProviderError::Api { status, .. } => StatusCode::from_http_status(*status),
            ProviderError::StreamError { code, .. } => stream_error_status(code.as_deref()),
            ProviderError::Timeout { .. } => StatusCode::DeadlineExceeded,
            ProviderError::Transport { source, .. } if source.is_timeout() => {
                StatusCode::DeadlineExceeded
            }
            ProviderError::Transport { .. } | ProviderError::CutOff { .. } => {
                StatusCode::Unavailable
            }
            ProviderError::Malformed { .. } => StatusCode::Internal,
        }
    }

    fn details(&self) -> Option<Value> {
        match self {
            ProviderError::Api {
                status,
                code,
                retry_after,
                ..
            } => Some(http_error_details(
                *status,
                [("code", code.clone().map(Value::from))],
                *retry_after,
            )),
            ProviderError::StreamError {
                code: Some(code), ..
            } => Some(json!({ "code": code })),
            _ => None,
        }
    }

    /// The failure of an exchange with the server of plugin `provider`,
    /// whose request timeout is `timeout`: error answers are read for the
    /// provider's message and code.
    pub(crate) fn from_http(provider: &str, timeout: Duration, e: HttpError) -> Self {
        let provider = provider.to_owned();
        match e {
            HttpError::Timeout { what, .. } => ProviderError::Timeout {
                provider,
                timeout,
                what,
            },
            HttpError::Transport { url, source } => ProviderError::Transport {
                provider,
                url,
                source,
            },
            HttpError::Malformed(detail) => ProviderError::Malformed { provider, detail },
            HttpError::Status(response) => {
                let (message, code) = parse_error_body(&response.text());
                ProviderError::Api {
                    provider,
                    status: response.status,
                    message,
                    code,
                    retry_after: response.retry_after(),
                }
            }
        }
    }
}

/// Errors reported inside a stream carry no HTTP status; map the usual codes.
fn stream_error_status(code: Option<&str>) -> StatusCode {
    match code {
        Some("rate_limit_exceeded" | "insufficient_quota") => StatusCode::ResourceExhausted,
        Some("invalid_request_error" | "context_length_exceeded") => StatusCode::InvalidArgument,
        Some("invalid_api_key" | "authentication_error") => StatusCode::Unauthenticated,
        _ => StatusCode::Unavailable,
    }
}

impl From<ProviderError> for Error {
    fn from(e: ProviderError) -> Self {
        let status = e.status();
        let details = e.details();
        to_genkit_error(status, e, details)
    }
}

/// The message of an error body: OpenAI's `{"error": {"message", "code",
/// "type"}}`, `{"error": "..."}`, FastAPI's `{"detail": ...}`, `{"message": ...}`,
/// or else an excerpt of the body. Returns `(message, code)`.
pub(crate) fn parse_error_body(body: &str) -> (String, Option<String>) {
    let Ok(v) = serde_json::from_str::<Value>(body) else {
        let text = excerpt(body);
        return (
            if text.is_empty() {
                "(empty body)".into()
            } else {
                text
            },
            None,
        );
    };
    error_message_of(&v).unwrap_or_else(|| (excerpt(body), None))
}

/// The message and code of a JSON error value, if it holds one.
pub(crate) fn error_message_of(v: &Value) -> Option<(String, Option<String>)> {
    let as_text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    if let Some(err) = v.get("error") {
        return Some(match err {
            Value::Object(o) => {
                let message = o
                    .get("message")
                    .map(as_text)
                    .unwrap_or_else(|| err.to_string());
                let code = o
                    .get("code")
                    .filter(|c| !c.is_null())
                    .or_else(|| o.get("type").filter(|t| !t.is_null()))
                    .map(as_text);
                (excerpt(&message), code)
            }
            other => (excerpt(&as_text(other)), None),
        });
    }
    v.get("detail")
        .or_else(|| v.get("message"))
        .map(|m| (excerpt(&as_text(m)), None))
}

#[cfg(test)]
mod tests {
    use super::*;
    use genkit_provider::error::{MAX_MESSAGE_CHARS, parse_retry_after};

    fn api(status: u16) -> ProviderError {
        ProviderError::Api {
            provider: "openai".into(),
            status,
            message: "boom".into(),
            code: None,
            retry_after: None,
        }
    }

    #[test]
    fn http_statuses_map_to_genkit_statuses() {
        assert_eq!(api(400).status(), StatusCode::InvalidArgument);
        assert_eq!(api(401).status(), StatusCode::Unauthenticated);
        assert_eq!(api(403).status(), StatusCode::PermissionDenied);
        assert_eq!(api(404).status(), StatusCode::NotFound);
        assert_eq!(api(429).status(), StatusCode::ResourceExhausted);
        assert_eq!(api(500).status(), StatusCode::Unavailable);
        assert_eq!(api(502).status(), StatusCode::Unavailable);
        assert_eq!(api(503).status(), StatusCode::Unavailable);
    }

    #[test]
    fn error_bodies_are_read() {
        let (m, c) = parse_error_body(
            r#"{"error":{"message":"bad key","type":"invalid_request_error","code":"invalid_api_key"}}"#,
        );
        assert_eq!(m, "bad key");
        assert_eq!(c.as_deref(), Some("invalid_api_key"));
        let (m, c) =
            parse_error_body(r#"{"error":{"message":"x","type":"server_error","code":null}}"#);
        assert_eq!((m.as_str(), c.as_deref()), ("x", Some("server_error")));
        assert_eq!(parse_error_body(r#"{"detail":"Not Found"}"#).0, "Not Found");
        assert_eq!(
            parse_error_body("Internal Server Error").0,
            "Internal Server Error"
        );
        assert_eq!(parse_error_body("").0, "(empty body)");
        let long = "x".repeat(5000);
        assert!(parse_error_body(&long).0.chars().count() <= MAX_MESSAGE_CHARS + 1);
    }

    #[test]
    fn retry_after_and_details() {
        assert_eq!(parse_retry_after("2"), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after("soon"), None);
        let e = ProviderError::Api {
            provider: "openai".into(),
            status: 429,
            message: "slow down".into(),
            code: Some("rate_limit_exceeded".into()),
            retry_after: Some(Duration::from_secs(3)),
        };
        let err = Error::from(e);
        assert_eq!(err.status(), StatusCode::ResourceExhausted);
        assert_eq!(
            err.details(),
            Some(&json!({"httpStatus": 429, "code": "rate_limit_exceeded", "retryAfterMs": 3000}))
        );
        assert!(err.message().contains("slow down"));
    }
}
