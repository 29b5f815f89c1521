//! [`ProviderError`]: the one error type of every provider plugin,
//! parameterised by how the provider writes its errors
//! ([`ErrorFormat`]), and [`ApiError`]: what an error answer says. Reading
//! error bodies, status mapping, `Retry-After`, message excerpts and error
//! details are the same for all providers.

use crate::error::{
    ErrorResponse, HttpError, excerpt, http_error_details, status_for_http, to_genkit_error,
    transport_cause,
};
use genkit_core::StatusCode;
use serde_json::{Map, Value};
use std::fmt;
use std::marker::PhantomData;
use std::time::Duration;

/// How one provider's API writes its errors: its name in messages, where
/// the error's kind is, and the hooks where it differs from the usual.
/// Every [`Provider`](crate::Provider) implements it.
pub trait ErrorFormat: fmt::Debug + Send + Sync + Sized + 'static {
    /// What the provider is called in messages, e.g. `the Anthropic API`.
    const API: &'static str;
    /// What the server is called in the hint of a refused connection (`is
    /// the Ollama server at http://127.0.0.1:11434 running?`).
    const SERVER_NAME: &'static str = "the server";
    /// Members of the `error` object naming the error's kind or code, in
    /// order (the first given is shown after the HTTP status).
    const KIND: &'static [&'static str] = &[];

    /// The id of the failed request, when the API gives one (it goes into
    /// the error's details as `requestId`).
    fn request_id(response: &ErrorResponse) -> Option<String> {
        let _ = response;
        None
    }

    /// Genkit's status for this error: by default from the HTTP status
    /// ([`status_for_http`]); for an error inside a stream (no HTTP status)
    /// `UNAVAILABLE`.
    fn status(error: &ApiError<Self>, http_status: Option<u16>) -> StatusCode {
        let _ = error;
        http_status.map_or(StatusCode::Unavailable, status_for_http)
    }

    /// A retry delay given in the body, when the provider has one (the
    /// `Retry-After` header wins over it).
    fn retry_after(error: &ApiError<Self>) -> Option<Duration> {
        let _ = error;
        None
    }

    /// Fields for the error's `details` (`None`s are left out); by default
    /// the error's kind, under the first of [`KIND`](Self::KIND).
    fn details(error: &ApiError<Self>) -> Vec<(&'static str, Option<Value>)> {
        let kind = error.kind.clone().map(Value::from);
        Self::KIND
            .first()
            .map(|key| (*key, kind))
            .into_iter()
            .collect()
    }
}

