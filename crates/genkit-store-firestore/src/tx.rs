//! Reads inside a transaction: snapshot documents, the session index, and
//! state reconstruction from checkpoint shards and diffs.

use std::collections::{HashMap, HashSet};

use genkit_core::{Error, Result, StatusCode};
use genkit_session::json_patch;
use genkit_session::store::{SnapshotLink, latest_leaf};
use genkit_session::types::{SessionSnapshot, SessionState, SnapshotStatus};
use serde_json::{Value as Json, json};

use crate::client::Client;
use crate::layout::{self, ChainMeta, Paths, SnapshotDoc};
use crate::proto::{
    CollectionSelector, Document, FieldFilter, FieldReference, Filter, Projection, StructuredQuery,
    Timestamp, Value, filter, value::Kind as ValueKind,
};
use crate::value;

/// Reads within one transaction.
pub(crate) struct Tx<'a> {
    pub(crate) client: &'a Client,
    pub(crate) id: &'a [u8],
}

impl Tx<'_> {
    /// The existing documents among `names`, by name.
    pub(crate) async fn get_all(&self, names: Vec<String>) -> Result<HashMap<String, Document>> {
        let docs = self.client.batch_get(names, Some(self.id)).await?;
        Ok(docs.into_iter().map(|d| (d.name.clone(), d)).collect())
    }

    pub(crate) async fn get(&self, name: String) -> Result<Option<Document>> {
        Ok(self.get_all(vec![name.clone()]).await?.remove(&name))
    }

    /// Every snapshot of `session_id`: `(id, parent)` pairs.
    pub(crate) async fn session_index(
        &self,
        paths: &Paths,
        session_id: &str,
    ) -> Result<SessionIndex> {
        let field = |p: &str| FieldReference {
            field_path: p.to_owned(),
        };
        let query = StructuredQuery {
            select: Some(Projection {
                fields: vec![
                    field("snapshotId"),
                    field("parentId"),
                    field("status"),
                    field("createdAt"),
                ],
            }),
            from: vec![CollectionSelector {
                collection_id: "snapshots".to_owned(),
                all_descendants: false,
            }],
            r#where: Some(Filter {
                filter_type: Some(filter::FilterType::FieldFilter(FieldFilter {
                    field: Some(field("sessionId")),
                    op: crate::proto::OPERATOR_EQUAL,
                    value: Some(value::to_firestore(&json!(session_id))),
                })),
            }),
        };
        let docs = self
            .client
            .run_query(paths.snapshots_parent(), query, Some(self.id))
            .await?;
        let text = |doc: &crate::proto::Document, name: &str| match doc.fields.get(name) {
            Some(Value {
                kind: Some(ValueKind::StringValue(v)),
            }) => Some(v.clone()),
            _ => None,
        };
        let mut index = SessionIndex::default();
        for doc in docs {
            let id = doc.name.rsplit('/').next().unwrap_or_default().to_owned();
            let parent = text(&doc, "parentId");
            if let Some(parent) = &parent {
                index.parents.insert(parent.clone());
            }
            index.ids.insert(id.clone());
            index.entries.push(IndexEntry {
                created_at: text(&doc, "createdAt").unwrap_or_default(),
                id,
                parent,
                // A status this crate does not know (a newer Genkit's) is
                // not one of the two the latest rule passes over.
                status: text(&doc, "status").and_then(|s| s.parse().ok()),
            });
        }
        // Append order, as far as the documents tell: creation time, then id.
        index
            .entries
            .sort_by(|a, b| (&a.created_at, &a.id).cmp(&(&b.created_at, &b.id)));
        Ok(index)
    }

    /// A snapshot document and its reconstructed state.
    pub(crate) async fn reconstruct(&self, paths: &Paths, id: &str) -> Result<Option<Loaded>> {
        let Some(doc) = self.get(paths.snapshot(id)).await? else {
            return Ok(None);
        };
        let parsed: SnapshotDoc = layout::decode(&doc)?;
        let meta = ChainMeta::from(&parsed);
        let state = self.state_at(paths, &meta, id).await?;
        Ok(Some(Loaded {
            doc: parsed,
            state,
            update_time: doc.update_time,
        }))
    }

    /// The state of `target` from its checkpoint's shards and the diffs of
    /// its segment, read in one batch (as Genkit JS's `reconstructFrom`).
    pub(crate) async fn state_at(
        &self,
        paths: &Paths,
        meta: &ChainMeta,
        target: &str,
    ) -> Result<Json> {
        let shard_names: Vec<String> = (0..meta.checkpoint_shard_count)
            .map(|i| paths.shard(&meta.checkpoint_id, i))
            .collect();
        let segment_names: Vec<String> = meta
            .segment_path
            .iter()
            .map(|id| paths.snapshot(id))
            .collect();
        let mut names = shard_names.clone();
        names.extend(segment_names.iter().cloned());
        let mut docs = self.get_all(names).await?;

        let mut bytes = Vec::new();
        for name in &shard_names {
            let shard = docs.get(name).ok_or_else(|| {
                Error::new(
                    StatusCode::DataLoss,
                    format!("FirestoreSessionStore: missing checkpoint shard '{name}'"),
                )
            })?;
            match shard.fields.get("chunk").and_then(|v| v.kind.as_ref()) {
                Some(ValueKind::BytesValue(b)) => bytes.extend_from_slice(b),
                _ => {
                    return Err(Error::new(
                        StatusCode::DataLoss,
                        format!("checkpoint shard '{name}' has no bytes 'chunk'"),
                    ));
                }
            }
        }
        let mut state = if shard_names.is_empty() {
            Json::Null
        } else {
            serde_json::from_slice(&bytes).map_err(|e| {
                Error::new(
                    StatusCode::DataLoss,
                    format!("checkpoint {} does not parse: {e}", meta.checkpoint_id),
                )
                .with_source(e)
            })?
        };
        let mut last = None;
        for name in &segment_names {
            let doc = docs.remove(name).ok_or_else(|| {
                Error::new(
                    StatusCode::DataLoss,
                    format!("FirestoreSessionStore: missing diff '{name}' on the way to {target}"),
                )
            })?;
            let seg: SnapshotDoc = layout::decode(&doc)?;
            state = json_patch::apply(&state, seg.state_patch.as_deref().unwrap_or_default())
                .map_err(|e| {
                    Error::new(
                        StatusCode::DataLoss,
                        format!("diff {} does not apply: {e}", seg.snapshot_id),
                    )
                    .with_source(e)
                })?;
            last = Some(seg.snapshot_id);
        }
        if let Some(last) = last
            && last != target
        {
            return Err(Error::new(
                StatusCode::DataLoss,
                format!("the diff chain of {target} ends at {last}"),
            ));
        }
        Ok(state)
    }
}

