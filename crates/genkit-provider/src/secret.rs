//! [`ApiKey`]: a credential that never shows up in `Debug` output, logs,
//! traces or error messages.

use reqwest::header::HeaderValue;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::fmt;

/// An API key. Its `Debug` output is `ApiKey(<redacted>)` and it has no
/// `Display`; the key itself is read with [`ApiKey::expose`] or turned into
/// a header value marked sensitive. It (de)serializes as a plain string, so
/// it can sit in a request config.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct ApiKey(String);

/// An API key holds characters that cannot go in an HTTP header. Its message
/// never repeats the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the API key holds characters that cannot be sent in an HTTP header")]
pub struct InvalidKeyHeader;

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// The key in the environment variable `var`, trimmed; `None` when it is
    /// unset, blank or not UTF-8.
    pub fn from_env(var: &str) -> Option<Self> {
        Self::from_env_vars(&[var])
    }

    /// The first non-blank key among the environment variables `vars`, in
    /// order.
    pub fn from_env_vars(vars: &[&str]) -> Option<Self> {
        Self::from_lookup(vars, |name| std::env::var(name).ok())
    }

    /// The first non-blank value `lookup` gives for `vars`, in order, trimmed.
    pub fn from_lookup(vars: &[&str], lookup: impl Fn(&str) -> Option<String>) -> Option<Self> {
        vars.iter()
            .filter_map(|name| lookup(name))
            .find(|v| !v.trim().is_empty())
            .map(|v| Self::new(v.trim()))
    }

    /// The key itself. Never log it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The key as a header value (`x-api-key: <key>` style), marked
    /// sensitive so HTTP-level logging hides it.
    pub fn header_value(&self) -> Result<HeaderValue, InvalidKeyHeader> {
        sensitive(HeaderValue::from_str(&self.0))
    }

    /// `Bearer <key>`, for an `Authorization` header, marked sensitive.
    pub fn bearer_header_value(&self) -> Result<HeaderValue, InvalidKeyHeader> {
        sensitive(HeaderValue::try_from(format!("Bearer {}", self.0)))
    }
}

fn sensitive<E>(value: Result<HeaderValue, E>) -> Result<HeaderValue, InvalidKeyHeader> {
    let mut value = value.map_err(|_| InvalidKeyHeader)?;
    value.set_sensitive(true);
    Ok(value)
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
        assert!(!format!("{:?}", Some(key)).contains("sk-very-secret"));
    }

    #[test]
    fn serde_is_a_plain_string() {
        let key: ApiKey = serde_json::from_str("\"sk-1\"").unwrap();
        assert_eq!(key.expose(), "sk-1");
        assert_eq!(serde_json::to_string(&key).unwrap(), "\"sk-1\"");
        let schema = serde_json::to_value(schemars::schema_for!(ApiKey)).unwrap();
        assert_eq!(schema["type"], "string");
    }

    #[test]
    fn lookup_order_trims_and_skips_blank_values() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                vars.iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| (*v).to_owned())
            }
        };
        let vars = ["A_KEY", "B_KEY"];
        let both = ApiKey::from_lookup(&vars, env(&[("B_KEY", "b"), ("A_KEY", " a ")]));
        assert_eq!(both, Some(ApiKey::new("a")));
        let blank = ApiKey::from_lookup(&vars, env(&[("A_KEY", "  "), ("B_KEY", "b")]));
        assert_eq!(blank, Some(ApiKey::new("b")));
        assert_eq!(ApiKey::from_lookup(&vars, env(&[])), None);
        assert_eq!(
            ApiKey::from_env("GENKIT_PROVIDER_TEST_SURELY_UNSET_VAR"),
            None
        );
    }

    #[test]
    fn header_values_are_sensitive_and_errors_do_not_echo_the_key() {
        let key = ApiKey::new("sk-secret");
        let plain = key.header_value().unwrap();
        assert!(plain.is_sensitive());
        assert_eq!(plain.to_str().unwrap(), "sk-secret");
        let bearer = key.bearer_header_value().unwrap();
        assert!(bearer.is_sensitive());
        assert_eq!(bearer.to_str().unwrap(), "Bearer sk-secret");
        let err = ApiKey::new("sk-bad\nkey").header_value().unwrap_err();
        assert!(!err.to_string().contains("sk-bad"));
        assert!(ApiKey::new("sk\r\n").bearer_header_value().is_err());
    }
}
