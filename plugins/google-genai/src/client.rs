//! The HTTP client for the Gemini API: URLs, headers, timeouts and error
//! statuses. Knows nothing of Genkit types.

use genkit_provider::http::USER_AGENT;
use genkit_provider::{ApiKey, Deadline, FrameReader, HttpClient};
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderValue};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::time::Duration;

use crate::error::GeminiError;
use crate::wire::{
    BatchEmbedContentsRequest, BatchEmbedContentsResponse, EmbedContentRequest,
    EmbedContentResponse, GenerateContentRequest, GenerateContentResponse,
};

/// The Gemini API endpoint used unless another is configured.
pub const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com/v1beta";

/// The `x-goog-api-client` value sent with every request.
const CLIENT_HEADER: &str = USER_AGENT;

/// A configured connection to the Gemini API.
#[derive(Debug, Clone)]
pub(crate) struct GeminiClient {
    http: HttpClient,
    api_key: Option<ApiKey>,
}

impl GeminiClient {
    /// A client whose requests (streamed ones included) end after
    /// `timeout`, if given.
    pub fn new(
        http: reqwest::Client,
        base_url: &str,
        api_key: Option<ApiKey>,
        timeout: Option<Duration>,
    ) -> Self {
        Self {
            http: HttpClient::new(http, base_url, Deadline::total(timeout)),
            api_key,
        }
    }

    /// `models/<name>:generateContent`.
    pub async fn generate_content(
        &self,
        model: &str,
        body: &GenerateContentRequest,
    ) -> Result<GenerateContentResponse, GeminiError> {
        let response = self.post(model, "generateContent", false, body).await?;
        self.read_json(response).await
    }

    /// `models/<name>:streamGenerateContent?alt=sse`: the server-sent events
    /// of the response.
    pub async fn stream_generate_content(
        &self,
        model: &str,
        body: &GenerateContentRequest,
    ) -> Result<FrameReader, GeminiError> {
        let response = self
            .post(model, "streamGenerateContent", true, body)
            .await?;
        Ok(self.http.sse(response))
    }

    /// `models/<name>:embedContent`.
    pub async fn embed_content(
        &self,
        model: &str,
        body: &EmbedContentRequest,
    ) -> Result<EmbedContentResponse, GeminiError> {
        let response = self.post(model, "embedContent", false, body).await?;
        self.read_json(response).await
    }

    /// `models/<name>:batchEmbedContents`.
    pub async fn batch_embed_contents(
        &self,
        model: &str,
        body: &BatchEmbedContentsRequest,
    ) -> Result<BatchEmbedContentsResponse, GeminiError> {
        let response = self.post(model, "batchEmbedContents", false, body).await?;
        self.read_json(response).await
    }

    /// Sends a POST and turns error statuses into [`GeminiError::Api`].
    async fn post<B: Serialize + ?Sized>(
        &self,
        model: &str,
        method: &str,
        sse: bool,
        body: &B,
    ) -> Result<reqwest::Response, GeminiError> {
        let key = self.api_key.as_ref().ok_or(GeminiError::MissingApiKey)?;
        let mut path = format!("{}:{method}", model_path(model));
        if sse {
            path.push_str("?alt=sse");
        }
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert("x-goog-api-client", HeaderValue::from_static(CLIENT_HEADER));
        headers.insert(
            "x-goog-api-key",
            key.header_value()
                .map_err(|e| GeminiError::InvalidRequest(e.to_string()))?,
        );
        let payload = serde_json::to_vec(body)
            .map_err(|e| GeminiError::InvalidRequest(format!("request body: {e}")))?;
        tracing::debug!(url = %self.http.url(&path), bytes = payload.len(), "calling the Gemini API");
        let request = self.http.post(&path).headers(headers).body(payload);
        self.http
            .send(request)
            .await
            .map_err(GeminiError::from_http)
    }

    async fn read_json<T: DeserializeOwned>(
        &self,
        response: reqwest::Response,
    ) -> Result<T, GeminiError> {
        let bytes = self
            .http
            .read_bytes(response)
            .await
            .map_err(GeminiError::from_http)?;
        serde_json::from_slice(&bytes).map_err(|e| GeminiError::Decode(e.to_string()))
    }
}

/// `models/<name>`, unless the name is already a resource path
/// (`models/...`, `tunedModels/...`).
fn model_path(model: &str) -> String {
    if model.starts_with("models/") || model.starts_with("tunedModels/") {
        model.to_owned()
    } else {
        format!("models/{model}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_paths() {
        assert_eq!(model_path("gemini-2.5-flash"), "models/gemini-2.5-flash");
        assert_eq!(model_path("models/x"), "models/x");
        assert_eq!(model_path("tunedModels/t"), "tunedModels/t");
    }

    #[test]
    fn debug_hides_the_key() {
        let c = GeminiClient::new(
            reqwest::Client::new(),
            DEFAULT_BASE_URL,
            Some(ApiKey::new("AIza-secret")),
            None,
        );
        assert!(!format!("{c:?}").contains("AIza-secret"));
    }
}
