//! The HTTP client for the Messages API: URL, headers, timeouts and error
//! statuses. Knows nothing of Genkit types.

use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderValue};
use std::time::Duration;

use crate::error::{AnthropicError, api_error, retry_after_header};
use crate::secret::ApiKey;
use crate::wire::{MessagesRequest, MessagesResponse};

/// The Anthropic API endpoint used unless another is configured.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

/// The `anthropic-version` header value this plugin speaks.
pub const API_VERSION: &str = "2023-06-01";

/// Error bodies larger than this are cut before being read.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// A configured connection to the Messages API.
#[derive(Debug, Clone)]
pub(crate) struct AnthropicClient {
    http: reqwest::Client,
    base_url: String,
    api_key: Option<ApiKey>,
    timeout: Option<Duration>,
}

impl AnthropicClient {
    pub fn new(
        http: reqwest::Client,
        base_url: &str,
        api_key: Option<ApiKey>,
        timeout: Option<Duration>,
    ) -> Self {
        Self {
            http,
            base_url: base_url.trim_end_matches('/').to_owned(),
            api_key,
            timeout,
        }
    }

    /// `POST /v1/messages`, answered with one JSON message.
    pub async fn create_message(
        &self,
        body: &MessagesRequest,
    ) -> Result<MessagesResponse, AnthropicError> {
        let response = self.post(body).await?;
        let bytes = response
            .bytes()
            .await
            .map_err(AnthropicError::from_reqwest)?;
        serde_json::from_slice(&bytes).map_err(|e| AnthropicError::Decode(e.to_string()))
    }

    /// `POST /v1/messages` with `"stream": true`: the response, whose body is
    /// a server-sent event stream.
    pub async fn stream_message(
        &self,
        body: &MessagesRequest,
    ) -> Result<reqwest::Response, AnthropicError> {
        self.post(body).await
    }

    async fn post(&self, body: &MessagesRequest) -> Result<reqwest::Response, AnthropicError> {
        let key = self.api_key.as_ref().ok_or(AnthropicError::MissingApiKey)?;
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert("anthropic-version", HeaderValue::from_static(API_VERSION));
        headers.insert("x-api-key", key.header_value()?);
        let payload = serde_json::to_vec(body)
            .map_err(|e| AnthropicError::InvalidRequest(format!("request body: {e}")))?;
        let url = format!("{}/v1/messages", self.base_url);
        tracing::debug!(%url, bytes = payload.len(), stream = body.stream == Some(true), "calling the Anthropic API");
        let mut request = self.http.post(url).headers(headers).body(payload);
        if let Some(t) = self.timeout {
            request = request.timeout(t);
        }
        let response = request.send().await.map_err(AnthropicError::from_reqwest)?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let retry_after = retry_after_header(response.headers());
        let request_id = response
            .headers()
            .get("request-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = read_limited(response, MAX_ERROR_BODY).await?;
        Err(api_error(status.as_u16(), &body, request_id, retry_after))
    }
}

async fn read_limited(
    mut response: reqwest::Response,
    limit: usize,
) -> Result<Vec<u8>, AnthropicError> {
    let mut out = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(AnthropicError::from_reqwest)?
    {
        let room = limit.saturating_sub(out.len());
        out.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if out.len() >= limit {
            break;
        }
    }
    Ok(out)
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
