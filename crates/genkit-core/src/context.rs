//! Per-request data (auth and anything else) that reaches an action's body and
//! every action it calls.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::sync::Arc;

/// The action context: a JSON object such as `{"auth": {...}}`, set by a
/// context provider (HTTP server) or by the caller, and inherited by nested
/// action runs. Cloning is cheap (shared).
#[derive(Clone, Default, PartialEq)]
pub struct ActionContext(Option<Arc<Map<String, Value>>>);

impl ActionContext {
    /// An empty context.
    pub fn new() -> Self {
        Self(None)
    }

    /// A context holding the given fields.
    pub fn from_map(map: Map<String, Value>) -> Self {
        if map.is_empty() {
            Self(None)
        } else {
            Self(Some(Arc::new(map)))
        }
    }

    /// A context from a JSON value; anything but an object gives an empty context.
    pub fn from_value(value: Value) -> Self {
        match value {
            Value::Object(map) => Self::from_map(map),
            _ => Self(None),
        }
    }

    /// Returns a copy with `key` set to `value`.
    pub fn with(&self, key: impl Into<String>, value: Value) -> Self {
        let mut map = self.0.as_deref().cloned().unwrap_or_default();
        map.insert(key.into(), value);
        Self(Some(Arc::new(map)))
    }

    /// Returns a copy with `auth` set.
    pub fn with_auth(&self, auth: Value) -> Self {
        self.with("auth", auth)
    }

    /// The `auth` field, if set.
    pub fn auth(&self) -> Option<&Value> {
        self.get("auth")
    }

    /// Any field.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.as_deref().and_then(|m| m.get(key))
    }

    /// Whether the context holds no field.
    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    /// The fields.
    pub fn as_map(&self) -> Option<&Map<String, Value>> {
        self.0.as_deref()
    }

    /// The context as JSON (an object, possibly empty).
    pub fn to_value(&self) -> Value {
        Value::Object(self.0.as_deref().cloned().unwrap_or_default())
    }

    /// The context as recorded in traces: `auth` and `secrets` are redacted,
    /// as Genkit does.
    pub fn redacted_json(&self) -> Option<String> {
        let map = self.0.as_deref()?;
        let mut copy = map.clone();
        for key in ["auth", "secrets"] {
            if let Some(v) = copy.get_mut(key) {
                *v = Value::from("<redacted>");
            }
        }
        serde_json::to_string(&copy).ok()
    }

    /// Merges `other` over `self` (fields of `other` win).
    pub fn merged(&self, other: &ActionContext) -> ActionContext {
        match (&self.0, &other.0) {
            (_, None) => self.clone(),
            (None, Some(_)) => other.clone(),
            (Some(a), Some(b)) => {
                let mut m = (**a).clone();
                for (k, v) in b.iter() {
                    m.insert(k.clone(), v.clone());
                }
                Self(Some(Arc::new(m)))
            }
        }
    }
}

impl std::fmt::Debug for ActionContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print auth material in logs.
        f.write_str(self.redacted_json().as_deref().unwrap_or("{}"))
    }
}

impl Serialize for ActionContext {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            Some(m) => m.serialize(s),
            None => Map::new().serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for ActionContext {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Self::from_map(Map::deserialize(d)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn redacts_auth_and_secrets() {
        let ctx = ActionContext::from_value(json!({"auth": {"uid": "u1"}, "secrets": 1, "x": 2}));
        let red: Value = serde_json::from_str(&ctx.redacted_json().unwrap()).unwrap();
        assert_eq!(
            red,
            json!({"auth": "<redacted>", "secrets": "<redacted>", "x": 2})
        );
        assert!(!format!("{ctx:?}").contains("u1"));
    }

    #[test]
    fn merge_and_with() {
        let a = ActionContext::from_value(json!({"a": 1, "b": 1}));
        let b = ActionContext::from_value(json!({"b": 2}));
        assert_eq!(a.merged(&b).to_value(), json!({"a": 1, "b": 2}));
        assert_eq!(a.with_auth(json!("k")).auth(), Some(&json!("k")));
        assert!(ActionContext::new().is_empty());
    }
}
