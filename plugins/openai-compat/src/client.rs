//! The HTTP client: base URL, credentials, extra headers, timeouts, and
//! turning failures into [`ProviderError`]s.

use crate::error::ProviderError;
use genkit_provider::http::USER_AGENT;
use genkit_provider::{ApiKey, Deadline, FrameReader, HttpClient, HttpClientBuilder, HttpError};
use reqwest::header::{AUTHORIZATION, HeaderMap};
use serde_json::Value;
use std::fmt;
use std::time::Duration;

/// A configured client for one OpenAI-compatible server.
pub(crate) struct Client {
    http: HttpClient,
    provider: String,
    api_key: Option<ApiKey>,
    timeout: Duration,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("provider", &self.provider)
            .field("http", &self.http)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl Client {
    /// A client for `base_url` (trailing `/` ignored). Every extra header is
    /// marked sensitive so it is never printed. The timeout bounds each wait:
    /// for the headers, for a whole body, between two stream events.
    pub(crate) fn new(
        provider: String,
        base_url: &str,
        api_key: Option<ApiKey>,
        headers: HeaderMap,
        timeout: Duration,
    ) -> genkit_core::Result<Self> {
        let http = HttpClientBuilder::new()
            .connect_timeout(timeout)
            .user_agent(USER_AGENT)
            .build()?;
        Ok(Self {
            http: HttpClient::new(http, base_url, Deadline::PerWait(timeout)).with_headers(headers),
            provider,
            api_key,
            timeout,
        })
    }

    /// The plugin name, for messages.
    pub(crate) fn provider(&self) -> &str {
        &self.provider
    }

    /// Whether a key is configured on the plugin.
    pub(crate) fn has_api_key(&self) -> bool {
        self.api_key.is_some()
    }

    /// A failed exchange as a [`ProviderError`].
    pub(crate) fn error(&self, e: HttpError) -> ProviderError {
        ProviderError::from_http(&self.provider, self.timeout, e)
    }

    /// Sends `POST <base>/<path>` with a JSON body and returns the response
    /// once its headers arrived with a success status.
    async fn send(
        &self,
        path: &str,
        body: &Value,
        key_override: Option<&ApiKey>,
    ) -> Result<reqwest::Response, ProviderError> {
        let mut request = self.http.post(path).json(body);
        if let Some(key) = key_override.or(self.api_key.as_ref()) {
            let value = key
                .bearer_header_value()
                .map_err(|_| ProviderError::Malformed {
                    provider: self.provider.clone(),
                    detail: "the API key holds characters not allowed in an HTTP header".into(),
                })?;
            request = request.header(AUTHORIZATION, value);
        }
        self.http.send(request).await.map_err(|e| self.error(e))
    }

    /// `POST` with a JSON body, returning the JSON answer.
    pub(crate) async fn post_json(
        &self,
        path: &str,
        body: &Value,
        key_override: Option<&ApiKey>,
    ) -> Result<Value, ProviderError> {
        let response = self.send(path, body, key_override).await?;
        self.http
            .read_json(response)
            .await
            .map_err(|e| self.error(e))
    }

    /// `POST` with a JSON body, returning the answer's Server-Sent Events.
    pub(crate) async fn post_stream(
        &self,
        path: &str,
        body: &Value,
        key_override: Option<&ApiKey>,
    ) -> Result<FrameReader, ProviderError> {
        let response = self.send(path, body, key_override).await?;
        Ok(self.http.sse(response))
    }
}
