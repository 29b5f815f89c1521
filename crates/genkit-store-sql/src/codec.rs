//! Snapshots as rows, whatever the database: a snapshot's metadata (the
//! snapshot without its state) and its state, stored whole (a checkpoint) or
//! as the JSON Patch from its parent's state (a diff), and back.
//!
//! # When a snapshot is a checkpoint
//!
//! A session's root is a checkpoint. A child is a diff from its parent
//! unless one of these holds, and then it is a checkpoint:
//!
//! - the diff chain from its checkpoint would exceed [`MAX_DIFF_CHAIN`]
//!   diffs (bounds the work of a read);
//! - its diff is at least as large as its whole state (a rewrite, not an
//!   increment);
//! - the diffs since its checkpoint, its own included, would outweigh that
//!   checkpoint: reading the chain would then cost more than reading a fresh
//!   checkpoint. In a session that grows by about the same content every
//!   turn this places checkpoints at turns 1, 2, 4, 8, ... (each about twice
//!   the previous one), so all checkpoints together stay within about twice
//!   the final state and the bytes stored grow linearly with the content,
//!   not quadratically as a full copy per turn (or per fixed number of turns)
//!   would. Past [`MAX_DIFF_CHAIN`] turns between checkpoints the interval
//!   stops doubling.

use genkit_core::{Error, Result};
use genkit_session::json_patch::{self, JsonPatchOperation};
use genkit_session::types::SessionSnapshot;
use serde_json::Value;

use crate::error::data_loss;

/// The most diffs between a snapshot and its checkpoint.
pub const MAX_DIFF_CHAIN: usize = 64;

/// Patches up to this size are stored as diffs without comparing them with
/// the whole state's size.
const SMALL_PATCH: usize = 1024;

/// How a snapshot's state is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// The whole state.
    Checkpoint,
    /// The JSON Patch from the parent's state.
    Diff,
}

impl Kind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Kind::Checkpoint => "checkpoint",
            Kind::Diff => "diff",
        }
    }

    pub(crate) fn parse(s: &str) -> Result<Self> {
        match s {
            "checkpoint" => Ok(Kind::Checkpoint),
            "diff" => Ok(Kind::Diff),
            other => Err(data_loss(format!("unknown snapshot kind {other:?}"))),
        }
    }
}

/// One link of a snapshot's chain as read: kind and body.
#[derive(Debug, Clone)]
pub(crate) struct Link {
    pub kind: Kind,
    pub body: String,
}

/// A snapshot split for storage: its metadata JSON and its state (JSON
/// `null` when it has none).
pub(crate) struct Encoded {
    pub meta: String,
    pub state: Value,
}

fn encoding(e: serde_json::Error) -> Error {
    Error::internal(format!("encoding a session snapshot: {e}"))
}

pub(crate) fn encode(snapshot: &SessionSnapshot) -> Result<Encoded> {
    let mut value = serde_json::to_value(snapshot).map_err(encoding)?;
    let state = value
        .as_object_mut()
        .and_then(|m| m.remove("state"))
        .unwrap_or(Value::Null);
    Ok(Encoded {
        meta: value.to_string(),
        state,
    })
}

/// The snapshot from its metadata and state.
pub(crate) fn decode(meta: &str, state: Value) -> Result<SessionSnapshot> {
    let mut value: Value = serde_json::from_str(meta)
        .map_err(|e| data_loss(format!("snapshot metadata: {e}")).with_source(e))?;
    let Some(map) = value.as_object_mut() else {
        return Err(data_loss("snapshot metadata is not an object"));
    };
    if !state.is_null() {
        map.insert("state".to_owned(), state);
    }
    serde_json::from_value(value).map_err(|e| data_loss(format!("snapshot: {e}")).with_source(e))
}

/// The state at the end of `chain` (its checkpoint first, then the diffs
/// down to the snapshot).
pub(crate) fn reconstruct(chain: &[Link]) -> Result<Value> {
    let Some((first, diffs)) = chain.split_first() else {
        return Err(data_loss("a snapshot without a stored state"));
    };
    if first.kind != Kind::Checkpoint {
        return Err(data_loss("a diff chain that reaches no checkpoint"));
    }
    let base: Value = serde_json::from_str(&first.body)
        .map_err(|e| data_loss(format!("checkpoint state: {e}")).with_source(e))?;
    if diffs.is_empty() {
        return Ok(base);
    }
    let mut ops: Vec<JsonPatchOperation> = Vec::new();
    for link in diffs {
        if link.kind != Kind::Diff {
            return Err(data_loss("a checkpoint inside a diff chain"));
        }
        let patch: Vec<JsonPatchOperation> = serde_json::from_str(&link.body)
            .map_err(|e| data_loss(format!("state patch: {e}")).with_source(e))?;
        ops.extend(patch);
    }
    // One application of the whole chain: one copy of the state.
    json_patch::apply(&base, &ops)
        .map_err(|e| data_loss(format!("applying a state patch: {e}")).with_source(e))
}

