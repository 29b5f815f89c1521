//! [`ApiKey`]: the Gemini API key, kept out of every `Debug`, log and error.

use reqwest::header::HeaderValue;
use std::fmt;
use std::sync::Arc;

use crate::error::GeminiError;

/// The environment variables read for the API key, in order.
pub const API_KEY_ENV_VARS: [&str; 3] =
    ["GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_API_KEY"];

/// A secret API key. Its `Debug` output is redacted and it has no `Display`,
/// so it cannot end up in logs, traces or error messages by accident.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(Arc<str>);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        Self(Arc::from(key.into()))
    }

    /// The first non-empty key among `GEMINI_API_KEY`, `GOOGLE_API_KEY` and
    /// `GOOGLE_GENAI_API_KEY`, looked up with `lookup`.
    pub(crate) fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Option<Self> {
        API_KEY_ENV_VARS
            .iter()
            .filter_map(|name| lookup(name))
            .find(|v| !v.trim().is_empty())
            .map(|v| Self::new(v.trim()))
    }

    /// The key from the process environment.
    pub(crate) fn from_env() -> Option<Self> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// The key as a header value marked sensitive (hidden from HTTP-level
    /// debug logging).
    pub(crate) fn header_value(&self) -> Result<HeaderValue, GeminiError> {
        let mut value = HeaderValue::from_str(&self.0).map_err(|_| {
            GeminiError::InvalidRequest(
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
    fn debug_is_redacted() {
        let key = ApiKey::new("AIza-very-secret");
        assert_eq!(format!("{key:?}"), "ApiKey(<redacted>)");
        assert!(key.header_value().is_ok_and(|v| v.is_sensitive()));
    }

    #[test]
    fn env_lookup_order_and_blank_values() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                vars.iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| (*v).to_owned())
            }
        };
        let both = ApiKey::from_lookup(env(&[("GOOGLE_API_KEY", "g"), ("GEMINI_API_KEY", "m")]));
        assert_eq!(both, Some(ApiKey::new("m")));
        let blank = ApiKey::from_lookup(env(&[("GEMINI_API_KEY", "  "), ("GOOGLE_API_KEY", "g")]));
        assert_eq!(blank, Some(ApiKey::new("g")));
        assert_eq!(ApiKey::from_lookup(env(&[])), None);
    }

    #[test]
    fn header_rejects_newlines_without_echoing_the_key() {
        let err = ApiKey::new("abc\ndef").header_value().unwrap_err();
        assert!(!err.to_string().contains("abc"));
    }
}
