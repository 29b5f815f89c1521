//! [`AnthropicError`]: what can go wrong talking to the Messages API, and how
//! each failure maps onto Genkit's canonical statuses.

use genkit_core::StatusCode;
use genkit_provider::error::{http_error_details, to_genkit_error};
use genkit_provider::{BodyError, HttpError};
use serde_json::Value;
use std::time::Duration;

/// A failure of the Anthropic plugin. Converted into a
/// [`genkit_core::Error`] (kept as its source) whose status lets middleware
/// react: `429` becomes `RESOURCE_EXHAUSTED`, `5xx` and `529 overloaded`
/// `UNAVAILABLE`, all of which the retry middleware retries.
#[derive(Debug, thiserror::Error)]
pub enum AnthropicError {
    /// No API key was configured.
    #[error(
        "no Anthropic API key: pass one with AnthropicOptions::api_key or set ANTHROPIC_API_KEY"
    )]
    MissingApiKey,
    /// The API answered with an error: an HTTP error status, or an `error`
    /// event inside a stream.
    #[error("Anthropic API error (HTTP {http_status}{}): {message}", kind_suffix(.kind))]
    Api {
        /// HTTP status code (for stream errors, the one the error type stands for).
        http_status: u16,
        /// The error type, e.g. `overloaded_error`.
        kind: Option<String>,
        /// The API's message.
        message: String,
        /// The `request-id` of the failed request.
        request_id: Option<String>,
        /// How long the API asked the caller to wait before retrying.
        retry_after: Option<Duration>,
    },
    /// The request did not complete within the configured timeout.
    #[error("the request to the Anthropic API timed out")]
    Timeout,
    /// The API could not be reached, or the connection broke.
    #[error("could not talk to the Anthropic API: {0}")]
    Transport(#[source] reqwest::Error),
    /// The API sent something this plugin cannot read.
    #[error("the Anthropic API sent a response that cannot be read: {0}")]
    Decode(String),
    /// A streamed response ended before `message_stop`.
    #[error("the Anthropic response stream ended before the message was complete: {0}")]
    Truncated(String),
    /// The Genkit request cannot be expressed for the Messages API.
    #[error("{0}")]
    InvalidRequest(String),
}

fn kind_suffix(kind: &Option<String>) -> String {
    kind.as_deref().map(|k| format!(" {k}")).unwrap_or_default()
}

impl AnthropicError {
    /// The Genkit status this failure maps to.
    pub fn status(&self) -> StatusCode {
        match self {
            AnthropicError::MissingApiKey => StatusCode::FailedPrecondition,
            AnthropicError::Api { http_status, .. } => status_for_http(*http_status),
            AnthropicError::Timeout => StatusCode::DeadlineExceeded,
            AnthropicError::Transport(_) | AnthropicError::Truncated(_) => StatusCode::Unavailable,
            AnthropicError::Decode(_) => StatusCode::Internal,
            AnthropicError::InvalidRequest(_) => StatusCode::InvalidArgument,
        }
    }

    /// Classifies a transport error: timeouts are `DEADLINE_EXCEEDED`.
    fn from_reqwest(e: reqwest::Error) -> Self {
        if e.is_timeout() {
            AnthropicError::Timeout
        } else {
            AnthropicError::Transport(e.without_url())
        }
    }

    /// A failed exchange: timeouts are `DEADLINE_EXCEEDED`, error answers are
    /// read for the API's error object and `request-id`.
    pub(crate) fn from_http(e: HttpError) -> Self {
        match e {
            HttpError::Timeout { .. } => AnthropicError::Timeout,
            HttpError::Transport { source, .. } => AnthropicError::from_reqwest(source),
            HttpError::Malformed(detail) => AnthropicError::Decode(detail),
            HttpError::Status(response) => {
                let request_id = response.header("request-id").map(str::to_owned);
                let retry_after = response.retry_after();
                match response.body {
                    Ok(body) => api_error(response.status, &body, request_id, retry_after),
                    Err(BodyError::Transport(source)) => AnthropicError::from_reqwest(source),
                    Err(BodyError::Timeout) => AnthropicError::Timeout,
                }
            }
        }
    }
}

/// Genkit's status for an HTTP error status of the Messages API.
pub(crate) fn status_for_http(http_status: u16) -> StatusCode {
    match http_status {
        413 => StatusCode::InvalidArgument,
        other => genkit_provider::error::status_for_http(other),
    }
}

/// The HTTP status an error type stands for (stream `error` events carry
/// only the type).
pub(crate) fn http_status_for_kind(kind: &str) -> u16 {
    match kind {
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "billing_error" | "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        "rate_limit_error" => 429,
        "timeout_error" => 504,
        "overloaded_error" => 529,
        _ => 500,
    }
}

impl From<AnthropicError> for genkit_core::Error {
    fn from(e: AnthropicError) -> Self {
        let details = match &e {
            AnthropicError::Api {
                http_status,
                kind,
                request_id,
                retry_after,
                ..
            } => Some(http_error_details(
                *http_status,
                [
                    ("type", kind.clone().map(Value::from)),
                    ("requestId", request_id.clone().map(Value::from)),
                ],
                *retry_after,
            )),
            _ => None,
        };
        to_genkit_error(e.status(), e, details)
    }
}

/// Reads an error body (`{"type": "error", "error": {"type", "message"}}`),
/// falling back to the raw text.
pub(crate) fn api_error(
    http_status: u16,
    body: &[u8],
    request_id: Option<String>,
    retry_after: Option<Duration>,
) -> AnthropicError {
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    let error = parsed.as_ref().and_then(|v| v.get("error"));
    let kind = error
        .and_then(|e| e.get("type"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let message = error
        .and_then(|e| e.get("message"))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .unwrap_or_else(|| {
            let text = String::from_utf8_lossy(body).trim().to_owned();
            if text.is_empty() {
                "no error message".into()
            } else {
                text.chars().take(2000).collect()
            }
        });
    let request_id = request_id.or_else(|| {
        parsed
            .as_ref()
            .and_then(|v| v.get("request_id"))
            .and_then(Value::as_str)
            .map(str::to_owned)
    });
    AnthropicError::Api {
        http_status,
        kind,
        message,
        request_id,
        retry_after,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn statuses() {
        let cases = [
            (400, StatusCode::InvalidArgument),
            (401, StatusCode::Unauthenticated),
            (403, StatusCode::PermissionDenied),
            (413, StatusCode::InvalidArgument),
            (429, StatusCode::ResourceExhausted),
            (500, StatusCode::Unavailable),
            (529, StatusCode::Unavailable),
        ];
        for (http, status) in cases {
            assert_eq!(status_for_http(http), status, "HTTP {http}");
        }
        assert_eq!(http_status_for_kind("overloaded_error"), 529);
        assert_eq!(http_status_for_kind("something_new"), 500);
    }

    #[test]
    fn reads_error_bodies() {
        let body = br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_1"}"#;
        let e = api_error(529, body, None, None);
        assert_eq!(e.status(), StatusCode::Unavailable);
        assert_eq!(
            e.to_string(),
            "Anthropic API error (HTTP 529 overloaded_error): Overloaded"
        );
        let g: genkit_core::Error = e.into();
        assert_eq!(
            g.details().and_then(|d| d.get("requestId")),
            Some(&json!("req_1"))
        );
        let raw = api_error(502, b"Bad Gateway", None, None);
        assert!(raw.to_string().contains("Bad Gateway"));
    }
}
