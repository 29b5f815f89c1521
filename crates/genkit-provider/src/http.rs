//! The HTTP side of a plugin: building the `reqwest` client
//! ([`HttpClientBuilder`]) and sending requests with [`HttpClient`], which
//! adds the plugin's extra headers, enforces its [`Deadline`], and reads
//! error answers and bodies.

use crate::error::{BodyError, ErrorResponse, HttpError, excerpt};
use crate::stream::FrameReader;
use bytes::Bytes;
use reqwest::RequestBuilder;
use reqwest::header::HeaderMap;
use serde_json::Value;
use std::fmt;
use std::future::Future;
use std::time::Duration;

/// The `User-Agent` (or API-client header) value of Genkit for Rust.
pub const USER_AGENT: &str = concat!("genkit-rust/", env!("CARGO_PKG_VERSION"));

/// Longest time spent establishing a connection, whatever the request timeout.
pub const MAX_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// Error bodies longer than this are cut before being read.
pub const MAX_ERROR_BODY: usize = 64 * 1024;

/// The default cap on a non-streamed body ([`HttpClient::with_max_body`]):
/// 64 MiB, room for several inline images, yet a bound on what a
/// misbehaving server can make the process hold.
pub const DEFAULT_MAX_BODY: usize = 64 * 1024 * 1024;

/// Builds the `reqwest::Client` of a plugin.
///
/// Defaults: connect timeout [`MAX_CONNECT_TIMEOUT`], no `User-Agent`,
/// redirects not followed: a plugin's headers carry credentials (API keys in
/// custom headers that `reqwest` would not strip), and a provider API never
/// needs a redirect, so a 3xx answer is an error naming its `Location`.
#[derive(Debug, Clone)]
pub struct HttpClientBuilder {
    connect_timeout: Duration,
    user_agent: Option<String>,
    follow_redirects: bool,
}

impl Default for HttpClientBuilder {
    fn default() -> Self {
        Self {
            connect_timeout: MAX_CONNECT_TIMEOUT,
            user_agent: None,
            follow_redirects: false,
        }
    }
}

impl HttpClientBuilder {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// The longest wait for a connection, capped at [`MAX_CONNECT_TIMEOUT`].
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout.min(MAX_CONNECT_TIMEOUT);
        self
    }

    /// Sends this `User-Agent` (e.g. [`USER_AGENT`]).
    pub fn user_agent(mut self, agent: impl Into<String>) -> Self {
        self.user_agent = Some(agent.into());
        self
    }

    /// Follows redirects (as `reqwest` does: up to 10, dropping the
    /// standard credential headers across hosts, but not custom ones). Only
    /// for a client that sends no credentials in custom headers.
    pub fn follow_redirects(mut self) -> Self {
        self.follow_redirects = true;
        self
    }

    /// The client. Fails (`INTERNAL`) only when the TLS backend cannot start.
    pub fn build(self) -> genkit_core::Result<reqwest::Client> {
        let mut builder = reqwest::Client::builder().connect_timeout(self.connect_timeout);
        if let Some(agent) = self.user_agent {
            builder = builder.user_agent(agent);
        }
        if !self.follow_redirects {
            builder = builder.redirect(reqwest::redirect::Policy::none());
        }
        builder.build().map_err(|e| {
            genkit_core::Error::internal(format!("building the HTTP client: {e}")).with_source(e)
        })
    }
}

/// How long an exchange may take. Exceeding it is [`HttpError::Timeout`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deadline {
    /// No limit (cancellation still ends a call).
    None,
    /// Each wait may take this long: for the response headers, for a whole
    /// non-streamed body, and between two frames of a stream (an idle
    /// timeout, so a long stream that keeps flowing is never cut).
    PerWait(Duration),
    /// The whole exchange, a streamed body included, may take this long.
    Total(Duration),
}

impl Deadline {
    /// `Total(d)`, or `None` without a limit.
    pub fn total(timeout: Option<Duration>) -> Self {
        timeout.map_or(Deadline::None, Deadline::Total)
    }

    /// The configured duration, if any.
    pub fn duration(self) -> Option<Duration> {
        match self {
            Deadline::None => None,
            Deadline::PerWait(d) | Deadline::Total(d) => Some(d),
        }
    }

    /// Awaits `f`, failing with [`HttpError::Timeout`] after the per-wait
    /// limit. Other deadlines are enforced by the HTTP client itself.
    pub async fn wait<F: Future>(self, what: &'static str, f: F) -> Result<F::Output, HttpError> {
        match self {
            Deadline::PerWait(d) => {
                tokio::time::timeout(d, f)
                    .await
                    .map_err(|_| HttpError::Timeout {
                        timeout: Some(d),
                        what,
                    })
            }
            Deadline::None | Deadline::Total(_) => Ok(f.await),
        }
    }