/// How a new snapshot's state is stored, given its parent's chain and
/// state: (kind, body). See the module docs.
pub(crate) fn place(parent: Option<(&[Link], &Value)>, state: &Value) -> Result<(Kind, String)> {
    let whole = || Ok((Kind::Checkpoint, state.to_string()));
    let Some((chain, parent_state)) = parent else {
        return whole();
    };
    let diffs = chain.len().saturating_sub(1);
    if diffs + 1 > MAX_DIFF_CHAIN {
        return whole();
    }
    let patch = json_patch::diff(parent_state, state);
    let patch = serde_json::to_string(&patch).map_err(encoding)?;
    let checkpoint_len = chain.first().map_or(0, |l| l.body.len());
    let segment_len: usize = chain.iter().skip(1).map(|l| l.body.len()).sum();
    if segment_len + patch.len() > checkpoint_len {
        return whole();
    }
    // Only a large patch may outweigh the state it produces; measuring the
    // state costs a serialization, so small patches skip it.
    if patch.len() > SMALL_PATCH && patch.len() >= state.to_string().len() {
        return whole();
    }
    Ok((Kind::Diff, patch))
}

/// The body of a rewritten snapshot of `kind` whose parent's state is
/// `parent_state` (`None` for a root): a checkpoint stays one; a diff is
/// recomputed, or becomes a checkpoint when that is smaller.
pub(crate) fn rewrite(
    kind: Kind,
    parent_state: Option<&Value>,
    state: &Value,
) -> Result<(Kind, String)> {
    match (kind, parent_state) {
        (Kind::Diff, Some(parent)) => {
            let patch =
                serde_json::to_string(&json_patch::diff(parent, state)).map_err(encoding)?;
            let full = state.to_string();
            if patch.len() >= full.len() {
                Ok((Kind::Checkpoint, full))
            } else {
                Ok((Kind::Diff, patch))
            }
        }
        _ => Ok((Kind::Checkpoint, state.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn state(turns: usize) -> Value {
        let messages: Vec<Value> = (0..turns)
            .map(|i| json!({"role": "user", "content": [{"text": format!("message number {i} with some words in it")}]}))
            .collect();
        json!({"sessionId": "s", "messages": messages})
    }

    #[test]
    fn corrupt_metadata_keeps_the_json_error() {
        use std::error::Error as _;
        let err = decode("not json", Value::Null).unwrap_err();
        assert_eq!(err.status(), genkit_core::StatusCode::DataLoss);
        assert!(err.message().contains("snapshot metadata: "), "{err}");
        let source = err.source().expect("a source");
        assert!(source.downcast_ref::<serde_json::Error>().is_some());
    }

    #[test]
    fn a_chain_reconstructs_every_state() {
        let mut chain = vec![Link {
            kind: Kind::Checkpoint,
            body: state(1).to_string(),
        }];
        let mut checkpoints = 0;
        for turn in 2..=200 {
            let parent = reconstruct(&chain).expect("reconstructs");
            assert_eq!(parent, state(turn - 1));
            let (kind, body) = place(Some((&chain, &parent)), &state(turn)).expect("places");
            if kind == Kind::Checkpoint {
                checkpoints += 1;
                chain.clear();
            }
            chain.push(Link { kind, body });
            assert!(chain.len() <= MAX_DIFF_CHAIN + 1);
        }
        assert_eq!(reconstruct(&chain).expect("reconstructs"), state(200));
        // Doubling intervals up to the cap: few checkpoints.
        assert!((6..=12).contains(&checkpoints), "{checkpoints} checkpoints");
    }

    #[test]
    fn broken_chains_are_data_loss() {
        let diff = Link {
            kind: Kind::Diff,
            body: "[]".into(),
        };
        for chain in [vec![], vec![diff.clone()]] {
            let e = reconstruct(&chain).expect_err("refused");
            assert_eq!(e.status(), genkit_core::StatusCode::DataLoss);
        }
        let bad = Link {
            kind: Kind::Checkpoint,
            body: "{not json".into(),
        };
        assert_eq!(
            reconstruct(&[bad]).expect_err("refused").status(),
            genkit_core::StatusCode::DataLoss
        );
    }

    #[test]
    fn metadata_and_state_round_trip() {
        let mut s = SessionSnapshot::new("id", "2026-01-01T00:00:00.000Z");
        s.session_id = Some("sess".into());
        let e = encode(&s).expect("encodes");
        assert_eq!(e.state, Value::Null);
        assert_eq!(decode(&e.meta, e.state).expect("decodes"), s);
        s.state = Some(Default::default());
        let e = encode(&s).expect("encodes");
        assert_eq!(e.state, json!({}));
        assert_eq!(decode(&e.meta, e.state).expect("decodes"), s);
    }
}
