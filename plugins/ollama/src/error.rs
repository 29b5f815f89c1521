//! Ollama failures and how they map to Genkit statuses.

use genkit_core::{Error, StatusCode};
use genkit_provider::HttpError;
pub(crate) use genkit_provider::error::excerpt;
use genkit_provider::error::{http_error_details, to_genkit_error};
use serde_json::Value;
use std::time::Duration;

/// Something that went wrong talking to an Ollama server.
#[derive(Debug, thiserror::Error)]
pub enum OllamaError {
    /// The server answered with a non-success HTTP status.
    #[error("{provider} API error (HTTP {status}): {message}")]
    Api {
        /// The plugin name.
        provider: String,
        /// The HTTP status.
        status: u16,
        /// The server's message (`error`), or an excerpt of the body.
        message: String,
    },
    /// An `{"error": ...}` line arrived inside a stream (after HTTP 200).
    #[error("{provider} stream error: {message}")]
    StreamError {
        /// The plugin name.
        provider: String,
        /// The server's message.
        message: String,
    },
    /// No answer (or no next stream line) within the request timeout.
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
    #[error("{provider} request to {url} failed (is the Ollama server running?): {source}")]
    Transport {
        /// The plugin name.
        provider: String,
        /// The URL.
        url: String,
        /// The underlying error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The response is not what the API documents.
    #[error("malformed response from {provider}: {detail}")]
    Malformed {
        /// The plugin name.
        provider: String,
        /// What is wrong, with an excerpt of the offending data.
        detail: String,
    },
    /// The stream ended before its final (`"done": true`) line.
    #[error("the stream from {provider} ended before the response was complete ({detail})")]
    CutOff {
        /// The plugin name.
        provider: String,
        /// What was missing.
        detail: String,
    },
}

impl OllamaError {
    /// The Genkit status: HTTP statuses through
    /// [`StatusCode::from_http_status`] (400 `INVALID_ARGUMENT`, 401
    /// `UNAUTHENTICATED`, 403 `PERMISSION_DENIED`, 404 `NOT_FOUND`, 429
    /// `RESOURCE_EXHAUSTED`, 5xx `UNAVAILABLE`), a redirect (not followed)
    /// `FAILED_PRECONDITION`; timeouts
    /// `DEADLINE_EXCEEDED`; transport failures, stream errors and cut-off
    /// streams `UNAVAILABLE`; malformed data `INTERNAL`.
    pub fn status(&self) -> StatusCode {
        match self {
            OllamaError::Api {
                status: 300..=399, ..
            } => StatusCode::FailedPrecondition,
            OllamaError::Api { status, .. } => StatusCode::from_http_status(*status),
            OllamaError::Timeout { .. } => StatusCode::DeadlineExceeded,
            OllamaError::StreamError { .. }
            | OllamaError::Transport { .. }
            | OllamaError::CutOff { .. } => StatusCode::Unavailable,
            OllamaError::Malformed { .. } => StatusCode::Internal,
        }
    }
}

impl OllamaError {
    /// The failure of an exchange with the server of plugin `provider`,
    /// whose request timeout is `timeout`.
    pub(crate) fn from_http(provider: &str, timeout: Duration, e: HttpError) -> Self {
        let provider = provider.to_owned();
        match e {
            HttpError::Timeout { what, .. } => OllamaError::Timeout {
                provider,
                timeout,
                what,
            },
            HttpError::Transport { url, source } => OllamaError::Transport {
                provider,
                url,
                source: Box::new(source),
            },
            HttpError::Malformed(detail) => OllamaError::Malformed { provider, detail },
            HttpError::Status(response) => OllamaError::Api {
                provider,
                status: response.status,
                message: parse_error_body(&response.text()),
            },
        }
    }
}

impl From<OllamaError> for Error {
    fn from(e: OllamaError) -> Self {
        let details = match &e {
            OllamaError::Api { status, .. } => Some(http_error_details(*status, [], None)),
            _ => None,
        };
        to_genkit_error(e.status(), e, details)
    }
}

/// The message of an error body: Ollama's `{"error": "..."}` (or an object
/// with a `message`), else an excerpt of the body.
pub(crate) fn parse_error_body(body: &str) -> String {
    let message = serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| match v.get("error") {
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Object(o)) => o.get("message").and_then(Value::as_str).map(str::to_owned),
            _ => None,
        })
        .unwrap_or_else(|| body.to_owned());
    let message = excerpt(&message);
    if message.is_empty() {
        "(empty body)".into()
    } else {
        message
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn api(status: u16) -> OllamaError {
        OllamaError::Api {
            provider: "ollama".into(),
            status,
            message: "m".into(),
        }
    }

    #[test]
    fn statuses() {
        assert_eq!(api(400).status(), StatusCode::InvalidArgument);
        assert_eq!(api(401).status(), StatusCode::Unauthenticated);
        assert_eq!(api(403).status(), StatusCode::PermissionDenied);
        assert_eq!(api(404).status(), StatusCode::NotFound);
        assert_eq!(api(429).status(), StatusCode::ResourceExhausted);
        assert_eq!(api(500).status(), StatusCode::Unavailable);
        assert_eq!(
            Error::from(api(404)).details(),
            Some(&json!({"httpStatus": 404}))
        );
    }

    #[test]
    fn error_bodies() {
        assert_eq!(
            parse_error_body(r#"{"error":"model 'x' not found"}"#),
            "model 'x' not found"
        );
        assert_eq!(parse_error_body(r#"{"error":{"message":"bad"}}"#), "bad");
        assert_eq!(parse_error_body("oops"), "oops");
        assert_eq!(parse_error_body(""), "(empty body)");
    }
}
