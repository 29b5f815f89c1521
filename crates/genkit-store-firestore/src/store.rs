//! [`FirestoreSessionStore`]: the [`SessionStore`] on Firestore.

use std::collections::HashMap;

use async_trait::async_trait;
use genkit_core::tracing::current_context;
use genkit_core::{Error, Result, StatusCode};
use genkit_session::clock::now_rfc3339;
use genkit_session::json_patch;
use genkit_session::store::update::{
    UpdateTarget, check_revision, check_state_rewrite, check_update,
};
use genkit_session::store::{
    SessionStore, StoredSnapshot, parent_in_other_session, session_conflict, session_not_found,
    snapshot_exists, snapshot_not_found, snapshot_session_id,
};
use genkit_session::types::SessionSnapshot;
use serde_json::{Value as Json, json};

use crate::builder::{DEFAULT_PREFIX, PrefixFn};
use crate::client::Client;
use crate::layout::{self, ChainMeta, Kind, Paths, PointerDoc, SnapshotDoc};
use crate::proto::{
    Document, Precondition, Value, Write, precondition, value::Kind as ValueKind, write,
};
use crate::tx::Tx;
use crate::value;

/// A [`SessionStore`] on Firestore, wire-compatible with Genkit JS's
/// `FirestoreSessionStore`: see the [crate docs](crate).
pub struct FirestoreSessionStore {
    client: Client,
    collection: String,
    checkpoint_interval: u64,
    shard_size: usize,
    prefix: Option<PrefixFn>,
}

impl FirestoreSessionStore {
    pub(crate) fn new(
        client: Client,
        collection: String,
        checkpoint_interval: u64,
        shard_size: usize,
        prefix: Option<PrefixFn>,
    ) -> Self {
        Self {
            client,
            collection,
            checkpoint_interval,
            shard_size,
            prefix,
        }
    }
}

impl std::fmt::Debug for FirestoreSessionStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FirestoreSessionStore")
            .field("database", &self.client.database())
            .field("collection", &self.collection)
            .field("checkpoint_interval", &self.checkpoint_interval)
            .field("shard_size", &self.shard_size)
            .finish_non_exhaustive()
    }
}

impl FirestoreSessionStore {
    fn paths(&self) -> Result<Paths> {
        let prefix = match &self.prefix {
            Some(f) => f(&current_context()),
            None => DEFAULT_PREFIX.to_owned(),
        };
        if !layout::is_valid_doc_id(&prefix) {
            return Err(Error::invalid_argument(format!(
                "session path prefix {prefix:?} is not a Firestore document id"
            )));
        }
        Ok(Paths::new(
            self.client.database(),
            &self.collection,
            &prefix,
        ))
    }

