//! Who a server-managed session belongs to.
//!
//! A **principal** is the caller a request speaks for, derived from the
//! running action's context (its `auth`, as a context provider or the
//! caller set it) by the agent's [`PrincipalFn`] (default:
//! [`default_principal`]). `None` is an anonymous caller.
//!
//! When a session is created (its first snapshot appended) the runtime
//! records its owner in the store under [`OWNER_EFFECT_KEY`] with
//! [`SessionStore::record_effect`]: the first record wins, so two requests
//! creating one session id race safely. Resuming a session (by session or
//! snapshot id), reading its snapshots and aborting its turns then require
//! the caller to be its owner; anyone else gets exactly the answer an
//! unknown id gets (`NOT_FOUND`, or no status for an abort), so session and
//! snapshot ids cannot be probed.
//!
//! A session stored before owners were recorded (no owner record) is
//! treated as owned by the anonymous principal: callers without auth keep
//! using it, an authenticated caller cannot claim it.

use std::sync::Arc;

use genkit_core::{ActionContext, Result};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::store::SessionStore;

/// The effect key a session's owner is recorded under.
pub const OWNER_EFFECT_KEY: &str = "genkit:owner";

/// Derives the principal a request speaks for from its action context
/// (`None`: anonymous).
pub type PrincipalFn = Arc<dyn Fn(&ActionContext) -> Option<String> + Send + Sync>;

/// The default principal: the context's `auth` value (absent or `null`:
/// anonymous), written as canonical JSON (object keys sorted) and hashed
/// with SHA-256 (`auth:sha256:<hex>`), so equal auth values give equal
/// principals and no credential an `auth` value may hold (an API key, a
/// token) is written to the store.
pub fn default_principal(context: &ActionContext) -> Option<String> {
    let auth = context.auth().filter(|a| !a.is_null())?;
    // Object keys sorted: equal auth values hash alike.
    let canonical = genkit_model::canonical::canonical_json(auth);
    let digest = Sha256::digest(canonical.as_bytes());
    let mut principal = String::with_capacity(12 + 64);
    principal.push_str("auth:sha256:");
    for byte in digest {
        principal.push_str(&format!("{byte:02x}"));
    }
    Some(principal)
}

/// The owner record of a principal.
fn record_of(principal: Option<&str>) -> Value {
    json!({ "principal": principal })
}

/// The principal an owner record names (`None`: anonymous).
fn principal_in(record: &Value) -> Option<&str> {
    record.get("principal").and_then(Value::as_str)
}

/// Records `principal` as the owner of a session being created, unless an
/// owner is recorded already; whether the session is `principal`'s.
pub(crate) async fn claim(
    store: &Arc<dyn SessionStore>,
    session_id: &str,
    principal: Option<&str>,
) -> Result<bool> {
    let recorded = store
        .record_effect(session_id, OWNER_EFFECT_KEY, record_of(principal))
        .await?;
    Ok(principal_in(&recorded) == principal)
}

/// Whether `principal` may use the session: it is the recorded owner, or
/// the session has no owner record (stored before owners were recorded, or
/// not created yet) and the caller is anonymous.
pub(crate) async fn may_use(
    store: &Arc<dyn SessionStore>,
    session_id: &str,
    principal: Option<&str>,
) -> Result<bool> {
    Ok(owned_by(store, session_id, principal)
        .await?
        .unwrap_or(principal.is_none()))
}

/// Whether the session's recorded owner is `principal` (`None`: no owner
/// is recorded).
pub(crate) async fn owned_by(
    store: &Arc<dyn SessionStore>,
    session_id: &str,
    principal: Option<&str>,
) -> Result<Option<bool>> {
    let record = store.effect(session_id, OWNER_EFFECT_KEY).await?;
    Ok(record.map(|r| principal_in(&r) == principal))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn principals_ignore_key_order_and_hide_the_auth_value() {
        let a = ActionContext::new()
            .with_auth(json!({"uid": "u1", "apiKey": "secret", "n": [1, {"b": 1, "a": 2}]}));
        let b = ActionContext::new()
            .with_auth(json!({"n": [1, {"a": 2, "b": 1}], "apiKey": "secret", "uid": "u1"}));
        let p = default_principal(&a).unwrap();
        assert_eq!(Some(p.clone()), default_principal(&b));
        assert!(p.starts_with("auth:sha256:") && p.len() == 12 + 64, "{p}");
        assert!(!p.contains("secret"));
        let other = ActionContext::new().with_auth(json!({"uid": "u2", "apiKey": "secret"}));
        assert_ne!(default_principal(&other), Some(p));
        assert_eq!(default_principal(&ActionContext::new()), None);
        assert_eq!(
            default_principal(&ActionContext::new().with_auth(Value::Null)),
            None
        );
    }
}
