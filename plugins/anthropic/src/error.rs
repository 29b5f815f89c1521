//! [`AnthropicError`]: the kit's [`ProviderError`] read with the Messages
//! API's error body (`{"type": "error", "error": {"type", "message"},
//! "request_id"}`).

use genkit_provider::provider_error::ErrorFields;
use genkit_provider::{ErrorBody, ErrorResponse, ProviderError};
use serde_json::Value;

/// A failure of the Anthropic plugin.
pub type AnthropicError = ProviderError<AnthropicErrorBody>;

/// An error object of the Messages API.
#[derive(Debug, Clone, PartialEq)]
pub struct AnthropicErrorBody {
    /// The error type, e.g. `overloaded_error`.
    pub kind: Option<String>,
    /// The API's message.
    pub message: String,
    /// The `request-id` of the failed request.
    pub request_id: Option<String>,
}

impl From<ErrorFields> for AnthropicErrorBody {
    fn from(fields: ErrorFields) -> Self {
        AnthropicErrorBody {
            kind: fields.text("type"),
            message: fields.message,
            request_id: None,
        }
    }
}

impl ErrorBody for AnthropicErrorBody {
    const API: &'static str = "the Anthropic API";

    /// The `request-id` header, else the body's `request_id`.
    fn read(response: &ErrorResponse) -> Self {
        let in_body = || {
            response
                .json()?
                .get("request_id")?
                .as_str()
                .map(str::to_owned)
        };
        let request_id = response
            .header("request-id")
            .map(str::to_owned)
            .or_else(in_body);
        let body = AnthropicErrorBody::from(ErrorFields::read(response));
        AnthropicErrorBody { request_id, ..body }
    }

    fn message(&self) -> &str {
        &self.message
    }

    fn kind(&self) -> Option<&str> {
        self.kind.as_deref()
    }

    fn details(&self) -> Vec<(&'static str, Option<Value>)> {
        vec![
            ("type", self.kind.clone().map(Value::from)),
            ("requestId", self.request_id.clone().map(Value::from)),
        ]
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
    let body = AnthropicErrorBody {
        kind: Some(kind),
        message,
        request_id: None,
    };
    ProviderError::api(http_status, body)
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