    /// Classifies a transport error: the client's own timeouts are
    /// [`HttpError::Timeout`].
    pub fn transport_error(self, url: &str, source: reqwest::Error) -> HttpError {
        if source.is_timeout() {
            HttpError::Timeout {
                timeout: self.duration(),
                what: "waiting for the server",
            }
        } else {
            HttpError::Transport {
                url: url.to_owned(),
                source,
            }
        }
    }
}

/// A client for one API: a base URL, headers sent with every request
/// (marked sensitive: they may hold credentials), and a [`Deadline`].
#[derive(Clone)]
pub struct HttpClient {
    http: reqwest::Client,
    base_url: String,
    headers: HeaderMap,
    deadline: Deadline,
    max_body: usize,
}

impl fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpClient")
            .field("base_url", &self.base_url)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("deadline", &self.deadline)
            .field("max_body", &self.max_body)
            .finish()
    }
}

impl HttpClient {
    /// A client for `base_url` (a trailing `/` is ignored).
    pub fn new(http: reqwest::Client, base_url: &str, deadline: Deadline) -> Self {
        Self {
            http,
            base_url: base_url.trim_end_matches('/').to_owned(),
            headers: HeaderMap::new(),
            deadline,
            max_body: DEFAULT_MAX_BODY,
        }
    }

    /// Refuses non-streamed bodies longer than `bytes` (default
    /// [`DEFAULT_MAX_BODY`]) with [`HttpError::Malformed`], reading no more
    /// than that.
    pub fn with_max_body(mut self, bytes: usize) -> Self {
        self.max_body = bytes;
        self
    }

    /// Sends `headers` with every request; their values are marked sensitive.
    pub fn with_headers(mut self, mut headers: HeaderMap) -> Self {
        for value in headers.values_mut() {
            value.set_sensitive(true);
        }
        self.headers = headers;
        self
    }

    /// The base URL, without a trailing `/`.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The deadline of every exchange.
    pub fn deadline(&self) -> Deadline {
        self.deadline
    }

    /// `<base>/<path>` (a leading `/` of `path` is ignored).
    pub fn url(&self, path: &str) -> String {
        format!("{}/{}", self.base_url, path.trim_start_matches('/'))
    }

    /// A `POST <base>/<path>` with the client's headers (and, for a
    /// [`Deadline::Total`], its timeout).
    pub fn post(&self, path: &str) -> RequestBuilder {
        self.prepare(self.http.post(self.url(path)))
    }

    /// A `GET <base>/<path>`, as [`post`](Self::post).
    pub fn get(&self, path: &str) -> RequestBuilder {
        self.prepare(self.http.get(self.url(path)))
    }

    fn prepare(&self, request: RequestBuilder) -> RequestBuilder {
        let request = request.headers(self.headers.clone());
        match self.deadline {
            Deadline::Total(d) => request.timeout(d),
            Deadline::None | Deadline::PerWait(_) => request,
        }
    }

    /// Sends `request` and returns the response once its headers arrived
    /// with a success status; any other status is [`HttpError::Status`]
    /// with the (bounded) error body.
    pub async fn send(&self, request: RequestBuilder) -> Result<reqwest::Response, HttpError> {
        let request = request
            .build()
            .map_err(|e| self.deadline.transport_error("", e))?;
        let url = request.url().to_string();
        let response = self
            .deadline
            .wait("waiting for response headers", self.http.execute(request))
            .await?
            .map_err(|e| self.deadline.transport_error(&url, e))?;
        if response.status().is_success() {
            return Ok(response);
        }
        Err(HttpError::Status(self.error_response(response).await))
    }

    async fn error_response(&self, response: reqwest::Response) -> ErrorResponse {
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        if response.status().is_redirection() {
            // Not followed (see `HttpClientBuilder`). Its body is at best a
            // page saying where to go; say it plainly instead, so every
            // plugin's "the body as the message" fallback reads well.
            let to = headers
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .map(excerpt)
                .unwrap_or_else(|| "(no Location header)".to_owned());
            let note = format!(
                "the server redirected to {to}; redirects are not followed (they could carry \
                 credentials to another host), so configure the final address"
            );
            return ErrorResponse {
                status,
                headers,
                body: Ok(note.into_bytes()),
            };
        }
        let body = self
            .deadline
            .wait(
                "reading the error body",
                read_limited(response, MAX_ERROR_BODY),
            )
            .await
            .unwrap_or(Err(BodyError::Timeout));
        ErrorResponse {
            status,
            headers,
            body,
        }
    }

