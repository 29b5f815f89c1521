//! Canonical status codes, shared by Genkit, gRPC and Google APIs.
//!
//! Every error in the framework carries one of these. The numeric code is what
//! the Reflection API reports (`{"error":{"code":3,...}}`), the name is what the
//! flow server reports (`{"status":"INVALID_ARGUMENT",...}`), and the HTTP status
//! is what the flow server answers with.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// A canonical status, with its gRPC number, its upper-snake name and an HTTP mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum StatusCode {
    /// Not an error.
    Ok = 0,
    /// The operation was cancelled, typically by the caller.
    Cancelled = 1,
    /// Unknown error.
    Unknown = 2,
    /// The client specified an invalid argument.
    InvalidArgument = 3,
    /// The deadline expired before the operation could complete.
    DeadlineExceeded = 4,
    /// Some requested entity was not found.
    NotFound = 5,
    /// The entity that a client attempted to create already exists.
    AlreadyExists = 6,
    /// The caller does not have permission to execute the operation.
    PermissionDenied = 7,
    /// Some resource has been exhausted (quota, rate limit).
    ResourceExhausted = 8,
    /// The system is not in a state required for the operation's execution.
    FailedPrecondition = 9,
    /// The operation was aborted (concurrency issue, or a loop limit was hit).
    Aborted = 10,
    /// The operation was attempted past the valid range.
    OutOfRange = 11,
    /// The operation is not implemented or supported.
    Unimplemented = 12,
    /// An internal invariant was broken.
    Internal = 13,
    /// The service is currently unavailable; retrying may help.
    Unavailable = 14,
    /// Unrecoverable data loss or corruption.
    DataLoss = 15,
    /// The request does not have valid authentication credentials.
    Unauthenticated = 16,
}

const ALL: [StatusCode; 17] = [
    StatusCode::Ok,
    StatusCode::Cancelled,
    StatusCode::Unknown,
    StatusCode::InvalidArgument,
    StatusCode::DeadlineExceeded,
    StatusCode::NotFound,
    StatusCode::AlreadyExists,
    StatusCode::PermissionDenied,
    StatusCode::ResourceExhausted,
    StatusCode::FailedPrecondition,
    StatusCode::Aborted,
    StatusCode::OutOfRange,
    StatusCode::Unimplemented,
    StatusCode::Internal,
    StatusCode::Unavailable,
    StatusCode::DataLoss,
    StatusCode::Unauthenticated,
];

impl StatusCode {
    /// Every status, in numeric order.
    pub fn all() -> &'static [StatusCode] {
        &ALL
    }

    /// The gRPC numeric code (`INVALID_ARGUMENT` is 3).
    pub fn code(self) -> u16 {
        self as u16
    }

    /// The canonical upper-snake name (`"INVALID_ARGUMENT"`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Ok => "OK",
            Self::Cancelled => "CANCELLED",
            Self::Unknown => "UNKNOWN",
            Self::InvalidArgument => "INVALID_ARGUMENT",
            Self::DeadlineExceeded => "DEADLINE_EXCEEDED",
            Self::NotFound => "NOT_FOUND",
            Self::AlreadyExists => "ALREADY_EXISTS",
            Self::PermissionDenied => "PERMISSION_DENIED",
            Self::ResourceExhausted => "RESOURCE_EXHAUSTED",
            Self::FailedPrecondition => "FAILED_PRECONDITION",
            Self::Aborted => "ABORTED",
            Self::OutOfRange => "OUT_OF_RANGE",
            Self::Unimplemented => "UNIMPLEMENTED",
            Self::Internal => "INTERNAL",
            Self::Unavailable => "UNAVAILABLE",
            Self::DataLoss => "DATA_LOSS",
            Self::Unauthenticated => "UNAUTHENTICATED",
        }
    }

    /// The HTTP status Genkit's servers answer with for this status.
    pub fn http_status(self) -> u16 {
        match self {
            Self::Ok => 200,
            Self::Cancelled => 499,
            Self::Unknown => 500,
            Self::InvalidArgument => 400,
            Self::DeadlineExceeded => 504,
            Self::NotFound => 404,
            Self::AlreadyExists => 409,
            Self::PermissionDenied => 403,
            Self::ResourceExhausted => 429,
            Self::FailedPrecondition => 400,
            Self::Aborted => 409,
            Self::OutOfRange => 400,
            Self::Unimplemented => 501,
            Self::Internal => 500,
            Self::Unavailable => 503,
            Self::DataLoss => 500,
            Self::Unauthenticated => 401,
        }
    }

    /// Parses a canonical name (`"NOT_FOUND"`).
    pub fn from_name(name: &str) -> Option<Self> {
        ALL.iter().copied().find(|s| s.name() == name)
    }

    /// Looks up a status by its gRPC number.
    pub fn from_code(code: u16) -> Option<Self> {
        ALL.get(usize::from(code)).copied()
    }

    /// The status a remote peer's HTTP status most likely means (used by model
    /// providers mapping API errors).
    pub fn from_http_status(status: u16) -> Self {
        match status {
            200..=299 => Self::Ok,
            400 => Self::InvalidArgument,
            401 => Self::Unauthenticated,
            403 => Self::PermissionDenied,
            404 => Self::NotFound,
            408 => Self::DeadlineExceeded,
            409 => Self::Aborted,
            429 => Self::ResourceExhausted,
            499 => Self::Cancelled,
            501 => Self::Unimplemented,
            503 => Self::Unavailable,
            504 => Self::DeadlineExceeded,
            500..=599 => Self::Unavailable,
            _ => Self::Unknown,
        }
    }

    /// Whether retrying the same request may succeed (used by the retry middleware).
    pub fn is_retryable(self) -> bool {
        matches!(
            self,
            Self::Unavailable
                | Self::DeadlineExceeded
                | Self::ResourceExhausted
                | Self::Aborted
                | Self::Internal
        )
    }
}

impl fmt::Display for StatusCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for StatusCode {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for StatusCode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        Self::from_name(&name)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown status `{name}`")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_names_and_http_round_trip() {
        for (i, s) in StatusCode::all().iter().enumerate() {
            assert_eq!(usize::from(s.code()), i);
            assert_eq!(StatusCode::from_name(s.name()), Some(*s));
            assert_eq!(StatusCode::from_code(s.code()), Some(*s));
        }
        assert_eq!(StatusCode::InvalidArgument.code(), 3);
        assert_eq!(StatusCode::Aborted.code(), 10);
        assert_eq!(StatusCode::Unauthenticated.http_status(), 401);
        assert_eq!(StatusCode::PermissionDenied.http_status(), 403);
        assert_eq!(StatusCode::ResourceExhausted.http_status(), 429);
        assert_eq!(StatusCode::Internal.http_status(), 500);
        assert_eq!(StatusCode::from_code(17), None);
        assert_eq!(StatusCode::from_name("nope"), None);
    }

    #[test]
    fn serde_uses_names() {
        let json = serde_json::to_string(&StatusCode::NotFound).unwrap();
        assert_eq!(json, "\"NOT_FOUND\"");
        let back: StatusCode = serde_json::from_str(&json).unwrap();
        assert_eq!(back, StatusCode::NotFound);
        assert!(serde_json::from_str::<StatusCode>("\"BOGUS\"").is_err());
    }
}
