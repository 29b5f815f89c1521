//! The HTTP client: server address, extra headers, timeouts, and turning
//! failures into [`OllamaError`]s.

use crate::error::OllamaError;
use genkit_provider::http::USER_AGENT;
use genkit_provider::{Deadline, FrameReader, HttpClient, HttpClientBuilder, HttpError};
use reqwest::header::HeaderMap;
use serde_json::Value;
use std::fmt;
use std::time::Duration;

/// Longest line accepted (a line holds one token, or a whole tool call).
const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// A configured client for one Ollama server.
pub(crate) struct Client {
    http: HttpClient,
    provider: String,
    timeout: Duration,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("provider", &self.provider)
            .field("http", &self.http)
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl Client {
    /// A client for `address` (trailing `/` ignored). Extra headers are
    /// marked sensitive (they may carry credentials of a proxy). The timeout
    /// bounds each wait: for the headers, for a whole body, between two
    /// stream lines.
    pub(crate) fn new(
        provider: String,
        address: &str,
        headers: HeaderMap,
        timeout: Duration,
    ) -> genkit_core::Result<Self> {
        let http = HttpClientBuilder::new()
            .connect_timeout(timeout)
            .user_agent(USER_AGENT)
            .build()?;
        Ok(Self {
            http: HttpClient::new(http, address, Deadline::PerWait(timeout)).with_headers(headers),
            provider,
            timeout,
        })
    }

    /// The plugin name.
    pub(crate) fn provider(&self) -> &str {
        &self.provider
    }

    /// A failed exchange as an [`OllamaError`].
    pub(crate) fn error(&self, e: HttpError) -> OllamaError {
        OllamaError::from_http(&self.provider, self.timeout, e)
    }

    async fn send(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, OllamaError> {
        self.http.send(request).await.map_err(|e| self.error(e))
    }

    async fn read_json(&self, response: reqwest::Response) -> Result<Value, OllamaError> {
        self.http
            .read_json(response)
            .await
            .map_err(|e| self.error(e))
    }

    /// `GET <path>`, returning the JSON answer.
    pub(crate) async fn get_json(&self, path: &str) -> Result<Value, OllamaError> {
        let response = self.send(self.http.get(path)).await?;
        self.read_json(response).await
    }

    /// `POST <path>` with a JSON body, returning the JSON answer.
    pub(crate) async fn post_json(&self, path: &str, body: &Value) -> Result<Value, OllamaError> {
        let response = self.send(self.http.post(path).json(body)).await?;
        self.read_json(response).await
    }

    /// `POST <path>` with a JSON body, returning the answer's
    /// newline-delimited JSON lines.
    pub(crate) async fn post_stream(
        &self,
        path: &str,
        body: &Value,
    ) -> Result<FrameReader, OllamaError> {
        let response = self.send(self.http.post(path).json(body)).await?;
        Ok(self.http.ndjson(response, MAX_LINE_BYTES))
    }
}
