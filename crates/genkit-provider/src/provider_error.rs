//! [`ProviderError`]: the one error type of every provider plugin,
//! parameterised by how the provider writes its error bodies
//! ([`ErrorBody`]). Status mapping, `Retry-After`, message excerpts and
//! error details are the same for all providers.

use crate::error::{
    ErrorResponse, HttpError, excerpt, http_error_details, status_for_http, to_genkit_error,
};
use genkit_core::StatusCode;
use serde_json::{Map, Value};
use std::fmt;
use std::time::Duration;

/// How one provider writes its error answers: built from the usual
/// [`ErrorFields`] of an answer.
pub trait ErrorBody: From<ErrorFields> + fmt::Debug + Send + Sync + Sized + 'static {
    /// What the provider is called in messages, e.g. `the Anthropic API`.
    const API: &'static str;
    /// Added to transport failures (e.g. `is the server running?`).
    const TRANSPORT_HINT: &'static str = "";

    /// Reads a non-success answer (its body may be anything, even unread).
    fn read(response: &ErrorResponse) -> Self {
        ErrorFields::read(response).into()
    }

    /// The provider's message.
    fn message(&self) -> &str;

    /// The provider's error kind or code, shown after the HTTP status.
    fn kind(&self) -> Option<&str> {
        None
    }

    /// Genkit's status for this error: by default from the HTTP status
    /// ([`status_for_http`]); for an error inside a stream (no HTTP status)
    /// `UNAVAILABLE`.
    fn status(&self, http_status: Option<u16>) -> StatusCode {
        http_status.map_or(StatusCode::Unavailable, status_for_http)
    }

    /// A retry delay given in the body, when the provider has one (the
    /// `Retry-After` header wins over it).
    fn retry_after(&self) -> Option<Duration> {
        None
    }

    /// Fields for the error's `details` (`None`s are left out).
    fn details(&self) -> Vec<(&'static str, Option<Value>)> {
        Vec::new()
    }
}

/// A failure of a provider plugin. It converts into a
/// [`genkit_core::Error`] (keeping itself as the source) whose status lets
/// middleware react: `429` is `RESOURCE_EXHAUSTED`, `5xx` `UNAVAILABLE`,
/// timeouts `DEADLINE_EXCEEDED`.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError<B: ErrorBody> {
    /// No API key is configured; the text says where to put one.
    #[error("{0}")]
    MissingApiKey(String),
    /// The server answered with a non-success HTTP status.
    #[error("{} error (HTTP {http_status}{}): {}", B::API, suffix(.body.kind()), .body.message())]
    Api {
        /// The HTTP status.
        http_status: u16,
        /// The provider's error (boxed: errors travel in `Result`s).
        body: Box<B>,
        /// How long the provider asked to wait before retrying (at most
        /// [`MAX_RETRY_AFTER`](crate::error::MAX_RETRY_AFTER)).
        retry_after: Option<Duration>,
    },
    /// An error reported inside a stream, after a success status.
    #[error("{api} stream error{kind}: {msg}", api = B::API, kind = suffix(.0.kind()), msg = .0.message())]
    Stream(Box<B>),
    /// The server did not answer (or send the next stream frame) in time.
    #[error("the request to {} timed out{} ({what})", B::API, after(*.timeout))]
    Timeout {
        /// The configured timeout, when known.
        timeout: Option<Duration>,
        /// What was awaited.
        what: &'static str,
    },
    /// The server could not be reached, or the connection broke.
    #[error("the request to {url} failed{}: {source}", B::TRANSPORT_HINT)]
    Transport {
        /// The URL.
        url: String,
        /// The HTTP client's error.
        #[source]
        source: reqwest::Error,
    },
    /// The answer is not what the API documents.
    #[error("malformed response from {api}: {0}", api = B::API)]
    Malformed(String),
    /// A stream ended before the answer was complete.
    #[error("the stream from {api} ended before the response was complete ({0})", api = B::API)]
    CutOff(String),
    /// The Genkit request cannot be expressed for this API.
    #[error("{0}")]
    InvalidRequest(String),
    /// The answer cannot be used (e.g. no candidates and no reason).
    #[error("{0}")]
    Precondition(String),
}

fn suffix(kind: Option<&str>) -> String {
    kind.map(|k| format!(" {k}")).unwrap_or_default()
}

fn after(timeout: Option<Duration>) -> String {
    timeout.map(|t| format!(" after {t:?}")).unwrap_or_default()
}

