//! The HTTP client: base URL, credentials, extra headers, timeouts, and
//! turning non-success answers into [`ProviderError`]s.

use crate::error::{ProviderError, excerpt, parse_error_body, parse_retry_after};
use crate::secret::ApiKey;
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue, RETRY_AFTER};
use serde_json::Value;
use std::fmt;
use std::time::Duration;

/// Longest time spent establishing a connection, whatever the request timeout.
const MAX_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// A configured client for one OpenAI-compatible server.
pub(crate) struct Client {
    http: reqwest::Client,
    provider: String,
    base_url: String,
    api_key: Option<ApiKey>,
    headers: HeaderMap,
    timeout: Duration,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("provider", &self.provider)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl Client {
    /// A client for `base_url` (trailing `/` ignored). Every extra header is
    /// marked sensitive so it is never printed.
    pub(crate) fn new(
        provider: String,
        base_url: &str,
        api_key: Option<ApiKey>,
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
            base_url: base_url.trim_end_matches('/').to_owned(),
            api_key,
            headers,
            timeout,
        })
    }

    /// The plugin name, for messages.
    pub(crate) fn provider(&self) -> &str {
        &self.provider
    }

    /// The base URL, without a trailing `/`.
    pub(crate) fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The request timeout.
    pub(crate) fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Whether a key is configured on the plugin.
    pub(crate) fn has_api_key(&self) -> bool {
        self.api_key.is_some()
    }

    fn url(&self, path: &str) -> String {
        format!("{}/{}", self.base_url, path.trim_start_matches('/'))
    }

    fn timed_out(&self, what: &'static str) -> ProviderError {
        ProviderError::Timeout {
            provider: self.provider.clone(),
            timeout: self.timeout,
            what,
        }
    }

    fn transport(&self, url: &str, source: reqwest::Error) -> ProviderError {
        if source.is_timeout() {
            return self.timed_out("waiting for the server");
        }
        ProviderError::Transport {
            provider: self.provider.clone(),
            url: url.to_owned(),
            source,
        }
    }

    /// Sends `POST <base>/<path>` with a JSON body and returns the response
    /// once its headers arrived with a success status.
    async fn send(
        &self,
        path: &str,
        body: &Value,
        key_override: Option<&ApiKey>,
    ) -> Result<reqwest::Response, ProviderError> {
        let url = self.url(path);
        let mut request = self
            .http
            .post(&url)
            .headers(self.headers.clone())
            .json(body);
        if let Some(key) = key_override.or(self.api_key.as_ref()) {
            let mut value =
                HeaderValue::try_from(format!("Bearer {}", key.expose())).map_err(|_| {
                    ProviderError::Malformed {
                        provider: self.provider.clone(),
                        detail: "the API key holds characters not allowed in an HTTP header".into(),
                    }
                })?;
            value.set_sensitive(true);
            request = request.header(AUTHORIZATION, value);
        }
        let response = tokio::time::timeout(self.timeout, request.send())
            .await
            .map_err(|_| self.timed_out("waiting for response headers"))?
            .map_err(|e| self.transport(&url, e))?;
        if response.status().is_success() {
            return Ok(response);
        }
        Err(self.api_error(response).await)
    }

    /// Reads an error answer into [`ProviderError::Api`].
    async fn api_error(&self, response: reqwest::Response) -> ProviderError {
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after);
        let body = match tokio::time::timeout(self.timeout, response.text()).await {
            Ok(Ok(text)) => text,
            Ok(Err(e)) => format!("(error body unreadable: {e})"),
            Err(_) => "(error body not received in time)".to_owned(),
        };
        let (message, code) = parse_error_body(&body);
        ProviderError::Api {
            provider: self.provider.clone(),
            status,
            message,
            code,
            retry_after,
        }
    }

    /// `POST` with a JSON body, returning the JSON answer. The timeout covers
    /// the whole exchange.
    pub(crate) async fn post_json(
        &self,
        path: &str,
        body: &Value,
        key_override: Option<&ApiKey>,
    ) -> Result<Value, ProviderError> {
        let response = self.send(path, body, key_override).await?;
        let url = self.url(path);
        let bytes = tokio::time::timeout(self.timeout, response.bytes())
            .await
            .map_err(|_| self.timed_out("reading the response body"))?
            .map_err(|e| self.transport(&url, e))?;
        serde_json::from_slice(&bytes).map_err(|e| ProviderError::Malformed {
            provider: self.provider.clone(),
            detail: format!(
                "the body is not JSON ({e}): {}",
                excerpt(&String::from_utf8_lossy(&bytes))
            ),
        })
    }

    /// `POST` with a JSON body, returning the response for streaming. The
    /// timeout covers the wait for the headers; the stream reader applies it
    /// between events.
    pub(crate) async fn post_stream(
        &self,
        path: &str,
        body: &Value,
        key_override: Option<&ApiKey>,
    ) -> Result<reqwest::Response, ProviderError> {
        self.send(path, body, key_override).await
    }
}
