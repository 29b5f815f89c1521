//! The framework's error type.
//!
//! Every failure is an [`Error`] with a canonical [`StatusCode`]. Errors are
//! either *user-facing* (their status and message may be shown to a remote
//! caller, like Genkit's `UserFacingError`) or *internal* (servers answer
//! `500 INTERNAL "Internal Error"` and keep the details in logs and traces).

use crate::status::StatusCode;
use serde_json::Value;
use std::fmt;
use std::sync::Arc;

/// A `Result` whose error is the framework's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A framework error: a status, a message, optional JSON details and an optional cause.
///
/// Cheap to move (one pointer) and to clone.
#[derive(Clone)]
pub struct Error {
    inner: Box<Inner>,
}

#[derive(Clone)]
struct Inner {
    status: StatusCode,
    message: String,
    details: Option<Value>,
    user_facing: bool,
    source: Option<Arc<dyn std::error::Error + Send + Sync>>,
    /// A typed value for in-process callers to recognise (e.g. a tool
    /// interrupt); never serialized.
    payload: Option<Arc<dyn std::any::Any + Send + Sync>>,
    /// Set once a span recorded this error, so only the innermost span is
    /// marked `genkit:isFailureSource`.
    failure_recorded: bool,
    trace_id: Option<String>,
}