impl<B: ErrorBody> ProviderError<B> {
    /// The failure of an exchange whose timeout is `timeout`: error answers
    /// are read with [`ErrorBody::read`].
    pub fn from_http(e: HttpError, timeout: Option<Duration>) -> Self {
        match e {
            HttpError::Timeout { what, .. } => ProviderError::Timeout { timeout, what },
            HttpError::Transport { url, source } => ProviderError::Transport { url, source },
            HttpError::Malformed(detail) => ProviderError::Malformed(detail),
            HttpError::Status(response) => {
                let body = B::read(&response);
                let retry_after = response.retry_after().or_else(|| body.retry_after());
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
    pub fn api(http_status: u16, body: B) -> Self {
        let retry_after = body.retry_after();
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

    /// Genkit's status for this failure.
    pub fn status(&self) -> StatusCode {
        match self {
            ProviderError::MissingApiKey(_) | ProviderError::Precondition(_) => {
                StatusCode::FailedPrecondition
            }
            ProviderError::Api {
                http_status, body, ..
            } => body.status(Some(*http_status)),
            ProviderError::Stream(body) => body.status(None),
            ProviderError::Timeout { .. } => StatusCode::DeadlineExceeded,
            ProviderError::Transport { source, .. } if source.is_timeout() => {
                StatusCode::DeadlineExceeded
            }
            ProviderError::Transport { .. } | ProviderError::CutOff(_) => StatusCode::Unavailable,
            ProviderError::Malformed(_) => StatusCode::Internal,
            ProviderError::InvalidRequest(_) => StatusCode::InvalidArgument,
        }
    }

    fn details(&self) -> Option<Value> {
        match self {
            ProviderError::Api {
                http_status,
                body,
                retry_after,
            } => Some(http_error_details(
                *http_status,
                body.details(),
                *retry_after,
            )),
            ProviderError::Stream(body) => {
                let fields = body.details().into_iter();
                let fields: Map<_, _> = fields.filter_map(|(k, v)| Some((k.into(), v?))).collect();
                (!fields.is_empty()).then_some(Value::Object(fields))
            }
            _ => None,
        }
    }
}

impl<B: ErrorBody> From<ProviderError<B>> for genkit_core::Error {
    fn from(e: ProviderError<B>) -> Self {
        let status = e.status();
        let details = e.details();
        to_genkit_error(status, e, details)
    }
}

/// What an error answer says, in the shapes provider APIs use:
/// `{"error": {"message", ..}}` (the object kept for its other members),
/// `{"error": "..."}`, `{"detail": ..}` or `{"message": ..}`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ErrorFields {
    /// The message (at most [`MAX_MESSAGE_CHARS`](crate::error::MAX_MESSAGE_CHARS)).
    pub message: String,
    /// The `error` object, when there is one.
    pub object: Option<Map<String, Value>>,
}

impl ErrorFields {
    /// The fields of an error answer; without a readable message, an
    /// excerpt of the body, or `(empty body)`.
    pub fn read(response: &ErrorResponse) -> Self {
        let fields = response.json().as_ref().and_then(Self::of);
        fields.unwrap_or_else(|| {
            let text = excerpt(&response.text());
            let message = if text.is_empty() {
                "(empty body)".to_owned()
            } else {
                text
            };
            ErrorFields {
                message,
                object: None,
            }
        })
    }

    /// The fields of a JSON body, if it holds an error message.
    pub fn of(body: &Value) -> Option<Self> {
        match body.get("error") {
            Some(error) => Self::of_error(error),
            None => Self::of_error(body.get("detail").or_else(|| body.get("message"))?),
        }
    }

    /// The fields of an `error` member: an object (its `message`, else the
    /// object as JSON), or a value whose text is the message.
    pub fn of_error(error: &Value) -> Option<Self> {
        let object = error.as_object().cloned();
        let message = match &object {
            Some(o) => o.get("message").map_or_else(|| error.to_string(), as_text),
            None => as_text(error),
        };
        let message = excerpt(&message);
        (!message.is_empty()).then_some(ErrorFields { message, object })
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

    /// An error body for tests: the text of the answer.
    #[derive(Debug)]
    pub(crate) struct Body(pub(crate) String);

    impl From<ErrorFields> for Body {
        fn from(fields: ErrorFields) -> Self {
            Body(fields.message)
        }
    }

    impl ErrorBody for Body {
        const API: &'static str = "the Test API";
        fn message(&self) -> &str {
            &self.0
        }
        fn details(&self) -> Vec<(&'static str, Option<Value>)> {
            vec![("code", Some(json!("c")))]
        }
    }

    fn answer(status: u16, retry_after: &str, body: &str) -> ProviderError<Body> {
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
        let stream: genkit_core::Error = ProviderError::Stream(Box::new(Body("x".into()))).into();
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
}