#[derive(Default)]
pub(crate) struct SessionIndex {
    pub(crate) ids: HashSet<String>,
    pub(crate) parents: HashSet<String>,
    /// Every snapshot of the session, in append order.
    pub(crate) entries: Vec<IndexEntry>,
}

/// What the session index keeps of one snapshot document.
pub(crate) struct IndexEntry {
    pub(crate) id: String,
    pub(crate) parent: Option<String>,
    pub(crate) status: Option<SnapshotStatus>,
    pub(crate) created_at: String,
}

impl SessionIndex {
    pub(crate) fn version(&self) -> u64 {
        self.ids.len() as u64
    }

    /// The session's latest snapshot by the shared rule
    /// ([`latest_leaf`]); `None` when the session has no snapshots.
    pub(crate) fn latest(&self, session_id: &str) -> Result<Option<String>> {
        if self.entries.is_empty() {
            return Ok(None);
        }
        let links: Vec<SnapshotLink<'_>> = self
            .entries
            .iter()
            .map(|e| SnapshotLink {
                snapshot_id: &e.id,
                parent_id: e.parent.as_deref(),
                status: e.status,
            })
            .collect();
        latest_leaf(session_id, &links).map(|id| Some(id.to_owned()))
    }
}

pub(crate) struct Loaded {
    pub(crate) doc: SnapshotDoc,
    pub(crate) state: Json,
    pub(crate) update_time: Option<Timestamp>,
}

impl Loaded {
    pub(crate) fn revision(&self) -> u64 {
        self.doc.rs_revision.unwrap_or(1)
    }

    /// The snapshot as the caller wrote it (see `SnapshotDoc::rs_unset`).
    pub(crate) fn snapshot(&self) -> Result<SessionSnapshot> {
        let d = &self.doc;
        let unset = |f: &str| d.rs_unset.iter().any(|u| u == f);
        let state = if unset("state") {
            None
        } else {
            let state = match &self.state {
                Json::Null => Json::Object(Default::default()),
                s => s.clone(),
            };
            Some(serde_json::from_value::<SessionState>(state).map_err(|e| {
                Error::new(
                    StatusCode::DataLoss,
                    format!(
                        "the state of snapshot {} is not a session state: {e}",
                        d.snapshot_id
                    ),
                )
                .with_source(e)
            })?)
        };
        Ok(SessionSnapshot {
            snapshot_id: d.snapshot_id.clone(),
            session_id: (!unset("sessionId")).then(|| d.session_id.clone()),
            parent_id: d.parent_id.clone(),
            created_at: d.created_at.clone(),
            updated_at: if unset("updatedAt") {
                None
            } else {
                d.updated_at.clone()
            },
            heartbeat_at: d.heartbeat_at.clone(),
            status: d.status,
            finish_reason: d.finish_reason,
            error: d.error.clone(),
            state,
            lease_owner: d.rs_lease_owner.clone(),
            lease_expires_at: d.rs_lease_expires_at.clone(),
        })
    }
}