/// A failure of a provider plugin. It converts into a
/// [`genkit_core::Error`] (keeping itself as the source) whose status lets
/// middleware react: `429` is `RESOURCE_EXHAUSTED`, `5xx` `UNAVAILABLE`,
/// timeouts `DEADLINE_EXCEEDED`.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError<F: ErrorFormat> {
    /// No API key is configured; the text says where to put one.
    #[error("{0}")]
    MissingApiKey(String),
    /// The configured API key cannot be sent in an HTTP header.
    #[error(transparent)]
    InvalidApiKey(#[from] crate::secret::InvalidKeyHeader),
    /// The server answered with a non-success HTTP status.
    #[error("{} error (HTTP {http_status}{}): {}", F::API, suffix(&.body.kind), .body.message)]
    Api {
        /// The HTTP status.
        http_status: u16,
        /// What the answer says (boxed: errors travel in `Result`s).
        body: Box<ApiError<F>>,
        /// How long the provider asked to wait before retrying (at most
        /// [`MAX_RETRY_AFTER`](crate::error::MAX_RETRY_AFTER)).
        retry_after: Option<Duration>,
    },
    /// An error reported inside a stream, after a success status.
    #[error("{api} stream error{kind}: {msg}", api = F::API, kind = suffix(&.0.kind), msg = .0.message)]
    Stream(Box<ApiError<F>>),
    /// The server did not answer (or send the next stream frame) in time.
    #[error("the request to {} timed out{} ({what})", F::API, after(*.timeout))]
    Timeout {
        /// The configured timeout, when known.
        timeout: Option<Duration>,
        /// What was awaited.
        what: &'static str,
    },
    /// The server could not be reached, or the connection broke.
    #[error(
        "the request to {url} failed: {}",
        transport_cause(url, source, F::SERVER_NAME)
    )]
    Transport {
        /// The URL.
        url: String,
        /// The HTTP client's error.
        #[source]
        source: reqwest::Error,
    },
    /// The answer is not what the API documents.
    #[error("malformed response from {api}: {0}", api = F::API)]
    Malformed(String),
    /// The answer could not be decoded; `source` is the decoder's error.
    #[error("malformed response from {api}: {what} ({source})", api = F::API)]
    Undecodable {
        /// What could not be decoded, e.g. `a stream event is not JSON`.
        what: String,
        /// The decoder's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A stream ended before the answer was complete.
    #[error("the stream from {api} ended before the response was complete ({0})", api = F::API)]
    CutOff(String),
    /// The Genkit request cannot be expressed for this API.
    #[error("{0}")]
    InvalidRequest(String),
    /// A part of the Genkit request cannot be encoded for this API;
    /// `source` says why.
    #[error("{what}: {source}")]
    Unencodable {
        /// What could not be encoded, e.g. `thinkingConfig`.
        what: String,
        /// The encoder's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The answer cannot be used (e.g. no candidates and no reason).
    #[error("{0}")]
    Precondition(String),
}

fn suffix(kind: &Option<String>) -> String {
    kind.as_ref().map(|k| format!(" {k}")).unwrap_or_default()
}

fn after(timeout: Option<Duration>) -> String {
    timeout.map(|t| format!(" after {t:?}")).unwrap_or_default()
}

impl<F: ErrorFormat> ProviderError<F> {
    /// The failure of an exchange whose timeout is `timeout`: error answers
    /// are read with [`ApiError::read`].
    pub fn from_http(e: HttpError, timeout: Option<Duration>) -> Self {
        match e {
            HttpError::Timeout { what, .. } => ProviderError::Timeout { timeout, what },
            HttpError::Transport { url, source } => ProviderError::Transport { url, source },
            HttpError::Malformed(detail) => ProviderError::Malformed(detail),
            HttpError::Frame(e) => ProviderError::undecodable("the stream could not be read", e),
            HttpError::Status(response) => {
                let body = ApiError::read(&response);
                let retry_after = response.retry_after().or_else(|| F::retry_after(&body));
                ProviderError::Api {
                    http_status: response.status,
                    body: Box::new(body),
                    retry_after,
                }
            }
        }
    }

    /// An error answer with `http_status` (e.g. one reported inside a
    /// stream, its status taken from its code), retry hint from the body.
    pub fn api(http_status: u16, body: ApiError<F>) -> Self {
        let retry_after = F::retry_after(&body);
        ProviderError::Api {
            http_status,
            body: Box::new(body),
            retry_after,
        }
    }

    /// `body` read as `T`; a body that is not JSON of that shape is
    /// [`ProviderError::Malformed`], naming `what` and quoting an excerpt.
    pub fn parse_body<T: serde::de::DeserializeOwned>(what: &str, body: &[u8]) -> Result<T, Self> {
        serde_json::from_slice(body).map_err(|e| {
            ProviderError::Malformed(format!(
                "{what} is not JSON of the expected shape ({e}): {}",
                excerpt(&String::from_utf8_lossy(body))
            ))
        })
    }

    /// [`ProviderError::Undecodable`]: `what` could not be decoded because
    /// of `source`.
    pub fn undecodable(
        what: impl Into<String>,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        ProviderError::Undecodable {
            what: what.into(),
            source: source.into(),
        }
    }

    /// [`ProviderError::Unencodable`]: `what` could not be encoded because
    /// of `source`.
    pub fn unencodable(
        what: impl Into<String>,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        ProviderError::Unencodable {
            what: what.into(),
            source: source.into(),
        }
    }

    /// Genkit's status for this failure.
    pub fn status(&self) -> StatusCode {
        match self {
            ProviderError::MissingApiKey(_) | ProviderError::Precondition(_) => {
                StatusCode::FailedPrecondition
            }
            ProviderError::Api {
                http_status, body, ..
            } => F::status(body, Some(*http_status)),
            ProviderError::Stream(body) => F::status(body, None),
            ProviderError::Timeout { .. } => StatusCode::DeadlineExceeded,
            ProviderError::Transport { source, .. } if source.is_timeout() => {
                StatusCode::DeadlineExceeded
            }
            ProviderError::Transport { .. } | ProviderError::CutOff(_) => StatusCode::Unavailable,
            ProviderError::Malformed(_) | ProviderError::Undecodable { .. } => StatusCode::Internal,
            ProviderError::InvalidRequest(_)
            | ProviderError::Unencodable { .. }
            | ProviderError::InvalidApiKey(_) => StatusCode::InvalidArgument,
        }
    }

    fn details(&self) -> Option<Value> {
        let (http_status, body, retry_after) = match self {
            ProviderError::Api {
                http_status,
                body,
                retry_after,
            } => (Some(*http_status), body, *retry_after),
            ProviderError::Stream(body) => (None, body, None),
            _ => return None,
        };
        let mut fields = F::details(body);
        fields.push(("requestId", body.request_id.clone().map(Value::from)));
        http_error_details(http_status, fields, retry_after)
    }
}

impl<F: ErrorFormat> From<ProviderError<F>> for genkit_core::Error {
    fn from(e: ProviderError<F>) -> Self {
        let status = e.status();
        let details = e.details();
        to_genkit_error(status, e, details)
    }
}

/// What an error answer of provider `F` says, in the shapes provider APIs
/// use: `{"error": {"message", ..}}` (the object kept for its other
/// members), `{"error": "..."}`, `{"detail": ..}` or `{"message": ..}`.
#[derive(Debug, Clone)]
pub struct ApiError<F> {
    /// The message (at most [`MAX_MESSAGE_CHARS`](crate::error::MAX_MESSAGE_CHARS)).
    pub message: String,
    /// The error's kind or code ([`ErrorFormat::KIND`]), when given.
    pub kind: Option<String>,
    /// The `error` object, when there is one.
    pub object: Option<Map<String, Value>>,
    /// The id of the failed request ([`ErrorFormat::request_id`]).
    pub request_id: Option<String>,
    format: PhantomData<fn() -> F>,
}

impl<F: ErrorFormat> ApiError<F> {
    /// An error with `message` and `kind` (e.g. one a stream reports).
    pub fn new(message: impl Into<String>, kind: Option<String>) -> Self {
        ApiError {
            message: message.into(),
            kind,
            object: None,
            request_id: None,
            format: PhantomData,
        }
    }

    /// What a non-success answer says (its body may be anything, even
    /// unread); without a readable message, an excerpt of the body, or
    /// `(empty body)`.
    pub fn read(response: &ErrorResponse) -> Self {
        let error = response.json().as_ref().and_then(Self::of);
        let mut error = error.unwrap_or_else(|| match excerpt(&response.text()) {
            text if text.is_empty() => Self::new("(empty body)", None),
            text => Self::new(text, None),
        });
        error.request_id = F::request_id(response);
        error
    }

    /// What a JSON body says, if it holds an error message.
    pub fn of(body: &Value) -> Option<Self> {
        match body.get("error") {
            Some(error) => Self::of_error(error),
            None => Self::of_error(body.get("detail").or_else(|| body.get("message"))?),
        }
    }

    /// What an `error` member says: an object (its `message`, else the
    /// object as JSON, and its kind), or a value whose text is the message.
    pub fn of_error(error: &Value) -> Option<Self> {
        let object = error.as_object().cloned();
        let message = match &object {
            Some(o) => o.get("message").map_or_else(|| error.to_string(), as_text),
            None => as_text(error),
        };
        let message = excerpt(&message);
        if message.is_empty() {
            return None;
        }
        let mut error = Self::new(message, None);
        error.object = object;
        error.kind = F::KIND.iter().find_map(|key| error.text(key));
        Some(error)
    }

    /// A member of the `error` object as text (`type`, `status`, `code`...);
    /// `null` counts as absent.
    pub fn text(&self, key: &str) -> Option<String> {
        let value = self.object.as_ref()?.get(key)?;
        (!value.is_null()).then(|| as_text(value))
    }
}

/// A JSON value as message text: strings as they are, anything else as JSON.
pub fn as_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::error::MAX_RETRY_AFTER;
    use reqwest::header::{HeaderMap, HeaderValue, RETRY_AFTER};
    use serde_json::json;

    /// The error format of a test API.
    #[derive(Debug)]
    pub(crate) struct TestApi;

    impl ErrorFormat for TestApi {
        const API: &'static str = "the Test API";
        fn details(_: &ApiError<Self>) -> Vec<(&'static str, Option<Value>)> {
            vec![("code", Some(json!("c")))]
        }
    }

    fn answer(status: u16, retry_after: &str, body: &str) -> ProviderError<TestApi> {
        let mut headers = HeaderMap::new();
        if let Ok(v) = HeaderValue::from_str(retry_after) {
            headers.insert(RETRY_AFTER, v);
        }
        let response = ErrorResponse {
            status,
            headers,
            body: Ok(body.as_bytes().to_vec()),
        };
        ProviderError::from_http(HttpError::Status(response), None)
    }

    #[test]
    fn answers_carry_status_message_and_details() {
        let err: genkit_core::Error = answer(429, "2", "slow down").into();
        assert_eq!(err.status(), StatusCode::ResourceExhausted);
        assert_eq!(err.message(), "the Test API error (HTTP 429): slow down");
        assert_eq!(
            err.details(),
            Some(&json!({"httpStatus": 429, "code": "c", "retryAfterMs": 2000}))
        );
        let empty: genkit_core::Error = answer(503, "", "").into();
        assert!(empty.message().ends_with("(empty body)"), "{empty}");
        let stream: genkit_core::Error =
            ProviderError::<TestApi>::Stream(Box::new(ApiError::new("x", None))).into();
        assert_eq!(stream.status(), StatusCode::Unavailable);
        assert_eq!(stream.details(), Some(&json!({"code": "c"})));
    }

    #[test]
    fn absurd_retry_hints_never_panic() {
        let max = u64::try_from(MAX_RETRY_AFTER.as_millis()).unwrap();
        for hint in ["1e300", "1e20", "-1", "NaN", "inf", "soon", "  "] {
            let err: genkit_core::Error = answer(429, hint, "{}").into();
            assert_eq!(err.status(), StatusCode::ResourceExhausted, "{hint}");
            let after = err.details().and_then(|d| d.get("retryAfterMs")).cloned();
            assert!(
                after.is_none() || after == Some(json!(max)),
                "{hint}: {after:?}"
            );
        }
    }

    #[test]
    fn decoder_errors_stay_reachable_as_sources() {
        let frame = crate::frames::FrameError::LineTooLong { limit: 64 };
        let err: genkit_core::Error =
            ProviderError::<TestApi>::from_http(HttpError::Frame(frame.clone()), None).into();
        assert_eq!(err.status(), StatusCode::Internal);
        assert_eq!(
            err.message(),
            "malformed response from the Test API: the stream could not be read \
             (a stream line is longer than 64 bytes)"
        );
        let mut cause = std::error::Error::source(&err);
        let mut found = false;
        while let Some(e) = cause {
            found |= e.downcast_ref::<crate::frames::FrameError>() == Some(&frame);
            cause = e.source();
        }
        assert!(found, "{err:?}");
        let json = serde_json::from_str::<Value>("{").unwrap_err();
        let err = ProviderError::<TestApi>::undecodable("a stream event is not JSON", json);
        assert!(std::error::Error::source(&err).is_some_and(|s| s.is::<serde_json::Error>()));
    }
}
