//! [`ProviderError`]: the kit's error with the error format of
//! OpenAI-compatible servers: OpenAI's `{"error": {"message", "code",
//! "type"}}`, `{"error": "..."}`, FastAPI's `{"detail": ...}` or
//! `{"message": ...}`.

use crate::plugin::OpenAiProvider;
use genkit_core::StatusCode;
use genkit_provider::{ApiError, ErrorFormat};

/// Something that went wrong talking to an OpenAI-compatible server.
pub type ProviderError = genkit_provider::ProviderError<OpenAiProvider>;

impl ErrorFormat for OpenAiProvider {
    const API: &'static str = "the OpenAI-compatible server";
    const KIND: &'static [&'static str] = &["code", "type"];

    /// Errors inside a stream carry no HTTP status: the usual codes map.
    fn status(error: &ApiError<Self>, http_status: Option<u16>) -> StatusCode {
        if let Some(http) = http_status {
            return genkit_provider::error::status_for_http(http);
        }
        match error.kind.as_deref() {
            Some("rate_limit_exceeded" | "insufficient_quota") => StatusCode::ResourceExhausted,
            Some("invalid_request_error" | "context_length_exceeded") => {
                StatusCode::InvalidArgument
            }
            Some("invalid_api_key" | "authentication_error") => StatusCode::Unauthenticated,
            _ => StatusCode::Unavailable,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use genkit_provider::ErrorResponse;
    use genkit_provider::error::MAX_MESSAGE_CHARS;
    use reqwest::header::HeaderMap;
    use serde_json::json;

    fn body(text: &str) -> ApiError<OpenAiProvider> {
        ApiError::read(&ErrorResponse {
            status: 400,
            headers: HeaderMap::new(),
            body: Ok(text.as_bytes().to_vec()),
        })
    }

    #[test]
    fn error_bodies_are_read() {
        let b = body(
            r#"{"error":{"message":"bad key","type":"invalid_request_error","code":"invalid_api_key"}}"#,
        );
        assert_eq!(b.message, "bad key");
        assert_eq!(b.kind.as_deref(), Some("invalid_api_key"));
        let b = body(r#"{"error":{"message":"x","type":"server_error","code":null}}"#);
        assert_eq!(
            (b.message.as_str(), b.kind.as_deref()),
            ("x", Some("server_error"))
        );
        assert_eq!(body(r#"{"detail":"Not Found"}"#).message, "Not Found");
        assert_eq!(
            body("Internal Server Error").message,
            "Internal Server Error"
        );
        assert_eq!(body("").message, "(empty body)");
        assert!(body(&"x".repeat(5000)).message.chars().count() <= MAX_MESSAGE_CHARS + 1);
    }

    #[test]
    fn stream_errors_map_their_codes() {
        let e = |code: &str| {
            let body = ApiError::new("m", Some(code.into()));
            genkit_core::Error::from(ProviderError::Stream(Box::new(body)))
        };
        assert_eq!(
            e("rate_limit_exceeded").status(),
            StatusCode::ResourceExhausted
        );
        assert_eq!(e("invalid_api_key").status(), StatusCode::Unauthenticated);
        assert_eq!(e("server_error").status(), StatusCode::Unavailable);
        assert_eq!(e("x").details(), Some(&json!({"code": "x"})));
    }
}
