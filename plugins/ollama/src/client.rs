//! The HTTP client: server address, extra headers, timeouts, and turning
//! non-success answers into [`OllamaError`]s.

use crate::error::{OllamaError, excerpt, parse_error_body};
use reqwest::header::HeaderMap;
use serde_json::Value;
use std::fmt;
use std::time::Duration;

/// Longest time spent establishing a connection, whatever the request timeout.
const MAX_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// A configured client for one Ollama server.
pub(crate) struct Client {
    http: reqwest::Client,
    provider: String,
    address: String,
    headers: HeaderMap,
    timeout: Duration,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("provider", &self.provider)
            .field("address", &self.address)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl Client {
    /// A client for `address` (trailing `/` ignored). Extra headers are
    /// marked sensitive (they may carry credentials of a proxy).
    pub(crate) fn new(
        provider: String,
        address: &str,
        mut headers: HeaderMap,
        timeout: Duration,
    ) -> Result<Self, reqwest::Error> {
        for value in headers.values_mut() {
            value.set_sensitive(true);
        }
        let http = reqwest::Client::builder()
            .connect_timeout(timeout.min(MAX_CONNECT_TIMEOUT))
            .user_agent(concat!("genkit-rust/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Self {
            http,
            provider,
            address: address.trim_end_matches('/').to_owned(),
            headers,
            timeout,
        })
    }

    /// The plugin name.
    pub(crate) fn provider(&self) -> &str {
        &self.provider
    }

    /// The request timeout.
    pub(crate) fn timeout(&self) -> Duration {
        self.timeout
    }

    /// `<address><path>`.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.address)
    }

    pub(crate) fn timed_out(&self, what: &'static str) -> OllamaError {
        OllamaError::Timeout {
            provider: self.provider.clone(),
            timeout: self.timeout,
            what,
        }
    }

    pub(crate) fn transport(
        &self,
        path: &str,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> OllamaError {
        OllamaError::Transport {
            provider: self.provider.clone(),
            url: self.url(path),
            source: Box::new(source),
        }
    }

    fn malformed(&self, detail: String) -> OllamaError {
        OllamaError::Malformed {
            provider: self.provider.clone(),
            detail,
        }
    }

    /// Sends a request and returns the response once its headers arrived
    /// with a success status.
    async fn send(
        &self,
        path: &str,
        request: reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, OllamaError> {
        let response =
            tokio::time::timeout(self.timeout, request.headers(self.headers.clone()).send())
                .await
                .map_err(|_| self.timed_out("waiting for response headers"))?
                .map_err(|e| {
                    if e.is_timeout() {
                        self.timed_out("waiting for the server")
                    } else {
                        self.transport(path, e)
                    }
                })?;
        if response.status().is_success() {
            return Ok(response);
        }
        let status = response.status().as_u16();
        let body = match tokio::time::timeout(self.timeout, response.text()).await {
            Ok(Ok(text)) => text,
            Ok(Err(e)) => format!("(error body unreadable: {e})"),
            Err(_) => "(error body not received in time)".to_owned(),
        };
        Err(OllamaError::Api {
            provider: self.provider.clone(),
            status,
            message: parse_error_body(&body),
        })
    }

    async fn read_json(
        &self,
        path: &str,
        response: reqwest::Response,
    ) -> Result<Value, OllamaError> {
        let bytes = tokio::time::timeout(self.timeout, response.bytes())
            .await
            .map_err(|_| self.timed_out("reading the response body"))?
            .map_err(|e| self.transport(path, e))?;
        serde_json::from_slice(&bytes).map_err(|e| {
            self.malformed(format!(
                "the body is not JSON ({e}): {}",
                excerpt(&String::from_utf8_lossy(&bytes))
            ))
        })
    }

    /// `GET <path>`, returning the JSON answer.
    pub(crate) async fn get_json(&self, path: &str) -> Result<Value, OllamaError> {
        let response = self.send(path, self.http.get(self.url(path))).await?;
        self.read_json(path, response).await
    }

    /// `POST <path>` with a JSON body, returning the JSON answer. The timeout
    /// covers the whole exchange.
    pub(crate) async fn post_json(&self, path: &str, body: &Value) -> Result<Value, OllamaError> {
        let response = self
            .send(path, self.http.post(self.url(path)).json(body))
            .await?;
        self.read_json(path, response).await
    }

    /// `POST <path>` with a JSON body, returning the response for streaming;
    /// the timeout covers the wait for the headers.
    pub(crate) async fn post_stream(
        &self,
        path: &str,
        body: &Value,
    ) -> Result<reqwest::Response, OllamaError> {
        self.send(path, self.http.post(self.url(path)).json(body))
            .await
    }
}
