//! [`OllamaError`]: the kit's [`ProviderError`] read with Ollama's error
//! body (`{"error": "..."}`).

use genkit_provider::provider_error::ErrorFields;
use genkit_provider::{ErrorBody, ProviderError};

/// A failure of the Ollama plugin.
pub type OllamaError = ProviderError<OllamaErrorBody>;

/// An error of an Ollama server.
#[derive(Debug, Clone, PartialEq)]
pub struct OllamaErrorBody {
    /// The server's message.
    pub message: String,
}

impl From<ErrorFields> for OllamaErrorBody {
    fn from(fields: ErrorFields) -> Self {
        let message = fields.message;
        OllamaErrorBody { message }
    }
}

impl ErrorBody for OllamaErrorBody {
    const API: &'static str = "the Ollama server";
    const TRANSPORT_HINT: &'static str = " (is the Ollama server running?)";

    fn message(&self) -> &str {
        &self.message
    }
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
