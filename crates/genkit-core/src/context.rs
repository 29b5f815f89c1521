//! What a run carries to its body and to every action it calls: the JSON
//! request data ([`ActionContext`], Genkit's `context`, e.g. auth) and typed
//! Rust values ([`Extensions`], e.g. the current session).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::any::{Any, TypeId};
use std::collections::HashMap;
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

type ExtensionMap = HashMap<TypeId, (&'static str, Arc<dyn Any + Send + Sync>)>;

/// Typed values a run carries besides its JSON context, one per type, and
/// inherited by every action it calls: the slot where the framework or an app
/// puts Rust objects a body needs (the current session, a database pool, a
/// request-scoped cache) without cloning them into closures.
///
/// Set them with [`RunOptions::extension`](crate::RunOptions::extension) or
/// [`with_extension`](crate::tracing::with_extension); read them with
/// [`ActionCtx::extension`](crate::ActionCtx::extension). Cheap to clone
/// (shared, copy on write).
#[derive(Clone, Default)]
pub struct Extensions(Option<Arc<ExtensionMap>>);

impl Extensions {
    /// No extension.
    pub fn new() -> Self {
        Self(None)
    }

    /// Sets the value of type `T`, replacing any previous one.
    pub fn insert<T: Send + Sync + 'static>(&mut self, value: T) {
        self.insert_arc(Arc::new(value));
    }

    /// Sets the value of type `T` from a shared pointer.
    pub fn insert_arc<T: Send + Sync + 'static>(&mut self, value: Arc<T>) {
        let map = Arc::make_mut(self.0.get_or_insert_with(Default::default));
        map.insert(TypeId::of::<T>(), (std::any::type_name::<T>(), value));
    }

    /// Returns a copy with the value of type `T` set.
    pub fn with<T: Send + Sync + 'static>(&self, value: T) -> Self {
        let mut copy = self.clone();
        copy.insert(value);
        copy
    }

    /// The value of type `T`, if set.
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.0
            .as_deref()?
            .get(&TypeId::of::<T>())
            .and_then(|(_, v)| v.downcast_ref::<T>())
    }

    /// The value of type `T` as a shared pointer, to keep past the run.
    pub fn get_arc<T: Send + Sync + 'static>(&self) -> Option<Arc<T>> {
        let (_, value) = self.0.as_deref()?.get(&TypeId::of::<T>())?;
        value.clone().downcast::<T>().ok()
    }

    /// Whether no value is set.
    pub fn is_empty(&self) -> bool {
        self.0.as_deref().is_none_or(HashMap::is_empty)
    }

    /// `other`'s values over `self`'s (`other` wins for a type both hold).
    pub fn merged(&self, other: &Extensions) -> Extensions {
        match (&self.0, &other.0) {
            (_, None) => self.clone(),
            (None, Some(_)) => other.clone(),
            (Some(a), Some(b)) => {
                let mut map = (**a).clone();
                map.extend(b.iter().map(|(k, v)| (*k, v.clone())));
                Self(Some(Arc::new(map)))
            }
        }
    }
}

/// What the caller of a run holds for as long as work the run started goes
/// on, carried as an [`Extensions`] value. A body that hands work to a task
/// of its own, to finish after the run returns (an agent's detached turn),
/// keeps [`RunLease::current`] in that task until the work ends. The flow
/// server puts its concurrency permit here, so that work counts against
/// the server's limit like the request that started it.
#[derive(Clone)]
pub struct RunLease {
    _held: Arc<dyn Any + Send + Sync>,
}

impl RunLease {
    /// A lease holding `held` until its last clone is dropped.
    pub fn new<T: Send + Sync + 'static>(held: T) -> Self {
        Self {
            _held: Arc::new(held),
        }
    }

    /// The running action's lease, if its caller gave one.
    pub fn current() -> Option<RunLease> {
        crate::tracing::current_extensions()
            .get::<RunLease>()
            .cloned()
    }
}

impl std::fmt::Debug for RunLease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RunLease")
    }
}

impl std::fmt::Debug for Extensions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The values need not be Debug: list their types.
        let mut names: Vec<&str> = self
            .0
            .as_deref()
            .map(|m| m.values().map(|(name, _)| *name).collect())
            .unwrap_or_default();
        names.sort_unstable();
        f.debug_set().entries(names).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Debug, PartialEq)]
    struct Session(&'static str);

    #[test]
    fn extensions_are_typed_and_copy_on_write() {
        let base = Extensions::new().with(Session("s1")).with(7u32);
        let over = base.with(Session("s2"));
        assert_eq!(base.get::<Session>(), Some(&Session("s1")));
        assert_eq!(over.get::<Session>(), Some(&Session("s2")));
        assert_eq!(over.get::<u32>(), Some(&7));
        assert_eq!(over.get::<String>(), None);
        let merged = Extensions::new().with(1u8).merged(&base);
        assert_eq!(merged.get::<u8>(), Some(&1));
        assert_eq!(merged.get_arc::<Session>().as_deref(), Some(&Session("s1")));
        assert!(Extensions::new().is_empty());
        assert!(format!("{base:?}").contains("Session"));
    }

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
