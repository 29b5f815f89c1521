//! [`OllamaError`]: the kit's [`ProviderError`] with Ollama's error
//! format (`{"error": "..."}`).

use crate::plugin::OllamaProvider;
use genkit_provider::{ErrorFormat, ProviderError};

/// A failure of the Ollama plugin.
pub type OllamaError = ProviderError<OllamaProvider>;

impl ErrorFormat for OllamaProvider {
    const API: &'static str = "the Ollama server";
    const SERVER_NAME: &'static str = "the Ollama server";
}

#[cfg(test)]
mod tests {
    use super::*;
    use genkit_core::StatusCode;
    use genkit_provider::ErrorResponse;
    use reqwest::header::HeaderMap;
    use serde_json::json;

    fn answer(status: u16, body: &str) -> OllamaError {
        let response = ErrorResponse {
            status,
            headers: HeaderMap::new(),
            body: Ok(body.as_bytes().to_vec()),
        };
        ProviderError::from_http(genkit_provider::HttpError::Status(response), None)
    }

    #[test]
    fn error_bodies_and_statuses() {
        let e = answer(404, r#"{"error":"model 'x' not found"}"#);
        assert_eq!(e.status(), StatusCode::NotFound);
        assert!(e.to_string().ends_with("model 'x' not found"), "{e}");
        assert!(
            answer(400, r#"{"error":{"message":"bad"}}"#)
                .to_string()
                .ends_with("bad")
        );
        assert!(answer(500, "oops").to_string().ends_with("oops"));
        assert!(answer(503, "").to_string().ends_with("(empty body)"));
        assert_eq!(
            genkit_core::Error::from(answer(404, "")).details(),
            Some(&json!({"httpStatus": 404}))
        );
    }
}
