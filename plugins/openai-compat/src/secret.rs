//! [`ApiKey`]: a credential that never shows up in `Debug`, `Display`,
//! logs, traces or error messages.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::fmt;

/// An API key. Its `Debug` output is `ApiKey(<redacted>)`; the only way to
/// read it is [`ApiKey::expose`], used when building the `Authorization`
/// header (which is itself marked sensitive).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// Reads the key from the environment variable `var`; `None` when it is
    /// unset, empty or not UTF-8.
    pub fn from_env(var: &str) -> Option<Self> {
        std::env::var(var)
            .ok()
            .filter(|k| !k.trim().is_empty())
            .map(|k| Self::new(k.trim()))
    }

    /// The key itself. Never log it.
    pub fn expose(&self) -> &str {
        &self.0
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
        let key = ApiKey::new("sk-very-secret");
        assert_eq!(format!("{key:?}"), "ApiKey(<redacted>)");
        assert_eq!(key.expose(), "sk-very-secret");
        let wrapped = Some(key);
        assert!(!format!("{wrapped:?}").contains("sk-very-secret"));
    }

    #[test]
    fn serde_is_a_plain_string() {
        let key: ApiKey = serde_json::from_str("\"sk-1\"").unwrap();
        assert_eq!(key.expose(), "sk-1");
        assert_eq!(serde_json::to_string(&key).unwrap(), "\"sk-1\"");
    }
}
