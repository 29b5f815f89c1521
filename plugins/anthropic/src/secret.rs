//! [`ApiKey`]: the Anthropic API key, kept out of every `Debug`, log and
//! error.

use reqwest::header::HeaderValue;
use std::fmt;
use std::sync::Arc;

use crate::error::AnthropicError;

/// The environment variable read for the API key.
pub const API_KEY_ENV_VAR: &str = "ANTHROPIC_API_KEY";

/// A secret API key. Its `Debug` output is redacted and it has no `Display`,
/// so it cannot end up in logs, traces or error messages by accident.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(Arc<str>);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        Self(Arc::from(key.into()))
    }

    /// The key from `ANTHROPIC_API_KEY`, if set and not blank.
    pub(crate) fn from_env() -> Option<Self> {
        std::env::var(API_KEY_ENV_VAR)
            .ok()
            .filter(|v| !v.trim().is_empty())
            .map(|v| Self::new(v.trim()))
    }

    /// The key as a header value marked sensitive.
    pub(crate) fn header_value(&self) -> Result<HeaderValue, AnthropicError> {
        let mut value = HeaderValue::from_str(&self.0).map_err(|_| {
            AnthropicError::InvalidRequest(
                "the API key holds characters that cannot be sent in an HTTP header".into(),
            )
        })?;
        value.set_sensitive(true);
        Ok(value)
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

impl From<&str> for ApiKey {
    fn from(key: &str) -> Self {
        Self::new(key)
    }
}

impl From<String> for ApiKey {
    fn from(key: String) -> Self {
        Self::new(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_is_redacted_and_the_header_is_sensitive() {
        let key = ApiKey::new("sk-ant-secret");
        assert_eq!(format!("{key:?}"), "ApiKey(<redacted>)");
        assert!(key.header_value().is_ok_and(|v| v.is_sensitive()));
        let err = ApiKey::new("sk-ant\nx").header_value().unwrap_err();
        assert!(!err.to_string().contains("sk-ant"));
    }
}