impl Error {
    /// An error with a status and a message. Servers show only its status
    /// class to remote callers unless it is made [`user_facing`](Self::user_facing).
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            inner: Box::new(Inner {
                status,
                message: message.into(),
                details: None,
                user_facing: false,
                source: None,
                payload: None,
                failure_recorded: false,
                trace_id: None,
            }),
        }
    }

    /// An error whose status and message may be shown to a remote caller
    /// (Genkit's `UserFacingError`), e.g. "user not found" or "quota exceeded".
    pub fn user_facing(status: StatusCode, message: impl Into<String>) -> Self {
        let mut e = Self::new(status, message);
        e.inner.user_facing = true;
        e
    }

    /// `INVALID_ARGUMENT`.
    pub fn invalid_argument(message: impl Into<String>) -> Self {
        Self::new(StatusCode::InvalidArgument, message)
    }

    /// `NOT_FOUND`.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NotFound, message)
    }

    /// `INTERNAL`.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::Internal, message)
    }

    /// `FAILED_PRECONDITION`.
    pub fn failed_precondition(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FailedPrecondition, message)
    }

    /// `CANCELLED` with Genkit's message for a cancelled action.
    pub fn cancelled() -> Self {
        Self::new(StatusCode::Cancelled, "Action was cancelled")
    }

    /// An error with `status` whose message is `source`'s text, keeping
    /// `source` as its [`source`](std::error::Error::source). Any error
    /// does, or a boxed one (as some libraries return theirs).
    pub fn from_source(
        status: StatusCode,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        let source = source.into();
        let mut e = Self::new(status, source.to_string());
        e.inner.source = Some(Arc::from(source));
        e
    }

    /// Attaches JSON details (`GenkitError.detail`), e.g. the response that caused it.
    pub fn with_details(mut self, details: Value) -> Self {
        self.inner.details = Some(details);
        self
    }

    /// Attaches a cause, returned by [`source`](std::error::Error::source).
    /// Neither the message nor the wire form change; a message that quotes
    /// the cause (`format!("reading x: {e}")`) is what callers see, and
    /// [`stack`](Self::stack) does not repeat it.
    ///
    /// Any error does, or a boxed one (as some libraries return theirs).
    pub fn with_source(
        mut self,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        self.inner.source = Some(Arc::from(source.into()));
        self
    }

    /// Attaches a typed value that in-process callers recognise with
    /// [`payload`](Self::payload), e.g. the interrupt a tool raised. It is
    /// not part of any wire form (message, details, stack).
    pub fn with_payload<T: Send + Sync + 'static>(mut self, payload: T) -> Self {
        self.inner.payload = Some(Arc::new(payload));
        self
    }

    /// The typed value attached with [`with_payload`](Self::with_payload),
    /// if it is a `T`.
    pub fn payload<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.inner.payload.as_deref()?.downcast_ref::<T>()
    }

    /// Marks this error as safe to show to remote callers.
    pub fn into_user_facing(mut self) -> Self {
        self.inner.user_facing = true;
        self
    }

    /// The canonical status.
    pub fn status(&self) -> StatusCode {
        self.inner.status
    }

    /// The message, without the status prefix.
    pub fn message(&self) -> &str {
        &self.inner.message
    }

    /// JSON details, if any.
    pub fn details(&self) -> Option<&Value> {
        self.inner.details.as_ref()
    }

    /// Whether status and message may be shown to remote callers.
    pub fn is_user_facing(&self) -> bool {
        self.inner.user_facing
    }

    /// The trace in which this error was raised, once an action recorded it.
    pub fn trace_id(&self) -> Option<&str> {
        self.inner.trace_id.as_deref()
    }

    /// A readable "stack": the message followed by its chain of causes. Rust
    /// has no cheap stack traces; the cause chain is what helps in the Dev UI.
    /// A cause whose text was already said (an error that quotes its source,
    /// as most do) is left out, so no sentence is repeated.
    pub fn stack(&self) -> String {
        let mut out = format!("{self}");
        let mut cur: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(self);
        while let Some(e) = cur {
            let text = e.to_string();
            if !out.contains(text.as_str()) {
                out.push_str("\n  caused by: ");
                out.push_str(&text);
            }
            cur = e.source();
        }
        out
    }

    /// The body the flow server sends for this error: status and message for
    /// user-facing errors, `INTERNAL` / `Internal Error` for anything else.
    pub fn to_public_json(&self) -> Value {
        if self.inner.user_facing {
            let mut m = serde_json::Map::new();
            m.insert("status".into(), Value::from(self.inner.status.name()));
            m.insert("message".into(), Value::from(self.inner.message.clone()));
            if let Some(d) = &self.inner.details {
                m.insert("details".into(), d.clone());
            }
            Value::Object(m)
        } else {
            serde_json::json!({"status": "INTERNAL", "message": "Internal Error"})
        }
    }

    /// The HTTP status for a remote caller: the status's mapping for
    /// user-facing errors, 500 otherwise.
    pub fn public_http_status(&self) -> u16 {
        if self.inner.user_facing {
            self.inner.status.http_status()
        } else {
            500
        }
    }

    pub(crate) fn take_failure_source(&mut self) -> bool {
        !std::mem::replace(&mut self.inner.failure_recorded, true)
    }

    pub(crate) fn set_trace_id_if_absent(&mut self, trace_id: impl FnOnce() -> String) {
        if self.inner.trace_id.is_none() {
            self.inner.trace_id = Some(trace_id());
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.inner.status, self.inner.message)
    }
}

/// `{:?}` reads like [`Error::stack`] (what `fn main() -> Result<(), Error>`
/// prints when it fails: the message, then its causes); `{:#?}` shows the
/// fields.
impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !f.alternate() {
            f.write_str(&self.stack())?;
            if let Some(details) = &self.inner.details {
                write!(f, "\n  details: {details}")?;
            }
            return Ok(());
        }
        let mut d = f.debug_struct("Error");
        d.field("status", &self.inner.status)
            .field("message", &self.inner.message);
        if let Some(details) = &self.inner.details {
            d.field("details", details);
        }
        if let Some(source) = &self.inner.source {
            d.field("source", source);
        }
        d.finish()
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.inner
            .source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