    /// Runs `body` in a transaction: committed (with the writes it returns)
    /// when it succeeds, rolled back when it fails. Read-only transactions
    /// commit no writes.
    async fn transact<T, F>(&self, read_only: bool, body: F) -> Result<T>
    where
        F: AsyncFnOnce(&Tx<'_>) -> Result<(T, Vec<Write>)>,
    {
        let id = self.client.begin(read_only).await?;
        let tx = Tx {
            client: &self.client,
            id: &id,
        };
        match body(&tx).await {
            Ok((value, writes)) => {
                if read_only {
                    self.client.rollback(id).await;
                } else {
                    self.client
                        .commit(writes, Some(id))
                        .await
                        .map_err(commit_conflict)?;
                }
                Ok(value)
            }
            Err(e) => {
                self.client.rollback(id).await;
                Err(e)
            }
        }
    }
}

/// A failed commit: a precondition lost to a concurrent write (a marker or
/// snapshot created meanwhile, a changed update time) or a transaction
/// aborted by contention is a conflict (`ABORTED`): re-read and retry.
fn commit_conflict(e: Error) -> Error {
    match e.status() {
        StatusCode::AlreadyExists | StatusCode::FailedPrecondition | StatusCode::Aborted => {
            Error::user_facing(
                StatusCode::Aborted,
                format!(
                    "a concurrent write came first; read again and retry ({})",
                    e.message()
                ),
            )
        }
        _ => e,
    }
}

/// The session a snapshot belongs to (`sessionId`, else its state's; the
/// two must agree), checked to be a usable document id.
fn session_of(snapshot: &SessionSnapshot) -> Result<String> {
    let id = snapshot_session_id(snapshot)?;
    if !layout::is_valid_doc_id(&id) {
        return Err(Error::user_facing(
            StatusCode::InvalidArgument,
            format!("session id {id:?} cannot name a Firestore document"),
        ));
    }
    Ok(id)
}

/// The snapshot's state as JSON (`{}` when it has none, as Genkit JS).
fn state_json(snapshot: &SessionSnapshot) -> Result<Json> {
    match &snapshot.state {
        Some(state) => serde_json::to_value(state)
            .map_err(|e| Error::internal(format!("encoding a session state: {e}")).with_source(e)),
        None => Ok(Json::Object(Default::default())),
    }
}

fn byte_len(value: &impl serde::Serialize) -> Result<usize> {
    serde_json::to_vec(value)
        .map(|v| v.len())
        .map_err(|e| Error::internal(format!("encoding a patch: {e}")).with_source(e))
}

fn create_only(doc: Document) -> Write {
    Write {
        operation: Some(write::Operation::Update(doc)),
        current_document: Some(Precondition {
            condition: Some(precondition::Condition::Exists(false)),
        }),
        ..Write::default()
    }
}

fn set(doc: Document) -> Write {
    Write {
        operation: Some(write::Operation::Update(doc)),
        ..Write::default()
    }
}

fn delete(name: String) -> Write {
    Write {
        operation: Some(write::Operation::Delete(name)),
        ..Write::default()
    }
}

/// How a snapshot's state is stored.
struct Placement {
    kind: Kind,
    meta: ChainMeta,
    state_patch: Option<json_patch::JsonPatch>,
    shard_writes: Vec<Write>,
}

impl FirestoreSessionStore {
    /// A checkpoint at `id`: the state split into `shard_size`-byte shards
    /// `<id>_<i>` (Genkit JS's `writeShards`), trailing old shards deleted.
    fn checkpoint(
        &self,
        paths: &Paths,
        id: &str,
        state: &Json,
        old_shards: u64,
    ) -> Result<Placement> {
        let bytes = serde_json::to_vec(state).map_err(|e| {
            Error::internal(format!("encoding a session state: {e}")).with_source(e)
        })?;
        let chunks: Vec<&[u8]> = if bytes.is_empty() {
            vec![&[][..]]
        } else {
            bytes.chunks(self.shard_size).collect()
        };
        let count = chunks.len() as u64;
        let mut shard_writes = Vec::new();
        for (i, chunk) in chunks.into_iter().enumerate() {
            let mut fields = HashMap::new();
            fields.insert(
                "chunk".to_owned(),
                Value {
                    kind: Some(ValueKind::BytesValue(chunk.to_vec())),
                },
            );
            shard_writes.push(set(Document {
                name: paths.shard(id, i as u64),
                fields,
                create_time: None,
                update_time: None,
            }));
        }
        for i in count..old_shards {
            shard_writes.push(delete(paths.shard(id, i)));
        }
        Ok(Placement {
            kind: Kind::Checkpoint,
            meta: ChainMeta {
                checkpoint_id: id.to_owned(),
                checkpoint_shard_count: count,
                segment_path: Vec::new(),
            },
            state_patch: None,
            shard_writes,
        })
    }

    /// The document for `snapshot` placed as `placement`.
    fn snapshot_doc(
        snapshot: &SessionSnapshot,
        session_id: &str,
        placement: &Placement,
        revision: u64,
    ) -> SnapshotDoc {
        let mut unset = Vec::new();
        if snapshot.session_id.is_none() {
            unset.push("sessionId".to_owned());
        }
        if snapshot.updated_at.is_none() {
            unset.push("updatedAt".to_owned());
        }
        if snapshot.state.is_none() {
            unset.push("state".to_owned());
        }
        SnapshotDoc {
            snapshot_id: snapshot.snapshot_id.clone(),
            session_id: session_id.to_owned(),
            parent_id: snapshot.parent_id.clone(),
            created_at: snapshot.created_at.clone(),
            // Genkit JS: `updatedAt ?? createdAt`.
            updated_at: Some(
                snapshot
                    .updated_at
                    .clone()
                    .unwrap_or_else(|| snapshot.created_at.clone()),
            ),
            status: snapshot.status,
            heartbeat_at: snapshot.heartbeat_at.clone(),
            finish_reason: snapshot.finish_reason,
            error: snapshot.error.clone(),
            kind: placement.kind,
            checkpoint_id: placement.meta.checkpoint_id.clone(),
            checkpoint_shard_count: placement.meta.checkpoint_shard_count,
            segment_path: placement.meta.segment_path.clone(),
            state_patch: placement.state_patch.clone(),
            rs_revision: (revision > 1).then_some(revision),
            rs_unset: unset,
            rs_lease_owner: snapshot.lease_owner.clone(),
            rs_lease_expires_at: snapshot.lease_expires_at.clone(),
        }
    }

