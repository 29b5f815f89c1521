//! [`AnthropicError`]: the kit's [`ProviderError`] with the Messages API's
//! error format (`{"type": "error", "error": {"type", "message"},
//! "request_id"}`).

use crate::plugin::AnthropicProvider;
use genkit_provider::{ApiError, ErrorFormat, ErrorResponse, ProviderError};

/// A failure of the Anthropic plugin.
pub type AnthropicError = ProviderError<AnthropicProvider>;

impl ErrorFormat for AnthropicProvider {
    const API: &'static str = "the Anthropic API";
    const KIND: &'static [&'static str] = &["type"];

    /// The `request-id` header, else the body's `request_id`.
    fn request_id(response: &ErrorResponse) -> Option<String> {
        let header = response.header("request-id").map(str::to_owned);
        header.or_else(|| Some(response.json()?.get("request_id")?.as_str()?.to_owned()))
    }
}

/// The error a stream's `error` event stands for, with the HTTP status its
/// type stands for (the event carries only the type).
pub(crate) fn stream_error(kind: String, message: String) -> AnthropicError {
    let http_status = match kind.as_str() {
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "billing_error" | "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        "rate_limit_error" => 429,
        "timeout_error" => 504,
        "overloaded_error" => 529,
        _ => 500,
    };
    ProviderError::api(http_status, ApiError::new(message, Some(kind)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use genkit_core::StatusCode;
    use reqwest::header::HeaderMap;
    use serde_json::json;

    fn answer(status: u16, body: &[u8]) -> AnthropicError {
        let response = ErrorResponse {
            status,
            headers: HeaderMap::new(),
            body: Ok(body.to_vec()),
        };
        ProviderError::from_http(genkit_provider::HttpError::Status(response), None)
    }

    #[test]
    fn reads_error_bodies() {
        let body = br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_1"}"#;
        let e = answer(529, body);
        assert_eq!(e.status(), StatusCode::Unavailable);
        assert_eq!(
            e.to_string(),
            "the Anthropic API error (HTTP 529 overloaded_error): Overloaded"
        );
        let g: genkit_core::Error = e.into();
        assert_eq!(
            g.details().and_then(|d| d.get("requestId")),
            Some(&json!("req_1"))
        );
        assert!(
            answer(502, b"Bad Gateway")
                .to_string()
                .contains("Bad Gateway")
        );
        assert_eq!(answer(413, b"").status(), StatusCode::InvalidArgument);
    }

    #[test]
    fn stream_errors_take_the_status_of_their_type() {
        let e = stream_error("overloaded_error".into(), "busy".into());
        assert_eq!(e.status(), StatusCode::Unavailable);
        assert_eq!(
            stream_error("rate_limit_error".into(), "slow".into()).status(),
            StatusCode::ResourceExhausted
        );
        assert_eq!(
            stream_error("something_new".into(), "?".into()).status(),
            StatusCode::Unavailable
        );
    }
}
