//! Where documents live and what they hold: Genkit JS's layout (snapshot,
//! pointer and shard documents) plus this store's two companion collections
//! (side-effect records and write markers), which Genkit JS never reads.

use genkit_core::{Error, Result, StatusCode};
use genkit_session::json_patch::JsonPatch;
use genkit_session::types::{AgentFinishReason, RuntimeError, SnapshotStatus};
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use crate::proto::{Document, Timestamp};
use crate::value;

/// Firestore's limit on a document id, in bytes.
const MAX_ID_BYTES: usize = 1500;

/// Whether `id` can name a Firestore document: non-empty, at most 1500
/// bytes, no `/`, not `.` or `..`, not `__…__` (reserved).
pub(crate) fn is_valid_doc_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_ID_BYTES
        && !id.contains('/')
        && id != "."
        && id != ".."
        && !(id.len() >= 4 && id.starts_with("__") && id.ends_with("__"))
}

/// Escapes an arbitrary string into document-id characters: ASCII letters,
/// digits, `-` and `_` stay, every other byte is `%XX`. Injective, so
/// `:`-joined escaped parts never collide.
pub(crate) fn escape(part: &str) -> String {
    let mut out = String::with_capacity(part.len());
    for b in part.bytes() {
        if b.is_ascii_alphanumeric() || b == b'-' || b == b'_' {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The document paths of one tenant prefix.
#[derive(Debug, Clone)]
pub(crate) struct Paths {
    /// `projects/…/databases/…/documents`.
    root: String,
    collection: String,
    prefix: String,
}

impl Paths {
    pub(crate) fn new(database: &str, collection: &str, prefix: &str) -> Self {
        Self {
            root: format!("{database}/documents"),
            collection: collection.to_owned(),
            prefix: prefix.to_owned(),
        }
    }

    /// The parent of the `snapshots` collection (for queries).
    pub(crate) fn snapshots_parent(&self) -> String {
        format!("{}/{}/{}", self.root, self.collection, self.prefix)
    }

    /// `<collection>/<prefix>/snapshots/<snapshotId>`.
    pub(crate) fn snapshot(&self, id: &str) -> String {
        format!("{}/snapshots/{id}", self.snapshots_parent())
    }

    /// `<collection>-pointers/<prefix>/pointers/<sessionId>`.
    pub(crate) fn pointer(&self, session_id: &str) -> String {
        format!(
            "{}/{}-pointers/{}/pointers/{session_id}",
            self.root, self.collection, self.prefix
        )
    }

    /// `<collection>-counters/<prefix>/counters/<sessionId>` (this store's
    /// own, see `crate::counter`).
    pub(crate) fn counter(&self, session_id: &str) -> String {
        format!(
            "{}/{}-counters/{}/counters/{session_id}",
            self.root, self.collection, self.prefix
        )
    }

    /// `<collection>-shards/<prefix>/shards/<checkpointId>_<index>`.
    pub(crate) fn shard(&self, checkpoint_id: &str, index: u64) -> String {
        format!(
            "{}/{}-shards/{}/shards/{checkpoint_id}_{index}",
            self.root, self.collection, self.prefix
        )
    }

    /// `<collection>-effects/<prefix>/effects/e:<session>:<key>` (escaped);
    /// `None` when too long for a document id.
    pub(crate) fn effect(&self, session_id: &str, key: &str) -> Option<String> {
        let id = format!("e:{}:{}", escape(session_id), escape(key));
        (id.len() <= MAX_ID_BYTES).then(|| {
            format!(
                "{}/{}-effects/{}/effects/{id}",
                self.root, self.collection, self.prefix
            )
        })
    }

    /// The create-only marker of a session's `version`-th append:
    /// `<collection>-markers/<prefix>/markers/s:<session>:<version>`.
    pub(crate) fn append_marker(&self, session_id: &str, version: u64) -> String {
        self.marker(&format!("s:{}:{version}", escape(session_id)))
    }

    /// The create-only marker of a rewrite of a snapshot based on its
    /// `base` revision as last written at `written` (its update time): two
    /// writers based on the same read create the same marker. The update
    /// time tells apart reads of equal revisions when Genkit JS (which
    /// keeps no revisions) rewrote the document in between.
    pub(crate) fn revision_marker(
        &self,
        snapshot_id: &str,
        base: u64,
        written: Option<&Timestamp>,
    ) -> String {
        let at = written.map_or_else(String::new, |t| format!(":{}.{:09}", t.seconds, t.nanos));
        self.marker(&format!("r:{}:{base}{at}", escape(snapshot_id)))
    }

    fn marker(&self, id: &str) -> String {
        format!(
            "{}/{}-markers/{}/markers/{id}",
            self.root, self.collection, self.prefix
        )
    }
}

/// Whether a snapshot document holds its full state (sharded) or a patch
/// from its parent's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Kind {
    /// `statePatch` from the parent's state.
    Diff,
    /// Full state in `<checkpointId>_<i>` shards.
    Checkpoint,
}

/// A snapshot document, exactly Genkit JS's `SnapshotDoc`, plus fields only
/// this store writes, and only when needed (Genkit JS ignores them and drops
/// them when it rewrites the document): `rsLeaseOwner` and
/// `rsLeaseExpiresAt`, a pending snapshot's lease (see
/// [`genkit_session::store::lease`]); `rsRevision`, the
/// [revision](genkit_session::store::StoredSnapshot::revision) once it is
/// above one, and `rsUnset`, the snapshot fields that were absent although
/// Genkit JS's shape always fills them (`sessionId`, `updatedAt`, `state`),
/// so a snapshot reads back exactly as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SnapshotDoc {
    pub snapshot_id: String,
    pub session_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    pub created_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<SnapshotStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heartbeat_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<AgentFinishReason>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<RuntimeError>,
    pub kind: Kind,
    pub checkpoint_id: String,
    pub checkpoint_shard_count: u64,
    #[serde(default)]
    pub segment_path: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_patch: Option<JsonPatch>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rs_revision: Option<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rs_unset: Vec<String>,
    /// The lease of a detached turn's pending snapshot: its replica
    /// (`leaseOwner`) and expiry (`leaseExpiresAt`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rs_lease_owner: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rs_lease_expires_at: Option<String>,
}

/// A session's pointer document (Genkit JS's `PointerDoc`): its current
/// leaf and what reconstructing it needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PointerDoc {
    pub current_snapshot_id: String,
    pub checkpoint_id: String,
    pub checkpoint_shard_count: u64,
    #[serde(default)]
    pub segment_path: Vec<String>,
    pub updated_at: String,
}