    fn pointer_doc(id: &str, meta: &ChainMeta) -> PointerDoc {
        PointerDoc {
            current_snapshot_id: id.to_owned(),
            checkpoint_id: meta.checkpoint_id.clone(),
            checkpoint_shard_count: meta.checkpoint_shard_count,
            segment_path: meta.segment_path.clone(),
            updated_at: now_rfc3339(),
        }
    }
}

fn marker(name: String, fields: Json) -> Result<Write> {
    Ok(create_only(layout::encode(name, &fields)?))
}

#[async_trait]
impl SessionStore for FirestoreSessionStore {
    async fn get(&self, snapshot_id: &str) -> Result<StoredSnapshot> {
        if !layout::is_valid_doc_id(snapshot_id) {
            return Err(snapshot_not_found(snapshot_id));
        }
        let paths = self.paths()?;
        self.transact(true, async |tx: &Tx<'_>| {
            let loaded = tx
                .reconstruct(&paths, snapshot_id)
                .await?
                .ok_or_else(|| snapshot_not_found(snapshot_id))?;
            let (view, _) = tx.session_view(&paths, &loaded.doc.session_id).await?;
            let stored = StoredSnapshot {
                snapshot: loaded.snapshot()?,
                revision: loaded.revision(),
                session_version: view.version(),
            };
            Ok((stored, Vec::new()))
        })
        .await
    }

