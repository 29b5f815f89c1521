//! [`GeminiError`]: what can go wrong talking to the Gemini API, and how each
//! failure maps onto Genkit's canonical statuses.

use genkit_core::StatusCode;
pub(crate) use genkit_provider::error::status_for_http;
use genkit_provider::error::{excerpt, http_error_details, to_genkit_error};
use genkit_provider::{BodyError, HttpError};
use serde_json::Value;
use std::time::Duration;

/// A failure of the Gemini plugin. Converted into a [`genkit_core::Error`]
/// (kept as its source) whose status lets middleware react: `429` becomes
/// `RESOURCE_EXHAUSTED` and `5xx` `UNAVAILABLE`, both of which the retry
/// middleware retries.
#[derive(Debug, thiserror::Error)]
pub enum GeminiError {
    /// No API key was configured.
    #[error(
        "no Gemini API key: pass one with GoogleAiOptions::api_key or set GEMINI_API_KEY or GOOGLE_API_KEY"
    )]
    MissingApiKey,
    /// The API answered with an error (an HTTP error status, or an `error`
    /// object inside a stream).
    #[error("Gemini API error (HTTP {http_status}{}): {message}", status_suffix(.status))]
    Api {
        /// HTTP status code (the `code` of an in-stream error).
        http_status: u16,
        /// The API's status name, e.g. `INVALID_ARGUMENT`.
        status: Option<String>,
        /// The API's message.
        message: String,
        /// The API's error object.
        body: Option<Box<Value>>,
        /// How long the API asked the caller to wait before retrying.
        retry_after: Option<Duration>,
    },
    /// The request did not complete within the configured timeout.
    #[error("the request to the Gemini API timed out")]
    Timeout,
    /// The API could not be reached, or the connection broke.
    #[error("could not talk to the Gemini API: {0}")]
    Transport(#[source] reqwest::Error),
    /// The API sent something this plugin cannot read.
    #[error("the Gemini API sent a response that cannot be read: {0}")]
    Decode(String),
    /// A streamed response ended before the model finished.
    #[error("the Gemini response stream ended before the model finished: {0}")]
    Truncated(String),
    /// The API returned neither candidates nor a reason for blocking.
    #[error("the Gemini API returned no candidates")]
    NoCandidates,
    /// The Genkit request cannot be expressed for the Gemini API.
    #[error("{0}")]
    InvalidRequest(String),
}

fn status_suffix(status: &Option<String>) -> String {
    status
        .as_deref()
        .map(|s| format!(" {s}"))
        .unwrap_or_default()
}

impl GeminiError {
    /// The Genkit status this failure maps to.
    pub fn status(&self) -> StatusCode {
        match self {
            GeminiError::MissingApiKey => StatusCode::FailedPrecondition,
            GeminiError::Api { http_status, .. } => status_for_http(*http_status),
            GeminiError::Timeout => StatusCode::DeadlineExceeded,
            GeminiError::Transport(_) | GeminiError::Truncated(_) => StatusCode::Unavailable,
            GeminiError::Decode(_) => StatusCode::Internal,
            GeminiError::NoCandidates => StatusCode::FailedPrecondition,
            GeminiError::InvalidRequest(_) => StatusCode::InvalidArgument,
        }
    }

    /// A failed exchange: timeouts are `DEADLINE_EXCEEDED`, error answers are
    /// read for the API's error object.
    pub(crate) fn from_http(e: HttpError) -> Self {
        match e {
            HttpError::Timeout { .. } => GeminiError::Timeout,
            HttpError::Transport { source, .. } => GeminiError::Transport(source.without_url()),
            HttpError::Malformed(detail) => GeminiError::Decode(detail),
            HttpError::Status(response) => match response.body {
                Err(BodyError::Transport(source)) if source.is_timeout() => GeminiError::Timeout,
                Err(BodyError::Transport(source)) => GeminiError::Transport(source.without_url()),
                Err(BodyError::Timeout) => GeminiError::Timeout,
                Ok(ref body) => api_error(response.status, body, response.retry_after()),
            },
        }
    }
}