    /// The whole body of a response, at most the client's cap
    /// ([`with_max_body`](Self::with_max_body)): a longer one is
    /// [`HttpError::Malformed`], found out from its `Content-Length` or
    /// after reading just past the cap.
    pub async fn read_bytes(&self, response: reqwest::Response) -> Result<Bytes, HttpError> {
        let url = response.url().to_string();
        let max = self.max_body;
        let too_long =
            || HttpError::Malformed(format!("the response body is longer than {max} bytes"));
        if response.content_length().is_some_and(|n| n > max as u64) {
            return Err(too_long());
        }
        let read = async move {
            let mut response = response;
            let mut body = Vec::new();
            while let Some(chunk) = response.chunk().await? {
                if body.len() + chunk.len() > max {
                    return Ok(None);
                }
                body.extend_from_slice(&chunk);
            }
            Ok(Some(Bytes::from(body)))
        };
        match self
            .deadline
            .wait("reading the response body", read)
            .await?
        {
            Ok(Some(bytes)) => Ok(bytes),
            Ok(None) => Err(too_long()),
            Err(e) => Err(self.deadline.transport_error(&url, e)),
        }
    }

    /// The body of a response as JSON; a body that does not parse is
    /// [`HttpError::Malformed`] quoting an excerpt of it.
    pub async fn read_json(&self, response: reqwest::Response) -> Result<Value, HttpError> {
        let bytes = self.read_bytes(response).await?;
        serde_json::from_slice(&bytes).map_err(|e| {
            HttpError::Malformed(format!(
                "the body is not JSON ({e}): {}",
                excerpt(&String::from_utf8_lossy(&bytes))
            ))
        })
    }

    /// Reads `response` as Server-Sent Events, under the client's deadline,
    /// each event at most [`DEFAULT_MAX_FRAME`](crate::DEFAULT_MAX_FRAME) bytes.
    pub fn sse(&self, response: reqwest::Response) -> FrameReader {
        FrameReader::sse(response, self.deadline)
    }

    /// Reads `response` as newline-delimited JSON (lines up to `max_line`
    /// bytes), under the client's deadline.
    pub fn ndjson(&self, response: reqwest::Response, max_line: usize) -> FrameReader {
        FrameReader::ndjson(response, self.deadline, max_line)
    }
}

/// Reads at most `limit` bytes of a body.
async fn read_limited(mut response: reqwest::Response, limit: usize) -> Result<Vec<u8>, BodyError> {
    let mut out = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(BodyError::Transport)? {
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

    #[test]
    fn urls_and_debug() {
        let mut headers = HeaderMap::new();
        headers.insert("api-key", "azure-secret".parse().unwrap());
        let c = HttpClient::new(reqwest::Client::new(), "http://h/v1/", Deadline::None)
            .with_headers(headers);
        assert_eq!(c.base_url(), "http://h/v1");
        assert_eq!(c.url("/chat"), "http://h/v1/chat");
        assert_eq!(c.url("models/x:generate"), "http://h/v1/models/x:generate");
        let debug = format!("{c:?}");
        assert!(debug.contains("api-key") && !debug.contains("azure-secret"));
        assert!(c.headers.values().all(|v| v.is_sensitive()));
    }

    #[test]
    fn deadlines() {
        let d = Duration::from_secs(2);
        assert_eq!(Deadline::total(Some(d)), Deadline::Total(d));
        assert_eq!(Deadline::total(None), Deadline::None);
        assert_eq!(Deadline::PerWait(d).duration(), Some(d));
        assert_eq!(Deadline::None.duration(), None);
    }

    #[tokio::test]
    async fn per_wait_deadlines_time_out_and_others_do_not() {
        let slow = tokio::time::sleep(Duration::from_millis(50));
        let err = Deadline::PerWait(Duration::from_millis(1))
            .wait("testing", slow)
            .await
            .unwrap_err();
        assert!(matches!(
            err,
            HttpError::Timeout {
                what: "testing",
                ..
            }
        ));
        let slow = tokio::time::sleep(Duration::from_millis(5));
        assert!(
            Deadline::Total(Duration::from_millis(1))
                .wait("testing", slow)
                .await
                .is_ok()
        );
    }

    #[test]
    fn client_builder() {
        let b = HttpClientBuilder::new()
            .connect_timeout(Duration::from_secs(600))
            .user_agent(USER_AGENT);
        assert_eq!(b.connect_timeout, MAX_CONNECT_TIMEOUT);
        assert!(!b.follow_redirects);
        assert!(b.clone().follow_redirects().follow_redirects);
        assert!(b.build().is_ok());
        assert!(USER_AGENT.starts_with("genkit-rust/"));
    }
}
