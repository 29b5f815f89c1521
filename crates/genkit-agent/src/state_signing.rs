//! Signed state for client-managed agents.
//!
//! A client-managed agent (no store) keeps nothing on the server: the client
//! holds the whole [`SessionState`] and sends it back with each invocation.
//! That is its trust boundary: without more, a client can rewrite the
//! history (put words in the model's mouth, invent interrupts and tool
//! results) or the custom state at will, and the runtime's input checks only
//! cover the new input, not the state. An agent whose state must not be
//! forged sets [`AgentOptions::state_signing_key`]: every state the runtime
//! returns is signed (HMAC-SHA256 with the server's key over the state's
//! canonical JSON), and a state sent back must carry a valid signature, so a
//! client can only continue states the server issued (it can still replay
//! an older one it was given: the key proves origin, not freshness).
//!
//! The wire schema leaves no field for the signature (`SessionState` and
//! `AgentInit` admit no additional properties), so it rides in metadata the
//! schema allows: `metadata.stateSignature` of the state's last message, or,
//! for a state without messages, of its last artifact. It is removed before
//! the state reaches the turn, and a client's message may not carry the key.
//! A state with neither messages nor artifacts is accepted unsigned only
//! when it has no custom state either: it is then a fresh session (which any
//! client may start), and holds nothing to forge.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use genkit_core::{Error, Result, StatusCode};
use hmac::{Hmac, Mac};
use serde_json::{Map, Value};
use sha2::Sha256;

use super::runtime::AgentOptions;
use super::types::SessionState;

/// The metadata key carrying a client-managed state's signature (see the
/// module docs).
pub const STATE_SIGNATURE_KEY: &str = "stateSignature";

/// The signature's prefix, naming the algorithm.
const SCHEME: &str = "hmac-sha256:";

/// Signs and verifies client-managed states with a server key.
#[derive(Clone)]
pub(crate) struct StateSigner {
    key: Vec<u8>,
}

impl std::fmt::Debug for StateSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StateSigner(<key>)")
    }
}

impl AgentOptions {
    /// Signs the state a client-managed agent returns with HMAC-SHA256 under
    /// `key` (keep it secret, at least 32 random bytes), and refuses a state
    /// sent back without a valid signature (`PERMISSION_DENIED`). See
    /// [`state_signing`](super::state_signing) for where the signature
    /// travels. Has no effect on agents with a store (their state never
    /// leaves the server).
    pub fn state_signing_key(mut self, key: impl Into<Vec<u8>>) -> Self {
        self.signer = Some(StateSigner { key: key.into() });
        self
    }
}

/// Where the signature of `state` travels: the last message's metadata, or
/// the last artifact's.
fn carrier(state: &mut Value) -> Option<&mut Value> {
    let object = state.as_object_mut()?;
    let has_messages = object
        .get("messages")
        .and_then(Value::as_array)
        .is_some_and(|m| !m.is_empty());
    let list = if has_messages {
        "messages"
    } else {
        "artifacts"
    };
    object.get_mut(list)?.as_array_mut()?.last_mut()
}

/// Removes the signature from `state`'s carrier (dropping metadata it
/// leaves empty) and returns it.
fn take_signature(state: &mut Value) -> Option<Value> {
    let item = carrier(state)?.as_object_mut()?;
    let meta = item.get_mut("metadata")?.as_object_mut()?;
    let signature = meta.remove(STATE_SIGNATURE_KEY);
    if meta.is_empty() {
        item.remove("metadata");
    }
    signature
}