impl From<GeminiError> for genkit_core::Error {
    fn from(e: GeminiError) -> Self {
        let details = match &e {
            GeminiError::Api {
                http_status,
                body,
                retry_after,
                ..
            } => Some(http_error_details(
                *http_status,
                [("error", body.as_deref().cloned())],
                *retry_after,
            )),
            _ => None,
        };
        to_genkit_error(e.status(), e, details)
    }
}

/// Reads the API's error body (`{"error": {"code", "message", "status",
/// "details"}}`), falling back to the raw text.
pub(crate) fn api_error(
    http_status: u16,
    body: &[u8],
    retry_after_header: Option<Duration>,
) -> GeminiError {
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    match parsed.as_ref().and_then(|v| v.get("error")) {
        Some(error) => api_error_from_object(http_status, error, retry_after_header),
        None => {
            let text = String::from_utf8_lossy(body).trim().to_owned();
            GeminiError::Api {
                http_status,
                status: None,
                message: if text.is_empty() {
                    "no error message".into()
                } else {
                    excerpt(&text)
                },
                body: None,
                retry_after: retry_after_header,
            }
        }
    }
}

/// An error from the API's `error` object.
pub(crate) fn api_error_from_object(
    http_status: u16,
    error: &Value,
    retry_after_header: Option<Duration>,
) -> GeminiError {
    let http_status = error
        .get("code")
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| *c >= 400)
        .unwrap_or(http_status);
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("no error message")
        .to_owned();
    let status = error
        .get("status")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let retry_after = retry_after_header.or_else(|| retry_delay(error));
    GeminiError::Api {
        http_status,
        status,
        message,
        body: Some(Box::new(error.clone())),
        retry_after,
    }
}

/// The `google.rpc.RetryInfo` delay among the error's details (`"58s"`).
fn retry_delay(error: &Value) -> Option<Duration> {
    error
        .get("details")?
        .as_array()?
        .iter()
        .filter(|d| {
            d.get("@type")
                .and_then(Value::as_str)
                .is_some_and(|t| t.ends_with("google.rpc.RetryInfo"))
        })
        .find_map(|d| {
            let delay = d.get("retryDelay")?.as_str()?;
            let secs: f64 = delay.strip_suffix('s')?.parse().ok()?;
            (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn http_statuses_map_to_genkit_statuses() {
        let cases = [
            (400, StatusCode::InvalidArgument),
            (401, StatusCode::Unauthenticated),
            (403, StatusCode::PermissionDenied),
            (404, StatusCode::NotFound),
            (429, StatusCode::ResourceExhausted),
            (500, StatusCode::Unavailable),
            (503, StatusCode::Unavailable),
            (529, StatusCode::Unavailable),
        ];
        for (http, status) in cases {
            assert_eq!(status_for_http(http), status, "HTTP {http}");
        }
    }

    #[test]
    fn reads_google_error_bodies_and_retry_info() {
        let body = br#"{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED",
            "details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"1.5s"}]}}"#;
        let e = api_error(429, body, None);
        assert_eq!(e.status(), StatusCode::ResourceExhausted);
        assert_eq!(
            e.to_string(),
            "Gemini API error (HTTP 429 RESOURCE_EXHAUSTED): Quota exceeded"
        );
        let GeminiError::Api { retry_after, .. } = &e else {
            panic!("expected an API error, got {e:?}");
        };
        assert_eq!(*retry_after, Some(Duration::from_millis(1500)));
        let g: genkit_core::Error = e.into();
        assert_eq!(
            g.details().and_then(|d| d.get("retryAfterMs")),
            Some(&json!(1500))
        );
    }

    #[test]
    fn falls_back_to_raw_text() {
        let e = api_error(502, b"Bad Gateway", None);
        assert_eq!(e.status(), StatusCode::Unavailable);
        assert!(e.to_string().contains("Bad Gateway"));
    }
}