/// Where a snapshot sits in its checkpoint chain.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ChainMeta {
    pub checkpoint_id: String,
    pub checkpoint_shard_count: u64,
    pub segment_path: Vec<String>,
}

impl From<&SnapshotDoc> for ChainMeta {
    fn from(d: &SnapshotDoc) -> Self {
        Self {
            checkpoint_id: d.checkpoint_id.clone(),
            checkpoint_shard_count: d.checkpoint_shard_count,
            segment_path: d.segment_path.clone(),
        }
    }
}

impl From<&PointerDoc> for ChainMeta {
    fn from(d: &PointerDoc) -> Self {
        Self {
            checkpoint_id: d.checkpoint_id.clone(),
            checkpoint_shard_count: d.checkpoint_shard_count,
            segment_path: d.segment_path.clone(),
        }
    }
}

/// A stored document's fields as `T` (`DATA_LOSS` when they do not fit).
pub(crate) fn decode<T: serde::de::DeserializeOwned>(doc: &Document) -> Result<T> {
    let json = Json::Object(value::from_fields(&doc.fields)?);
    serde_json::from_value(json).map_err(|e| {
        Error::new(
            StatusCode::DataLoss,
            format!(
                "Firestore document {} is not a session document: {e}",
                doc.name
            ),
        )
        .with_source(e)
    })
}

/// `T` as a document named `name`.
pub(crate) fn encode<T: Serialize>(name: String, doc: &T) -> Result<Document> {
    let json = serde_json::to_value(doc)
        .map_err(|e| Error::internal(format!("encoding {name}: {e}")).with_source(e))?;
    let Json::Object(map) = json else {
        return Err(Error::internal(format!(
            "{name} does not encode as an object"
        )));
    };
    Ok(Document {
        name,
        fields: value::to_fields(&map),
        create_time: None,
        update_time: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn document_ids() {
        assert!(is_valid_doc_id("0b1e-4f"));
        for bad in ["", "a/b", ".", "..", "__x__"] {
            assert!(!is_valid_doc_id(bad), "{bad:?}");
        }
        assert_eq!(escape("turn-1/tool:7"), "turn-1%2Ftool%3A7");
        assert_ne!(escape("a:b"), escape("a%3Ab"), "escaping is injective");
    }

    #[test]
    fn paths_follow_genkit_js() {
        let p = Paths::new(
            "projects/p/databases/(default)",
            "genkit-sessions",
            "global",
        );
        assert_eq!(
            p.snapshot("s1"),
            "projects/p/databases/(default)/documents/genkit-sessions/global/snapshots/s1"
        );
        assert_eq!(
            p.pointer("x"),
            "projects/p/databases/(default)/documents/genkit-sessions-pointers/global/pointers/x"
        );
        assert_eq!(
            p.shard("s1", 0),
            "projects/p/databases/(default)/documents/genkit-sessions-shards/global/shards/s1_0"
        );
    }
}
