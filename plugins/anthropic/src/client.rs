//! The HTTP client for the Messages API: URL, headers, timeouts and error
//! statuses. Knows nothing of Genkit types.

use genkit_provider::{ApiKey, Deadline, FrameReader, HttpClient};
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderValue};
use std::time::Duration;

use crate::error::AnthropicError;
use crate::wire::{MessagesRequest, MessagesResponse};

/// The Anthropic API endpoint used unless another is configured.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

/// The `anthropic-version` header value this plugin speaks.
pub const API_VERSION: &str = "2023-06-01";

/// A configured connection to the Messages API.
#[derive(Debug, Clone)]
pub(crate) struct AnthropicClient {
    http: HttpClient,
    api_key: Option<ApiKey>,
}

impl AnthropicClient {
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

    /// `POST /v1/messages`, answered with one JSON message.
    pub async fn create_message(
        &self,
        body: &MessagesRequest,
    ) -> Result<MessagesResponse, AnthropicError> {
        let response = self.post(body).await?;
        let bytes = self
            .http
            .read_bytes(response)
            .await
            .map_err(AnthropicError::from_http)?;
        serde_json::from_slice(&bytes).map_err(|e| AnthropicError::Decode(e.to_string()))
    }

    /// `POST /v1/messages` with `"stream": true`: the server-sent events of
    /// the response.
    pub async fn stream_message(
        &self,
        body: &MessagesRequest,
    ) -> Result<FrameReader, AnthropicError> {
        let response = self.post(body).await?;
        Ok(self.http.sse(response))
    }

    async fn post(&self, body: &MessagesRequest) -> Result<reqwest::Response, AnthropicError> {
        let key = self.api_key.as_ref().ok_or(AnthropicError::MissingApiKey)?;
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert("anthropic-version", HeaderValue::from_static(API_VERSION));
        headers.insert(
            "x-api-key",
            key.header_value()
                .map_err(|e| AnthropicError::InvalidRequest(e.to_string()))?,
        );
        let payload = serde_json::to_vec(body)
            .map_err(|e| AnthropicError::InvalidRequest(format!("request body: {e}")))?;
        let path = "v1/messages";
        tracing::debug!(url = %self.http.url(path), bytes = payload.len(), stream = body.stream == Some(true), "calling the Anthropic API");
        let request = self.http.post(path).headers(headers).body(payload);
        self.http
            .send(request)
            .await
            .map_err(AnthropicError::from_http)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Map;

    #[tokio::test]
    async fn a_missing_key_fails_before_any_request() {
        let client = AnthropicClient::new(reqwest::Client::new(), "http://127.0.0.1:9", None, None);
        let body = MessagesRequest {
            model: "m".into(),
            max_tokens: 1,
            messages: Vec::new(),
            system: None,
            stop_sequences: None,
            temperature: None,
            top_k: None,
            top_p: None,
            tools: None,
            tool_choice: None,
            thinking: None,
            metadata: None,
            output_config: None,
            stream: None,
            extra: Map::new(),
        };
        let err = client.create_message(&body).await.unwrap_err();
        assert!(matches!(err, AnthropicError::MissingApiKey));
        assert_eq!(err.status(), genkit_core::StatusCode::FailedPrecondition);
    }
}