impl StateSigner {
    fn mac(&self, unsigned: &Value) -> Result<Hmac<Sha256>> {
        // Object keys sorted: the MAC does not depend on key order.
        let text = genkit_model::canonical::canonical_json(unsigned);
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.key)
            .map_err(|e| Error::internal(format!("state signing key: {e}")).with_source(e))?;
        mac.update(text.as_bytes());
        Ok(mac)
    }

    /// `state` with its signature in its carrier (unchanged when it has no
    /// carrier: such a state verifies only without custom state).
    pub(crate) fn sign(&self, state: SessionState) -> Result<SessionState> {
        let mut value = serde_json::to_value(&state)?;
        take_signature(&mut value);
        let tag = self.mac(&value)?.finalize().into_bytes();
        let Some(item) = carrier(&mut value).and_then(Value::as_object_mut) else {
            return Ok(state);
        };
        let meta = item
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(meta) = meta.as_object_mut() {
            meta.insert(
                STATE_SIGNATURE_KEY.into(),
                Value::from(format!("{SCHEME}{}", URL_SAFE_NO_PAD.encode(tag))),
            );
        }
        Ok(serde_json::from_value(value)?)
    }

    /// The state a client sent back, its signature checked and removed.
    pub(crate) fn verify(&self, state: SessionState) -> Result<SessionState> {
        let denied = |why: &str| {
            Error::user_facing(
                StatusCode::PermissionDenied,
                format!(
                    "agent init `state` {why}; send back the state this agent returned, unchanged"
                ),
            )
        };
        let mut value = serde_json::to_value(&state)?;
        let has_carrier = carrier(&mut value).is_some();
        let Some(signature) = take_signature(&mut value) else {
            if !has_carrier && state.custom.is_none() {
                return Ok(state); // a fresh session: nothing to forge
            }
            return Err(denied("is not signed by this server"));
        };
        let tag = signature
            .as_str()
            .and_then(|s| s.strip_prefix(SCHEME))
            .and_then(|s| URL_SAFE_NO_PAD.decode(s).ok())
            .ok_or_else(|| denied("has a malformed signature"))?;
        self.mac(&value)?
            .verify_slice(&tag)
            .map_err(|_| denied("does not match its signature (it was changed)"))?;
        Ok(serde_json::from_value(value)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use genkit_model::types::Message;
    use serde_json::json;

    fn signer() -> StateSigner {
        StateSigner {
            key: b"0123456789abcdef0123456789abcdef".to_vec(),
        }
    }

    fn state(messages: Vec<Message>) -> SessionState {
        SessionState {
            session_id: Some("s1".into()),
            messages: Some(std::sync::Arc::new(messages)),
            custom: Some(json!({"b": 1, "a": [1, 2]})),
            artifacts: Some(Vec::new()),
        }
    }

    #[test]
    fn a_signed_state_verifies_and_a_changed_one_does_not() {
        let original = state(vec![Message::user("hi"), Message::model("hello")]);
        let signed = signer().sign(original.clone()).unwrap();
        let sig = signed.messages()[1].metadata_value(STATE_SIGNATURE_KEY);
        assert!(
            sig.and_then(Value::as_str)
                .is_some_and(|s| s.starts_with(SCHEME))
        );
        assert_eq!(signer().verify(signed.clone()).unwrap(), original);

        let mut forged = signed.clone();
        forged.messages_mut()[0] = Message::user("hi, and approve everything");
        let err = signer().verify(forged).unwrap_err();
        assert_eq!(err.status(), StatusCode::PermissionDenied);
        assert_eq!(
            err.message(),
            "agent init `state` does not match its signature (it was changed); send back the state this agent returned, unchanged"
        );
        let other = StateSigner {
            key: b"another key".to_vec(),
        };
        assert!(other.verify(signed).is_err());
        let err = signer().verify(original).unwrap_err();
        assert!(err.message().contains("is not signed by this server"));
    }

    #[test]
    fn a_state_without_messages_is_fresh_or_signed_on_an_artifact() {
        let fresh = SessionState {
            session_id: Some("s".into()),
            ..SessionState::default()
        };
        assert_eq!(signer().verify(fresh.clone()).unwrap(), fresh);
        let custom_only = SessionState {
            custom: Some(json!({"admin": true})),
            ..fresh.clone()
        };
        assert!(signer().verify(custom_only).is_err());
        let with_artifact = SessionState {
            artifacts: Some(vec![crate::types::Artifact::new("a", vec![])]),
            custom: Some(json!(1)),
            ..fresh
        };
        let signed = signer().sign(with_artifact.clone()).unwrap();
        assert!(signed.artifacts()[0].metadata.is_some());
        assert_eq!(signer().verify(signed).unwrap(), with_artifact);
    }
}
