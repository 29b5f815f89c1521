//! [`GeminiError`]: the kit's [`ProviderError`] with the Gemini API's
//! error format (`{"error": {"code", "message", "status", "details"}}`).

use crate::plugin::GoogleAiProvider;
use genkit_provider::error::retry_after_secs;
use genkit_provider::{ApiError, ErrorFormat, ProviderError};
use serde_json::Value;
use std::time::Duration;

/// A failure of the Gemini plugin.
pub type GeminiError = ProviderError<GoogleAiProvider>;

impl ErrorFormat for GoogleAiProvider {
    const API: &'static str = "the Gemini API";
    const KIND: &'static [&'static str] = &["status"];

    /// The `google.rpc.RetryInfo` delay among the error's details (`"58s"`).
    fn retry_after(error: &ApiError<Self>) -> Option<Duration> {
        let details = error.object.as_ref()?.get("details")?.as_array()?;
        details.iter().find_map(|d| {
            if !d.get("@type")?.as_str()?.ends_with("google.rpc.RetryInfo") {
                return None;
            }
            let delay = d.get("retryDelay")?.as_str()?.strip_suffix('s')?;
            retry_after_secs(delay.trim().parse().ok()?)
        })
    }

    fn details(error: &ApiError<Self>) -> Vec<(&'static str, Option<Value>)> {
        vec![("error", error.object.clone().map(Value::Object))]
    }
}

/// An `error` object inside a stream, with the HTTP status its `code`
/// stands for (500 when it gives none).
pub(crate) fn stream_error(error: &Value) -> GeminiError {
    let http_status = error
        .get("code")
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| *c >= 400)
        .unwrap_or(500);
    let body = ApiError::of_error(error).unwrap_or_else(|| ApiError::new("no error message", None));
    ProviderError::api(http_status, body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use genkit_core::StatusCode;
    use genkit_provider::ErrorResponse;
    use reqwest::header::HeaderMap;
    use serde_json::json;

    fn answer(status: u16, body: &[u8]) -> GeminiError {
        let response = ErrorResponse {
            status,
            headers: HeaderMap::new(),
            body: Ok(body.to_vec()),
        };
        ProviderError::from_http(genkit_provider::HttpError::Status(response), None)
    }

    fn quota(delay: &str) -> Vec<u8> {
        json!({"error": {"code": 429, "message": "Quota exceeded", "status": "RESOURCE_EXHAUSTED",
            "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay}]}})
        .to_string()
        .into_bytes()
    }

    #[test]
    fn reads_google_error_bodies_and_retry_info() {
        let e = answer(429, &quota("1.5s"));
        assert_eq!(e.status(), StatusCode::ResourceExhausted);
        assert_eq!(
            e.to_string(),
            "the Gemini API error (HTTP 429 RESOURCE_EXHAUSTED): Quota exceeded"
        );
        let g: genkit_core::Error = e.into();
        assert_eq!(
            g.details().and_then(|d| d.get("retryAfterMs")),
            Some(&json!(1500))
        );
    }

    #[test]
    fn absurd_retry_delays_are_capped_or_dropped() {
        let max = genkit_provider::error::MAX_RETRY_AFTER.as_millis() as u64;
        for (delay, expected) in [
            ("1e30s", Some(max)),
            ("1e300s", Some(max)),
            ("-5s", None),
            ("NaNs", None),
            ("soon", None),
            ("s", None),
        ] {
            let g: genkit_core::Error = answer(429, &quota(delay)).into();
            assert_eq!(g.status(), StatusCode::ResourceExhausted, "{delay}");
            let after = g.details().and_then(|d| d.get("retryAfterMs")).cloned();
            assert_eq!(after, expected.map(|ms| json!(ms)), "{delay}");
        }
    }

    #[test]
    fn falls_back_to_raw_text() {
        let e = answer(502, b"Bad Gateway");
        assert_eq!(e.status(), StatusCode::Unavailable);
        assert!(e.to_string().contains("Bad Gateway"));
    }

    #[test]
    fn stream_errors_take_their_code() {
        let e = stream_error(&json!({"code": 503, "message": "overloaded"}));
        assert_eq!(e.status(), StatusCode::Unavailable);
        assert!(e.to_string().contains("overloaded"));
        let e = stream_error(&json!({"code": 429, "message": "slow"}));
        assert_eq!(e.status(), StatusCode::ResourceExhausted);
    }
}