    async fn latest(&self, session_id: &str) -> Result<StoredSnapshot> {
        let not_found = || session_not_found(session_id);
        if !layout::is_valid_doc_id(session_id) {
            return Err(not_found());
        }
        let paths = self.paths()?;
        self.transact(true, async |tx: &Tx<'_>| {
            let (view, _) = tx.session_view(&paths, session_id).await?;
            let leaf = view
                .latest(tx, &paths, session_id)
                .await?
                .ok_or_else(not_found)?;
            let loaded = tx.reconstruct(&paths, &leaf).await?.ok_or_else(|| {
                Error::internal(format!("leaf {leaf} of session {session_id} vanished"))
            })?;
            let stored = StoredSnapshot {
                snapshot: loaded.snapshot()?,
                revision: loaded.revision(),
                session_version: view.version(),
            };
            Ok((stored, Vec::new()))
        })
        .await
    }

    async fn append(&self, snapshot: SessionSnapshot, base: u64) -> Result<StoredSnapshot> {
        let id = snapshot.snapshot_id.clone();
        if id.trim().is_empty() || !layout::is_valid_doc_id(&id) {
            return Err(Error::user_facing(
                StatusCode::InvalidArgument,
                format!("snapshot id {id:?} is empty or cannot name a Firestore document"),
            ));
        }
        let session_id = session_of(&snapshot)?;
        if let Some(parent) = &snapshot.parent_id
            && !layout::is_valid_doc_id(parent)
        {
            return Err(snapshot_not_found(parent));
        }
        let paths = self.paths()?;
        let new_state = state_json(&snapshot)?;
        self.transact(false, async |tx: &Tx<'_>| {
            let (view, pointer) = tx.session_view(&paths, &session_id).await?;
            if view.version() != base {
                return Err(session_conflict(&session_id, base, view.version()));
            }
            let pointer_name = paths.pointer(&session_id);
            let parent_id = snapshot.parent_id.as_deref();
            let siblings = view.siblings_of(parent_id);
            let mut names = vec![paths.snapshot(&id)];
            names.extend(parent_id.map(|p| paths.snapshot(p)));
            names.extend(siblings.iter().map(|s| paths.snapshot(s)));
            let docs = tx.get_all(names).await?;
            if docs.contains_key(&paths.snapshot(&id)) {
                return Err(snapshot_exists(&id));
            }
            let placement = match &snapshot.parent_id {
                None => self.checkpoint(&paths, &id, &new_state, 0)?,
                Some(parent) => {
                    let parent_doc: SnapshotDoc = match docs.get(&paths.snapshot(parent)) {
                        Some(d) => layout::decode(d)?,
                        None => return Err(snapshot_not_found(parent)),
                    };
                    if parent_doc.session_id != session_id || !view.may_hold(parent) {
                        return Err(parent_in_other_session(
                            parent,
                            &parent_doc.session_id,
                            &session_id,
                        ));
                    }
                    // Genkit JS reads the chain off the pointer when the
                    // parent is the current leaf, else off the parent.
                    let meta = match &pointer {
                        Some(p) if &p.current_snapshot_id == parent => ChainMeta::from(p),
                        _ => ChainMeta::from(&parent_doc),
                    };
                    if meta.segment_path.len() as u64 + 1 >= self.checkpoint_interval {
                        self.checkpoint(&paths, &id, &new_state, 0)?
                    } else {
                        let parent_state = tx.state_at(&paths, &meta, parent).await?;
                        let patch = json_patch::diff(&parent_state, &new_state);
                        if byte_len(&patch)? > self.shard_size {
                            self.checkpoint(&paths, &id, &new_state, 0)?
                        } else {
                            let mut segment_path = meta.segment_path.clone();
                            segment_path.push(id.clone());
                            Placement {
                                kind: Kind::Diff,
                                meta: ChainMeta {
                                    segment_path,
                                    ..meta
                                },
                                state_patch: Some(patch),
                                shard_writes: Vec::new(),
                            }
                        }
                    }
                }
            };
            let doc = Self::snapshot_doc(&snapshot, &session_id, &placement, 1);
            // The marker goes first: if another append took this version,
            // nothing of this one is written, even on a store that applies
            // a commit's writes one by one (the emulator).
            let mut writes = vec![
                marker(
                    paths.append_marker(&session_id, base + 1),
                    json!({"sessionId": session_id, "version": base + 1, "snapshotId": id}),
                )?,
                create_only(layout::encode(paths.snapshot(&id), &doc)?),
            ];
            writes.extend(placement.shard_writes);
            writes.push(set(layout::encode(
                pointer_name,
                &Self::pointer_doc(&id, &placement.meta),
            )?));
            // The counter agrees with the pointer just written.
            let read_status = |sibling: &str| {
                let doc = docs.get(&paths.snapshot(sibling))?;
                layout::decode::<SnapshotDoc>(doc).ok()?.status
            };
            let counter = view.appended(&session_id, &id, parent_id, read_status);
            writes.push(set(layout::encode(paths.counter(&session_id), &counter)?));
            let stored = StoredSnapshot {
                snapshot: snapshot.clone(),
                revision: 1,
                session_version: base + 1,
            };
            Ok((stored, writes))
        })
        .await
    }

    async fn update(&self, snapshot: SessionSnapshot, base: u64) -> Result<StoredSnapshot> {
        let id = snapshot.snapshot_id.clone();
        if !layout::is_valid_doc_id(&id) {
            return Err(snapshot_not_found(&id));
        }
        let paths = self.paths()?;
        let new_state = state_json(&snapshot)?;
        self.transact(false, async |tx: &Tx<'_>| {
            let loaded = tx
                .reconstruct(&paths, &id)
                .await?
                .ok_or_else(|| snapshot_not_found(&id))?;
            let old = &loaded.doc;
            let target = UpdateTarget {
                snapshot_id: &id,
                session_id: &old.session_id,
                parent_id: old.parent_id.as_deref(),
                created_at: &old.created_at,
                status: old.status,
                revision: loaded.revision(),
            };
            // Unlike the other stores, the update's session id is first
            // checked to name a Firestore document (as an append's is): after
            // the revision, so a stale write is `ABORTED` as elsewhere, and
            // before the rest of the shared check.
            check_revision(&id, base, target.revision)?;
            session_of(&snapshot)?;
            check_update(&target, &snapshot, base)?;
            let (view, pointer) = tx.session_view(&paths, &old.session_id).await?;
            let unchanged = json_patch::json_equal(&loaded.state, &new_state);
            // Its children's diffs (or reads of its checkpoint) assume its
            // state; rewriting it would corrupt them.
            check_state_rewrite(&id, !unchanged, view.is_continued(&id))?;
            let placement = if unchanged {
                // Only metadata changes: the stored state stays as it is.
                Placement {
                    kind: old.kind,
                    meta: ChainMeta::from(old),
                    state_patch: old.state_patch.clone(),
                    shard_writes: Vec::new(),
                }
            } else if old.kind == Kind::Checkpoint {
                self.checkpoint(&paths, &id, &new_state, old.checkpoint_shard_count)?
            } else {
                let parent_state = match &old.parent_id {
                    Some(parent) => match tx.reconstruct(&paths, parent).await? {
                        Some(p) => p.state,
                        None => Json::Null,
                    },
                    None => Json::Null,
                };
                let patch = json_patch::diff(&parent_state, &new_state);
                if byte_len(&patch)? > self.shard_size {
                    self.checkpoint(&paths, &id, &new_state, 0)?
                } else {
                    Placement {
                        kind: Kind::Diff,
                        meta: ChainMeta::from(old),
                        state_patch: Some(patch),
                        shard_writes: Vec::new(),
                    }
                }
            };
            let doc = Self::snapshot_doc(&snapshot, &old.session_id, &placement, base + 1);
            let unchanged_since_read = loaded.update_time.clone().map(|t| Precondition {
                condition: Some(precondition::Condition::UpdateTime(t)),
            });
            let mut writes = vec![marker(
                paths.revision_marker(&id, base, loaded.update_time.as_ref()),
                json!({"snapshotId": id, "revision": base + 1}),
            )?];
            if self.client.is_emulator() {
                // The emulator merges a replacing write into the old fields
                // (it never drops one, e.g. a heartbeat the new snapshot no
                // longer has), so the document is deleted first there.
                let mut delete = delete(paths.snapshot(&id));
                delete.current_document = unchanged_since_read;
                writes.push(delete);
                writes.push(set(layout::encode(paths.snapshot(&id), &doc)?));
            } else {
                let mut replace = set(layout::encode(paths.snapshot(&id), &doc)?);
                replace.current_document = unchanged_since_read;
                writes.push(replace);
            }
            writes.extend(placement.shard_writes);
            // As Genkit JS: a rewrite of the current leaf refreshes the pointer.
            if pointer.is_some_and(|p| p.current_snapshot_id == id) {
                writes.push(set(layout::encode(
                    paths.pointer(&old.session_id),
                    &Self::pointer_doc(&id, &placement.meta),
                )?));
            }
            let stored = StoredSnapshot {
                snapshot: snapshot.clone(),
                revision: base + 1,
                session_version: view.version(),
            };
            Ok((stored, writes))
        })
        .await
    }

    async fn record_effect(&self, session_id: &str, key: &str, result: Json) -> Result<Json> {
        if session_id.trim().is_empty() || key.is_empty() {
            return Err(Error::user_facing(
                StatusCode::InvalidArgument,
                "a side-effect record needs a session id and a key",
            ));
        }
        let paths = self.paths()?;
        let name = paths.effect(session_id, key).ok_or_else(|| {
            Error::user_facing(
                StatusCode::InvalidArgument,
                "the side-effect key is too long",
            )
        })?;
        let record = json!({
            "sessionId": session_id,
            "key": key,
            "result": result,
            "recordedAt": now_rfc3339(),
        });
        // Its own commit, outside any turn's transaction; create-only, so
        // the first record wins.
        let write = create_only(layout::encode(name.clone(), &record)?);
        match self.client.commit(vec![write], None).await {
            Ok(_) => Ok(result),
            Err(e) if e.status() == StatusCode::AlreadyExists => self
                .read_effect(&name)
                .await?
                .ok_or_else(|| Error::internal(format!("effect record {name} vanished"))),
            Err(e) => Err(e),
        }
    }

    async fn effect(&self, session_id: &str, key: &str) -> Result<Option<Json>> {
        let paths = self.paths()?;
        match paths.effect(session_id, key) {
            Some(name) => self.read_effect(&name).await,
            None => Ok(None),
        }
    }
}

impl FirestoreSessionStore {
    async fn read_effect(&self, name: &str) -> Result<Option<Json>> {
        let docs = self.client.batch_get(vec![name.to_owned()], None).await?;
        docs.first()
            .map(|doc| {
                doc.fields
                    .get("result")
                    .map_or(Ok(Json::Null), value::to_json)
            })
            .transpose()
    }
}