impl From<serde_json::Error> for Error {
    /// JSON (de)serialization failures inside the framework are internal errors.
    fn from(e: serde_json::Error) -> Self {
        Self::from_source(StatusCode::Internal, e)
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Self::from_source(StatusCode::Internal, e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_reads_as_the_message_and_its_causes() {
        let cause =
            std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "connection refused");
        let error = Error::new(StatusCode::Unavailable, "the model server did not answer")
            .with_source(cause)
            .with_details(serde_json::json!({"url": "http://127.0.0.1:1"}));
        assert_eq!(
            format!("{error:?}"),
            "UNAVAILABLE: the model server did not answer\n  caused by: connection refused\n  details: {\"url\":\"http://127.0.0.1:1\"}"
        );
        assert!(format!("{error:#?}").starts_with("Error {"));
    }

    #[test]
    fn typed_payload_is_found_by_type_and_stays_off_the_wire() {
        #[derive(Debug, PartialEq)]
        struct Marker(u8);
        let e = Error::new(StatusCode::Aborted, "paused").with_payload(Marker(3));
        assert_eq!(e.payload::<Marker>(), Some(&Marker(3)));
        assert_eq!(e.clone().payload::<Marker>(), Some(&Marker(3)));
        assert_eq!(e.payload::<String>(), None);
        assert_eq!(e.details(), None);
        assert_eq!(e.stack(), "ABORTED: paused");
    }

    #[test]
    fn internal_errors_do_not_leak() {
        let e = Error::new(StatusCode::Internal, "db password is hunter2");
        assert_eq!(e.public_http_status(), 500);
        assert_eq!(
            e.to_public_json(),
            serde_json::json!({"status":"INTERNAL","message":"Internal Error"})
        );
        let io = Error::from(std::io::Error::other("disk on fire"));
        assert!(!io.is_user_facing());
        assert!(io.stack().contains("disk on fire"));
    }

    #[test]
    fn a_stack_says_each_cause_once() {
        // The message quotes its source: the source is not repeated.
        let io = Error::from(std::io::Error::other("disk on fire"));
        assert_eq!(io.stack(), "INTERNAL: disk on fire");
        // A cause that adds something is kept.
        let wrapped = Error::new(StatusCode::Unavailable, "saving the session failed")
            .with_source(std::io::Error::other("disk on fire"));
        assert_eq!(
            wrapped.stack(),
            "UNAVAILABLE: saving the session failed\n  caused by: disk on fire"
        );
    }

    #[test]
    fn a_wrapped_error_is_the_source_and_leaves_the_text_alone() {
        use std::error::Error as _;
        let quoted = Error::invalid_argument("reading x: disk on fire")
            .with_source(std::io::Error::other("disk on fire"));
        let source = quoted.source().expect("a source");
        let io = source
            .downcast_ref::<std::io::Error>()
            .expect("the io error");
        assert_eq!(io.kind(), std::io::ErrorKind::Other);
        assert_eq!(
            quoted.to_string(),
            "INVALID_ARGUMENT: reading x: disk on fire"
        );
        assert_eq!(quoted.stack(), "INVALID_ARGUMENT: reading x: disk on fire");
        assert_eq!(
            quoted.to_public_json(),
            serde_json::json!({"status":"INTERNAL","message":"Internal Error"})
        );
        // A boxed error (as some libraries return) is the source as it is.
        let boxed: Box<dyn std::error::Error + Send + Sync> =
            Box::new(std::io::Error::other("no tokenizer"));
        let e = Error::from_source(StatusCode::FailedPrecondition, boxed);
        assert_eq!(e.to_string(), "FAILED_PRECONDITION: no tokenizer");
        assert!(
            e.source()
                .unwrap()
                .downcast_ref::<std::io::Error>()
                .is_some()
        );
    }

    #[test]
    fn user_facing_errors_show_status_and_message() {
        let e = Error::user_facing(StatusCode::PermissionDenied, "not yours");
        assert_eq!(e.public_http_status(), 403);
        assert_eq!(
            e.to_public_json(),
            serde_json::json!({"status":"PERMISSION_DENIED","message":"not yours"})
        );
        assert_eq!(e.to_string(), "PERMISSION_DENIED: not yours");
    }

    #[test]
    fn error_is_small() {
        assert_eq!(std::mem::size_of::<Error>(), std::mem::size_of::<usize>());
    }
}
